// The mpi backend. Each collective is written once and issued either blocking
// (MPI_Allreduce, ...) or nonblocking (MPI_Iallreduce, ...) through PG_MPI_CALL,
// in one of four families: elementwise, block layout, reduce_scatter and
// point-to-point.
// Counts above the chunk limit (INT_MAX elements, or PGS_MPI_CHUNK_COUNT) are
// split into chunks: elementwise operations loop over slices; block-layout
// operations (allgather, gather, scatter, alltoall) use a block type resized to
// the full block stride, so every chunk is one MPI call without copies;
// reduce_scatter packs its chunk of every block into a staging buffer.
#include "backends/mpi/mpi_backend.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <vector>

#include "core/instance.h"
#include "mpi/types.h"
#include "util/dtype.h"
#include "util/params.h"
#include "util/reduce.h"
#include "util/status.h"

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
  // An array MPI reads until the operation completes (a nonblocking call's counts).
  template <typename T>
  const T *keep(std::vector<T> values) {
    auto held = std::make_shared<std::vector<T>>(std::move(values));
    kept_.push_back(held);
    return held->data();
  }

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
  std::vector<std::shared_ptr<void>> kept_;
  std::vector<std::function<void()>> finish_;
};

// Derived datatypes made for one call, freed when it has been issued (MPI
// lets pending operations that use them complete normally).
class MadeTypes {
 public:
  MadeTypes() = default;
  MadeTypes(const MadeTypes &) = delete;
  MadeTypes &operator=(const MadeTypes &) = delete;
  ~MadeTypes() {
    for (MPI_Datatype &t : types_) MPI_Type_free(&t);
  }
  void add(MPI_Datatype t) { types_.push_back(t); }

 private:
  std::vector<MPI_Datatype> types_;
};

// Issues the MPI calls of one operation: blocking, or nonblocking with their
// requests added to `pending`. Either way the staging buffers and the steps
// that finish the operation (PG_AVG's division, a copy out) go to `pending`.
struct Issue {
  Pending &pending;
  bool nonblocking;
};

// One MPI call of an operation, as `issue` says: Blocking(args...) or
// Nonblocking(args..., request).
#define PG_MPI_CALL(issue, Blocking, Nonblocking, ...)                                   \
  PG_MPI_CHECK((issue).nonblocking ? Nonblocking(__VA_ARGS__, (issue).pending.add())    \
                                   : Blocking(__VA_ARGS__))

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

// The settings of the mpi backend.
struct MpiSettings final : public BackendSettings {
  std::size_t chunk = INT_MAX;  // PGS_MPI_CHUNK_COUNT
  std::vector<std::string> given;

  params::Listings list() const override;
};

const params::Param<MpiSettings> kRows[] = {
    {"PGS_MPI_CHUNK_COUNT", "INT_MAX",
     "testing: the most elements per MPI call (exercises the large-count chunking with small buffers)",
     [](const char *n, const char *v, MpiSettings *s) {
       int chunk = 0;
       PG_CHECK(params::parse_positive_int(n, v, &chunk));
       s->chunk = static_cast<std::size_t>(chunk);
       return PG_OK;
     },
     [](const MpiSettings &s) { return std::to_string(s.chunk); }},
};

params::Listings MpiSettings::list() const { return params::list_rows(kRows, *this); }

pg_status read_settings(std::shared_ptr<const BackendSettings> *out) {
  auto settings = std::make_shared<MpiSettings>();
  PG_CHECK(params::read_rows(kRows, settings.get()));
  *out = std::move(settings);
  return PG_OK;
}

