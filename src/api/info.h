// pg_strategy_info's answers (include/pg_strategy.h lists the keys).
#pragma once

#include <string>

#include "util/params.h"

struct pg_strategy;

namespace pg {

// The answer for `key`; PG_ERR_INVALID_ARGUMENT listing the keys for another one.
pg_status strategy_info(const pg_strategy *s, const char *key, std::string *out);
// Every PGS_* variable the strategy was created with: the library's, then each
// built-in backend's.
params::Listings settings_listings(const pg_strategy *s);

}  // namespace pg
