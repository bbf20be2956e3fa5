// A library failure as an MPI error code: one code per library status, in the
// MPI error class that fits it, whose string (MPI_Error_string) is the
// library's message of the last failure.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "layer.h"

namespace pgs_mpi {
namespace {

int error_class(pg_status status) {
  switch (status) {
    case PG_ERR_INVALID_ARGUMENT: return MPI_ERR_ARG;
    case PG_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case PG_ERR_NO_MEMORY: return MPI_ERR_NO_MEM;
    case PG_ERR_INTERNAL: return MPI_ERR_INTERN;
    case PG_OK:
    case PG_ERR_UNKNOWN_BACKEND:
    case PG_ERR_UNAVAILABLE:
    case PG_ERR_BACKEND:
    case PG_ERR_TIMEOUT:
    case PG_ERR_MISMATCH:
    case PG_ERR_PLUGIN:
    case PG_ERR_STATE:
    case PG_ERR_ABORTED: break;
  }
  return MPI_ERR_OTHER;
}

// A new code in `cls` whose string is `text`, or 0. MPICH (4.0.2) gives a new
// code in a predefined class a string of its own table, not the one added:
// the string is read back, and such a code is not used.
int code_in(int cls, const char *text) {
  int code = 0, len = 0;
  char back[MPI_MAX_ERROR_STRING];
  if (PMPI_Add_error_code(cls, &code) != MPI_SUCCESS || PMPI_Add_error_string(code, text) != MPI_SUCCESS ||
      PMPI_Error_string(code, back, &len) != MPI_SUCCESS || std::strcmp(back, text) != 0)
    return 0;
  return code;
}

}  // namespace

int error_code(pg_status status, const char *message) {
  static std::mutex mutex;
  static int codes[PG_ERR_ABORTED + 1] = {};
  const int index = status >= 0 && status <= PG_ERR_ABORTED ? status : PG_ERR_INTERNAL;
  char text[MPI_MAX_ERROR_STRING];
  std::snprintf(text, sizeof text, "pgstrategy: %s: %s", pg_status_name(status), message);
  std::lock_guard<std::mutex> lock(mutex);
  if (codes[index] == 0) {
    // In the MPI class that fits, else in a class of the layer's own.
    codes[index] = code_in(error_class(status), text);
    int own = 0;
    if (codes[index] == 0 && PMPI_Add_error_class(&own) == MPI_SUCCESS) {
      PMPI_Add_error_string(own, (std::string("pgstrategy: ") + pg_status_name(status)).c_str());
      codes[index] = code_in(own, text);
    }
    if (codes[index] == 0) return error_class(status);
  }
  PMPI_Add_error_string(codes[index], text);
  return codes[index];
}

}  // namespace pgs_mpi