// One MPI call's share of a block-layout operation: `len` elements of each
// rank's block starting at element `off`, described on the all-blocks side as
// `blocks` elements of `block` (the plain type when the whole block fits in one
// call; else one block type resized to the full block stride).
struct BlockChunk {
  std::size_t off;
  int len;
  int blocks;
  MPI_Datatype block;
};

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
      PG_MPI_CHECK(MPI_Allreduce(a.in_place ? MPI_IN_PLACE : a.send, a.recv,
                                 static_cast<int>(a.count), datatype(a.dtype), op, comm_));
      return PG_OK;
    }
    if (a.coll == Coll::sendrecv) return sendrecv_blocking(a);
    Pending done;
    PG_CHECK(issue(a, Issue{done, false}));
    done.finish_now();
    return PG_OK;
  }

  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out) override {
    auto pending = std::make_unique<Pending>();
    PG_CHECK(issue(a, Issue{*pending, true}));
    *out = std::move(pending);
    return PG_OK;
  }

 private:
  int len(std::size_t count, std::size_t off) const {
    return static_cast<int>(count - off < chunk_ ? count - off : chunk_);
  }

  pg_status issue(const CollArgs &a, Issue io) {
    switch (a.coll) {
      case Coll::allreduce:
      case Coll::reduce:
      case Coll::broadcast: return elementwise(a, io);
      case Coll::allgather:
      case Coll::gather:
      case Coll::scatter:
      case Coll::alltoall: return block_layout(a, io);
      case Coll::reduce_scatter: return reduce_scatter(a, io);
      case Coll::send:
      case Coll::recv:
      case Coll::sendrecv: return point_to_point(a, io);
      case Coll::barrier:
        PG_MPI_CHECK(io.nonblocking ? MPI_Ibarrier(comm_, io.pending.add()) : MPI_Barrier(comm_));
        return PG_OK;
      case Coll::allgatherv:
      case Coll::reduce_scatterv:
      case Coll::alltoallv:
      case Coll::gatherv:
      case Coll::scatterv:
        if (size_ == 1) return uneven_alone(a);
        if (a.coll == Coll::allgatherv) return allgatherv(a, io);
        if (a.coll == Coll::reduce_scatterv) return reduce_scatterv_rounds(a, io);
#if MPI_VERSION >= 4
        if (chunk_ >= static_cast<std::size_t>(INT_MAX)) return uneven_large_count(a, io);
#endif
        return uneven_alltoallw(a, io);
    }
    return fail(PG_ERR_INTERNAL, "mpi backend: unknown operation");
  }

  // PG_AVG's division, once the sum is complete.
  void average(const CollArgs &a, void *buf, std::size_t count, Issue io) const {
    if (a.op != PG_AVG) return;
    const pg_dtype dtype = a.dtype;
    const int size = size_;
    io.pending.then([=] { reduce_finish(dtype, PG_AVG, buf, count, size); });
  }

  // allreduce, reduce and broadcast: element i depends on element i only, so
  // large counts go as consecutive slices.
  pg_status elementwise(const CollArgs &a, Issue io) {
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype);
    const char *send = static_cast<const char *>(a.send);
    char *recv = static_cast<char *>(a.recv);
    MPI_Op op = MPI_OP_NULL;
    if (a.coll != Coll::broadcast) PG_CHECK(operation(a.dtype, a.op, &op));
    const bool root = rank_ == a.root;
    if (a.coll == Coll::reduce && a.in_place) {
      // MPICH 4.0.2 crashes in MPI_Reduce with MPI_IN_PLACE at the root (its
      // reduce-scatter-gather algorithm, non-power-of-two sizes): the root
      // reduces from a copy of its input instead.
      std::vector<char> &copy = io.pending.stage(a.count * esize);
      std::memcpy(copy.data(), a.send, a.count * esize);
      send = copy.data();
    }
    for (std::size_t off = 0; off < a.count; off += chunk_) {
      const std::size_t at = off * esize;
      const int n = len(a.count, off);
      if (a.coll == Coll::allreduce)
        PG_MPI_CALL(io, MPI_Allreduce, MPI_Iallreduce, a.in_place ? MPI_IN_PLACE : send + at, recv + at,
                    n, type, op, comm_);
      else if (a.coll == Coll::reduce)
        PG_MPI_CALL(io, MPI_Reduce, MPI_Ireduce, send + at, root ? recv + at : nullptr, n, type, op,
                    a.root, comm_);
      else
        PG_MPI_CALL(io, MPI_Bcast, MPI_Ibcast, recv + at, n, type, a.root, comm_);
    }
    if (a.coll == Coll::allreduce || root) average(a, a.recv, a.count, io);
    return PG_OK;
  }

  // allgather, gather, scatter and alltoall: one block per rank. Chunks use a
  // block type resized to the block stride, so each chunk is one MPI call
  // without copies.
  pg_status block_layout(const CollArgs &a, Issue io) {
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype);
    const char *send = static_cast<const char *>(a.send);
    char *recv = static_cast<char *>(a.recv);
    const bool root = rank_ == a.root;
    auto one_call = [&](const BlockChunk &c) -> pg_status {
      const std::size_t at = c.off * esize;
      switch (a.coll) {
        case Coll::allgather:
          PG_MPI_CALL(io, MPI_Allgather, MPI_Iallgather, a.in_place ? MPI_IN_PLACE : send + at, c.len,
                      type, recv + at, c.blocks, c.block, comm_);
          return PG_OK;
        case Coll::gather:
          PG_MPI_CALL(io, MPI_Gather, MPI_Igather, a.in_place ? MPI_IN_PLACE : send + at, c.len, type,
                      root ? recv + at : nullptr, c.blocks, c.block, a.root, comm_);
          return PG_OK;
        case Coll::scatter:
          PG_MPI_CALL(io, MPI_Scatter, MPI_Iscatter, root ? send + at : nullptr, c.blocks, c.block,
                      a.in_place ? MPI_IN_PLACE : recv + at, c.len, type, a.root, comm_);
          return PG_OK;
        default:  // alltoall; the library stages it in place, so send and recv never overlap
          PG_MPI_CALL(io, MPI_Alltoall, MPI_Ialltoall, send + at, c.blocks, c.block, recv + at, c.blocks,
                      c.block, comm_);
          return PG_OK;
      }
    };
    if (a.count <= chunk_) {
      const int n = static_cast<int>(a.count);
      return one_call({0, n, n, type});
    }
    for (std::size_t off = 0; off < a.count; off += chunk_) {
      PG_BLOCK_TYPE(block, type, len(a.count, off), a.count, esize);
      PG_CHECK(one_call({off, len(a.count, off), 1, block.get()}));
    }
    return PG_OK;
  }

  // reduce_scatter: block r of the reduction lands on rank r.
  pg_status reduce_scatter(const CollArgs &a, Issue io) {
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype);
    MPI_Op op = MPI_OP_NULL;
    PG_CHECK(operation(a.dtype, a.op, &op));
    const std::size_t n = a.count, bytes = n * esize;
    const char *send = static_cast<const char *>(a.send);
    char *recv = static_cast<char *>(a.recv);
    if (a.in_place && n <= chunk_) {
      // MPI's in-place form leaves this rank's block at the start of the buffer;
      // it moves to its place at the end (the other blocks are scratch then).
      char *whole = recv - rank_ * bytes;
      PG_MPI_CALL(io, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, MPI_IN_PLACE, whole,
                  static_cast<int>(n), type, op, comm_);
      if (rank_ != 0) io.pending.then([recv, whole, bytes] { std::memmove(recv, whole, bytes); });
    } else if (n <= chunk_) {
      PG_MPI_CALL(io, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, a.send, recv,
                  static_cast<int>(n), type, op, comm_);
    } else {
      // Chunk by chunk, in place too: a chunk's result must not overwrite input
      // that later chunks still read, so it goes to a staging block first.
      char *out = recv;
      if (a.in_place) {
        out = io.pending.stage(bytes).data();
        io.pending.then([recv, out, bytes] { std::memcpy(recv, out, bytes); });
      }
      for (std::size_t off = 0; off < n; off += chunk_) {
        const std::size_t l = static_cast<std::size_t>(len(n, off));
        std::vector<char> &packed = io.pending.stage(size_ * l * esize);
        for (int r = 0; r < size_; ++r)
          std::memcpy(packed.data() + r * l * esize, send + (r * n + off) * esize, l * esize);
        PG_MPI_CALL(io, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, packed.data(),
                    out + off * esize, static_cast<int>(l), type, op, comm_);
      }
    }
    average(a, recv, n, io);
    return PG_OK;
  }

  // --- the uneven collectives ------------------------------------------------
  // Whatever the sizes, every rank takes the same path: which path is decided
  // by what every rank knows alike (the MPI, PGS_MPI_CHUNK_COUNT, and the
  // counts of allgatherv and reduce_scatterv, which are the same on every
  // rank). allgatherv and reduce_scatterv: MPI's int forms while the whole
  // buffer is within the chunk limit; beyond it allgatherv goes as one
  // MPI_Alltoallw, and reduce_scatterv as MPI_Reduce_scatter in rounds.
  // alltoallv, gatherv and scatterv: MPI-4's large-count forms where the MPI
  // has them, else MPI_Alltoallw, whose per-peer datatypes carry counts and
  // displacements of any size. (MPICH 4.0.2's MPI_Allgatherv_c and
  // MPI_Reduce_scatter_c crash above INT_MAX elements: docs/known-issues.md.)

  // allgatherv: MPI_Allgatherv while the receive blocks total at most the
  // chunk limit. This rank's displacements are its own business: when one is
  // beyond an int, the blocks arrive packed in a staging buffer and are
  // copied to their places.
  pg_status allgatherv(const CollArgs &a, Issue io) {
    const VCounts &v = *a.v;
    if (v.recv_total > chunk_) return uneven_alltoallw(a, io);
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t es = dtype_size(a.dtype), p = static_cast<std::size_t>(size_);
    const int *counts = io.pending.keep(std::vector<int>(v.recv_counts.begin(), v.recv_counts.end()));
    bool fits = true;
    for (std::size_t r = 0; r < p; ++r) fits = fits && v.recv_displs[r] <= static_cast<std::size_t>(INT_MAX);
    if (fits) {
      const int *displs = io.pending.keep(std::vector<int>(v.recv_displs.begin(), v.recv_displs.end()));
      PG_MPI_CALL(io, MPI_Allgatherv, MPI_Iallgatherv, a.in_place ? MPI_IN_PLACE : a.send, static_cast<int>(a.count),
                  type, a.recv, counts, displs, type, comm_);
      return PG_OK;
    }
    std::vector<int> packed(p);
    std::size_t at = 0;
    for (std::size_t r = 0; r < p; ++r) {
      packed[r] = static_cast<int>(at);
      at += v.recv_counts[r];
    }
    char *stage = io.pending.stage(at * es + 1).data();
    char *recv = static_cast<char *>(a.recv);
    const void *send = a.in_place ? recv + v.recv_displs[static_cast<std::size_t>(rank_)] * es : a.send;
    const int *displs = io.pending.keep(packed);
    PG_MPI_CALL(io, MPI_Allgatherv, MPI_Iallgatherv, send, static_cast<int>(a.count), type, stage, counts, displs,
                type, comm_);
    std::shared_ptr<const VCounts> layout = a.v;
    io.pending.then([layout, stage, recv, es] {
      std::size_t from = 0;
      for (std::size_t r = 0; r < layout->recv_counts.size(); ++r) {
        const std::size_t bytes = layout->recv_counts[r] * es;
        if (bytes > 0) std::memmove(recv + layout->recv_displs[r] * es, stage + from, bytes);
        from += bytes;
      }
    });
    return PG_OK;
  }

  // One rank: its own blocks, copied here (MPICH 4.0.2's MPI_Allgatherv on
  // one rank ignores the displacement, docs/known-issues.md).
  pg_status uneven_alone(const CollArgs &a) const {
    const std::size_t es = dtype_size(a.dtype);
    const VCounts &v = *a.v;
    const char *send = static_cast<const char *>(a.send);
    char *recv = static_cast<char *>(a.recv);
    auto copy = [](char *to, const char *from, std::size_t bytes) {
      if (bytes > 0 && to != from) std::memmove(to, from, bytes);
    };
    switch (a.coll) {
      case Coll::allgatherv:
      case Coll::gatherv: copy(recv + v.recv_displs[0] * es, send, a.count * es); break;
      case Coll::reduce_scatterv: copy(recv, send, a.count * es); break;  // PG_AVG over one rank: the value
      case Coll::alltoallv: copy(recv + v.recv_displs[0] * es, send + v.send_displs[0] * es, v.send_counts[0] * es); break;
      case Coll::scatterv: copy(recv, send + v.send_displs[0] * es, a.count * es); break;
      default: return fail(PG_ERR_INTERNAL, "mpi backend: not an uneven collective");
    }
    return PG_OK;
  }

