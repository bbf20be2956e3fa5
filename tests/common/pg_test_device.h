/* Device memory for tests that run their checks on GPU buffers: the test
 * fills and reads host copies and hands the device copies to the library.
 * With CUDA: cudaMalloc and cudaMemcpy (pg_test_device_cuda.c); without:
 * nothing can be allocated (pg_test_device_absent.c). Failures are recorded
 * with pg_test_check. */
#ifndef PG_TEST_DEVICE_H
#define PG_TEST_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `bytes` of device memory on the current GPU, or NULL. */
void *pg_test_device_alloc(size_t bytes);
void pg_test_device_free(void *ptr);
/* Copies between host and device memory, either way (the pointers tell
 * which), complete on return. Returns 1, or 0 after recording a failure. */
int pg_test_device_copy(void *dst, const void *src, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
