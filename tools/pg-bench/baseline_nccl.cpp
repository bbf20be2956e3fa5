// nccl-raw: NCCL called directly, one GPU per local rank, buffers in device
// memory, each call on one stream and timed up to its completion. Built only
// with CUDA; without a usable GPU it reports itself unavailable.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "backend.h"
#include "device.h"

namespace pgbench {
namespace {

// NCCL's type of each pg_dtype, in the enum's order.
ncclDataType_t nccl_type(pg_dtype dtype) {
  static const ncclDataType_t types[] = {ncclInt8,    ncclUint8,    ncclInt32,   ncclUint32, ncclInt64,
                                         ncclUint64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
  return types[dtype];
}

// NCCL's operator of each arithmetic pg_op (bitwise ones are refused in unsupported()).
ncclRedOp_t nccl_op(pg_op op) {
  static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};
  return op <= PG_AVG ? ops[op] : ncclSum;
}

class NcclRaw : public Backend {
 public:
  NcclRaw() : Backend("nccl-raw") {}

  std::string description() const override {
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100) + " called directly, device memory, GPU " +
           std::to_string(device_) + " of each rank's node";
  }

  std::string probe() override { return device::probe(); }

  std::string unsupported(Collective c, pg_dtype, pg_op op) const override {
    if (is_uneven(c)) return "the nccl-raw baseline has no uneven rows";
    if (op == PG_BAND || op == PG_BOR || op == PG_BXOR)
      return "NCCL has no bitwise reductions";
    return "";
  }

  void setup(const SetupInfo &info) override {
    rank_ = info.rank;
    nranks_ = info.nranks;
    MPI_Comm_dup(info.world, &comm_mpi_);
    MPI_Comm node;
    MPI_Comm_split_type(info.world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local_rank = 0;
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    int count = 0;
    cudaGetDeviceCount(&count);
    std::string why;
    if (local_rank >= count)
      why = "local rank " + std::to_string(local_rank) + " has no GPU of its own (" +
            std::to_string(count) + " visible; NCCL needs one GPU per rank)";
    else if (cudaSetDevice(local_rank) != cudaSuccess ||
             cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
      why = "cannot use GPU " + std::to_string(local_rank);
    device_ = local_rank;
    // Every rank must be able to join before any enters ncclCommInitRank.
    why = agree_on_failure(info.world, why);
    if (!why.empty()) throw Unavailable("unavailable: " + why);
    ncclUniqueId id;
    if (rank_ == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, info.world);
    const ncclResult_t r = ncclCommInitRank(&comm_, nranks_, id, rank_);
    if (r != ncclSuccess) throw Unavailable(std::string("ncclCommInitRank: ") + ncclGetErrorString(r));
  }

  bool own_buffers() const override { return true; }
  bool host_accessible() const override { return false; }

  void *alloc(size_t bytes) override {
    void *p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
      throw Error("cudaMalloc(" + std::to_string(bytes) + ") failed for nccl-raw");
    cudaMemset(p, 0, bytes);
    if (staging_ == nullptr) cudaMalloc(&staging_, bytes);  // for in-place alltoall
    return p;
  }
  void release(void *ptr) override { cudaFree(ptr); }
  void copy_in(void *dst, const void *host, size_t bytes) override { device::copy(dst, host, bytes); }
  void copy_out(void *host, const void *src, size_t bytes) override { device::copy(host, src, bytes); }

  std::string run(const Call &c) override {
    const ncclDataType_t t = nccl_type(c.dtype);
    const ncclRedOp_t op = nccl_op(c.op);
    const size_t es = pg_dtype_size(c.dtype);
    ncclResult_t r = ncclSuccess;
    switch (c.coll) {
      case Collective::Allreduce:
        r = ncclAllReduce(c.send, c.recv, c.count, t, op, comm_, stream_);
        break;
      case Collective::Allgather:
        r = ncclAllGather(c.send, c.recv, c.count, t, comm_, stream_);
        break;
      case Collective::ReduceScatter:
        r = ncclReduceScatter(c.send, c.recv, c.count, t, op, comm_, stream_);
        break;
      case Collective::Broadcast:
        r = ncclBroadcast(c.recv, c.recv, c.count, t, c.root, comm_, stream_);
        break;
      case Collective::Alltoall: {
        const char *send = static_cast<const char *>(c.send);
        char *recv = static_cast<char *>(c.recv);
        const size_t block = c.count * es;
        if (c.in_place) {
          cudaMemcpyAsync(staging_, recv, block * static_cast<size_t>(nranks_),
                          cudaMemcpyDeviceToDevice, stream_);
          send = static_cast<const char *>(staging_);
        }
        ncclGroupStart();
        for (int p = 0; p < nranks_; ++p) {
          ncclSend(send + block * static_cast<size_t>(p), c.count, t, p, comm_, stream_);
          ncclRecv(recv + block * static_cast<size_t>(p), c.count, t, p, comm_, stream_);
        }
        r = ncclGroupEnd();
        break;
      }
      default:
        return std::string("nccl-raw has no ") + collective_name(c.coll);
    }
    if (r != ncclSuccess)
      return std::string("NCCL ") + collective_name(c.coll) + " failed: " + ncclGetErrorString(r);
    return "";
  }

  void synchronize() override { cudaStreamSynchronize(stream_); }

  // NCCL has no barrier: the host-side MPI one (the stream is idle by then).
  std::string barrier() override {
    return MPI_Barrier(comm_mpi_) == MPI_SUCCESS ? "" : "MPI_Barrier failed";
  }

  void teardown() override {
    if (comm_) ncclCommDestroy(comm_);
    if (staging_) cudaFree(staging_);
    if (stream_) cudaStreamDestroy(stream_);
    if (comm_mpi_ != MPI_COMM_NULL) MPI_Comm_free(&comm_mpi_);
    comm_ = nullptr;
    staging_ = nullptr;
    stream_ = nullptr;
  }

 private:
  int rank_ = 0;
  int nranks_ = 1;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  MPI_Comm comm_mpi_ = MPI_COMM_NULL;
  cudaStream_t stream_ = nullptr;
  void *staging_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_raw() { return std::make_unique<NcclRaw>(); }

}  // namespace pgbench
