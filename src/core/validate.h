// Argument checks of every operation, before a backend sees it.
#pragma once

#include "core/backend.h"

struct pg_strategy;

namespace pg {

// The caller's count and displacement arrays of an uneven collective, as
// given (NULL where the call has none): validate copies those it reads.
struct VArrays {
  const std::size_t *send_counts = nullptr, *send_displs = nullptr;
  const std::size_t *recv_counts = nullptr, *recv_displs = nullptr;
};

// PG_ERR_INVALID_ARGUMENT (or PG_ERR_UNSUPPORTED for a dtype/op pair that does
// not exist) with a message that starts with `fn`. Local. Works out the call's
// in-place layout (args->in_place) on the way: the one place it is computed.
// The uneven collectives pass their arrays: those read on this rank are
// copied into args->v (and args->count set to this rank's share).
pg_status validate(const char *fn, const pg_strategy *s, CollArgs *args, const VArrays *arrays = nullptr);
// A dtype inside the enum.
pg_status validate_dtype(const char *fn, pg_dtype dtype);
// The dtype and op of a reduction: inside the enums, and a pair that exists.
pg_status validate_reduction(const char *fn, pg_dtype dtype, pg_op op);

}  // namespace pg
