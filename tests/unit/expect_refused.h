// A check shared by the parser tests.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>

#include "pg_strategy.h"

// `parse` (one of the environment parsers: variable name, value, result)
// refuses each of `values` with PG_ERR_INVALID_ARGUMENT.
template <typename T>
void expect_refused(pg_status (*parse)(const char *, const char *, T *), const char *var,
                    std::initializer_list<const char *> values) {
  for (const char *value : values) {
    T out{};
    EXPECT_EQ(parse(var, value, &out), PG_ERR_INVALID_ARGUMENT) << var << "='" << value << "'";
  }
}
