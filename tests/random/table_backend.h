/* The random-program test's own table backends (table_backend.c). */
#ifndef PG_RANDOM_TABLE_BACKEND_H
#define PG_RANDOM_TABLE_BACKEND_H

#include "pg_strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RANDOM_TABLE_NAME "random_table"
#define RANDOM_BLOCKING_NAME "random_blocking"

/* Register RANDOM_TABLE_NAME and RANDOM_BLOCKING_NAME (local; once per process). */
pg_status random_table_register(void);
pg_status random_blocking_register(void);

#ifdef __cplusplus
}
#endif

#endif
