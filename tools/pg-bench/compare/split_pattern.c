/* fairring's split allreduce between two processes with nothing around it: no
 * library, no MPI. Two forked processes share two slots each; per call a
 * process copies the peer's half of its float32 input into its slot, raises
 * its flag, reduces its own half (its buffer + the peer's slot) into its
 * slot, raises its second flag, copies that half out, and then copies the
 * peer's reduced half out. Whatever spread its times show between runs is the
 * machine's, not the library's (docs/performance.md, "Run to run").
 *
 *   cc -O3 -march=native -o split_pattern split_pattern.c
 *   ./split_pattern [bytes=256K] [iters=300] [reps=5]    prints each rep's median time per call (us)
 *
 * It exits 1 if either process's result is not the sum of both inputs.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define relax() _mm_pause()
#else
#define relax() ((void)0)
#endif

typedef struct {
  _Alignas(64) atomic_ulong published;
  _Alignas(64) atomic_ulong reduced;
} Flags;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void wait_for(atomic_ulong *flag, unsigned long value) {
  while (atomic_load_explicit(flag, memory_order_acquire) < value) relax();
}

/* A size in bytes, with an optional K or M suffix; 0 when it is not one. */
static size_t parse_bytes(const char *text) {
  char *end = NULL;
  size_t value = strtoul(text, &end, 10);
  if (end == text) return 0;
  if (*end == 'K') value <<= 10, ++end;
  else if (*end == 'M') value <<= 20, ++end;
  return *end == '\0' ? value : 0;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const size_t bytes = argc > 1 ? parse_bytes(argv[1]) : 256 * 1024;
  const int iters = argc > 2 ? atoi(argv[2]) : 300, reps = argc > 3 ? atoi(argv[3]) : 5;
  const size_t n = bytes / sizeof(float), half = n / 2;
  if (n < 2 || iters < 1 || reps < 1) {
    fprintf(stderr, "usage: split_pattern [bytes >= 8] [iters >= 1] [reps >= 1]\n");
    return 2;
  }
  /* Per process: two flags' parities, then two slots of n floats. */
  const size_t part = 4096 + 2 * ((n * sizeof(float) + 4095) / 4096 * 4096);
  char *shared = mmap(NULL, 2 * part, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return perror("mmap"), 1;
  memset(shared, 0, 2 * part);
  /* Allocated before the fork, so that neither process starts without the other. */
  float *send = malloc(n * sizeof(float)), *recv = malloc(n * sizeof(float));
  double *times = malloc((size_t)iters * sizeof(double));
  if (!send || !recv || !times) {
    fprintf(stderr, "split_pattern: cannot allocate 2 x %zu bytes\n", n * sizeof(float));
    return 1;
  }
  const pid_t child = fork();
  if (child < 0) return perror("fork"), 1;
  const int me = child == 0, peer = 1 - me;
  Flags *flags[2] = {(Flags *)shared, (Flags *)(shared + part)};
  float *slots[2] = {(float *)(shared + 4096), (float *)(shared + part + 4096)};
  const size_t slot_floats = (part - 4096) / 2 / sizeof(float);
  for (size_t i = 0; i < n; ++i) send[i] = (float)(i % 7 + me);
  const size_t mine = me ? half : 0, mine_len = me ? n - half : half;
  const size_t theirs = me ? 0 : half, theirs_len = me ? half : n - half;
  unsigned long t = 0;
  if (me == 0) printf("%zu bytes, median us per call of each rep:", bytes);
  for (int r = 0; r < reps; ++r) {
    for (int it = 0; it < iters; ++it) {
      const double start = now_us();
      const int parity = (int)(++t % 2);
      float *slot = slots[me] + parity * slot_floats, *peer_slot = slots[peer] + parity * slot_floats;
      Flags *own = &flags[me][parity], *other = &flags[peer][parity];
      memcpy(slot + theirs, send + theirs, theirs_len * sizeof(float));
      atomic_store_explicit(&own->published, t, memory_order_release);
      wait_for(&other->published, t);
      for (size_t i = mine; i < mine + mine_len; ++i) slot[i] = send[i] + peer_slot[i];
      atomic_store_explicit(&own->reduced, t, memory_order_release);
      memcpy(recv + mine, slot + mine, mine_len * sizeof(float));
      wait_for(&other->reduced, t);
      memcpy(recv + theirs, peer_slot + theirs, theirs_len * sizeof(float));
      times[it] = now_us() - start;
    }
    qsort(times, (size_t)iters, sizeof(double), by_value);
    if (me == 0) printf(" %.1f", times[iters / 2]);
  }
  /* The sum of both processes' inputs, or the figures are of a broken pattern. */
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += recv[i] != (float)(2 * (i % 7) + 1);
  if (wrong) fprintf(stderr, "split_pattern: process %d: %zu of %zu elements wrong\n", me, wrong, n);
  free(send);
  free(recv);
  free(times);
  munmap(shared, 2 * part);
  if (me == 1) return wrong != 0;
  printf("\n");
  int how = 1;
  waitpid(child, &how, 0);
  return wrong != 0 || !WIFEXITED(how) || WEXITSTATUS(how) != 0;
}
