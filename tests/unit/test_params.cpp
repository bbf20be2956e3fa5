// Environment grammar (docs/env.md): good values parse, bad ones fail naming
// the variable and the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>

#include "backends/fairring/settings.h"
#include "core/registry.h"
#include "core/settings.h"
#include "expect_refused.h"
#include "launch/settings.h"
#include "util/params.h"
#include "util/status.h"

using namespace pg::params;

TEST(Params, BackendSingleNameAndMap) {
  BackendChoice c;
  ASSERT_EQ(parse_backend("PGS_BACKEND", "gloo", &c), PG_OK);
  EXPECT_EQ(c.cpu, "gloo");
  EXPECT_EQ(c.cuda, "gloo");
  ASSERT_EQ(parse_backend("PGS_BACKEND", "cpu:mpi,cuda:fairring", &c), PG_OK);
  EXPECT_EQ(c.cpu, "mpi");
  EXPECT_EQ(c.cuda, "fairring");
  ASSERT_EQ(parse_backend("PGS_BACKEND", "cuda:nccl", &c), PG_OK);
  EXPECT_EQ(c.cpu, "");  // missing device: its default
  ASSERT_EQ(parse_backend("PGS_BACKEND", "", &c), PG_OK);
  EXPECT_EQ(c.cpu, "");
}

