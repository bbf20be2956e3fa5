// The memory-copy ceilings, allreduce rows only (the collective whose row
// size is the whole buffer on every rank). They compute nothing, so their rows
// are not checked and their busbw is bytes copied / time (docs/performance.md).
// - memcpy: every rank copies the row's bytes at the same time, from a source
//   buffer of its own into the row's output buffer: host memory, or device to
//   device with --device cuda. A backend's busbw reads as a fraction of what
//   the memory system gives when every rank copies at once.
// - memcpy-pinned (--device cuda): every rank copies the row's bytes from the
//   device to pinned host memory and from pinned host memory into the row's
//   output buffer at once, on two streams: the copies a pipeline staged through
//   the host makes (fairring's rails without CUDA-aware MPI), with no MPI and
//   no NCCL between them.
#include <cstring>
#include <memory>

#include "backend.h"
#include "device.h"

namespace pgbench {
namespace {

// What both share: allreduce rows, copies only, an MPI barrier, and device
// buffers of their own on CUDA.
class CopyCeiling : public MpiBarrierBackend {
 public:
  CopyCeiling(const std::string &name, bool cuda) : MpiBarrierBackend(name), cuda_(cuda) {}

  std::string probe() override { return cuda_ ? device::probe() : ""; }
  std::string unsupported(Collective c, pg_dtype, pg_op) const override {
    if (c != Collective::Allreduce) return "the " + name() + " baseline has allreduce rows only";
    return "";
  }
  bool copies_only() const override { return true; }

  bool own_buffers() const override { return cuda_; }
  void *alloc(size_t bytes) override { return device::alloc(bytes); }
  void release(void *ptr) override { device::release(ptr); }
  bool host_accessible() const override { return !cuda_; }

 protected:
  const bool cuda_;
};

class Memcpy : public CopyCeiling {
 public:
  explicit Memcpy(bool cuda) : CopyCeiling("memcpy", cuda) {}

  std::string description() const override {
    return cuda_ ? "device-to-device copy of each row's bytes on every rank at once (busbw = bytes copied / time)"
                 : "memcpy of each row's bytes on every rank at once (busbw = bytes copied / time)";
  }

  void setup(const SetupInfo &info) override {
    dup_world(info);
    if (!cuda_) {
      source_.assign(info.max_bytes, 1);  // every page touched before timing
      return;
    }
    device::use_local_gpu(info.world);
    stream_ = std::make_unique<device::Stream>();
    device_source_ = device::alloc(info.max_bytes);
  }

  std::string run(const Call &c) override {
    const size_t bytes = c.count * pg_dtype_size(c.dtype);
    if (cuda_) stream_->copy_async(c.recv, device_source_, bytes);
    else std::memcpy(c.recv, source_.data(), bytes);
    return "";
  }

  void synchronize() override {
    if (stream_) stream_->synchronize();
  }

  void teardown() override {
    device::release(device_source_);
    device_source_ = nullptr;
    stream_.reset();
    MpiBarrierBackend::teardown();
  }

 private:
  std::vector<unsigned char> source_;
  void *device_source_ = nullptr;
  std::unique_ptr<device::Stream> stream_;
};

class MemcpyPinned : public CopyCeiling {
 public:
  explicit MemcpyPinned(bool cuda) : CopyCeiling("memcpy-pinned", cuda) {}

  std::string description() const override {
    return "device to pinned host memory and pinned host memory to device, the row's bytes each way at once on "
           "two streams, on every rank at once (busbw = bytes / time)";
  }

  std::string probe() override {
    return cuda_ ? device::probe() : "unavailable: memcpy-pinned copies between host and device (--device cuda)";
  }

  void setup(const SetupInfo &info) override {
    dup_world(info);
    device::use_local_gpu(info.world);
    down_ = std::make_unique<device::Stream>();
    up_ = std::make_unique<device::Stream>();
    device_source_ = device::alloc(info.max_bytes);
    host_down_ = device::alloc_pinned(info.max_bytes);
    host_up_ = device::alloc_pinned(info.max_bytes);
  }

  // Down from a source of its own, up into the row's buffer: the two copies
  // never touch the same memory.
  std::string run(const Call &c) override {
    const size_t bytes = c.count * pg_dtype_size(c.dtype);
    down_->copy_async(host_down_, device_source_, bytes);
    up_->copy_async(c.recv, host_up_, bytes);
    return "";
  }

  void synchronize() override {
    down_->synchronize();
    up_->synchronize();
  }

  void teardown() override {
    device::release_pinned(host_up_);
    device::release_pinned(host_down_);
    device::release(device_source_);
    host_up_ = host_down_ = device_source_ = nullptr;
    up_.reset();
    down_.reset();
    MpiBarrierBackend::teardown();
  }

 private:
  std::unique_ptr<device::Stream> down_, up_;
  void *device_source_ = nullptr;
  void *host_down_ = nullptr;
  void *host_up_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_memcpy(bool cuda) { return std::make_unique<Memcpy>(cuda); }
std::unique_ptr<Backend> make_memcpy_pinned(bool cuda) { return std::make_unique<MemcpyPinned>(cuda); }

}  // namespace pgbench
