// The CUDA default backend on device buffers: pg_strategy_create("cuda", NULL)
// must pick nccl, and every operation is checked against an analytic result
// copied back from the GPU. Exits 77 (skipped) when there is no usable GPU, or
// fewer GPUs than ranks on a node: pg_strategy_create says PG_ERR_UNAVAILABLE.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "pg_test.h"
#include "util/dtype.h"  // pg::op_supported: which dtype x op pairs exist
#include "util/half.h"

namespace {

int rank_ = 0, size_ = 1;

const pg_dtype kDtypes[] = {PG_INT8,    PG_UINT8,    PG_INT32,   PG_UINT32, PG_INT64,
                            PG_UINT64,  PG_FLOAT16,  PG_BFLOAT16, PG_FLOAT32, PG_FLOAT64};
const pg_op kOps[] = {PG_SUM, PG_PROD, PG_MIN, PG_MAX, PG_AVG};

bool cuda_ok(cudaError_t error, const char *call, int line) {
  return pg_test_check(error == cudaSuccess, __FILE__, line, "%s: %s", call, cudaGetErrorString(error));
}
#define CUDA_OK(call) cuda_ok((call), #call, __LINE__)

// Element i of a host buffer of `dtype`, as a double, and back. The test's
// values are small integers and halves, exact in every type.
double get(const std::vector<char> &buf, pg_dtype dtype, std::size_t i) {
  const char *p = buf.data() + i * pg_dtype_size(dtype);
  switch (dtype) {
    case PG_INT8: return *reinterpret_cast<const int8_t *>(p);
    case PG_UINT8: return *reinterpret_cast<const uint8_t *>(p);
    case PG_INT32: return *reinterpret_cast<const int32_t *>(p);
    case PG_UINT32: return *reinterpret_cast<const uint32_t *>(p);
    case PG_INT64: return static_cast<double>(*reinterpret_cast<const int64_t *>(p));
    case PG_UINT64: return static_cast<double>(*reinterpret_cast<const uint64_t *>(p));
    case PG_FLOAT16: return pg::half_to_float(*reinterpret_cast<const uint16_t *>(p));
    case PG_BFLOAT16: return pg::bf16_to_float(*reinterpret_cast<const uint16_t *>(p));
    case PG_FLOAT32: return *reinterpret_cast<const float *>(p);
    case PG_FLOAT64: return *reinterpret_cast<const double *>(p);
  }
  return 0;
}

void put(std::vector<char> &buf, pg_dtype dtype, std::size_t i, double v) {
  char *p = buf.data() + i * pg_dtype_size(dtype);
  switch (dtype) {
    case PG_INT8: *reinterpret_cast<int8_t *>(p) = static_cast<int8_t>(v); break;
    case PG_UINT8: *reinterpret_cast<uint8_t *>(p) = static_cast<uint8_t>(v); break;
    case PG_INT32: *reinterpret_cast<int32_t *>(p) = static_cast<int32_t>(v); break;
    case PG_UINT32: *reinterpret_cast<uint32_t *>(p) = static_cast<uint32_t>(v); break;
    case PG_INT64: *reinterpret_cast<int64_t *>(p) = static_cast<int64_t>(v); break;
    case PG_UINT64: *reinterpret_cast<uint64_t *>(p) = static_cast<uint64_t>(v); break;
    case PG_FLOAT16: *reinterpret_cast<uint16_t *>(p) = pg::float_to_half(static_cast<float>(v)); break;
    case PG_BFLOAT16: *reinterpret_cast<uint16_t *>(p) = pg::float_to_bf16(static_cast<float>(v)); break;
    case PG_FLOAT32: *reinterpret_cast<float *>(p) = static_cast<float>(v); break;
    case PG_FLOAT64: *reinterpret_cast<double *>(p) = v; break;
  }
}

// Device memory of `count` elements, with host copies in and out.
class Device {
 public:
  Device(std::size_t count, pg_dtype dtype) : dtype_(dtype), bytes_(count * pg_dtype_size(dtype)) {
    if (bytes_ > 0) CUDA_OK(cudaMalloc(&ptr_, bytes_));
  }
  ~Device() {
    if (ptr_) cudaFree(ptr_);
  }
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  char *get() const { return static_cast<char *>(ptr_); }
  char *at(std::size_t element) const { return get() + element * pg_dtype_size(dtype_); }
  void upload(const std::vector<char> &host) {
    if (bytes_ > 0) CUDA_OK(cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice));
  }
  std::vector<char> download() const {
    std::vector<char> host(bytes_);
    if (bytes_ > 0) CUDA_OK(cudaMemcpy(host.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  pg_dtype dtype_;
  std::size_t bytes_;
  void *ptr_ = nullptr;
};

std::vector<char> host(std::size_t count, pg_dtype dtype) {
  return std::vector<char>(count * pg_dtype_size(dtype));
}

// Compares `got` with want(i); reports the first difference only.
template <typename Want>
void expect(const std::vector<char> &got, pg_dtype dtype, std::size_t count, Want want,
            const char *what) {
  for (std::size_t i = 0; i < count; ++i) {
    const double w = want(i), g = get(got, dtype, i);
    if (!PG_TEST_TRUE(g == w, "%s %s: element %zu is %g, expected %g", what, pg_dtype_name(dtype),
                      i, g, w))
      return;
  }
}

// Rank r's element i for reductions, and what op makes of it over every rank.
double value(pg_op op, int r, std::size_t i) {
  if (op == PG_PROD) return i % 3 == 0 ? r % 2 + 1 : 1;
  return 1 + r + static_cast<double>(i % 5);
}
double reduced(pg_op op, std::size_t i) {
  const double p = size_, base = static_cast<double>(i % 5);
  switch (op) {
    case PG_SUM: return p * (1 + base) + p * (p - 1) / 2;
    case PG_PROD: {
      double prod = 1;
      for (int r = 0; r < size_; ++r) prod *= value(op, r, i);
      return prod;
    }
    case PG_MIN: return 1 + base;
    case PG_MAX: return p + base;
    case PG_AVG: return 1 + base + (p - 1) / 2;
    default: return 0;
  }
}

void check_allreduce(pg_strategy *s, std::size_t count, pg_dtype dtype, pg_op op, bool in_place) {
  pg_test_step("allreduce %s %s count %zu%s", pg_dtype_name(dtype), pg_op_name(op), count,
               in_place ? " in place" : "");
  std::vector<char> in = host(count, dtype);
  for (std::size_t i = 0; i < count; ++i) put(in, dtype, i, value(op, rank_, i));
  Device send(count, dtype), recv(count, dtype);
  send.upload(in);
  Device &out = in_place ? send : recv;
  PG_TEST_STATUS(pg_allreduce(s, send.get(), out.get(), count, dtype, op), PG_OK);
  expect(out.download(), dtype, count, [op](std::size_t i) { return reduced(op, i); },
         in_place ? "allreduce in place" : "allreduce");
}

void check_broadcast(pg_strategy *s, std::size_t count, pg_dtype dtype) {
  for (int root = 0; root < size_; ++root) {
    pg_test_step("broadcast %s count %zu root %d", pg_dtype_name(dtype), count, root);
    auto want = [root](std::size_t i) { return root * 7 + static_cast<double>(i % 11); };
    std::vector<char> in = host(count, dtype);
    for (std::size_t i = 0; i < count; ++i) put(in, dtype, i, rank_ == root ? want(i) : 99);
    Device buf(count, dtype);
    buf.upload(in);
    PG_TEST_STATUS(pg_broadcast(s, buf.get(), count, dtype, root), PG_OK);
    expect(buf.download(), dtype, count, want, "broadcast");
  }
}

void check_reduce(pg_strategy *s, std::size_t count, pg_dtype dtype, pg_op op) {
  for (int root = 0; root < size_; ++root) {
    pg_test_step("reduce %s %s count %zu root %d", pg_dtype_name(dtype), pg_op_name(op), count, root);
    std::vector<char> in = host(count, dtype);
    for (std::size_t i = 0; i < count; ++i) put(in, dtype, i, value(op, rank_, i));
    Device send(count, dtype), recv(count, dtype);
    send.upload(in);
    // In place at the root on even roots.
    const bool in_place = rank_ == root && root % 2 == 0;
    Device &out = in_place ? send : recv;
    PG_TEST_STATUS(pg_reduce(s, send.get(), out.get(), count, dtype, op, root), PG_OK);
    if (rank_ == root)
      expect(out.download(), dtype, count, [op](std::size_t i) { return reduced(op, i); }, "reduce");
  }
}

// Rank r's block of a block layout: r*20 + i%10 (fits int8 up to 6 ranks).
double block_value(int r, std::size_t i) { return r * 20 + static_cast<double>(i % 10); }

// Uploads this rank's block where a gather sends it from: to `send`, or in
// place to this rank's block of `recv`. Returns the send buffer.
const char *upload_block(Device &send, Device &recv, std::size_t count, pg_dtype dtype, bool in_place) {
  std::vector<char> mine = host(count, dtype);
  for (std::size_t i = 0; i < count; ++i) put(mine, dtype, i, block_value(rank_, i));
  if (!in_place) {
    send.upload(mine);
    return send.get();
  }
  std::vector<char> all = host(count * size_, dtype);
  std::memcpy(all.data() + rank_ * mine.size(), mine.data(), mine.size());
  recv.upload(all);
  return recv.at(rank_ * count);
}

// `recv` holds every rank's block, in rank order.
void expect_blocks(const Device &recv, std::size_t count, pg_dtype dtype, const char *what) {
  expect(recv.download(), dtype, count * size_,
         [count](std::size_t i) { return block_value(static_cast<int>(i / count), i % count); }, what);
}

void check_allgather(pg_strategy *s, std::size_t count, pg_dtype dtype, bool in_place) {
  pg_test_step("allgather %s count %zu%s", pg_dtype_name(dtype), count, in_place ? " in place" : "");
  Device send(count, dtype), recv(count * size_, dtype);
  const char *from = upload_block(send, recv, count, dtype, in_place);
  PG_TEST_STATUS(pg_allgather(s, from, recv.get(), count, dtype), PG_OK);
  expect_blocks(recv, count, dtype, in_place ? "allgather in place" : "allgather");
}

void check_reduce_scatter(pg_strategy *s, std::size_t count, pg_dtype dtype, pg_op op, bool in_place) {
  pg_test_step("reduce_scatter %s %s count %zu%s", pg_dtype_name(dtype), pg_op_name(op), count,
               in_place ? " in place" : "");
  const std::size_t total = count * size_;
  std::vector<char> in = host(total, dtype);
  for (std::size_t i = 0; i < total; ++i) put(in, dtype, i, value(op, rank_, i));
  Device send(total, dtype), recv(count, dtype);
  send.upload(in);
  char *out = in_place ? send.at(rank_ * count) : recv.get();
  PG_TEST_STATUS(pg_reduce_scatter(s, send.get(), out, count, dtype, op), PG_OK);
  std::vector<char> all = in_place ? send.download() : recv.download();
  std::vector<char> got(all.begin() + (in_place ? rank_ * count * pg_dtype_size(dtype) : 0),
                        all.begin() + (in_place ? rank_ * count * pg_dtype_size(dtype) : 0) +
                            count * pg_dtype_size(dtype));
  const std::size_t first = rank_ * count;
  expect(got, dtype, count, [op, first](std::size_t i) { return reduced(op, first + i); },
         in_place ? "reduce_scatter in place" : "reduce_scatter");
}

// Block q of rank r's alltoall/scatter input: what rank q receives from r.
double pair_value(int from, int to, std::size_t i) {
  return from * 10 + to + static_cast<double>(i % 3) * 100;
}

void check_alltoall(pg_strategy *s, std::size_t count, bool in_place) {
  const pg_dtype dtype = PG_FLOAT32;
  pg_test_step("alltoall count %zu%s", count, in_place ? " in place" : "");
  const std::size_t total = count * size_;
  std::vector<char> in = host(total, dtype);
  for (std::size_t i = 0; i < total; ++i) put(in, dtype, i, pair_value(rank_, static_cast<int>(i / count), i % count));
  Device send(total, dtype), recv(total, dtype);
  send.upload(in);
  Device &out = in_place ? send : recv;
  PG_TEST_STATUS(pg_alltoall(s, send.get(), out.get(), count, dtype), PG_OK);
  expect(out.download(), dtype, total,
         [count](std::size_t i) { return pair_value(static_cast<int>(i / count), rank_, i % count); },
         in_place ? "alltoall in place" : "alltoall");
}

void check_gather_scatter(pg_strategy *s, std::size_t count) {
  const pg_dtype dtype = PG_INT32;
  const std::size_t total = count * size_;
  for (int root = 0; root < size_; ++root) {
    const bool in_place = rank_ == root && root % 2 == 1;
    pg_test_step("gather count %zu root %d", count, root);
    {
      Device send(count, dtype), recv(total, dtype);
      const char *from = upload_block(send, recv, count, dtype, in_place);  // in place only at the root
      PG_TEST_STATUS(pg_gather(s, from, recv.get(), count, dtype, root), PG_OK);
      if (rank_ == root) expect_blocks(recv, count, dtype, "gather");
    }
    pg_test_step("scatter count %zu root %d", count, root);
    {
      Device send(total, dtype), recv(count, dtype);
      if (rank_ == root) {
        std::vector<char> all = host(total, dtype);
        for (std::size_t i = 0; i < total; ++i)
          put(all, dtype, i, pair_value(root, static_cast<int>(i / count), i % count));
        send.upload(all);
      }
      char *to = in_place ? send.at(root * count) : recv.get();
      PG_TEST_STATUS(pg_scatter(s, send.get(), to, count, dtype, root), PG_OK);
      std::vector<char> got = in_place ? send.download() : recv.download();
      if (in_place) got.erase(got.begin(), got.begin() + root * count * pg_dtype_size(dtype));
      expect(got, dtype, count, [root](std::size_t i) { return pair_value(root, rank_, i); }, "scatter");
    }
  }
}

void check_point_to_point(pg_strategy *s, std::size_t count) {
  const pg_dtype dtype = PG_FLOAT64;
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  pg_test_step("sendrecv ring count %zu", count);
  std::vector<char> in = host(count, dtype);
  for (std::size_t i = 0; i < count; ++i) put(in, dtype, i, pair_value(rank_, next, i));
  Device send(count, dtype), recv(count, dtype);
  send.upload(in);
  PG_TEST_STATUS(pg_sendrecv(s, send.get(), count, next, recv.get(), count, prev, dtype, 5), PG_OK);
  expect(recv.download(), dtype, count, [prev](std::size_t i) { return pair_value(prev, rank_, i); },
         "sendrecv");
  if (size_ < 2) return;
  pg_test_step("send/recv 0 -> 1 count %zu", count);
  if (rank_ == 0) PG_TEST_STATUS(pg_send(s, send.get(), count, dtype, 1, 6), PG_OK);
  if (rank_ == 1) {
    Device got(count, dtype);
    PG_TEST_STATUS(pg_recv(s, got.get(), count, dtype, 0, 6), PG_OK);
    expect(got.download(), dtype, count, [](std::size_t i) { return pair_value(0, 1, i); }, "recv");
  }
}

void check_nonblocking_and_streams(pg_strategy *s, std::size_t count) {
  const pg_dtype dtype = PG_FLOAT32;
  std::vector<char> in = host(count, dtype);
  for (std::size_t i = 0; i < count; ++i) put(in, dtype, i, value(PG_SUM, rank_, i));
  auto want = [](std::size_t i) { return reduced(PG_SUM, i); };

  pg_test_step("iallreduce count %zu", count);
  {
    Device buf(count, dtype), other(count, dtype);
    buf.upload(in);
    other.upload(in);
    pg_work *w1 = nullptr, *w2 = nullptr;
    PG_TEST_STATUS(pg_iallreduce(s, buf.get(), buf.get(), count, dtype, PG_SUM, &w1), PG_OK);
    PG_TEST_STATUS(pg_iallreduce(s, other.get(), other.get(), count, dtype, PG_SUM, &w2), PG_OK);
    int done = 0;
    while (w2 && !done && pg_work_test(w2, &done) == PG_OK) {
    }
    PG_TEST_TRUE(done == 1, "pg_work_test reports the second iallreduce done");
    PG_TEST_STATUS(pg_work_wait(w1, 60.0), PG_OK);
    PG_TEST_STATUS(pg_work_free(w1), PG_OK);
    PG_TEST_STATUS(pg_work_free(w2), PG_OK);
    expect(buf.download(), dtype, count, want, "iallreduce");
    expect(other.download(), dtype, count, want, "iallreduce (tested)");
  }

  pg_test_step("ibarrier");
  {
    pg_work *w = nullptr;
    PG_TEST_STATUS(pg_ibarrier(s, &w), PG_OK);
    PG_TEST_STATUS(pg_work_wait(w, -1), PG_OK);
    PG_TEST_STATUS(pg_work_free(w), PG_OK);
  }

  pg_test_step("allreduce on a user stream, count %zu", count);
  {
    cudaStream_t stream = nullptr;
    if (!CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking))) return;
    Device buf(count, dtype);
    buf.upload(in);
    PG_TEST_STATUS(pg_strategy_set_stream(s, stream), PG_OK);
    // Enqueued on the stream: complete once the stream is.
    PG_TEST_STATUS(pg_allreduce(s, buf.get(), buf.get(), count, dtype, PG_SUM), PG_OK);
    PG_TEST_STATUS(pg_allreduce(s, buf.get(), buf.get(), count, dtype, PG_MAX), PG_OK);
    CUDA_OK(cudaStreamSynchronize(stream));
    expect(buf.download(), dtype, count, want, "allreduce on a user stream");
    PG_TEST_STATUS(pg_barrier(s), PG_OK);
    PG_TEST_STATUS(pg_strategy_set_stream(s, nullptr), PG_OK);
    CUDA_OK(cudaStreamDestroy(stream));
  }
}

}  // namespace

