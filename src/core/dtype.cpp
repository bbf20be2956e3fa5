#include "core/dtype.h"

namespace pg {

const char *dtype_name(pg_dtype dtype) {
  static const char *const names[kDtypeCount] = {"int8",    "uint8",    "int32",   "uint32",
                                                 "int64",   "uint64",   "float16", "bfloat16",
                                                 "float32", "float64"};
  return valid_dtype(dtype) ? names[dtype] : "invalid";
}

const char *op_name(pg_op op) {
  static const char *const names[kOpCount] = {"sum", "prod", "min",  "max",
                                              "avg", "band", "bor", "bxor"};
  return valid_op(op) ? names[op] : "invalid";
}

}  // namespace pg
