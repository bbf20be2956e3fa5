// Stand-ins for device.h in builds without CUDA: no device row can run.
#include "backend.h"
#include "device.h"

namespace pgbench::device {
namespace {

[[noreturn]] void no_cuda() { throw Error("pg-bench was built without CUDA"); }

}  // namespace

std::string probe() { return "unavailable: pg-bench was built without CUDA"; }
void use_local_gpu(MPI_Comm) { no_cuda(); }
void *alloc(std::size_t) { no_cuda(); }
void release(void *) {}
void *alloc_pinned(std::size_t) { no_cuda(); }
void release_pinned(void *) {}
void copy(void *, const void *, std::size_t) { no_cuda(); }
Stream::Stream() { no_cuda(); }
Stream::~Stream() {}
void Stream::copy_async(void *, const void *, std::size_t) { no_cuda(); }
void Stream::synchronize() { no_cuda(); }

}  // namespace pgbench::device
