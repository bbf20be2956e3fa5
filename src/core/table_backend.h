// A backend given as a user table (pg_backend_ops), seen through the
// library's Backend interface.
#pragma once

#include "core/backend.h"

namespace pg {

// Calls ops.create on ctx (collective) and wraps the instance.
pg_status make_table_backend(const pg_backend_ops &ops, const pg_backend_context &ctx,
                             std::unique_ptr<Backend> *out);

}  // namespace pg
