/* The fault campaign's job (tests/faults/fault_campaign.sh runs it, label
 * fault): one rank, the victim, kills itself (SIGKILL) at a chosen point while
 * the others go on, so that only the launcher (mpiexec) or the library's
 * bootstrap (plain copies) can end them.
 *
 *   fault_job PHASE
 *
 *   create             MPI up first (pg_mpi_init), then the others enter
 *                      pg_strategy_create (fairring) while the victim dies in
 *                      place of entering it
 *   fast               fairring allreduces of 8 doubles (the fast path, one
 *                      node): a thread kills the victim while it is inside one
 *   hierarchical       the same with 1 Mi doubles (8 MiB: the hierarchical path)
 *   across             the same with 8 doubles on 2x2 virtual nodes
 *                      (PGS_RANKS_PER_NODE=2): the victim is rank 2, the
 *                      leader of node 1; rank 0, node 0's leader, is then in
 *                      its step across nodes (MPI with rank 2; its own node
 *                      is whole, so that is where it waits), ranks 1 and 3
 *                      wait for their leaders' results
 *   dump               PGS_TRACE set, allreduces, and on every rank a thread
 *                      that calls pg_trace_dump() without pause (each says
 *                      so in dumping.<rank> after its first): once all are
 *                      dumping, the victim dies while its thread is inside a
 *                      dump
 *   rendezvous         plain copies only: the victim joins the bootstrap's
 *                      rendezvous and dies there while rank 0 waits for the
 *                      last rank, which comes only after the death
 *   before-rendezvous  plain copies only: the victim dies before it
 *                      connects; the others wait PGS_BOOTSTRAP_TIMEOUT
 *
 * Environment: FAULT_DIR (required), where each rank writes, before anything
 * else, pid.<rank> ("pid starttime ppid ppid-starttime", starttime from
 * /proc/<pid>/stat, so that a reused pid is not mistaken for the process) and
 * sends its stdout and stderr to rank.<rank>.out; the victim writes
 * dead.<rank> ("pid seconds.nanoseconds where", CLOCK_REALTIME) right before
 * it dies. FAULT_VICTIM: the victim's rank (default 1). FAULT_SPARE=1: the
 * victim writes dead.<rank> but does not die (checks that the campaign fails).
 * FAULT_HARD_LIMIT: seconds after which every rank ends itself whatever
 * happens (default 90; SIGALRM), so that nothing outlives a lost driver.
 *
 * The rank is known before MPI is up from PMI_RANK (Hydra) or RANK (plain
 * copies). A survivor never ends by itself: it exits with 1 when
 * pg_strategy_create fails (the rendezvous phases expect it), 3 when a
 * collective or a dump fails, 4 when a call returns that should never have
 * returned. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pg_test.h"

static const char *dir;
static int rank = -1, world = 0;
/* A kind of call the victim may die inside: how many began, and whether one runs. */
struct watched {
  atomic_long begun;
  atomic_int inside;
  long after;  /* the victim dies inside a call once more than this many began */
};
static struct watched allreduces, dumps;

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* Field 22 of /proc/<pid>/stat: the process's start time, in clock ticks since boot. */
static unsigned long long start_time(long pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  unsigned long long t = 0;
  /* After ") ": state(3) ppid(4) ... starttime(22): skip 19 fields. */
  if (p) sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &t);
  return t;
}

/* Writes `text` to DIR/name whole (a temporary file renamed into place). */
static void put_file(const char *name, const char *text) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "fault_job: cannot write %s\n", path);
    exit(5);
  }
}

static int exists(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return access(path, F_OK) == 0;
}

/* The victim's end: its death notice, then SIGKILL (FAULT_SPARE: only the notice). */
static void die(const char *where) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char text[512], name[64];
  snprintf(text, sizeof text, "%ld %ld.%09ld %s\n", (long)getpid(), (long)now.tv_sec, now.tv_nsec, where);
  snprintf(name, sizeof name, "dead.%d", rank);
  put_file(name, text);
  printf("fault_job: rank %d (pid %ld) kills itself %s\n", rank, (long)getpid(), where);
  fflush(stdout);
  if (env_int("FAULT_SPARE", 0)) {
    printf("fault_job: rank %d spared (FAULT_SPARE)\n", rank);
    fflush(stdout);
    return;
  }
  raise(SIGKILL);
}

/* Whether this process holds an established TCP connection to `port` (its
 * sockets' inodes looked up in /proc/self/net/tcp and tcp6). */
