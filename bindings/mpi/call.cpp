// One call of the program's: which way it goes, and what the library's types
// and operations are for MPI's.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "layer.h"

namespace pgs_mpi {
namespace {

thread_local int inside_library = 0;

// MPI's predefined datatypes whose elements are integers or floats of one of
// the library's widths, most used first. Their width is asked of MPI once
// (MPI_LONG, MPI_INTEGER and their kin differ between platforms).
enum class Number { signed_int, unsigned_int, floating };
struct Predefined {
  MPI_Datatype type;
  Number number;
};

struct Known {
  MPI_Datatype type;
  pg_dtype dtype;
};

std::vector<Known> known_datatypes() {
  const Predefined all[] = {
      {MPI_DOUBLE, Number::floating},       {MPI_FLOAT, Number::floating},
      {MPI_INT, Number::signed_int},        {MPI_LONG, Number::signed_int},
      {MPI_UNSIGNED, Number::unsigned_int}, {MPI_UNSIGNED_LONG, Number::unsigned_int},
      {MPI_LONG_LONG, Number::signed_int},  {MPI_UNSIGNED_LONG_LONG, Number::unsigned_int},
      {MPI_INT64_T, Number::signed_int},    {MPI_UINT64_T, Number::unsigned_int},
      {MPI_INT32_T, Number::signed_int},    {MPI_UINT32_T, Number::unsigned_int},
      {MPI_INT8_T, Number::signed_int},     {MPI_UINT8_T, Number::unsigned_int},
      {MPI_CHAR, Number::signed_int},       {MPI_SIGNED_CHAR, Number::signed_int},
      {MPI_UNSIGNED_CHAR, Number::unsigned_int}, {MPI_BYTE, Number::unsigned_int},
      {MPI_AINT, Number::signed_int},       {MPI_OFFSET, Number::signed_int},
      {MPI_COUNT, Number::signed_int},
      {MPI_DOUBLE_PRECISION, Number::floating}, {MPI_REAL, Number::floating},
      {MPI_INTEGER, Number::signed_int},    {MPI_REAL8, Number::floating},
      {MPI_REAL4, Number::floating},        {MPI_INTEGER8, Number::signed_int},
      {MPI_INTEGER4, Number::signed_int},   {MPI_INTEGER1, Number::signed_int},
  };
  std::vector<Known> out;
  for (const Predefined &p : all) {
    int size = 0;
    if (p.type == MPI_DATATYPE_NULL || PMPI_Type_size(p.type, &size) != MPI_SUCCESS) continue;
    pg_dtype d = PG_UINT8;
    switch (p.number) {
      case Number::floating:
        if (size == 4) d = PG_FLOAT32;
        else if (size == 8) d = PG_FLOAT64;
        else continue;
        break;
      case Number::signed_int:
      case Number::unsigned_int: {
        const bool u = p.number == Number::unsigned_int;
        if (size == 1) d = u ? PG_UINT8 : PG_INT8;
        else if (size == 4) d = u ? PG_UINT32 : PG_INT32;
        else if (size == 8) d = u ? PG_UINT64 : PG_INT64;
        else continue;
        break;
      }
    }
    out.push_back({p.type, d});
  }
  return out;
}

bool library_dtype(MPI_Datatype type, pg_dtype *out) {
  static const std::vector<Known> known = known_datatypes();
  for (const Known &k : known)
    if (k.type == type) {
      *out = k.dtype;
      return true;
    }
  return false;
}

bool library_op(MPI_Op op, pg_op *out) {
  const std::array<std::pair<MPI_Op, pg_op>, 7> ops = {{{MPI_SUM, PG_SUM}, {MPI_MAX, PG_MAX}, {MPI_MIN, PG_MIN},
                                                       {MPI_PROD, PG_PROD}, {MPI_BAND, PG_BAND},
                                                       {MPI_BOR, PG_BOR}, {MPI_BXOR, PG_BXOR}}};
  for (const auto &o : ops)
    if (o.first == op) {
      *out = o.second;
      return true;
    }
  return false;
}

}  // namespace

InLibrary::InLibrary() { ++inside_library; }
InLibrary::~InLibrary() { --inside_library; }
bool InLibrary::active() { return inside_library > 0; }

Call::Call(Kind kind, MPI_Comm comm) : kind_(kind), comm_(comm) {
  // Inside the library, and for a null communicator (an error MPI reports), MPI's.
  library_ = InLibrary::active() || comm == MPI_COMM_NULL;
  if (!library_) entry_ = lookup(comm, &library_);
}

bool Call::reduces(MPI_Datatype datatype, MPI_Op mpi_op, MPI_Count count, pg_dtype *dtype, pg_op *op,
                   std::size_t *bytes) {
  if (library_) return false;
  if (count < 0 || !library_dtype(datatype, dtype)) {
    why_ = Why::datatype;
    return false;
  }
  if (!library_op(mpi_op, op) || !pg_op_supported(*dtype, *op)) {
    why_ = Why::operation;
    return false;
  }
  *bytes = static_cast<std::size_t>(count) * pg_dtype_size(*dtype);
  return true;
}

pg_strategy *Call::strategy() {
  if (library_) return nullptr;
  if (!strategy_) strategy_ = strategy_of(comm_, &entry_, &why_);
  return strategy_;
}

int Call::pass(int rc) { return pass(why_, rc); }

int Call::pass(Why why, int rc) {
  if (!library_) count_passed(kind_, why);
  return rc;
}

int Call::finish(pg_status status, std::size_t bytes) {
  count_routed(kind_, bytes);
  if (status == PG_OK) return MPI_SUCCESS;
  const int code = error_code(status, pg_last_error());
  PMPI_Comm_call_errhandler(comm_, code);
  return code;
}

int Call::refuse_null(const char *fn, const char *array) {
  const std::string message = std::string(fn) + ": " + array + " is NULL";
  const int code = error_code(PG_ERR_INVALID_ARGUMENT, message.c_str());
  PMPI_Comm_call_errhandler(comm_, code);
  return code;
}

}  // namespace pgs_mpi
