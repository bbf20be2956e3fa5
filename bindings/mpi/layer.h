// The MPI layer (libpgstrategy_mpi): MPI's own collective entry points, defined
// here ahead of the MPI library (preloaded by pgs-mpi, or linked before MPI),
// run a call through a strategy made for its communicator when they can, and
// call MPI's profiling entry points (PMPI_*) otherwise. docs/mpi-layer.md.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "pg_strategy.h"

namespace pgs_mpi {

// The entry points the layer counts, in the summary's order.
enum class Kind {
  allreduce, reduce, bcast, allgather, allgatherv, gather, gatherv, scatter, scatterv,
  alltoall, alltoallv, reduce_scatter, reduce_scatter_block, barrier,
  iallreduce, ireduce, ibcast, iallgather, iallgatherv, igather, igatherv, iscatter, iscatterv,
  ialltoall, ialltoallv, ireduce_scatter, ireduce_scatter_block, ibarrier,
  count_
};
const char *kind_name(Kind kind);

// Why a call of the program went to MPI.
enum class Why {
  datatype,           // not one the library has (reductions), or an invalid one
  operation,          // not one the library has for that datatype
  intercommunicator,  // MPI's alone
  one_rank,           // MPI_COMM_SELF or any communicator of one rank
  nonblocking,        // nonblocking collectives stay MPI's
  backend_mpi,        // PGS_BACKEND=mpi: the layer only counts
  no_strategy,        // making the communicator's strategy failed (said once, on its rank 0)
  count_
};
const char *why_name(Why why);

// While a thread runs inside the library for the layer, the MPI calls it makes
// are the library's: they go to MPI uncounted.
class InLibrary {
 public:
  InLibrary();
  ~InLibrary();
  InLibrary(const InLibrary &) = delete;
  InLibrary &operator=(const InLibrary &) = delete;
  static bool active();
};

// One call of the program's: which communicator, whether the layer routes it,
// and what the summary counts. An entry point makes one, checks its arguments
// (reduces; a Buffer for each side of a data movement), asks for the
// strategy, then passes or finishes.
class Call {
 public:
  Call(Kind kind, MPI_Comm comm);

  // The library's own call (its communicator, or made inside the library):
  // MPI's, uncounted. Every other check below returns false for it.
  bool library() const { return library_; }

  // A reduction the library has: datatype and op map to `dtype` and `op`;
  // `count` elements of it are `*bytes` bytes.
  bool reduces(MPI_Datatype datatype, MPI_Op mpi_op, MPI_Count count, pg_dtype *dtype, pg_op *op,
               std::size_t *bytes);

  // The communicator's strategy, made on its first routed call (every rank of
  // the communicator is in that call); null when the call goes to MPI.
  pg_strategy *strategy();

  // The call goes to MPI: counted with its reason; returns `rc`.
  int pass(int rc);
  int pass(Why why, int rc);
  // The strategy ran it: counted with its bytes; a failure is reported through
  // the communicator's error handler, its text the library's message.
  int finish(pg_status status, std::size_t bytes);
  // A null count or displacement array this rank would read (both MPIs read
  // through it and crash): MPI_ERR_ARG naming it, through the communicator's
  // error handler, instead.
  int refuse_null(const char *fn, const char *array);

  MPI_Comm comm() const { return comm_; }
  // A datatype the call cannot take (MPI will say why): counted as such.
  void bad_datatype() { why_ = Why::datatype; }

 private:
  Kind kind_;
  MPI_Comm comm_;
  bool library_ = false;
  Why why_ = Why::datatype;
  pg_strategy *strategy_ = nullptr;
  void *entry_ = nullptr;  // the communicator's entry, once looked up
};

// A buffer of the program's as the bytes the library moves: runs of elements
// of one datatype. A contiguous datatype's runs are the caller's memory; any
// other's are packed into a staging buffer (pack before the call for what is
// sent, unpack after it for what is received), so that every datatype moves,
// whatever the peers use to describe the same data (MPI asks only that the
// type signatures match: one rank may send doubles that another receives
// through a vector type).
class Buffer {
 public:
  // One run of `count` elements at `buf`. False for a datatype or count MPI
  // rejects (the call then goes to MPI, which says what is wrong).
  bool one(Call &call, const void *buf, MPI_Count count, MPI_Datatype type) {
    elements_.resize(1);
    offsets_.resize(1);
    elements_[0] = count;
    offsets_[0] = 0;
    return set(call, buf, type);
  }
  // n runs: counts[i] elements at buf + displs[i] extents.
  template <typename C, typename D>
  bool runs(Call &call, const void *buf, int n, const C *counts, const D *displs, MPI_Datatype type) {
    elements_.resize(static_cast<std::size_t>(n));
    offsets_.resize(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) elements_[i] = counts[i], offsets_[i] = displs[i];
    return set(call, buf, type);
  }

  // Where the library reads and writes: run i at data() + displs()[i].
  char *data() const { return data_; }
  const std::size_t *counts() const { return counts_.data(); }
  const std::size_t *displs() const { return displs_.data(); }
  std::size_t total() const { return total_; }

  void pack();    // the caller's runs into the staging buffer (staged only)
  void unpack();  // and back

 private:
  // Per run: inline for one run (a call's common case: no allocation), on
  // the heap for more.
  template <typename T>
  class PerRun {
   public:
    void resize(std::size_t n) {
      n_ = n;
      if (n > 1) many_.resize(n);
    }
    std::size_t size() const { return n_; }
    T &operator[](std::size_t i) { return n_ > 1 ? many_[i] : one_; }
    const T *data() const { return n_ > 1 ? many_.data() : &one_; }

   private:
    std::size_t n_ = 0;
    T one_{};
    std::vector<T> many_;
  };

  // Scales offsets_ (in extents) to bytes and lays the runs out.
  bool set(Call &call, const void *buf, MPI_Datatype type);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  char *buf_ = nullptr;
  PerRun<MPI_Count> elements_;  // per run
  PerRun<MPI_Aint> offsets_;    // per run, bytes from buf_
  std::vector<char> stage_;     // empty: not staged
  char *data_ = nullptr;
  PerRun<std::size_t> counts_, displs_;
  std::size_t total_ = 0;
};

// comms.cpp: strategies for communicators.
// The backend they use: PGS_BACKEND's for the CPU (a name, or the cpu:<name>
// of a list), else fairring (the collectives the layer exists for). "mpi"
// makes the layer count only.
const char *backend();
// Looks the communicator's entry up (no strategy is made here): *library set
// for the library's own communicators.
void *lookup(MPI_Comm comm, bool *library);
// The entry's strategy, made if needed; null with *why when the call passes.
pg_strategy *strategy_of(MPI_Comm comm, void **entry, Why *why);
// Destroys every strategy left, newest first, before MPI finalizes; from
// then on every call is MPI's.
void destroy_all();

// summary.cpp: what the layer did.
void count_routed(Kind kind, std::size_t bytes);
void count_passed(Kind kind, Why why);
// PGS_MPI_SUMMARY=1: rank 0 prints the table (collective over MPI_COMM_WORLD).
void print_summary();

// errors.cpp: a failure as an MPI error code of the class that fits
// `status`, whose MPI_Error_string is `message`.
int error_code(pg_status status, const char *message);

}  // namespace pgs_mpi
