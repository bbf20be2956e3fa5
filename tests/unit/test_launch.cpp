// The bootstrap's parts that need no network or MPI (src/launch, docs/launch.md):
// the hashes its proofs use, the PMI-1 server's answers, the frames, the
// job read from the environment, and its settings.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "expect_refused.h"
#include "launch/auth.h"
#include "launch/job.h"
#include "launch/pmi.h"
#include "launch/settings.h"
#include "launch/wire.h"
#include "util/status.h"

using namespace pg::launch;

namespace {

EnvLookup env_of(const std::map<std::string, std::string> &vars) {
  return [vars](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string reply(PmiSession &s, const std::string &line) { return s.on_line(line).reply; }

}  // namespace

namespace {

std::string sha256_hex(const std::string &data) {
  Digest d{};
  EXPECT_TRUE(sha256(data, &d)) << crypto_error();
  return hex(d);
}

std::string hmac_hex(const std::string &key, const std::string &data) {
  Digest d{};
  EXPECT_TRUE(hmac_sha256(key, data, &d)) << crypto_error();
  return hex(d);
}

}  // namespace

TEST(LaunchAuth, Sha256KnownAnswers) {
  // FIPS 180-4's examples.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(LaunchAuth, HmacRfc4231TestCases) {
  std::string key4;
  for (char c = 1; c <= 25; ++c) key4 += c;
  const std::string big_key(131, '\xaa');
  // Case 1: a 20-byte key.
  EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Case 2: a key shorter than the output.
  EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Case 3: key and data of bytes that are not text.
  EXPECT_EQ(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  // Case 4: a 25-byte key of 1, 2, ..., 25.
  EXPECT_EQ(hmac_hex(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Case 5: the first 128 bits.
  EXPECT_EQ(hmac_hex(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
  // Case 6: a key longer than SHA-256's block, hashed first.
  EXPECT_EQ(hmac_hex(big_key, "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // Case 7: key and data both longer than the block.
  EXPECT_EQ(hmac_hex(big_key, "This is a test using a larger than block-size key and a larger than block-size data. "
                              "The key needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // An empty key is a key of zeros, not "the last key".
  EXPECT_EQ(hmac_hex("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(LaunchAuth, ProofsDependOnEverything) {
  const std::string p = proof("secret-0123456789", "join", "a", "b", "1\n2");
  EXPECT_EQ(p, proof("secret-0123456789", "join", "a", "b", "1\n2"));
  EXPECT_NE(p, proof("secret-0123456780", "join", "a", "b", "1\n2"));
  EXPECT_NE(p, proof("secret-0123456789", "welcome", "a", "b", "1\n2"));
  EXPECT_NE(p, proof("secret-0123456789", "join", "b", "a", "1\n2"));
  EXPECT_NE(p, proof("secret-0123456789", "join", "a", "b", "2\n2"));
  EXPECT_TRUE(same_secret("abc", "abc"));
  EXPECT_FALSE(same_secret("abc", "abd"));
  EXPECT_FALSE(same_secret("abc", "abcd"));
  EXPECT_FALSE(same_secret("", ""));  // what a failed proof gives: never a match
  EXPECT_EQ(random_hex(16).size(), 32u);
  EXPECT_NE(random_hex(16), random_hex(16));
}

TEST(LaunchPmi, ParsesLines) {
  PmiCommand c;
  std::string why;
  ASSERT_TRUE(parse_pmi("cmd=put kvsname=k key=a value=x=y", &c, &why)) << why;
  EXPECT_EQ(c.cmd, "put");
  ASSERT_TRUE(c.find("value"));
  EXPECT_EQ(*c.find("value"), "x=y");
  ASSERT_TRUE(parse_pmi("cmd=abort exitcode=3 message=it broke here", &c, &why));
  EXPECT_EQ(*c.find("message"), "it broke here");
  for (const char *bad : {"", "   ", "put key=a", "cmd= key=a", "cmd=put key", "cmd=put =x", "key=a cmd=put"})
    EXPECT_FALSE(parse_pmi(bad, &c, &why)) << bad;
  EXPECT_FALSE(parse_pmi(std::string("cmd=get key=a\0b", 15), &c, &why));
}

TEST(LaunchPmi, ServesTheDialogue) {
  PmiSession s(1, 3, "kvs_x");
  EXPECT_EQ(reply(s, "cmd=init pmi_version=1 pmi_subversion=1"),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
  EXPECT_EQ(reply(s, "cmd=get_maxes"), "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0\n");
  EXPECT_EQ(reply(s, "cmd=get_appnum"), "cmd=appnum appnum=0 rc=0\n");
  EXPECT_EQ(reply(s, "cmd=get_my_kvsname"), "cmd=my_kvsname kvsname=kvs_x rc=0\n");
  EXPECT_EQ(reply(s, "cmd=get_universe_size"), "cmd=universe_size size=3 rc=0\n");
  EXPECT_EQ(reply(s, "cmd=initack pmiid=1"), "cmd=initack rc=0\ncmd=set size=3\ncmd=set rank=1\ncmd=set debug=0\n");
  EXPECT_EQ(reply(s, "cmd=put kvsname=kvs_x key=mine value=1"), "cmd=put_result rc=0\n");
  EXPECT_EQ(reply(s, "cmd=get kvsname=kvs_x key=mine"), "cmd=get_result rc=0 found=TRUE value=1\n");
  // Before the first barrier nothing of the others' is visible: answered here
  // (MPICH's PMI_process_mapping), without asking rank 0.
  EXPECT_EQ(reply(s, "cmd=get kvsname=kvs_x key=theirs"), "cmd=get_result rc=-1 found=FALSE msg=key_theirs_not_found\n");
  // A barrier: this rank's puts go to rank 0, which keeps everyone's.
  PmiSession::Step b = s.on_line("cmd=barrier_in");
  EXPECT_EQ(b.then, PmiSession::Step::Then::barrier);
  EXPECT_EQ(b.reply, "");
  ASSERT_EQ(s.barrier_puts().size(), 1u);
  EXPECT_EQ(s.barrier_puts()[0].first, "mine");
  EXPECT_EQ(reply(s, "cmd=barrier_in").rfind("cmd=barrier_out rc=-1", 0), 0u);  // twice
  EXPECT_EQ(s.barrier_done(), "cmd=barrier_out rc=0\n");
  EXPECT_TRUE(s.barrier_puts().empty());
  // After it, a get is rank 0's to answer (once per key until the next barrier).
  auto fetches = [&](const std::string &key) {
    PmiSession::Step g = s.on_line("cmd=get kvsname=kvs_x key=" + key);
    EXPECT_EQ(g.then, PmiSession::Step::Then::fetch) << key;
    EXPECT_EQ(g.reply, "") << key;
    EXPECT_EQ(g.key, key);
  };
  fetches("theirs");
  EXPECT_EQ(s.fetched("theirs", true, "2"), "cmd=get_result rc=0 found=TRUE value=2\n");
  EXPECT_EQ(reply(s, "cmd=get kvsname=kvs_x key=theirs"), "cmd=get_result rc=0 found=TRUE value=2\n");
  fetches("mine");  // another rank may have put it in the same barrier
  EXPECT_EQ(s.fetched("mine", true, "1"), "cmd=get_result rc=0 found=TRUE value=1\n");
  fetches("nothing");
  EXPECT_EQ(s.fetched("nothing", false, ""), "cmd=get_result rc=-1 found=FALSE msg=key_nothing_not_found\n");
  EXPECT_EQ(reply(s, "cmd=get kvsname=kvs_x key=nothing"), "cmd=get_result rc=-1 found=FALSE msg=key_nothing_not_found\n");
  // A later barrier may replace any of them: asked again.
  EXPECT_EQ(s.on_line("cmd=barrier_in").then, PmiSession::Step::Then::barrier);
  EXPECT_TRUE(s.barrier_puts().empty());
  EXPECT_EQ(s.barrier_done(), "cmd=barrier_out rc=0\n");
  fetches("theirs");
  fetches("nothing");
  EXPECT_EQ(s.barriers(), 2);
  PmiSession::Step a = s.on_line("cmd=abort exitcode=7 message=bad things");
  EXPECT_EQ(a.then, PmiSession::Step::Then::abort);
  EXPECT_EQ(a.exit_code, 7);
  EXPECT_EQ(a.message, "bad things");
  PmiSession::Step f = s.on_line("cmd=finalize");
  EXPECT_EQ(f.reply, "cmd=finalize_ack rc=0\n");
  EXPECT_TRUE(s.finalized());
}

TEST(LaunchPmi, RefusesWithRcMinusOne) {
  PmiSession s(0, 2, "kvs_x");
  auto refused = [&](const std::string &line, const std::string &cmd) {
    const std::string r = reply(s, line);
    EXPECT_EQ(r.rfind("cmd=" + cmd + " rc=-1 msg=", 0), 0u) << line << " -> " << r;
    EXPECT_EQ(r.find(' ', r.find("msg=")), std::string::npos) << "a space in the message: " << r;
    EXPECT_EQ(r.back(), '\n');
  };
  refused("garbage", "error");
  refused("cmd=put kvsname=other key=a value=1", "put_result");
  refused("cmd=put kvsname=kvs_x key=" + std::string(65, 'k') + " value=1", "put_result");
  refused("cmd=put kvsname=kvs_x key=a value=" + std::string(1025, 'v'), "put_result");
  refused("cmd=put kvsname=kvs_x value=1", "put_result");
  refused("cmd=get kvsname=kvs_x", "get_result");
  refused("cmd=publish_name service=s port=p", "publish_result");
  refused("cmd=lookup_name service=s", "lookup_result");
  refused("cmd=frobnicate", "frobnicate_result");
  refused("cmd=\x01\x02", "error");
  // A barrier that could not be carried (its puts too large for one frame):
  // rc=-1, the puts kept for the next one.
  EXPECT_EQ(reply(s, "cmd=put kvsname=kvs_x key=a value=1"), "cmd=put_result rc=0\n");
  EXPECT_EQ(s.on_line("cmd=barrier_in").then, PmiSession::Step::Then::barrier);
  const std::string failed = s.barrier_failed("the puts make a frame of 70000000 bytes");
  EXPECT_EQ(failed, "cmd=barrier_out rc=-1 msg=the_puts_make_a_frame_of_70000000_bytes\n");
  EXPECT_EQ(s.on_line("cmd=barrier_in").then, PmiSession::Step::Then::barrier);
  ASSERT_EQ(s.barrier_puts().size(), 1u);
  EXPECT_EQ(s.barrier_done(), "cmd=barrier_out rc=0\n");
  EXPECT_EQ(s.on_overlong_line().reply.rfind("cmd=error rc=-1", 0), 0u);
  // spawn comes as several lines, refused at its end.
  EXPECT_EQ(reply(s, "mcmd=spawn"), "");
  EXPECT_EQ(reply(s, "nprocs=2"), "");
  EXPECT_EQ(reply(s, "endcmd").rfind("cmd=spawn_result rc=-1", 0), 0u);
  EXPECT_EQ(reply(s, "cmd=get_appnum"), "cmd=appnum appnum=0 rc=0\n");
}

namespace {

std::string framed(const Fields &f) {
  std::string out, error;
  EXPECT_TRUE(frame(f, &out, &error)) << error;
  return out;
}

}  // namespace

TEST(LaunchWire, FramesRoundTripAndAreBounded) {
  FrameReader r(kMaxHelloFrame);
  const std::string a = framed({"BARRIER", "0", "k", "v\nw"}), b = framed({"BYE"});
  EXPECT_EQ(b, std::string("\0\0\0\0\0\0\0\x03" "BYE", 11));  // an 8-byte big-endian length
  const std::string both = a + b;
  Fields f;
  std::string error;
  for (std::size_t i = 0; i < both.size(); ++i) {
    r.feed(both.data() + i, 1);
    if (i + 1 < a.size()) EXPECT_EQ(r.next(&f, &error), 0) << i;
  }
  ASSERT_EQ(r.next(&f, &error), 1);
  EXPECT_EQ(f, (Fields{"BARRIER", "0", "k", "v w"}));
  ASSERT_EQ(r.next(&f, &error), 1);
  EXPECT_EQ(f, (Fields{"BYE"}));
  EXPECT_EQ(r.next(&f, &error), 0);
  const std::string huge("\0\0\0\0\0\x10\0\0", 8);  // 1 MiB announced before the secret is proved
  r.feed(huge.data(), huge.size());
  EXPECT_EQ(r.next(&f, &error), -1);
  EXPECT_EQ(error, "a frame of 1048576 bytes, above the limit of 4096 bytes (4 KiB)");
  // Lengths beyond 32 bits are read whole, not cut to their low bytes.
  FrameReader big(kMaxFrame);
  const std::string beyond("\0\0\0\x01\0\0\0\x03" "BYE", 11);
  big.feed(beyond.data(), beyond.size());
  EXPECT_EQ(big.next(&f, &error), -1);
  EXPECT_EQ(error, "a frame of 4294967299 bytes, above the limit of 67108864 bytes (64 MiB)");
}

TEST(LaunchWire, RefusesToSendAboveTheLimit) {
  std::string out = "untouched", error;
  EXPECT_TRUE(frame({"0123456789", "abcd"}, &out, &error, 15));  // 10 + 1 + 4 bytes: at the limit
  EXPECT_EQ(out.size(), 8u + 15u);
  out = "untouched";
  EXPECT_FALSE(frame({"0123456789", "abcde"}, &out, &error, 15));
  EXPECT_EQ(error, "a frame of 16 bytes, above the limit of 15 bytes (15 B)");
  EXPECT_EQ(out, "untouched");
}

TEST(LaunchNet, ParsesAddresses) {
  Address a;
  std::string why;
  ASSERT_TRUE(parse_address("node-1.cluster:29500", &a, &why)) << why;
  EXPECT_EQ(a.host, "node-1.cluster");
  EXPECT_EQ(a.port, 29500);
  ASSERT_TRUE(parse_address("[fe80::1]:0", &a, &why)) << why;
  EXPECT_EQ(a.host, "fe80::1");
  EXPECT_EQ(a.text(), "[fe80::1]:0");
  for (const char *bad : {"", "host", ":29500", "host:", "host:65536", "host:-1", "host:2x", "::1:5", "[::1]5",
                          "a b:1", "h/x:1", "[[1]:55551", "[a]b]:1", "h]:1"})
    EXPECT_FALSE(parse_address(bad, &a, &why)) << bad;
}

TEST(LaunchJob, FindsMpiLaunchers) {
  EXPECT_EQ(mpi_launcher(env_of({})), "");
  EXPECT_EQ(mpi_launcher(env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}})), "hydra");
  EXPECT_EQ(mpi_launcher(env_of({{"PMI_FD", "6"}})), "pmi");
  EXPECT_EQ(mpi_launcher(env_of({{"OMPI_COMM_WORLD_RANK", "0"}})), "openmpi");
  EXPECT_EQ(mpi_launcher(env_of({{"PMIX_RANK", "0"}})), "pmix");
  EXPECT_EQ(mpi_launcher(env_of({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "3"}})), "slurm");
  EXPECT_EQ(mpi_launcher(env_of({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "3"}, {"PMI_FD", "5"}})), "slurm");
  // A batch script is no step.
  EXPECT_EQ(mpi_launcher(env_of({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "batch"}})), "");
  EXPECT_EQ(mpi_launcher(env_of({{"SLURM_PROCID", "0"}})), "");
  // torchrun's workers: what they inherited describes the agents.
  std::string note;
  EXPECT_EQ(mpi_launcher(env_of({{"PMI_RANK", "1"}, {"TORCHELASTIC_RUN_ID", "r1"}}), &note), "");
  EXPECT_NE(note.find("torchrun worker"), std::string::npos) << note;
}

TEST(LaunchJob, ReadsTheJob) {
  Job j;
  ASSERT_EQ(read_job(env_of({}), &j), PG_OK);
  EXPECT_EQ(j.mode, Job::Mode::single);
  ASSERT_EQ(read_job(env_of({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}}), &j),
            PG_OK);
  EXPECT_EQ(j.mode, Job::Mode::bootstrap);
  EXPECT_EQ(j.rank, 2);
  EXPECT_EQ(j.size, 4);
  EXPECT_EQ(j.local_size, 2);
  ASSERT_EQ(read_job(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}), &j), PG_OK);
  EXPECT_EQ(j.mode, Job::Mode::single);
  ASSERT_EQ(read_job(env_of({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}), &j), PG_OK);
  EXPECT_EQ(j.mode, Job::Mode::launcher);
  ASSERT_EQ(read_job(env_of({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"TORCHELASTIC_RUN_ID", "x"},
                             {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"PMI_RANK", "0"}}),
                     &j),
            PG_OK);
  EXPECT_EQ(j.mode, Job::Mode::bootstrap);
  EXPECT_TRUE(j.torchrun);
  EXPECT_TRUE(j.agent_store);
  EXPECT_FALSE(j.inherited.empty());
}

TEST(LaunchJob, NamesTheBadVariable) {
  auto fails = [](const std::map<std::string, std::string> &vars, const std::string &text) {
    Job j;
    EXPECT_EQ(read_job(env_of(vars), &j), PG_ERR_INVALID_ARGUMENT) << text;
    EXPECT_NE(pg::last_error().find(text), std::string::npos) << pg::last_error();
  };
  fails({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, "RANK='x' is not valid");
  fails({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, "RANK='-1' is not valid");
  fails({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, "RANK=2 is not valid: it must be below WORLD_SIZE=2");
  fails({{"WORLD_SIZE", "2"}}, "WORLD_SIZE=2 says this process is one of 2, but RANK is unset");
  fails({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE='0' is not valid");
  fails({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}, "WORLD_SIZE='99999999999' is not valid");
  fails({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
        "LOCAL_RANK=2 is not valid");
  fails({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}}, "LOCAL_WORLD_SIZE=3 is not valid");
}

TEST(LaunchJob, FindsTheRendezvous) {
  Settings s;
  Address a;
  std::string what;
  ASSERT_EQ(rendezvous_address(env_of({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}}), s, &a, &what), PG_OK);
  EXPECT_EQ(a.text(), "10.0.0.1:29500");
  EXPECT_EQ(what, "MASTER_ADDR:MASTER_PORT");
  ASSERT_EQ(rendezvous_address(env_of({{"MASTER_ADDR", "::1"}, {"MASTER_PORT", "29500"}}), s, &a, &what), PG_OK);
  EXPECT_EQ(a.text(), "[::1]:29500");
  EXPECT_EQ(rendezvous_address(env_of({{"MASTER_PORT", "29500"}}), s, &a, &what), PG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(pg::last_error().find("MASTER_ADDR is unset"), std::string::npos);
  EXPECT_EQ(rendezvous_address(env_of({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "0"}}), s, &a, &what),
            PG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(pg::last_error().find("MASTER_PORT='0'"), std::string::npos);
  ASSERT_EQ(parse_addr("PGS_BOOTSTRAP_ADDR", "rank0:4000", &s.addr), PG_OK);
  s.has_addr = true;
  ASSERT_EQ(rendezvous_address(env_of({}), s, &a, &what), PG_OK);
  EXPECT_EQ(what, "PGS_BOOTSTRAP_ADDR");
  bool derived = false;
  EXPECT_EQ(job_secret(s, a, &derived).size(), 64u);
  EXPECT_TRUE(derived);
  s.secret = "given-secret-0123456";
  EXPECT_EQ(job_secret(s, a, &derived), "given-secret-0123456");
  EXPECT_FALSE(derived);
}

TEST(LaunchSettings, ParseAndHideTheSecret) {
  double t = 0;
  EXPECT_EQ(parse_timeout("PGS_BOOTSTRAP_TIMEOUT", "2.5", &t), PG_OK);
  EXPECT_EQ(t, 2.5);
  expect_refused(parse_timeout, "PGS_BOOTSTRAP_TIMEOUT", {"0", "-1", "abc", "1e7", "inf", " 3"});
  std::string secret;
  EXPECT_EQ(parse_secret("PGS_BOOTSTRAP_SECRET", "0123456789abcdef", &secret), PG_OK);
  EXPECT_EQ(parse_secret("PGS_BOOTSTRAP_SECRET", "short-secret", &secret), PG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pg::last_error().find("short-secret"), std::string::npos) << "the value is repeated";
  EXPECT_EQ(parse_secret("PGS_BOOTSTRAP_SECRET", "0123456789 abcdef", &secret), PG_ERR_INVALID_ARGUMENT);
  Settings s;
  s.given = {"", "", "a-real-secret-value", ""};
  for (const pg::params::Listing &l : s.list())
    if (l.name == "PGS_BOOTSTRAP_SECRET") EXPECT_EQ(l.given, "(set, not shown)");
}