static int connected_to(int port) {
  unsigned long inodes[256];
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;) {
    char path[300], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = 0;
    unsigned long inode = 0;
    if (sscanf(target, "socket:[%lu]", &inode) == 1) inodes[n++] = inode;
  }
  closedir(d);
  int found = 0;
  for (int v = 0; v < 2 && !found; ++v) {
    FILE *f = fopen(v ? "/proc/self/net/tcp6" : "/proc/self/net/tcp", "r");
    if (!f) continue;
    char line[512];
    while (!found && fgets(line, sizeof line, f)) {
      char remote[64];
      unsigned state = 0;
      unsigned long inode = 0;
      if (sscanf(line, " %*d: %*s %63s %x %*s %*s %*s %*d %*d %lu", remote, &state, &inode) != 3) continue;
      const char *colon = strrchr(remote, ':');
      if (!colon || state != 1 /* TCP_ESTABLISHED */ || (int)strtol(colon + 1, NULL, 16) != port) continue;
      for (int i = 0; i < n; ++i)
        if (inodes[i] == inode) found = 1;
    }
    fclose(f);
  }
  return found;
}

/* rendezvous: once the victim's connection to the rendezvous stands, a
 * second for its greeting (a few messages) to be through, then death; the
 * victim's main thread meanwhile waits inside pg_strategy_create for the
 * job to be complete. */
static void *die_in_rendezvous(void *arg) {
  (void)arg;
  const int port = env_int("MASTER_PORT", 0);
  while (!connected_to(port)) sleep_ms(5);
  sleep_ms(1000);
  die("in the rendezvous, after joining it");
  return NULL;
}

/* fast, hierarchical, across, dump: death once the main thread (or the
 * dumping thread) is inside a call, after `after` of them. */
static void *die_inside(void *arg) {
  struct watched *w = arg;
  /* A dump: once every rank has dumped (each is busy dumping when the victim dies). */
  for (int r = 0; w == &dumps && r < world; ++r) {
    char name[64];
    snprintf(name, sizeof name, "dumping.%d", r);
    while (!exists(name)) sleep_ms(5);
  }
  while (!(atomic_load(&w->begun) > w->after && atomic_load(&w->inside))) sleep_ms(1);
  char where[128];
  snprintf(where, sizeof where, "inside %s #%ld", w == &dumps ? "pg_trace_dump" : "allreduce",
           atomic_load(&w->begun));
  die(where);
  return NULL;
}

static void *dump_loop(void *arg) {
  (void)arg;
  for (;;) {
    atomic_store(&dumps.inside, 1);
    atomic_fetch_add(&dumps.begun, 1);
    const pg_status st = pg_trace_dump();
    atomic_store(&dumps.inside, 0);
    if (st != PG_OK) {
      fprintf(stderr, "fault_job: rank %d: pg_trace_dump: %s: %s\n", rank, pg_status_name(st), pg_last_error());
      exit(3);
    }
    if (atomic_load(&dumps.begun) == 1) {
      char name[64];
      snprintf(name, sizeof name, "dumping.%d", rank);
      put_file(name, "");
    }
  }
  return NULL;
}

static void start(void *(*fn)(void *), void *arg) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, arg) != 0) {
    fprintf(stderr, "fault_job: pthread_create failed\n");
    exit(5);
  }
  pthread_detach(t);
}

static pg_strategy *create(const char *backend) {
  pg_strategy *s = NULL;
  const pg_status st = pg_strategy_create("cpu", backend, &s);
  if (st != PG_OK) {
    fprintf(stderr, "fault_job: rank %d: pg_strategy_create failed: %s: %s\n", rank, pg_status_name(st),
            pg_last_error());
    exit(1);
  }
  return s;
}

/* Allreduces of `count` doubles without end (the first few checked); the
 * watched call is each allreduce. */
static void allreduce_loop(pg_strategy *s, size_t count) {
  const int size = pg_strategy_size(s), me = pg_strategy_rank(s);
  double *data = malloc(count * sizeof *data);
  if (!data) exit(5);
  for (long i = 0;; ++i) {
    for (size_t k = 0; i < 3 && k < count; ++k) data[k] = me + (double)k;
    atomic_store(&allreduces.inside, 1);
    atomic_fetch_add(&allreduces.begun, 1);
    const pg_status st = pg_allreduce(s, data, data, count, PG_FLOAT64, PG_SUM);
    atomic_store(&allreduces.inside, 0);
    if (st != PG_OK) {
      fprintf(stderr, "fault_job: rank %d: allreduce #%ld failed: %s: %s\n", rank, i + 1, pg_status_name(st),
              pg_last_error());
      exit(3);
    }
    for (size_t k = 0; i < 3 && k < count; ++k)
      if (data[k] != size * (size - 1) / 2.0 + size * (double)k) {
        fprintf(stderr, "fault_job: rank %d: allreduce #%ld: element %zu is %g\n", rank, i + 1, k, data[k]);
        exit(6);
      }
  }
}