int main(int argc, char **argv) {
  pg_test_watchdog("test_nccl");
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);

  pg_test_step("create");
  pg_strategy *s = nullptr;
  pg_status st = pg_strategy_create("cuda", nullptr, &s);
  if (st == PG_ERR_UNAVAILABLE) {  // the same status on every rank
    if (rank_ == 0) std::printf("test_nccl on %d ranks: skipped: %s\n", size_, pg_last_error());
    MPI_Finalize();
    return PG_TEST_SKIP;
  }
  PG_TEST_STATUS(st, PG_OK);
  if (st == PG_OK) {
    PG_TEST_TRUE(std::strcmp(pg_strategy_backend(s), "nccl") == 0, "the cuda default is '%s'",
                 pg_strategy_backend(s));
    char text[512];
    if (rank_ == 0 && pg_strategy_describe(s, text, sizeof text) == PG_OK) std::printf("%s\n", text);

    const std::size_t counts[] = {0, 1, static_cast<std::size_t>(3 * size_ + 1)};
    for (std::size_t count : counts)
      for (pg_dtype dtype : kDtypes)
        for (pg_op op : kOps) {
          if (!pg::op_supported(dtype, op)) continue;
          check_allreduce(s, count, dtype, op, false);
          check_allreduce(s, count, dtype, op, true);
        }
    const std::size_t large = (std::size_t(1) << 22) + 3;
    check_allreduce(s, large, PG_FLOAT32, PG_SUM, false);
    check_allreduce(s, large, PG_BFLOAT16, PG_SUM, true);
    check_allreduce(s, large, PG_INT64, PG_MAX, false);

    pg_test_step("bitwise operators are unsupported");
    {
      Device buf(4, PG_INT32);
      PG_TEST_STATUS(pg_allreduce(s, buf.get(), buf.get(), 4, PG_INT32, PG_BAND), PG_ERR_UNSUPPORTED);
      PG_TEST_STATUS(pg_barrier(s), PG_OK);  // and the strategy is still usable
    }

    for (std::size_t count : {std::size_t(1), std::size_t(3 * size_ + 1), std::size_t(1) << 20}) {
      for (pg_dtype dtype : {PG_INT32, PG_FLOAT16, PG_FLOAT64}) check_broadcast(s, count, dtype);
      for (pg_dtype dtype : {PG_INT8, PG_BFLOAT16, PG_FLOAT32}) {
        check_allgather(s, count, dtype, false);
        check_allgather(s, count, dtype, true);
      }
      for (pg_dtype dtype : {PG_INT32, PG_FLOAT16, PG_FLOAT32})
        for (pg_op op : {PG_SUM, PG_MAX}) {
          check_reduce_scatter(s, count, dtype, op, false);
          check_reduce_scatter(s, count, dtype, op, true);
        }
      check_reduce_scatter(s, count, PG_FLOAT64, PG_AVG, true);
      check_reduce(s, count, PG_FLOAT32, PG_SUM);
      check_reduce(s, count, PG_UINT64, PG_MIN);
      check_alltoall(s, count, false);
      check_gather_scatter(s, count);
      check_point_to_point(s, count);
      check_nonblocking_and_streams(s, count);
    }
    pg_test_step("barrier");
    PG_TEST_STATUS(pg_barrier(s), PG_OK);
    // Last, so a library that stages in-place alltoall in host memory (which
    // cannot read device buffers) fails here after everything else was checked.
    for (std::size_t count : {std::size_t(1), std::size_t(3 * size_ + 1)}) check_alltoall(s, count, true);

    pg_test_step("split: reversed order");
    pg_strategy *rev = nullptr;
    PG_TEST_STATUS(pg_strategy_split(s, 0, size_ - rank_, &rev), PG_OK);
    if (rev) {
      const int saved = rank_;
      rank_ = pg_strategy_rank(rev);
      check_allgather(rev, 5, PG_FLOAT32, false);
      check_reduce_scatter(rev, 5, PG_INT32, PG_SUM, true);
      rank_ = saved;
      PG_TEST_STATUS(pg_strategy_destroy(rev), PG_OK);
    }
    pg_test_step("destroy");
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  }
  const int result = pg_test_verdict(MPI_COMM_WORLD, "test_nccl");
  MPI_Finalize();
  return result;
}