TEST(Params, BackendMalformed) {
  BackendChoice c;
  for (const char *bad : {"cpu:", ":mpi", "cpu:mpi,", "cpu:mpi,,cuda:nccl", "gpu:nccl", "cpu:mpi,cpu:gloo",
                          "cpu:MPI", "cpu :mpi", "mpi gloo", "cpu:mpi;cuda:nccl", "a/b"}) {
    EXPECT_EQ(parse_backend("PGS_BACKEND", bad, &c), PG_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(pg::last_error().find("PGS_BACKEND"), std::string::npos) << bad;
    EXPECT_NE(pg::last_error().find(bad), std::string::npos) << pg::last_error();
  }
}

TEST(Params, Sizes) {
  std::size_t v = 0;
  ASSERT_EQ(parse_size("X", "4096", &v), PG_OK);
  EXPECT_EQ(v, 4096u);
  ASSERT_EQ(parse_size("X", "4K", &v), PG_OK);
  EXPECT_EQ(v, 4096u);
  ASSERT_EQ(parse_size("X", "6M", &v), PG_OK);
  EXPECT_EQ(v, 6u << 20);
  ASSERT_EQ(parse_size("X", "2G", &v), PG_OK);
  EXPECT_EQ(v, std::size_t(2) << 30);
  expect_refused<std::size_t>(parse_size, "PGS_FAIRRING_SLICE_BYTES",
                              {"", "K", "4k", "4KB", "-1", "1.5M", " 4", "99999999999999999999", "17179869184G"});
}

TEST(Params, IntegersSecondsLevels) {
  int i = 0;
  EXPECT_EQ(parse_positive_int("PGS_RANKS_PER_NODE", "8", &i), PG_OK);
  EXPECT_EQ(i, 8);
  expect_refused(parse_positive_int, "PGS_RANKS_PER_NODE", {"0", "-2", "abc", "2x", "", "3000000000"});
  EXPECT_NE(pg::last_error().find("PGS_RANKS_PER_NODE"), std::string::npos);
  std::vector<int> sizes;
  EXPECT_EQ(parse_positive_ints("PGS_RANKS_PER_NODE", "2", &sizes), PG_OK);
  EXPECT_EQ(sizes, std::vector<int>({2}));
  EXPECT_EQ(parse_positive_ints("PGS_RANKS_PER_NODE", "1,2", &sizes), PG_OK);
  EXPECT_EQ(sizes, std::vector<int>({1, 2}));
  for (const char *bad : {"", ",", "1,", ",2", "1,,2", "1,0", "1;2", "1, 2"}) {
    EXPECT_EQ(parse_positive_ints("PGS_RANKS_PER_NODE", bad, &sizes), PG_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(pg::last_error().find("separated by commas"), std::string::npos) << pg::last_error();
  }
  double s = -1;
  EXPECT_EQ(parse_seconds("PGS_TIMEOUT", "0", &s), PG_OK);
  EXPECT_EQ(s, 0);
  EXPECT_EQ(parse_seconds("PGS_TIMEOUT", "1.5", &s), PG_OK);
  EXPECT_EQ(s, 1.5);
  // Decimal only: hexadecimal (which strtod accepted) is refused too.
  expect_refused(parse_seconds, "PGS_TIMEOUT", {"-1", "nan", "inf", "1s", " 1", "", "1e999", "0x10", "0x1p-3"});
  LogLevel l;
  EXPECT_EQ(parse_log_level("PGS_LOG", "debug", &l), PG_OK);
  EXPECT_EQ(l, LogLevel::debug);
  EXPECT_EQ(parse_log_level("PGS_LOG", "DEBUG", &l), PG_ERR_INVALID_ARGUMENT);
}

TEST(Params, PluginPath) {
  std::vector<std::string> dirs;
  ASSERT_EQ(parse_plugin_path("PGS_PLUGIN_PATH", "/a:/b/c", &dirs), PG_OK);
  EXPECT_EQ(dirs, (std::vector<std::string>{"/a", "/b/c"}));
  for (const char *bad : {"/a::/b", "rel", "/a:rel", ":/a", "/a:"}) {
    EXPECT_EQ(parse_plugin_path("PGS_PLUGIN_PATH", bad, &dirs), PG_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(pg::last_error().find("PGS_PLUGIN_PATH"), std::string::npos);
  }
}

TEST(Params, ReadFromEnvironment) {
  pg::Settings s;
  setenv("PGS_TIMEOUT", "2.5", 1);
  setenv("PGS_BIND", "numa", 1);
  ASSERT_EQ(pg::read_settings(&s), PG_OK);
  EXPECT_EQ(s.timeout_s, 2.5);
  EXPECT_EQ(s.bind, pg::topology::Bind::numa);
  setenv("PGS_BIND", "socket", 1);
  EXPECT_EQ(pg::read_settings(&s), PG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(pg::last_error().find("PGS_BIND='socket'"), std::string::npos) << pg::last_error();
  setenv("PGS_BIND", "", 1);  // empty means unset
  EXPECT_EQ(pg::read_settings(&s), PG_OK);
  setenv("PGS_DEBUG", "yes", 1);
  EXPECT_EQ(pg::read_settings(&s), PG_ERR_INVALID_ARGUMENT);
  unsetenv("PGS_DEBUG");
  unsetenv("PGS_BIND");
  unsetenv("PGS_TIMEOUT");
}

// fairring's CPU slices: 2 x inflight of them fit a core's L2 cache, a power
// of two from 64 KiB to 1 MiB.
TEST(Params, FairringSlicesByL2Cache) {
  using pg::fairring::Settings;
  constexpr std::size_t KiB = 1024, MiB = KiB * KiB;
  EXPECT_EQ(Settings::cpu_slice_bytes(2 * MiB, 4), 256 * KiB);     // Intel Xeon, 2 MiB a core
  EXPECT_EQ(Settings::cpu_slice_bytes(MiB, 4), 128 * KiB);         // AMD Zen 4/5, 1 MiB a core
  EXPECT_EQ(Settings::cpu_slice_bytes(1280 * KiB, 4), 128 * KiB);  // 1.25 MiB: the power of two below 160 KiB
  EXPECT_EQ(Settings::cpu_slice_bytes(2 * MiB, 8), 128 * KiB);     // more in flight, smaller slices
  EXPECT_EQ(Settings::cpu_slice_bytes(256 * KiB, 4), 64 * KiB);    // no smaller than 64 KiB
  EXPECT_EQ(Settings::cpu_slice_bytes(64 * MiB, 4), MiB);          // no larger than 1 MiB
  EXPECT_EQ(Settings::cpu_slice_bytes(0, 4), Settings::kCpuSliceBytes);  // unknown
}

// The fast path splits allreduces from 8 KiB on one node of two ranks, from 4 KiB otherwise.
TEST(Params, FairringSplitsByRanksPerNode) {
  using pg::fairring::Settings;
  EXPECT_EQ(Settings::split_bytes_for(2, 1), std::size_t(8) << 10);
  for (int local_size : {1, 3, 4, 8, 64}) EXPECT_EQ(Settings::split_bytes_for(local_size, 1), std::size_t(4) << 10);
  EXPECT_EQ(Settings::split_bytes_for(2, 2), std::size_t(4) << 10);  // across nodes: every rail carries a block
  EXPECT_NE(std::string(Settings::split_reason(2, 1)).find("two ranks"), std::string::npos);
  EXPECT_NE(std::string(Settings::split_reason(2, 2)).find("rail"), std::string::npos);
  const Settings unset;
  EXPECT_EQ(unset.for_device(false, 0, 2, 1).split_bytes, std::size_t(8) << 10);
  EXPECT_EQ(unset.for_device(false, 0, 4, 1).split_bytes, std::size_t(4) << 10);
  EXPECT_EQ(unset.for_device(false, 0, 2, 3).split_bytes, std::size_t(4) << 10);
  setenv("PGS_FAIRRING_SPLIT_BYTES", "0", 1);  // set: kept on every node
  std::shared_ptr<const pg::BackendSettings> read_back;
  ASSERT_EQ(Settings::read(&read_back), PG_OK);
  unsetenv("PGS_FAIRRING_SPLIT_BYTES");
  EXPECT_EQ(static_cast<const Settings &>(*read_back).for_device(false, 0, 2, 1).split_bytes, 0u);
}

// fairring's sizes default by device, and a value set (0 included) is kept.
TEST(Params, FairringDefaultsByDevice) {
  using pg::fairring::Settings;
  std::shared_ptr<const pg::BackendSettings> read_back;
  unsetenv("PGS_FAIRRING_SLICE_BYTES");
  unsetenv("PGS_FAIRRING_MIN_BYTES");
  ASSERT_EQ(Settings::read(&read_back), PG_OK);
  const auto &unset = static_cast<const Settings &>(*read_back);
  EXPECT_EQ(unset.for_device(false).slice_bytes, std::size_t(256) << 10);  // the L2 cache unknown
  EXPECT_EQ(unset.for_device(false, std::size_t(1) << 20).slice_bytes, std::size_t(128) << 10);
  EXPECT_EQ(unset.for_device(true, std::size_t(1) << 20).slice_bytes, std::size_t(4) << 20);
  EXPECT_EQ(unset.for_device(false).min_bytes, std::size_t(32) << 10);
  EXPECT_EQ(unset.for_device(true).slice_bytes, std::size_t(4) << 20);
  EXPECT_EQ(unset.for_device(true).min_bytes, std::size_t(8) << 20);
  EXPECT_EQ(unset.schedule(), "PGS_FAIRRING_SLICE_BYTES=default PGS_FAIRRING_INFLIGHT=4 PGS_FAIRRING_MIN_BYTES=default "
            "PGS_FAIRRING_ALGO=auto PGS_FAIRRING_FAST_BYTES=default PGS_FAIRRING_SPLIT_BYTES=default "
            "PGS_FAIRRING_TREE_RANKS=32");
  setenv("PGS_FAIRRING_SLICE_BYTES", "1K", 1);
  setenv("PGS_FAIRRING_MIN_BYTES", "0", 1);
  ASSERT_EQ(Settings::read(&read_back), PG_OK);
  const auto &set = static_cast<const Settings &>(*read_back);
  for (bool cuda : {false, true}) {
    EXPECT_EQ(set.for_device(cuda).slice_bytes, 1024u);
    EXPECT_EQ(set.for_device(cuda).min_bytes, 0u);
  }
  EXPECT_EQ(set.schedule(), "PGS_FAIRRING_SLICE_BYTES=1024 PGS_FAIRRING_INFLIGHT=4 PGS_FAIRRING_MIN_BYTES=0 "
                            "PGS_FAIRRING_ALGO=auto PGS_FAIRRING_FAST_BYTES=default PGS_FAIRRING_SPLIT_BYTES=default "
                            "PGS_FAIRRING_TREE_RANKS=32");
  unsetenv("PGS_FAIRRING_SLICE_BYTES");
  unsetenv("PGS_FAIRRING_MIN_BYTES");
}

// docs/env.md lists exactly the variables the tables declare (the library's,
// the bootstrap's and every built-in backend's), each with the table's default.
TEST(Params, DocsListEveryVariableWithItsDefault) {
  std::map<std::string, std::string> declared;  // name -> default
  pg::Settings core;
  ASSERT_EQ(pg::read_settings(&core), PG_OK);
  pg::SettingsMap backends;
  ASSERT_EQ(pg::registry::read_settings(&backends), PG_OK);
  Listings all = core.list();
  for (const auto &kv : backends) {
    const Listings own = kv.second->list();
    all.insert(all.end(), own.begin(), own.end());
  }
  pg::launch::Settings bootstrap;
  ASSERT_EQ(pg::launch::read_settings(&bootstrap), PG_OK);
  const Listings own = bootstrap.list();
  all.insert(all.end(), own.begin(), own.end());
  for (const Listing &l : all) declared[l.name] = l.fallback;

  std::map<std::string, std::string> documented;
  std::ifstream doc(PGS_SOURCE_DIR "/docs/env.md");
  ASSERT_TRUE(doc.good()) << "cannot read docs/env.md";
  const std::regex row(R"(^\| `(PGS_[A-Z_]+)` \|[^|]*\| ([^|]*) \|)");
  for (std::string line; std::getline(doc, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    std::string fallback = m[2];
    fallback.erase(std::remove(fallback.begin(), fallback.end(), '`'), fallback.end());
    documented[m[1]] = fallback;
  }
  EXPECT_EQ(documented, declared);
}
