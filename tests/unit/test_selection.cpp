// Device parsing, selection precedence, status names.
#include <gtest/gtest.h>

#include <thread>

#include "core/selection.h"
#include "util/status.h"

using namespace pg;

TEST(Device, Parse) {
  Device d;
  ASSERT_EQ(parse_device("cpu", &d), PG_OK);
  EXPECT_FALSE(d.cuda);
  ASSERT_EQ(parse_device("cuda", &d), PG_OK);
  EXPECT_TRUE(d.cuda);
  EXPECT_EQ(d.index, -1);
  ASSERT_EQ(parse_device("cuda:7", &d), PG_OK);
  EXPECT_EQ(d.index, 7);
  for (const char *bad : {"", "CPU", "gpu", "cuda:", "cuda:-1", "cuda:1x", "cuda1", "cpu:0", "cuda:99999999999"}) {
    EXPECT_EQ(parse_device(bad, &d), PG_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(last_error().find(std::string("'") + bad + "'"), std::string::npos) << last_error();
  }
  EXPECT_EQ(parse_device(nullptr, &d), PG_ERR_INVALID_ARGUMENT);
}

TEST(Selection, Precedence) {
  Settings s;
  Device cpu, cuda;
  cuda.cuda = true;
  EXPECT_EQ(select_backend(cpu, nullptr, s).backend, "mpi");
  EXPECT_EQ(select_backend(cpu, nullptr, s).rule, "device default");
  EXPECT_EQ(select_backend(cuda, "", s).backend, "nccl");
  s.backend.cuda = "fairring";
  EXPECT_EQ(select_backend(cuda, nullptr, s).backend, "fairring");
  EXPECT_EQ(select_backend(cuda, nullptr, s).rule, "PGS_BACKEND");
  EXPECT_EQ(select_backend(cpu, nullptr, s).backend, "mpi");  // not in the map: default
  EXPECT_EQ(select_backend(cuda, "gloo", s).backend, "gloo");
  EXPECT_EQ(select_backend(cuda, "gloo", s).rule, "argument");
}

TEST(Status, EveryValueHasItsName) {
  const char *names[] = {"PG_OK", "PG_ERR_INVALID_ARGUMENT", "PG_ERR_UNKNOWN_BACKEND", "PG_ERR_UNSUPPORTED",
                         "PG_ERR_UNAVAILABLE", "PG_ERR_BACKEND", "PG_ERR_TIMEOUT", "PG_ERR_MISMATCH",
                         "PG_ERR_PLUGIN", "PG_ERR_STATE", "PG_ERR_NO_MEMORY", "PG_ERR_INTERNAL",
                         "PG_ERR_ABORTED"};
  for (int i = 0; i <= PG_ERR_ABORTED; ++i) EXPECT_STREQ(pg_status_name(pg_status(i)), names[i]);
  EXPECT_STREQ(pg_status_name(pg_status(-1)), "PG_STATUS_UNKNOWN");
  EXPECT_STREQ(pg_status_name(pg_status(13)), "PG_STATUS_UNKNOWN");
}

TEST(Status, LastErrorIsPerThreadAndKeptOnSuccess) {
  fail(PG_ERR_STATE, "here %d", 1);
  std::string other;
  std::thread([&] { other = pg_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_STREQ(pg_last_error(), "here 1");
}
