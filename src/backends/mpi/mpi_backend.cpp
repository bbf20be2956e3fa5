// The mpi backend. Each collective is written once and issued either blocking
// (MPI_Allreduce, ...) or nonblocking (MPI_Iallreduce, ...) through PG_MPI_CALL,
// in one of four families: elementwise, block layout, reduce_scatter and
// point-to-point; the uneven collectives are in uneven.cpp.
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

#include "backends/mpi/issue.h"
#include "core/instance.h"
#include "mpi/types.h"
#include "util/dtype.h"
#include "util/params.h"
#include "util/poll.h"
#include "util/reduce.h"
#include "util/status.h"

namespace pg::mpi {
namespace {

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
  bool block = false;           // PGS_MPI_WAIT=block
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
    // MPI matches a blocking collective with a blocking one only: ranks agree.
    {"PGS_MPI_WAIT", "poll",
     "poll: blocking calls are issued nonblocking and polled, so pg_strategy_abort ends them; block: MPI's "
     "blocking calls (faster for small messages; abort cannot end them)",
     [](const char *n, const char *v, MpiSettings *s) {
       int mode = 0;
       PG_CHECK(params::parse_choice(n, v, {"poll", "block"}, &mode));
       s->block = mode == 1;
       return PG_OK;
     },
     [](const MpiSettings &s) { return std::string(s.block ? "block" : "poll"); }},
};

params::Listings MpiSettings::list() const { return params::list_rows(kRows, *this); }

pg_status read_settings(std::shared_ptr<const BackendSettings> *out) {
  auto settings = std::make_shared<MpiSettings>();
  PG_CHECK(params::read_rows(kRows, settings.get()));
  *out = std::move(settings);
  return PG_OK;
}

}  // namespace

void average(const Group &g, const CollArgs &a, void *buf, std::size_t count, Issue io) {
  if (a.op != PG_AVG) return;
  const pg_dtype dtype = a.dtype;
  const int size = g.size;
  io.pending.then([=] { reduce_finish(dtype, PG_AVG, buf, count, size); });
}

namespace {

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
  MpiBackend(const pg_backend_context &ctx, const MpiSettings &settings)
      : g_{ctx.comm, ctx.rank, ctx.size, settings.chunk}, block_(settings.block) {}

  bool implements(Coll) const override { return true; }
  bool receives_from_any() const override { return true; }

