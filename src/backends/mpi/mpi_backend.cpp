// The mpi backend. Each collective is written once and issued either blocking
// (MPI_Allreduce, ...) or nonblocking (MPI_Iallreduce, ...) through PG_MPI_CALL.
// Counts above the chunk limit (INT_MAX elements, or PGS_MPI_CHUNK_COUNT) are
// split into chunks: elementwise operations loop over slices; block-layout
// operations (allgather, gather, scatter, alltoall) use a block type resized to
// the full block stride, so every chunk is one MPI call without copies;
// reduce_scatter packs its chunk of every block into a staging buffer.
#include "backends/mpi/mpi_backend.h"

#include <climits>
#include <cstring>
#include <functional>
#include <vector>

#include "backends/mpi/mpi_types.h"
#include "core/dtype.h"
#include "core/params.h"
#include "core/reduce.h"
#include "core/status.h"

namespace pg::mpi {
namespace {

// The MPI requests of one started operation, the staging buffers they use,
// and what is left to do once they complete (PG_AVG's division, a copy out).
class Pending final : public Request {
 public:
  MPI_Request *add() {
    requests_.push_back(MPI_REQUEST_NULL);
    return &requests_.back();
  }
  std::vector<char> &stage(std::size_t bytes) {
    stages_.emplace_back(bytes);
    return stages_.back();
  }
  void then(std::function<void()> step) { finish_.push_back(std::move(step)); }

  // Blocking use: the steps run at once.
  void finish_now() {
    for (auto &step : finish_) step();
    finish_.clear();
  }

  pg_status test(bool *done) override {
    int flag = 1;
    if (!requests_.empty())
      PG_MPI_CHECK(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag,
                               MPI_STATUSES_IGNORE));
    *done = flag != 0;
    if (*done) finish_now();
    return PG_OK;
  }

  pg_status wait() override {
    if (!requests_.empty())
      PG_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(),
                               MPI_STATUSES_IGNORE));
    requests_.clear();
    finish_now();
    return PG_OK;
  }

  // Requests are left unfinished only when issuing failed halfway or a strategy
  // is torn down after a failure. MPI forbids freeing an active collective
  // request, and waiting could hang: they are left to MPI_Finalize.
  ~Pending() override = default;

 private:
  // MPI only reads a request handle at the call that fills it, so the vector may grow.
  std::vector<MPI_Request> requests_;
  std::vector<std::vector<char>> stages_;
  std::vector<std::function<void()>> finish_;
};

// Blocking when `pending` is NULL, else nonblocking with its request added there.
#define PG_MPI_CALL(pending, blocking, nonblocking, ...)                     \
  PG_MPI_CHECK((pending) ? nonblocking(__VA_ARGS__, (pending)->add())        \
                         : blocking(__VA_ARGS__))

// A block of `len` elements whose extent is `stride` elements: one chunk of
// every rank's block in a block-layout buffer.
class BlockType {
 public:
  BlockType(MPI_Datatype base, std::size_t len, std::size_t stride, std::size_t esize) {
    MPI_Datatype block;
    error_ = MPI_Type_contiguous(static_cast<int>(len), base, &block);
    if (error_ == MPI_SUCCESS) {
      error_ = MPI_Type_create_resized(block, 0, static_cast<MPI_Aint>(stride * esize), &type_);
      MPI_Type_free(&block);
    }
    if (error_ == MPI_SUCCESS) error_ = MPI_Type_commit(&type_);
  }
  // Freeing right after issuing is allowed: pending operations complete normally.
  ~BlockType() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  BlockType(const BlockType &) = delete;
  BlockType &operator=(const BlockType &) = delete;
  int error() const { return error_; }
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  int error_ = MPI_SUCCESS;
};

#define PG_BLOCK_TYPE(var, base, len, stride, esize)                               \
  BlockType var(base, len, stride, esize);                                         \
  if (var.error() != MPI_SUCCESS)                                                  \
    return mpi_failure(var.error(), "MPI_Type_create_resized", __FILE__, __LINE__)

