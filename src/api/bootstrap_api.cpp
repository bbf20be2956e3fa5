// The extern "C" entries of pg_strategy.h's "launch" group. Each one checks
// its arguments and catches every exception: nothing crosses the C ABI.
#include <mpi.h>

#include <string>

#include "core/runtime.h"
#include "launch/bootstrap.h"
#include "launch/settings.h"
#include "util/entry.h"
#include "util/status.h"
#include "util/text.h"

namespace {

using pg::guarded;
using pg::write_string;

pg_status check_secret(const char *fn, const char *secret) {
  std::string ignored;
  if (!secret) return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: secret is NULL", fn);
  if (pg::launch::parse_secret("the secret", secret, &ignored) != PG_OK)
    return pg::fail_message(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + pg::last_error());
  return PG_OK;
}

bool mpi_started() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized || finalized;
}

}  // namespace

extern "C" {

PG_API pg_status pg_mpi_launcher(char *buf, size_t len) {
  return guarded("pg_mpi_launcher", [&] {
    return write_string("pg_mpi_launcher", pg::launch::mpi_launcher(), buf, len);
  });
}

PG_API pg_status pg_mpi_init(int required, int *provided) {
  const char *fn = "pg_mpi_init";
  return guarded(fn, [&] {
    if (!provided) return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: provided is NULL", fn);
    if (required != MPI_THREAD_SINGLE && required != MPI_THREAD_FUNNELED && required != MPI_THREAD_SERIALIZED &&
        required != MPI_THREAD_MULTIPLE)
      return pg::fail(PG_ERR_INVALID_ARGUMENT,
                      "%s: required is %d; expected MPI_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE", fn,
                      required);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return pg::fail(PG_ERR_STATE, "%s: MPI has been finalized; it cannot start again", fn);
    if (mpi_started()) return pg::fail(PG_ERR_STATE, "%s: MPI is initialized already", fn);
    PG_CHECK(pg::launch::before_mpi_init());
    const int code = MPI_Init_thread(nullptr, nullptr, required, provided);
    pg::launch::after_mpi_init();
    if (code != MPI_SUCCESS) return pg::mpi_failure(code, "MPI_Init_thread", __FILE__, __LINE__);
    return pg::launch::check_world();
  });
}

PG_API pg_status pg_bootstrap_listen(int size, const char *host, const char *secret, char *address, size_t len) {
  const char *fn = "pg_bootstrap_listen";
  return guarded(fn, [&] {
    if (!address || len == 0) return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: address is NULL or len is 0", fn);
    if (size < 1) return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: size %d is not positive", fn, size);
    PG_CHECK(check_secret(fn, secret));
    if (mpi_started())
      return pg::fail(PG_ERR_STATE, "%s: MPI is initialized already: the rendezvous must come before MPI_Init",
                      fn);
    std::string where;
    PG_CHECK(pg::launch::listen(size, host ? host : "", secret, &where));
    if (where.size() >= len)
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: the address '%s' needs %zu bytes; len is %zu", fn,
                      where.c_str(), where.size() + 1, len);
    return write_string(fn, where, address, len);
  });
}

PG_API pg_status pg_bootstrap_join(int rank, int size, const char *address, const char *secret) {
  const char *fn = "pg_bootstrap_join";
  return guarded(fn, [&] {
    if (size < 1 || rank < 0 || rank >= size)
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: rank %d of size %d: expected 0 <= rank < size, size >= 1", fn,
                      rank, size);
    if (mpi_started()) {
      int world = 0, initialized = 0;
      MPI_Initialized(&initialized);
      if (!initialized || !pg::runtime::mpi_alive())
        return pg::fail(PG_ERR_STATE, "%s: MPI has been finalized", fn);
      MPI_Comm_size(MPI_COMM_WORLD, &world);
      if (world == size) return PG_OK;
      return pg::fail(PG_ERR_STATE,
                      "%s: MPI was initialized as a job of %d process%s before the library could bring up this "
                      "job of %d (MPI_Init was called first, by the application or by mpi4py): leave MPI_Init to "
                      "the library, or start the job with mpiexec",
                      fn, world, world == 1 ? "" : "es", size);
    }
    if (size > 1) {
      if (!address) return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: address is NULL", fn);
      PG_CHECK(check_secret(fn, secret));
      PG_CHECK(pg::launch::join(rank, size, address, secret));
    }
    return pg::runtime::ensure_mpi();
  });
}

}  // extern "C"
