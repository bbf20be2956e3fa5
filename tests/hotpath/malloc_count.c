/* Counts the process's allocations (preloaded with LD_PRELOAD into the
 * test_hot_path job): malloc, calloc and realloc go to glibc's own after
 * one atomic increment. */
#define _GNU_SOURCE
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

__attribute__((visibility("default"))) unsigned long pg_test_allocations = 0;

static void counted(void) { __atomic_add_fetch(&pg_test_allocations, 1, __ATOMIC_RELAXED); }

__attribute__((visibility("default"))) void *malloc(size_t n) {
  counted();
  return __libc_malloc(n);
}
__attribute__((visibility("default"))) void *calloc(size_t a, size_t b) {
  counted();
  return __libc_calloc(a, b);
}
__attribute__((visibility("default"))) void *realloc(void *p, size_t n) {
  counted();
  return __libc_realloc(p, n);
}