int main(int argc, char **argv) {
  const char *phase = argc > 1 ? argv[1] : "";
  dir = getenv("FAULT_DIR");
  const char *r = getenv("PMI_RANK");
  if (!r || !*r) r = getenv("RANK");
  if (!dir || !*dir || !r || !*r) {
    fprintf(stderr, "usage: FAULT_DIR=<dir> fault_job <phase>, as a rank of mpiexec's job or a plain copy (RANK)\n");
    return 2;
  }
  rank = atoi(r);
  alarm((unsigned)env_int("FAULT_HARD_LIMIT", 90));

  char name[64], text[256];
  snprintf(name, sizeof name, "rank.%d.out", rank);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) return 5;
  close(out);
  setvbuf(stdout, NULL, _IOLBF, 0);
  const long pid = getpid(), ppid = getppid();
  snprintf(text, sizeof text, "%ld %llu %ld %llu\n", pid, start_time(pid), ppid, start_time(ppid));
  snprintf(name, sizeof name, "pid.%d", rank);
  put_file(name, text);

  const int victim = env_int("FAULT_VICTIM", 1);
  const int is_victim = rank == victim;
  printf("fault_job: rank %d, pid %ld, phase %s, victim rank %d\n", rank, pid, phase, victim);

  if (!strcmp(phase, "create")) {
    int provided = 0;
    const pg_status st = pg_mpi_init(MPI_THREAD_MULTIPLE, &provided);
    if (st != PG_OK) {
      fprintf(stderr, "fault_job: rank %d: pg_mpi_init: %s: %s\n", rank, pg_status_name(st), pg_last_error());
      return 4;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (is_victim) {
      sleep_ms(300);  /* the others are inside pg_strategy_create by then, waiting for it */
      die("in place of entering pg_strategy_create");
    }
    pg_strategy *s = create("fairring");
    printf("fault_job: rank %d: pg_strategy_create returned PG_OK without the victim\n", rank);
    (void)s;
    return 4;
  }
  if (!strcmp(phase, "fast") || !strcmp(phase, "hierarchical") || !strcmp(phase, "across")) {
    pg_strategy *s = create("fairring");
    if (pg_strategy_rank(s) == 0) {
      char plan[4096];
      pg_strategy_describe(s, plan, sizeof plan);
      printf("fault_job: %s\n", plan);
    }
    if (!strcmp(phase, "across") &&
        (pg_strategy_node_count(s) != 2 || pg_strategy_local_size(s) != 2)) {
      fprintf(stderr, "fault_job: rank %d: expected 2x2 virtual nodes, got %d x %d\n", rank,
              pg_strategy_node_count(s), pg_strategy_local_size(s));
      return 4;
    }
    const int hierarchical = !strcmp(phase, "hierarchical");
    allreduces.after = hierarchical ? 10 : 50;
    if (is_victim) start(die_inside, &allreduces);
    allreduce_loop(s, hierarchical ? (size_t)1 << 20 : 8);
  }
  if (!strcmp(phase, "dump")) {
    if (!getenv("PGS_TRACE")) {
      fprintf(stderr, "fault_job: the phase dump needs PGS_TRACE\n");
      return 2;
    }
    pg_strategy *s = create(NULL);
    world = pg_strategy_size(s);
    start(dump_loop, NULL);
    dumps.after = 5;
    if (is_victim) start(die_inside, &dumps);
    allreduce_loop(s, 8);
  }
  if (!strcmp(phase, "rendezvous")) {
    /* The last rank comes after the death: until then rank 0 still waits for the job to be complete. */
    if (is_victim) start(die_in_rendezvous, NULL);
    snprintf(name, sizeof name, "dead.%d", victim);
    if (rank == env_int("WORLD_SIZE", 0) - 1) {
      while (!exists(name)) sleep_ms(10);
      sleep_ms(500);
    }
    create(NULL);
    printf("fault_job: rank %d: pg_strategy_create returned PG_OK without the victim\n", rank);
    return 4;
  }
  if (!strcmp(phase, "before-rendezvous")) {
    if (is_victim) die("before it connects to the rendezvous");
    create(NULL);
    printf("fault_job: rank %d: pg_strategy_create returned PG_OK without the victim\n", rank);
    return 4;
  }
  fprintf(stderr, "fault_job: unknown phase '%s'\n", phase);
  return 2;
}
