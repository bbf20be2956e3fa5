/* C half of the Fortran test support: what Fortran cannot reach directly
 * (a variadic call) and the C values of the header's constants. */
#include <string.h>

#include "pg_test.h"

/* pg_test_step is variadic; Fortran calls this instead. */
void pgf_test_step(const char *text) { pg_test_step("%s", text); }

#define PGF_CONSTANT(name) {#name, (long long)(name)}
static const struct {
  const char *name;
  long long value;
} constants[] = {
    /* the version */
    PGF_CONSTANT(PG_VERSION_MAJOR),
    PGF_CONSTANT(PG_VERSION_MINOR),
    PGF_CONSTANT(PG_VERSION_PATCH),
    /* statuses */
    PGF_CONSTANT(PG_OK),
    PGF_CONSTANT(PG_ERR_INVALID_ARGUMENT),
    PGF_CONSTANT(PG_ERR_UNKNOWN_BACKEND),
    PGF_CONSTANT(PG_ERR_UNSUPPORTED),
    PGF_CONSTANT(PG_ERR_UNAVAILABLE),
    PGF_CONSTANT(PG_ERR_BACKEND),
    PGF_CONSTANT(PG_ERR_TIMEOUT),
    PGF_CONSTANT(PG_ERR_MISMATCH),
    PGF_CONSTANT(PG_ERR_PLUGIN),
    PGF_CONSTANT(PG_ERR_STATE),
    PGF_CONSTANT(PG_ERR_NO_MEMORY),
    PGF_CONSTANT(PG_ERR_INTERNAL),
    PGF_CONSTANT(PG_ERR_ABORTED),
    /* dtypes */
    PGF_CONSTANT(PG_INT8),
    PGF_CONSTANT(PG_UINT8),
    PGF_CONSTANT(PG_INT32),
    PGF_CONSTANT(PG_UINT32),
    PGF_CONSTANT(PG_INT64),
    PGF_CONSTANT(PG_UINT64),
    PGF_CONSTANT(PG_FLOAT16),
    PGF_CONSTANT(PG_BFLOAT16),
    PGF_CONSTANT(PG_FLOAT32),
    PGF_CONSTANT(PG_FLOAT64),
    /* operators */
    PGF_CONSTANT(PG_SUM),
    PGF_CONSTANT(PG_PROD),
    PGF_CONSTANT(PG_MIN),
    PGF_CONSTANT(PG_MAX),
    PGF_CONSTANT(PG_AVG),
    PGF_CONSTANT(PG_BAND),
    PGF_CONSTANT(PG_BOR),
    PGF_CONSTANT(PG_BXOR),
};

/* The C value of the constant `name` in *value; 0 if the header has no such name. */
int pgf_test_c_constant(const char *name, long long *value) {
  for (size_t i = 0; i < sizeof constants / sizeof constants[0]; ++i)
    if (strcmp(constants[i].name, name) == 0) {
      *value = constants[i].value;
      return 1;
    }
  return 0;
}

/* How many constants the header table above lists (the Fortran test checks it
 * looked at every one). */
int pgf_test_c_constant_count(void) { return (int)(sizeof constants / sizeof constants[0]); }
