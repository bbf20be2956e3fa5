// mpi-raw: the MPI library called directly on a duplicate of MPI_COMM_WORLD —
// what the mpi backend would cost if it added nothing. Types and operators are
// the library's own (pg_mpi_datatype, pg_mpi_op: fp16/bf16 through
// user-defined operators that combine in float); avg is a sum followed by a
// local division (pg_reduce_finish).
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "backend.h"
#include "pg_backend.h"

namespace pgbench {
namespace {

// Large counts: MPI-4's _c entries; before MPI-4, counts must fit an int.
#if MPI_VERSION >= 4
using Count = MPI_Count;
#define PGB_MPI(fn) fn##_c
#else
using Count = int;
#define PGB_MPI(fn) fn
#endif

class MpiRaw : public MpiBarrierBackend {
 public:
  MpiRaw() : MpiBarrierBackend("mpi-raw") {}

  std::string description() const override {
    return "MPI called directly (" + library_ + ") on a duplicate of MPI_COMM_WORLD";
  }

  void setup(const SetupInfo &info) override {
    dup_world(info);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    rank_ = info.rank;
    nranks_ = info.nranks;
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(version, &len);
    // First line, whitespace squeezed.
    for (const char *p = version; *p && *p != '\n' && *p != '\r'; ++p) {
      const char ch = *p == '\t' ? ' ' : *p;
      if (!(ch == ' ' && (library_.empty() || library_.back() == ' '))) library_ += ch;
    }
  }

  std::string run(const Call &c) override {
    if (sizeof(Count) < sizeof(size_t) && c.count > static_cast<size_t>(INT_MAX))
      return "count " + std::to_string(c.count) + " exceeds INT_MAX and this MPI has no large-count calls";
    const auto n = static_cast<Count>(c.count);
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    if (pg_mpi_datatype(c.dtype, &type) != PG_OK || pg_mpi_op(c.dtype, c.op, &op) != PG_OK)
      return std::string("no MPI type or operation: ") + pg_last_error();
    const size_t es = pg_dtype_size(c.dtype);
    if (is_uneven(c.coll)) return run_uneven(c, type, op);
    int rc = MPI_SUCCESS;
    switch (c.coll) {
      case Collective::Allreduce:
        rc = PGB_MPI(MPI_Allreduce)(c.in_place ? MPI_IN_PLACE : c.send, c.recv, n, type,
                                    op, comm_);
        if (rc == MPI_SUCCESS) pg_reduce_finish(c.dtype, c.op, c.recv, c.count, nranks_);
        break;
      case Collective::Allgather:
        rc = PGB_MPI(MPI_Allgather)(c.in_place ? MPI_IN_PLACE : c.send, n, type, c.recv, n, type,
                                    comm_);
        break;
      case Collective::ReduceScatter:
        if (c.in_place) {
          // MPI's in-place form leaves the block at the start of the buffer;
          // pg_strategy.h's leaves it at block `rank`.
          void *base = const_cast<void *>(c.send);
          rc = PGB_MPI(MPI_Reduce_scatter_block)(MPI_IN_PLACE, base, n, type,
                                                 op, comm_);
          if (rc == MPI_SUCCESS && rank_ != 0) std::memmove(c.recv, base, c.count * es);
        } else {
          rc = PGB_MPI(MPI_Reduce_scatter_block)(c.send, c.recv, n, type, op,
                                                 comm_);
        }
        if (rc == MPI_SUCCESS) pg_reduce_finish(c.dtype, c.op, c.recv, c.count, nranks_);
        break;
      case Collective::Broadcast:
        rc = PGB_MPI(MPI_Bcast)(c.recv, n, type, c.root, comm_);
        break;
      case Collective::Alltoall:
        rc = PGB_MPI(MPI_Alltoall)(c.in_place ? MPI_IN_PLACE : c.send, n, type, c.recv, n, type,
                                   comm_);
        break;
      default:
        break;
    }
    if (rc == MPI_SUCCESS) return "";
    return mpi_error(c, rc);
  }

 private:
  std::string mpi_error(const Call &c, int rc) const {
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return std::string("MPI ") + collective_name(c.coll) + " failed: " + text;
  }

  // The uneven collectives as applications write them: MPI_Allgatherv,
  // MPI_Reduce_scatter and MPI_Alltoallv with int counts and displacements.
  std::string run_uneven(const Call &c, MPI_Datatype type, MPI_Op op) {
    const auto n = static_cast<size_t>(nranks_), me = static_cast<size_t>(rank_);
    const size_t es = pg_dtype_size(c.dtype);
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    auto to_int = [](const size_t *from, std::vector<int> &to) {
      for (size_t i = 0; i < to.size(); ++i) {
        if (from[i] > static_cast<size_t>(INT_MAX)) return false;
        to[i] = static_cast<int>(from[i]);
      }
      return true;
    };
    if ((c.sendcounts && !to_int(c.sendcounts, sc)) || (c.sdispls && !to_int(c.sdispls, sd)) ||
        (c.recvcounts && !to_int(c.recvcounts, rc)) || (c.rdispls && !to_int(c.rdispls, rd)))
      return "a count or displacement exceeds INT_MAX: the int forms of MPI's v-collectives cannot take it";
    int status = MPI_SUCCESS;
    switch (c.coll) {
      case Collective::Allgatherv:
        status = MPI_Allgatherv(c.in_place ? MPI_IN_PLACE : c.send, rc[me], type, c.recv, rc.data(), rd.data(), type,
                                comm_);
        break;
      case Collective::ReduceScatterv:
        if (c.in_place) {
          // pg_strategy.h's in-place block is at the rank's place, MPI_IN_PLACE's
          // at the start of the buffer; and MPICH 4.0.2 aborts moving it there
          // when the block is longer than its displacement. Out of place into a
          // staging block, as the mpi backend does.
          staging_.resize(rc[me] * es + 1);
          status = MPI_Reduce_scatter(c.send, staging_.data(), rc.data(), type, op, comm_);
          if (status == MPI_SUCCESS) std::memcpy(c.recv, staging_.data(), rc[me] * es);
        } else {
          status = MPI_Reduce_scatter(c.send, c.recv, rc.data(), type, op, comm_);
        }
        if (status == MPI_SUCCESS) pg_reduce_finish(c.dtype, c.op, c.recv, rc[me], nranks_);
        break;
      default: {  // alltoallv; MPI's in-place form reads recvcounts for both sides: staged instead
        const void *send = c.send;
        if (c.in_place) {
          size_t extent = 0;
          for (size_t q = 0; q < n; ++q) extent = std::max(extent, (sd[q] + static_cast<size_t>(sc[q])) * es);
          staging_.assign(static_cast<const char *>(c.send), static_cast<const char *>(c.send) + extent);
          send = staging_.data();
        }
        status = MPI_Alltoallv(send, sc.data(), sd.data(), type, c.recv, rc.data(), rd.data(), type, comm_);
        break;
      }
    }
    return status == MPI_SUCCESS ? "" : mpi_error(c, status);
  }

  std::vector<char> staging_;
  int rank_ = 0;
  int nranks_ = 1;
  std::string library_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_raw() { return std::make_unique<MpiRaw>(); }

}  // namespace pgbench