class MpiBackend final : public Backend {
 public:
  MpiBackend(const pg_backend_context &ctx, std::size_t chunk)
      : comm_(ctx.comm), rank_(ctx.rank), size_(ctx.size), chunk_(chunk) {}

  bool implements(Coll) const override { return true; }

  pg_status run(const CollArgs &a) override {
    // The hot path of data-parallel training, a plain allreduce, goes straight
    // to MPI; everything else through `issue`.
    if (a.coll == Coll::allreduce && a.count <= chunk_ && a.op != PG_AVG) {
      MPI_Op op = MPI_OP_NULL;
      PG_CHECK(operation(a.dtype, a.op, &op));
      PG_MPI_CHECK(MPI_Allreduce(a.send == a.recv ? MPI_IN_PLACE : a.send, a.recv,
                                 static_cast<int>(a.count), datatype(a.dtype), op, comm_));
      return PG_OK;
    }
    if (a.coll == Coll::sendrecv) return sendrecv_blocking(a);
    Pending done;
    PG_CHECK(issue(a, nullptr, &done));
    done.finish_now();
    return PG_OK;
  }

  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out) override {
    auto pending = std::make_unique<Pending>();
    PG_CHECK(issue(a, pending.get(), pending.get()));
    *out = std::move(pending);
    return PG_OK;
  }

 private:
  int len(std::size_t count, std::size_t off) const {
    return static_cast<int>(count - off < chunk_ ? count - off : chunk_);
  }

  // Issues the MPI calls of `a`: blocking when `nb` is NULL, else into `nb`.
  // Staging buffers and finishing steps go to `steps` either way.
  pg_status issue(const CollArgs &a, Pending *nb, Pending *steps) {
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype);
    const char *send = static_cast<const char *>(a.send);
    char *recv = static_cast<char *>(a.recv);
    MPI_Op op = MPI_OP_NULL;
    bool reduces = a.coll == Coll::allreduce || a.coll == Coll::reduce || a.coll == Coll::reduce_scatter;
    if (reduces) PG_CHECK(operation(a.dtype, a.op, &op));
    const int size = size_;
    const pg_dtype dtype = a.dtype;
    auto average = [steps, dtype, size](void *buf, std::size_t count) {
      steps->then([=] { reduce_finish(dtype, PG_AVG, buf, count, size); });
    };

    switch (a.coll) {
      case Coll::allreduce: {
        const bool in_place = a.send == a.recv;
        for (std::size_t off = 0; off < a.count; off += chunk_)
          PG_MPI_CALL(nb, MPI_Allreduce, MPI_Iallreduce,
                      in_place ? MPI_IN_PLACE : send + off * esize, recv + off * esize,
                      len(a.count, off), type, op, comm_);
        if (a.op == PG_AVG) average(a.recv, a.count);
        return PG_OK;
      }
      case Coll::reduce: {
        const bool root = rank_ == a.root;
        // MPICH 4.0.2 crashes in MPI_Reduce with MPI_IN_PLACE at the root (its
        // reduce-scatter-gather algorithm, non-power-of-two sizes): the root
        // reduces from a copy of its input instead.
        if (root && a.send == a.recv) {
          std::vector<char> &copy = steps->stage(a.count * esize);
          std::memcpy(copy.data(), a.send, a.count * esize);
          send = copy.data();
        }
        for (std::size_t off = 0; off < a.count; off += chunk_)
          PG_MPI_CALL(nb, MPI_Reduce, MPI_Ireduce, send + off * esize,
                      root ? recv + off * esize : nullptr, len(a.count, off), type, op, a.root, comm_);
        if (a.op == PG_AVG && root) average(a.recv, a.count);
        return PG_OK;
      }
      case Coll::broadcast:
        for (std::size_t off = 0; off < a.count; off += chunk_)
          PG_MPI_CALL(nb, MPI_Bcast, MPI_Ibcast, recv + off * esize, len(a.count, off), type,
                      a.root, comm_);
        return PG_OK;
      case Coll::allgather: {
        const bool in_place = a.send == recv + rank_ * a.count * esize;
        if (a.count <= chunk_) {
          const int n = static_cast<int>(a.count);
          PG_MPI_CALL(nb, MPI_Allgather, MPI_Iallgather, in_place ? MPI_IN_PLACE : a.send, n, type,
                      a.recv, n, type, comm_);
          return PG_OK;
        }
        for (std::size_t off = 0; off < a.count; off += chunk_) {
          PG_BLOCK_TYPE(block, type, len(a.count, off), a.count, esize);
          PG_MPI_CALL(nb, MPI_Allgather, MPI_Iallgather,
                      in_place ? MPI_IN_PLACE : send + off * esize, len(a.count, off), type,
                      recv + off * esize, 1, block.get(), comm_);
        }
        return PG_OK;
      }
      case Coll::gather: {
        const bool root = rank_ == a.root;
        const bool in_place = root && a.send == recv + a.root * a.count * esize;
        if (a.count <= chunk_) {
          const int n = static_cast<int>(a.count);
          PG_MPI_CALL(nb, MPI_Gather, MPI_Igather, in_place ? MPI_IN_PLACE : a.send, n, type,
                      a.recv, n, type, a.root, comm_);
          return PG_OK;
        }
        for (std::size_t off = 0; off < a.count; off += chunk_) {
          PG_BLOCK_TYPE(block, type, len(a.count, off), a.count, esize);
          PG_MPI_CALL(nb, MPI_Gather, MPI_Igather, in_place ? MPI_IN_PLACE : send + off * esize,
                      len(a.count, off), type, root ? recv + off * esize : nullptr, 1, block.get(),
                      a.root, comm_);
        }
        return PG_OK;
      }
      case Coll::scatter: {
        const bool root = rank_ == a.root;
        const bool in_place = root && a.recv == send + a.root * a.count * esize;
        if (a.count <= chunk_) {
          const int n = static_cast<int>(a.count);
          PG_MPI_CALL(nb, MPI_Scatter, MPI_Iscatter, a.send, n, type,
                      in_place ? MPI_IN_PLACE : a.recv, n, type, a.root, comm_);
          return PG_OK;
        }
        for (std::size_t off = 0; off < a.count; off += chunk_) {
          PG_BLOCK_TYPE(block, type, len(a.count, off), a.count, esize);
          PG_MPI_CALL(nb, MPI_Scatter, MPI_Iscatter, root ? send + off * esize : nullptr, 1,
                      block.get(), in_place ? MPI_IN_PLACE : recv + off * esize, len(a.count, off),
                      type, a.root, comm_);
        }
        return PG_OK;
      }
      case Coll::alltoall: {
        // The library stages in-place alltoall, so send and recv never overlap here.
        if (a.count <= chunk_) {
          const int n = static_cast<int>(a.count);
          PG_MPI_CALL(nb, MPI_Alltoall, MPI_Ialltoall, a.send, n, type, a.recv, n, type, comm_);
          return PG_OK;
        }
        for (std::size_t off = 0; off < a.count; off += chunk_) {
          PG_BLOCK_TYPE(block, type, len(a.count, off), a.count, esize);
          PG_MPI_CALL(nb, MPI_Alltoall, MPI_Ialltoall, send + off * esize, 1, block.get(),
                      recv + off * esize, 1, block.get(), comm_);
        }
        return PG_OK;
      }
      case Coll::reduce_scatter:
        return reduce_scatter(a, type, op, esize, nb, steps);
      case Coll::barrier:
        PG_MPI_CHECK(nb ? MPI_Ibarrier(comm_, nb->add()) : MPI_Barrier(comm_));
        return PG_OK;
      case Coll::send:
        for (std::size_t off = 0; off < a.count || off == 0; off += chunk_) {
          PG_MPI_CALL(nb, MPI_Send, MPI_Isend, send + off * esize, len(a.count, off), type, a.root,
                      a.tag, comm_);
          if (a.count == 0) break;
        }
        return PG_OK;
      case Coll::recv:
        for (std::size_t off = 0; off < a.count || off == 0; off += chunk_) {
          if (nb)
            PG_MPI_CHECK(MPI_Irecv(recv + off * esize, len(a.count, off), type, a.root, a.tag,
                                   comm_, nb->add()));
          else
            PG_MPI_CHECK(MPI_Recv(recv + off * esize, len(a.count, off), type, a.root, a.tag,
                                  comm_, MPI_STATUS_IGNORE));
          if (a.count == 0) break;
        }
        return PG_OK;
      case Coll::sendrecv: {
        CollArgs recv_part = a, send_part = a;
        recv_part.coll = Coll::recv;
        recv_part.count = a.recv_count;
        recv_part.root = a.source;
        send_part.coll = Coll::send;
        PG_CHECK(issue(recv_part, nb, steps));
        return issue(send_part, nb, steps);
      }
    }
    return fail(PG_ERR_INTERNAL, "mpi backend: unknown operation");
  }

  // reduce_scatter: block r of the reduction lands on rank r.
  pg_status reduce_scatter(const CollArgs &a, MPI_Datatype type, MPI_Op op, std::size_t esize,
                           Pending *nb, Pending *steps) {
    const std::size_t n = a.count, bytes = n * esize;
    const char *send = static_cast<const char *>(a.send);
    char *recv = static_cast<char *>(a.recv);
    const bool in_place = send + rank_ * bytes == recv;
    if (in_place && n <= chunk_) {
      // MPI's in-place form leaves this rank's block at the start of the buffer;
      // it moves to its place at the end (the other blocks are scratch then).
      char *whole = recv - rank_ * bytes;
      PG_MPI_CALL(nb, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, MPI_IN_PLACE, whole,
                  static_cast<int>(n), type, op, comm_);
      if (rank_ != 0) steps->then([recv, whole, bytes] { std::memmove(recv, whole, bytes); });
    } else if (n <= chunk_) {
      PG_MPI_CALL(nb, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, a.send, recv,
                  static_cast<int>(n), type, op, comm_);
    } else {
      // Chunk by chunk, in place too: a chunk's result must not overwrite input
      // that later chunks still read, so it goes to a staging block first.
      char *out = recv;
      if (in_place) {
        out = steps->stage(bytes).data();
        steps->then([recv, out, bytes] { std::memcpy(recv, out, bytes); });
      }
      for (std::size_t off = 0; off < n; off += chunk_) {
        const std::size_t l = static_cast<std::size_t>(len(n, off));
        std::vector<char> &packed = steps->stage(size_ * l * esize);
        for (int r = 0; r < size_; ++r)
          std::memcpy(packed.data() + r * l * esize, send + (r * n + off) * esize, l * esize);
        PG_MPI_CALL(nb, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, packed.data(),
                    out + off * esize, static_cast<int>(l), type, op, comm_);
      }
    }
    if (a.op == PG_AVG) {
      const pg_dtype dtype = a.dtype;
      const int size = size_;
      steps->then([=] { reduce_finish(dtype, PG_AVG, recv, n, size); });
    }
    return PG_OK;
  }

  // Chunked sendrecv posts every piece at once, so unequal chunk counts on the
  // two sides cannot deadlock.
  pg_status sendrecv_blocking(const CollArgs &a) {
    if (a.count <= chunk_ && a.recv_count <= chunk_) {
      const MPI_Datatype type = datatype(a.dtype);
      PG_MPI_CHECK(MPI_Sendrecv(a.send, static_cast<int>(a.count), type, a.root, a.tag, a.recv,
                                static_cast<int>(a.recv_count), type, a.source, a.tag, comm_,
                                MPI_STATUS_IGNORE));
      return PG_OK;
    }
    std::unique_ptr<Request> request;
    PG_CHECK(start(a, &request));
    return request->wait();
  }

  MPI_Comm comm_;
  int rank_, size_;
  std::size_t chunk_;
};

}  // namespace

BackendEntry entry() {
  return {"mpi", PG_DEVICE_CPU,
          [](const pg_backend_context &ctx, const params::Settings &settings,
             std::unique_ptr<Backend> *out) -> pg_status {
            std::size_t chunk = settings.mpi_chunk_count ? settings.mpi_chunk_count : INT_MAX;
            *out = std::make_unique<MpiBackend>(ctx, chunk);
            return PG_OK;
          }};
}

}  // namespace pg::mpi