#if MPI_VERSION >= 4
  // alltoallv, gatherv and scatterv with MPI-4's large-count forms: counts as
  // MPI_Count, displacements as MPI_Aint.
  pg_status uneven_large_count(const CollArgs &a, Issue io) {
    const MPI_Datatype type = datatype(a.dtype);
    const VCounts &v = *a.v;
    const bool root = rank_ == a.root;
    auto counts = [&](const std::vector<std::size_t> &c) -> const MPI_Count * {
      return c.empty() ? nullptr : io.pending.keep(std::vector<MPI_Count>(c.begin(), c.end()));
    };
    auto displs = [&](const std::vector<std::size_t> &d) -> const MPI_Aint * {
      return d.empty() ? nullptr : io.pending.keep(std::vector<MPI_Aint>(d.begin(), d.end()));
    };
    const MPI_Count n = static_cast<MPI_Count>(a.count);
    switch (a.coll) {
      case Coll::alltoallv:
        PG_MPI_CALL(io, MPI_Alltoallv_c, MPI_Ialltoallv_c, a.send, counts(v.send_counts), displs(v.send_displs), type,
                    a.recv, counts(v.recv_counts), displs(v.recv_displs), type, comm_);
        return PG_OK;
      case Coll::gatherv:
        PG_MPI_CALL(io, MPI_Gatherv_c, MPI_Igatherv_c, a.in_place ? MPI_IN_PLACE : a.send, n, type,
                    root ? a.recv : nullptr, counts(v.recv_counts), displs(v.recv_displs), type, a.root, comm_);
        return PG_OK;
      case Coll::scatterv:
        PG_MPI_CALL(io, MPI_Scatterv_c, MPI_Iscatterv_c, root ? a.send : nullptr, counts(v.send_counts),
                    displs(v.send_displs), type, a.in_place ? MPI_IN_PLACE : a.recv, n, type, a.root, comm_);
        return PG_OK;
      default:
        return fail(PG_ERR_INTERNAL, "mpi backend: not an uneven collective");
    }
  }
