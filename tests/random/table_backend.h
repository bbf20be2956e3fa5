/* The random-program test's own table backend (table_backend.c). */
#ifndef PG_RANDOM_TABLE_BACKEND_H
#define PG_RANDOM_TABLE_BACKEND_H

#include "pg_strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RANDOM_TABLE_NAME "random_table"

/* Registers RANDOM_TABLE_NAME (local; once per process). */
pg_status random_table_register(void);

#ifdef __cplusplus
}
#endif

#endif