  // PGS_MPI_WAIT=poll (the default): a blocking call is issued nonblocking and
  // polled (util/poll.h), because MPI cannot interrupt a blocking call and
  // pg_strategy_abort from another thread must end the wait. block: MPI's own
  // blocking calls, faster for small messages (MPICH's nonblocking algorithms
  // cost more: docs/performance.md), which abort cannot end.
  pg_status run(const CollArgs &a) override {
    // The hot paths, a plain allreduce (data-parallel training) and broadcast,
    // go straight to MPI, with no allocation; everything else through `issue`.
    if (a.count <= g_.chunk && ((a.coll == Coll::allreduce && a.op != PG_AVG) || a.coll == Coll::broadcast))
      return one_call(a);
    if (is_point_to_point(a.coll) && !block_) return point_to_point_polled(a);
    if (a.coll == Coll::sendrecv) return sendrecv_blocking(a);
    const bool nonblocking = !block_ && !is_point_to_point(a.coll) && !stays_blocking(a);
    Pending done;
    PG_CHECK(issue(a, Issue{done, nonblocking}));
    if (nonblocking) return done.wait();
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
  // Open MPI 4.1's nonblocking collectives (libnbc) give wrong results on
  // buffers above 2 GiB (docs/known-issues.md): there such calls stay
  // blocking. A blocking call does not match a nonblocking one, so every rank
  // must choose alike, from a size every rank knows; alltoallv, gatherv and
  // scatterv, whose buffers differ from rank to rank, always stay blocking there.
  bool stays_blocking(const CollArgs &a) const {
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
    if (a.coll == Coll::alltoallv || a.coll == Coll::gatherv || a.coll == Coll::scatterv) return true;
    return buffer_bytes(a, g_.size) > static_cast<std::uint64_t>(INT_MAX);
#else
    static_cast<void>(a);
    return false;
#endif
  }

  // allreduce or broadcast as one MPI call.
  pg_status one_call(const CollArgs &a) {
    const MPI_Datatype type = datatype(a.dtype);
    const int n = static_cast<int>(a.count);
    const bool allreduce = a.coll == Coll::allreduce;
    MPI_Op op = MPI_OP_NULL;
    if (allreduce) PG_CHECK(operation(a.dtype, a.op, &op));
    const void *send = a.in_place ? MPI_IN_PLACE : a.send;
    if (block_ || stays_blocking(a)) {
      PG_MPI_CHECK(allreduce ? MPI_Allreduce(send, a.recv, n, type, op, g_.comm)
                             : MPI_Bcast(a.recv, n, type, a.root, g_.comm));
      return PG_OK;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    PG_MPI_CHECK(allreduce ? MPI_Iallreduce(send, a.recv, n, type, op, g_.comm, &request)
                           : MPI_Ibcast(a.recv, n, type, a.root, g_.comm, &request));
    bool done = false;
    return poll(
        [&request](bool *d) {
          int flag = 0;
          PG_MPI_CHECK(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
          *d = flag != 0;
          return PG_OK;
        },
        Until{}, &done);
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
        PG_MPI_CHECK(io.nonblocking ? MPI_Ibarrier(g_.comm, io.pending.add()) : MPI_Barrier(g_.comm));
        return PG_OK;
      case Coll::allgatherv:
      case Coll::reduce_scatterv:
      case Coll::alltoallv:
      case Coll::gatherv:
      case Coll::scatterv: return issue_uneven(g_, a, io);
    }
    return fail(PG_ERR_INTERNAL, "mpi backend: unknown operation");
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
    const bool root = g_.rank == a.root;
    if (a.coll == Coll::reduce && a.in_place) {
      // MPICH 4.0.2 crashes in MPI_Reduce with MPI_IN_PLACE at the root (its
      // reduce-scatter-gather algorithm, non-power-of-two sizes): the root
      // reduces from a copy of its input instead.
      std::vector<char> &copy = io.pending.stage(a.count * esize);
      std::memcpy(copy.data(), a.send, a.count * esize);
      send = copy.data();
    }
    for (std::size_t off = 0; off < a.count; off += g_.chunk) {
      const std::size_t at = off * esize;
      const int n = g_.len(a.count, off);
      if (a.coll == Coll::allreduce)
        PG_MPI_CALL(io, MPI_Allreduce, MPI_Iallreduce, a.in_place ? MPI_IN_PLACE : send + at, recv + at,
                    n, type, op, g_.comm);
      else if (a.coll == Coll::reduce)
        PG_MPI_CALL(io, MPI_Reduce, MPI_Ireduce, send + at, root ? recv + at : nullptr, n, type, op,
                    a.root, g_.comm);
      else
        PG_MPI_CALL(io, MPI_Bcast, MPI_Ibcast, recv + at, n, type, a.root, g_.comm);
    }
    if (a.coll == Coll::allreduce || root) average(g_, a, a.recv, a.count, io);
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
    const bool root = g_.rank == a.root;
    auto one_call = [&](const BlockChunk &c) -> pg_status {
      const std::size_t at = c.off * esize;
      switch (a.coll) {
        case Coll::allgather:
          PG_MPI_CALL(io, MPI_Allgather, MPI_Iallgather, a.in_place ? MPI_IN_PLACE : send + at, c.len,
                      type, recv + at, c.blocks, c.block, g_.comm);
          return PG_OK;
        case Coll::gather:
          PG_MPI_CALL(io, MPI_Gather, MPI_Igather, a.in_place ? MPI_IN_PLACE : send + at, c.len, type,
                      root ? recv + at : nullptr, c.blocks, c.block, a.root, g_.comm);
          return PG_OK;
        case Coll::scatter:
          PG_MPI_CALL(io, MPI_Scatter, MPI_Iscatter, root ? send + at : nullptr, c.blocks, c.block,
                      a.in_place ? MPI_IN_PLACE : recv + at, c.len, type, a.root, g_.comm);
          return PG_OK;
        default:  // alltoall; the library stages it in place, so send and recv never overlap
          PG_MPI_CALL(io, MPI_Alltoall, MPI_Ialltoall, send + at, c.blocks, c.block, recv + at, c.blocks,
                      c.block, g_.comm);
          return PG_OK;
      }
    };
    if (a.count <= g_.chunk) {
      const int n = static_cast<int>(a.count);
      return one_call({0, n, n, type});
    }
    for (std::size_t off = 0; off < a.count; off += g_.chunk) {
      PG_BLOCK_TYPE(block, type, g_.len(a.count, off), a.count, esize);
      PG_CHECK(one_call({off, g_.len(a.count, off), 1, block.get()}));
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
    if (a.in_place && n <= g_.chunk) {
      // MPI's in-place form leaves this rank's block at the start of the buffer;
      // it moves to its place at the end (the other blocks are scratch then).
      char *whole = recv - g_.rank * bytes;
      PG_MPI_CALL(io, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, MPI_IN_PLACE, whole,
                  static_cast<int>(n), type, op, g_.comm);
      if (g_.rank != 0) io.pending.then([recv, whole, bytes] { std::memmove(recv, whole, bytes); });
    } else if (n <= g_.chunk) {
      PG_MPI_CALL(io, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, a.send, recv,
                  static_cast<int>(n), type, op, g_.comm);
    } else {
      // Chunk by chunk, in place too: a chunk's result must not overwrite input
      // that later chunks still read, so it goes to a staging block first.
      char *out = recv;
      if (a.in_place) {
        out = io.pending.stage(bytes).data();
        io.pending.then([recv, out, bytes] { std::memcpy(recv, out, bytes); });
      }
      for (std::size_t off = 0; off < n; off += g_.chunk) {
        const std::size_t l = static_cast<std::size_t>(g_.len(n, off));
        std::vector<char> &packed = io.pending.stage(g_.size * l * esize);
        for (int r = 0; r < g_.size; ++r)
          std::memcpy(packed.data() + r * l * esize, send + (r * n + off) * esize, l * esize);
        PG_MPI_CALL(io, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, packed.data(),
                    out + off * esize, static_cast<int>(l), type, op, g_.comm);
      }
    }
    average(g_, a, recv, n, io);
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
    const int peer = a.peer == PG_ANY_SOURCE ? MPI_ANY_SOURCE : a.peer;
    if (a.coll == Coll::recv && io.nonblocking) {
      // Chunks from any source could each match another sender's message: no
      // native start, so the library runs the blocking receive (whose later
      // chunks follow the first one's sender) on the receives lane's worker.
      if (peer == MPI_ANY_SOURCE && a.count > g_.chunk) return PG_ERR_UNSUPPORTED;
      io.pending.report_source();
    }
    for (std::size_t off = 0; off < a.count || off == 0; off += g_.chunk) {
      const int n = g_.len(a.count, off);
      if (a.coll == Coll::send)
        PG_MPI_CALL(io, MPI_Send, MPI_Isend, static_cast<const char *>(a.send) + off * esize, n, type,
                    a.peer, a.tag, g_.comm);
      else if (io.nonblocking)
        PG_MPI_CHECK(MPI_Irecv(static_cast<char *>(a.recv) + off * esize, n, type, peer, a.tag, g_.comm,
                               io.pending.add()));
      else
        PG_MPI_CHECK(MPI_Recv(static_cast<char *>(a.recv) + off * esize, n, type, peer, a.tag, g_.comm,
                              MPI_STATUS_IGNORE));
      if (a.count == 0) break;
    }
    return PG_OK;
  }

  // Blocking point-to-point, polled like the collectives (so that an abort or
  // a failed peer ends it, and the thread's other works move while it waits):
  // sends are issued nonblocking and waited for; a receive waits for each
  // chunk's message with MPI_Iprobe and then takes it with MPI_Recv. (Not
  // MPI_Irecv and MPI_Test, nor MPI_Improbe and MPI_Mrecv: MPICH 4.0.2 reports
  // a truncated receive completed that way to MPI_COMM_WORLD's error handler,
  // which ends the job; MPI_Recv reports it to the communicator's, a status.
  // The probed message is the one MPI_Recv takes: one thread receives on a
  // strategy at a time, and receives posted before match before a probe sees
  // a message.) A sendrecv posts its sends first, so that unequal chunk counts
  // on the two sides cannot deadlock.
  pg_status point_to_point_polled(const CollArgs &a) {
    if (a.coll == Coll::recv) return receive(a);
    CollArgs send_part = a;
    send_part.coll = Coll::send;
    Pending sends;
    PG_CHECK(point_to_point(send_part, Issue{sends, true}));
    if (a.coll == Coll::sendrecv) {
      CollArgs recv_part = a;
      recv_part.coll = Coll::recv;
      recv_part.count = a.recv_count;
      recv_part.peer = a.source;
      PG_CHECK(receive(recv_part));
    }
    return sends.wait();
  }

  pg_status receive(const CollArgs &a) {
    const MPI_Datatype type = datatype(a.dtype);
    const std::size_t esize = dtype_size(a.dtype);
    int from = a.peer == PG_ANY_SOURCE ? MPI_ANY_SOURCE : a.peer;  // the first chunk's sender sends the rest
    for (std::size_t off = 0; off < a.count || off == 0; off += g_.chunk) {
      bool arrived = false;
      MPI_Status status;
      PG_CHECK(poll(
          [&](bool *d) {
            int found = 0;
            PG_MPI_CHECK(MPI_Iprobe(from, a.tag, g_.comm, &found, &status));
            *d = found != 0;
            return PG_OK;
          },
          Until{}, &arrived));
      from = status.MPI_SOURCE;
      PG_MPI_CHECK(MPI_Recv(static_cast<char *>(a.recv) + off * esize, g_.len(a.count, off), type, from, a.tag,
                            g_.comm, MPI_STATUS_IGNORE));
      if (a.count == 0) break;
    }
    return PG_OK;
  }

  // PGS_MPI_WAIT=block. Chunked sendrecv posts every piece at once, so unequal
  // chunk counts on the two sides cannot deadlock.
  pg_status sendrecv_blocking(const CollArgs &a) {
    if (a.count <= g_.chunk && a.recv_count <= g_.chunk) {
      const MPI_Datatype type = datatype(a.dtype);
      PG_MPI_CHECK(MPI_Sendrecv(a.send, static_cast<int>(a.count), type, a.peer, a.tag, a.recv,
                                static_cast<int>(a.recv_count), type, a.source, a.tag, g_.comm,
                                MPI_STATUS_IGNORE));
      return PG_OK;
    }
    std::unique_ptr<Request> request;
    PG_CHECK(start(a, &request));
    return request->wait();
  }

  Group g_;
  bool block_;  // PGS_MPI_WAIT=block
};

}  // namespace

BackendEntry entry() {
  BackendEntry e;
  e.name = "mpi";
  e.devices = PG_DEVICE_CPU;
  e.default_for = PG_DEVICE_CPU;
  e.read_settings = read_settings;
  e.make = [](const MakeArgs &args, std::unique_ptr<Backend> *out) -> pg_status {
    *out = std::make_unique<MpiBackend>(args.ctx, args.settings_of<MpiSettings>("mpi"));
    return PG_OK;
  };
  return e;
}

}  // namespace pg::mpi