#endif

  // One peer's block on one side of an MPI_Alltoallw: `count` elements at
  // element `displ` of the buffer. Within the chunk limit and with a byte
  // displacement that fits an int, the plain type; otherwise one datatype of
  // chunks placed at byte displacements (MPI_Aint), sent as one item.
  pg_status w_block(std::size_t count, std::size_t displ, std::size_t esize, MPI_Datatype base, int *c, int *d,
                    MPI_Datatype *t, MadeTypes *made) const {
    *c = 0, *d = 0, *t = base;
    if (count == 0) return PG_OK;
    if (count <= chunk_ && displ * esize <= static_cast<std::size_t>(INT_MAX)) {
      *c = static_cast<int>(count);
      *d = static_cast<int>(displ * esize);
      return PG_OK;
    }
    const std::size_t pieces = (count + chunk_ - 1) / chunk_;
    if (pieces > static_cast<std::size_t>(INT_MAX))
      return fail(PG_ERR_INVALID_ARGUMENT, "mpi backend: %zu elements make more than INT_MAX chunks of %zu", count,
                  chunk_);
    std::vector<int> lens(pieces);
    std::vector<MPI_Aint> at(pieces);
    for (std::size_t k = 0; k < pieces; ++k) {
      lens[k] = static_cast<int>(std::min(chunk_, count - k * chunk_));
      at[k] = static_cast<MPI_Aint>((displ + k * chunk_) * esize);
    }
    int err = MPI_Type_create_hindexed(static_cast<int>(pieces), lens.data(), at.data(), base, t);
    if (err != MPI_SUCCESS) return mpi_failure(err, "MPI_Type_create_hindexed", __FILE__, __LINE__);
    made->add(*t);
    err = MPI_Type_commit(t);
    if (err != MPI_SUCCESS) return mpi_failure(err, "MPI_Type_commit", __FILE__, __LINE__);
    *c = 1;
    return PG_OK;
  }

  // allgatherv, alltoallv, gatherv and scatterv as one MPI_Alltoallw, each
  // rank's blocks to and from each peer described on its own. In place, the
  // block already in place is neither sent nor received.
  pg_status uneven_alltoallw(const CollArgs &a, Issue io) {
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype), p = static_cast<std::size_t>(size_);
    const std::size_t me = static_cast<std::size_t>(rank_), root = static_cast<std::size_t>(a.root);
    const VCounts &v = *a.v;
    std::vector<int> sc(p, 0), sd(p, 0), rc(p, 0), rd(p, 0);
    std::vector<MPI_Datatype> st(p, type), rt(p, type);
    MadeTypes made;
    auto to = [&](std::size_t q, std::size_t count, std::size_t displ) {
      return w_block(count, displ, esize, type, &sc[q], &sd[q], &st[q], &made);
    };
    auto from = [&](std::size_t q, std::size_t count, std::size_t displ) {
      return w_block(count, displ, esize, type, &rc[q], &rd[q], &rt[q], &made);
    };
    const void *send = a.send;
    void *recv = a.recv;
    switch (a.coll) {
      case Coll::allgatherv:
        for (std::size_t q = 0; q < p; ++q) {
          if (a.in_place && q == me) continue;
          PG_CHECK(to(q, a.count, 0));
          PG_CHECK(from(q, v.recv_counts[q], v.recv_displs[q]));
        }
        break;
      case Coll::alltoallv:
        for (std::size_t q = 0; q < p; ++q) {
          PG_CHECK(to(q, v.send_counts[q], v.send_displs[q]));
          PG_CHECK(from(q, v.recv_counts[q], v.recv_displs[q]));
        }
        break;
      case Coll::gatherv:
        if (!(a.in_place && me == root)) PG_CHECK(to(root, a.count, 0));
        if (me == root) {
          for (std::size_t q = 0; q < p; ++q)
            if (!(a.in_place && q == me)) PG_CHECK(from(q, v.recv_counts[q], v.recv_displs[q]));
        } else {
          recv = nullptr;
        }
        break;
      case Coll::scatterv:
        if (!(a.in_place && me == root)) PG_CHECK(from(root, a.count, 0));
        if (me == root) {
          for (std::size_t q = 0; q < p; ++q)
            if (!(a.in_place && q == me)) PG_CHECK(to(q, v.send_counts[q], v.send_displs[q]));
        } else {
          send = nullptr;
        }
        break;
      default:
        return fail(PG_ERR_INTERNAL, "mpi backend: not an MPI_Alltoallw collective");
    }
    Pending &kept = io.pending;
    PG_MPI_CALL(io, MPI_Alltoallw, MPI_Ialltoallw, send, kept.keep(std::move(sc)), kept.keep(std::move(sd)),
                kept.keep(std::move(st)), recv, kept.keep(std::move(rc)), kept.keep(std::move(rd)),
                kept.keep(std::move(rt)), comm_);
    return PG_OK;
  }

  // reduce_scatterv with int counts: one MPI_Reduce_scatter when the whole
  // send buffer is within the chunk limit (its counts are the same on every
  // rank, so every rank decides alike); otherwise rounds, each moving at most
  // chunk/P elements of every block, packed into a staging buffer.
  pg_status reduce_scatterv_rounds(const CollArgs &a, Issue io) {
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype), p = static_cast<std::size_t>(size_);
    const VCounts &v = *a.v;
    MPI_Op op = MPI_OP_NULL;
    PG_CHECK(operation(a.dtype, a.op, &op));
    const std::size_t bytes = a.count * esize;
    const char *send = static_cast<const char *>(a.send);
    char *recv = static_cast<char *>(a.recv);
    if (v.recv_total <= chunk_) {
      const int *counts = io.pending.keep(std::vector<int>(v.recv_counts.begin(), v.recv_counts.end()));
      if (a.in_place) {
        // Out of place into a staging block, not MPI_IN_PLACE: MPI then moves
        // this rank's block to the start of the buffer, and MPICH 4.0.2 does it
        // with memcpy, which aborts (or corrupts) when the block is longer than
        // its displacement (docs/known-issues.md).
        char *out = io.pending.stage(bytes + 1).data();
        PG_MPI_CALL(io, MPI_Reduce_scatter, MPI_Ireduce_scatter, a.send, out, counts, type, op, comm_);
        io.pending.then([recv, out, bytes] { std::memcpy(recv, out, bytes); });
      } else {
        PG_MPI_CALL(io, MPI_Reduce_scatter, MPI_Ireduce_scatter, a.send, recv, counts, type, op, comm_);
      }
    } else {
      // In place too, a round writes only elements of this rank's block that
      // it alone reads (packed before its call): no staging of the result.
      char *out = recv;
      std::vector<char> *reused = nullptr;  // blocking: one packing buffer for every round
      const std::size_t piece = std::max<std::size_t>(1, chunk_ / p);
      const std::size_t most = *std::max_element(v.recv_counts.begin(), v.recv_counts.end());
      for (std::size_t off = 0; off < most; off += piece) {
        std::vector<int> counts(p);
        std::size_t total = 0;
        for (std::size_t r = 0; r < p; ++r) {
          const std::size_t c = v.recv_counts[r] > off ? std::min(piece, v.recv_counts[r] - off) : 0;
          counts[r] = static_cast<int>(c);
          total += c;
        }
        if (!reused || io.nonblocking) reused = &io.pending.stage(total * esize + 1);
        std::vector<char> &packed = *reused;
        if (packed.size() < total * esize + 1) packed.resize(total * esize + 1);
        std::size_t at = 0;
        for (std::size_t r = 0; r < p; ++r) {
          const std::size_t c = static_cast<std::size_t>(counts[r]);
          std::memcpy(packed.data() + at * esize, send + (v.send_displs[r] + off) * esize, c * esize);
          at += c;
        }
        const bool mine = v.recv_counts[static_cast<std::size_t>(rank_)] > off;
        PG_MPI_CALL(io, MPI_Reduce_scatter, MPI_Ireduce_scatter, packed.data(), mine ? out + off * esize : out,
                    io.pending.keep(std::move(counts)), type, op, comm_);
      }
    }
    average(a, recv, a.count, io);
    return PG_OK;
  }

  // send, recv and sendrecv. A message of zero elements is still one message.
  pg_status point_to_point(const CollArgs &a, Issue io) {
    if (a.coll == Coll::sendrecv) {
      CollArgs recv_part = a, send_part = a;
      recv_part.coll = Coll::recv;
      recv_part.count = a.recv_count;
      recv_part.peer = a.source;
      send_part.coll = Coll::send;
      PG_CHECK(point_to_point(recv_part, io));
      return point_to_point(send_part, io);
    }
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype);
    for (std::size_t off = 0; off < a.count || off == 0; off += chunk_) {
      const int n = len(a.count, off);
      if (a.coll == Coll::send)
        PG_MPI_CALL(io, MPI_Send, MPI_Isend, static_cast<const char *>(a.send) + off * esize, n, type,
                    a.peer, a.tag, comm_);
      else if (io.nonblocking)
        PG_MPI_CHECK(MPI_Irecv(static_cast<char *>(a.recv) + off * esize, n, type, a.peer, a.tag, comm_,
                               io.pending.add()));
      else
        PG_MPI_CHECK(MPI_Recv(static_cast<char *>(a.recv) + off * esize, n, type, a.peer, a.tag, comm_,
                              MPI_STATUS_IGNORE));
      if (a.count == 0) break;
    }
    return PG_OK;
  }

  // Chunked sendrecv posts every piece at once, so unequal chunk counts on the
  // two sides cannot deadlock.
  pg_status sendrecv_blocking(const CollArgs &a) {
    if (a.count <= chunk_ && a.recv_count <= chunk_) {
      const MPI_Datatype type = datatype(a.dtype);
      PG_MPI_CHECK(MPI_Sendrecv(a.send, static_cast<int>(a.count), type, a.peer, a.tag, a.recv,
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
  BackendEntry e;
  e.name = "mpi";
  e.devices = PG_DEVICE_CPU;
  e.read_settings = read_settings;
  e.make = [](const MakeArgs &args, std::unique_ptr<Backend> *out) -> pg_status {
    *out = std::make_unique<MpiBackend>(args.ctx, args.settings_of<MpiSettings>("mpi").chunk);
    return PG_OK;
  };
  return e;
}

}  // namespace pg::mpi
