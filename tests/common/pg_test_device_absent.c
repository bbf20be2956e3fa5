/* A build without CUDA: no device memory (no CUDA strategy exists either). */
#include "pg_test.h"
#include "pg_test_device.h"

void *pg_test_device_alloc(size_t bytes) {
  pg_test_check(0, __FILE__, __LINE__, "no device memory for %zu bytes: this build has no CUDA", bytes);
  return NULL;
}

void pg_test_device_free(void *ptr) { (void)ptr; }

int pg_test_device_copy(void *dst, const void *src, size_t bytes) {
  (void)dst, (void)src;
  return pg_test_check(0, __FILE__, __LINE__, "no device copy of %zu bytes: this build has no CUDA", bytes);
}
