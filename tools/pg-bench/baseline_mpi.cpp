// mpi-raw: the MPI library called directly on a duplicate of MPI_COMM_WORLD —
// what the mpi backend would cost if it added nothing. fp16/bf16 reductions
// use user-defined operators that combine in float (as pg_strategy.h asks of
// every backend); avg is a sum followed by a local division.
#include <climits>
#include <cstring>

#include "backend.h"
#include "dtypes.h"

namespace pgbench {
namespace {

// MPI_User_function has no user data, so one function per (type, op).
template <pg_dtype D, pg_op O>
void user_op(void *in, void *inout, int *len, MPI_Datatype *) {
  reduce3(D, O, inout, inout, in, static_cast<size_t>(*len));
}

constexpr pg_op kHalfOps[] = {PG_SUM, PG_PROD, PG_MIN, PG_MAX};

MPI_User_function *half_function(pg_dtype d, pg_op op) {
  const bool f16 = d == PG_FLOAT16;
  switch (op) {
    case PG_SUM:
    case PG_AVG: return f16 ? user_op<PG_FLOAT16, PG_SUM> : user_op<PG_BFLOAT16, PG_SUM>;
    case PG_PROD: return f16 ? user_op<PG_FLOAT16, PG_PROD> : user_op<PG_BFLOAT16, PG_PROD>;
    case PG_MIN: return f16 ? user_op<PG_FLOAT16, PG_MIN> : user_op<PG_BFLOAT16, PG_MIN>;
    case PG_MAX: return f16 ? user_op<PG_FLOAT16, PG_MAX> : user_op<PG_BFLOAT16, PG_MAX>;
    default: return nullptr;
  }
}

MPI_Datatype mpi_type(pg_dtype d) {
  switch (d) {
    case PG_INT8: return MPI_INT8_T;
    case PG_UINT8: return MPI_UINT8_T;
    case PG_INT32: return MPI_INT32_T;
    case PG_UINT32: return MPI_UINT32_T;
    case PG_INT64: return MPI_INT64_T;
    case PG_UINT64: return MPI_UINT64_T;
    case PG_FLOAT16:
    case PG_BFLOAT16: return MPI_UINT16_T;  // moved as bits, reduced by user ops
    case PG_FLOAT32: return MPI_FLOAT;
    case PG_FLOAT64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op builtin_op(pg_op op) {
  switch (op) {
    case PG_SUM:
    case PG_AVG: return MPI_SUM;
    case PG_PROD: return MPI_PROD;
    case PG_MIN: return MPI_MIN;
    case PG_MAX: return MPI_MAX;
    case PG_BAND: return MPI_BAND;
    case PG_BOR: return MPI_BOR;
    case PG_BXOR: return MPI_BXOR;
  }
  return MPI_OP_NULL;
}

// Large counts: MPI-4's _c entries; before MPI-4, counts must fit an int.
#if MPI_VERSION >= 4
using Count = MPI_Count;
#define PGB_MPI(fn) fn##_c
#else
using Count = int;
#define PGB_MPI(fn) fn
#endif

class MpiRaw : public Backend {
 public:
  MpiRaw() : Backend("mpi-raw") {}

  std::string description() const override {
    return "MPI called directly (" + library_ + ") on a duplicate of MPI_COMM_WORLD";
  }

  void setup(const SetupInfo &info) override {
    MPI_Comm_dup(info.world, &comm_);
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
    for (int t = 0; t < 2; ++t)
      for (int k = 0; k < 4; ++k)
        MPI_Op_create(half_function(t == 0 ? PG_FLOAT16 : PG_BFLOAT16, kHalfOps[k]), 1,
                      &half_ops_[t][k]);
  }

  std::string run(const Call &c) override {
    if (sizeof(Count) < sizeof(size_t) && c.count > static_cast<size_t>(INT_MAX))
      return "count " + std::to_string(c.count) + " exceeds INT_MAX and this MPI has no large-count calls";
    const auto n = static_cast<Count>(c.count);
    const MPI_Datatype type = mpi_type(c.dtype);
    const size_t es = dtype_size(c.dtype);
    int rc = MPI_SUCCESS;
    switch (c.coll) {
      case Collective::Allreduce:
        rc = PGB_MPI(MPI_Allreduce)(c.in_place ? MPI_IN_PLACE : c.send, c.recv, n, type,
                                    op_for(c.dtype, c.op), comm_);
        if (rc == MPI_SUCCESS && c.op == PG_AVG) scale_for_avg(c.dtype, c.recv, c.count, nranks_);
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
                                                 op_for(c.dtype, c.op), comm_);
          if (rc == MPI_SUCCESS && rank_ != 0) std::memmove(c.recv, base, c.count * es);
        } else {
          rc = PGB_MPI(MPI_Reduce_scatter_block)(c.send, c.recv, n, type, op_for(c.dtype, c.op),
                                                 comm_);
        }
        if (rc == MPI_SUCCESS && c.op == PG_AVG) scale_for_avg(c.dtype, c.recv, c.count, nranks_);
        break;
      case Collective::Broadcast:
        rc = PGB_MPI(MPI_Bcast)(c.recv, n, type, c.root, comm_);
        break;
      case Collective::Alltoall:
        rc = PGB_MPI(MPI_Alltoall)(c.in_place ? MPI_IN_PLACE : c.send, n, type, c.recv, n, type,
                                   comm_);
        break;
    }
    if (rc == MPI_SUCCESS) return "";
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return std::string("MPI ") + collective_name(c.coll) + " failed: " + text;
  }

  std::string barrier() override {
    return MPI_Barrier(comm_) == MPI_SUCCESS ? "" : "MPI_Barrier failed";
  }

  void teardown() override {
    for (auto &row : half_ops_)
      for (auto &op : row)
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

 private:
  MPI_Op op_for(pg_dtype d, pg_op op) const {
    if (d == PG_FLOAT16 || d == PG_BFLOAT16) {
      const int t = d == PG_FLOAT16 ? 0 : 1;
      const pg_op base = op == PG_AVG ? PG_SUM : op;
      for (int k = 0; k < 4; ++k)
        if (kHalfOps[k] == base) return half_ops_[t][k];
    }
    return builtin_op(op);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int nranks_ = 1;
  std::string library_;
  MPI_Op half_ops_[2][4] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                            {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
};

}  // namespace

std::unique_ptr<Backend> make_mpi_raw() { return std::make_unique<MpiRaw>(); }

}  // namespace pgbench
