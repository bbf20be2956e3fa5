// Topology on hwloc XML topologies (tests/data), GPU choice with
// CUDA_VISIBLE_DEVICES, binding, nearest NICs, and the launch environment.
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/settings.h"
#include "launch/launcher.h"
#include "topology/machine.h"
#include "util/log.h"
#include "util/params.h"
#include "util/status.h"

namespace topo = pg::topology;
using pg::topology::Bind;

namespace {

const std::string kData = PG_TEST_DATA_DIR;
const std::string kTwoSocket = kData + "/two_socket_8gpu_4nic.xml";
const std::string kNoNic = kData + "/one_socket_4gpu_nonic.xml";

// MPI for check_launcher (a singleton; MPI_Init before any launcher variable
// is set by a test).
class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init(nullptr, nullptr);
  }
  void TearDown() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};
::testing::Environment *const g_mpi = ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

// Sets environment variables for one scope and restores them after.
class ScopedEnv {
 public:
  void set(const char *name, const char *value) {
    remember(name);
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto &entry : saved_) {
      if (entry.second.first)
        setenv(entry.first.c_str(), entry.second.second.c_str(), 1);
      else
        unsetenv(entry.first.c_str());
    }
  }

 private:
  void remember(const char *name) {
    if (saved_.count(name)) return;
    const char *old = std::getenv(name);
    saved_[name] = {old != nullptr, old ? old : ""};
  }
  std::map<std::string, std::pair<bool, std::string>> saved_;
};

topo::Machine load(const std::string &path) {
  topo::Machine m;
  EXPECT_EQ(topo::load_machine_xml(path, &m), PG_OK) << pg::last_error();
  return m;
}

std::vector<std::string> bus_ids(const std::vector<const topo::Gpu *> &gpus) {
  std::vector<std::string> out;
  for (const topo::Gpu *g : gpus) out.push_back(g->pci_bus_id);
  return out;
}

const std::vector<std::string> kTwoSocketGpus = {
    "0000:03:00.0", "0000:04:00.0", "0000:12:00.0", "0000:13:00.0",
    "0000:83:00.0", "0000:84:00.0", "0000:93:00.0", "0000:94:00.0"};

}  // namespace

// This machine's L1 data cache, as hwloc reports it (fairring's fast path
// sizes its places by it), against what the C library reads from the CPU.
TEST(ThisMachine, L1DataCache) {
  std::shared_ptr<const topo::Machine> m;
  ASSERT_EQ(topo::load_machine("", &m), PG_OK) << pg::last_error();
  const long libc = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (libc <= 0) GTEST_SKIP() << "the C library does not know this CPU's L1 data cache";
  EXPECT_EQ(m->l1d_bytes, static_cast<std::size_t>(libc));
}

// This machine's L2 cache (fairring cuts its CPU slices by it), against the C
// library's reading; the cores sharing it, against the machine's cores.
TEST(ThisMachine, L2Cache) {
  std::shared_ptr<const topo::Machine> m;
  ASSERT_EQ(topo::load_machine("", &m), PG_OK) << pg::last_error();
  EXPECT_GE(m->l2_cores, 1);
  EXPECT_LE(m->l2_cores, m->cores);
  const long libc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (libc <= 0) GTEST_SKIP() << "the C library does not know this CPU's L2 cache";
  EXPECT_EQ(m->l2_bytes, static_cast<std::size_t>(libc));
}

// ---------------------------------------------------------------------------
// The 2-socket, 8-GPU, 4-NIC node
// ---------------------------------------------------------------------------

TEST(TwoSocketNode, CoresNumaGpusNics) {
  topo::Machine m = load(kTwoSocket);
  EXPECT_TRUE(m.from_xml);
  EXPECT_EQ(m.hostname, "gpunode-a");
  EXPECT_EQ(m.packages, 2);
  EXPECT_EQ(m.cores, 8);
  ASSERT_EQ(m.numa.size(), 2u);
  EXPECT_EQ(m.numa[0].cpuset, "0-3");
  EXPECT_EQ(m.numa[1].cpuset, "4-7");
  EXPECT_EQ(m.numa[0].cores, 4);
  EXPECT_EQ(m.l1d_bytes, 0u);  // the file describes no caches: fairring falls back to common sizes
  EXPECT_EQ(m.l2_bytes, 0u);

  ASSERT_EQ(m.gpus.size(), 8u);
  for (std::size_t i = 0; i < m.gpus.size(); ++i) {
    EXPECT_EQ(m.gpus[i].pci_bus_id, kTwoSocketGpus[i]);
    EXPECT_EQ(m.gpus[i].numa, i < 4 ? 0 : 1) << m.gpus[i].pci_bus_id;
    EXPECT_EQ(m.gpus[i].osdevs, "cuda" + std::to_string(i) + ",nvml" + std::to_string(i));
    EXPECT_EQ(m.gpus[i].uuid.substr(0, 5), "GPU-" + std::to_string(i));
    EXPECT_EQ(m.gpus[i].model, "NVIDIA H100 80GB HBM3");
  }

  // 4 InfiniBand NICs (OpenFabrics + network device) and one Ethernet port.
  ASSERT_EQ(m.nics.size(), 5u);
  std::map<std::string, const topo::Nic *> nics;
  for (const topo::Nic &n : m.nics) nics[n.name] = &n;
  ASSERT_TRUE(nics.count("mlx5_0") && nics.count("mlx5_1") && nics.count("mlx5_2") &&
              nics.count("mlx5_3") && nics.count("eno1"));
  EXPECT_EQ(nics["mlx5_0"]->netdev, "ib0");
  EXPECT_EQ(nics["mlx5_0"]->pci_bus_id, "0000:05:00.0");
  EXPECT_TRUE(nics["mlx5_0"]->openfabrics);
  EXPECT_EQ(nics["mlx5_0"]->numa, 0);
  EXPECT_EQ(nics["mlx5_1"]->numa, 0);
  EXPECT_EQ(nics["mlx5_2"]->numa, 1);
  EXPECT_EQ(nics["mlx5_3"]->numa, 1);
  EXPECT_FALSE(nics["eno1"]->openfabrics);
  EXPECT_EQ(nics["eno1"]->numa, 0);
}

TEST(TwoSocketNode, NearestNicPerGpu) {
  topo::Machine m = load(kTwoSocket);
  ASSERT_EQ(m.gpus.size(), 8u);
  const char *expected[] = {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1",
                            "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"};
  for (std::size_t i = 0; i < 8; ++i) {
    const topo::Gpu &g = m.gpus[i];
    ASSERT_GE(g.nearest_nic, 0) << g.pci_bus_id;
    EXPECT_EQ(m.nics[g.nearest_nic].name, expected[i]) << g.pci_bus_id;
    // GPUs 6 and 7 sit on a switch without a NIC; mlx5_3 hangs off the same
    // host bridge.
    EXPECT_EQ(g.nic_rule, i < 6 ? topo::NicRule::same_switch : topo::NicRule::same_host_bridge)
        << g.pci_bus_id;
  }
  EXPECT_STREQ(topo::nic_rule_name(m.gpus[0].nic_rule), "same PCI switch");
  EXPECT_EQ(topo::describe_gpu(m, m.gpus[6]),
            "0000:93:00.0 cuda6,nvml6 NUMA 1, NIC mlx5_3 (same host bridge)");
}

TEST(TwoSocketNode, LoadedThroughPgsTopologyXml) {
  ScopedEnv env;
  env.set("PGS_TOPOLOGY_XML", kTwoSocket.c_str());
  pg::Settings settings;
  ASSERT_EQ(pg::read_settings(&settings), PG_OK) << pg::last_error();
  EXPECT_EQ(settings.topology_xml, kTwoSocket);
  std::shared_ptr<const topo::Machine> first, second;
  ASSERT_EQ(topo::load_machine(settings.topology_xml, &first), PG_OK) << pg::last_error();
  ASSERT_EQ(topo::load_machine(settings.topology_xml, &second), PG_OK);
  EXPECT_EQ(first.get(), second.get()) << "loaded once per process";
  EXPECT_EQ(first->gpus.size(), 8u);
  EXPECT_EQ(first->source, "XML file " + kTwoSocket);
}

TEST(TwoSocketNode, MissingXmlNamesTheVariable) {
  std::shared_ptr<const topo::Machine> m;
  EXPECT_EQ(topo::load_machine(kData + "/no_such_file.xml", &m), PG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(pg::last_error().find("PGS_TOPOLOGY_XML"), std::string::npos) << pg::last_error();
  EXPECT_NE(pg::last_error().find("no_such_file.xml"), std::string::npos) << pg::last_error();
}

// ---------------------------------------------------------------------------
// GPU choice
// ---------------------------------------------------------------------------

TEST(GpuChoice, LocalRankIsCudaIndexInBusOrder) {
  ScopedEnv env;
  env.set("CUDA_VISIBLE_DEVICES", nullptr);
  topo::Machine m = load(kTwoSocket);
  for (int local = 0; local < 8; ++local) {
    int index = -1;
    const topo::Gpu *gpu = nullptr;
    ASSERT_EQ(topo::choose_gpu(m, local, 8, &index, &gpu), PG_OK) << pg::last_error();
    EXPECT_EQ(index, local);
    ASSERT_NE(gpu, nullptr);
    EXPECT_EQ(gpu->pci_bus_id, kTwoSocketGpus[local]);
  }
}

TEST(GpuChoice, TooManyLocalRanksIsUnavailable) {
  ScopedEnv env;
  env.set("CUDA_VISIBLE_DEVICES", nullptr);
  topo::Machine m = load(kTwoSocket);
  int index = -1;
  const topo::Gpu *gpu = nullptr;
  // Every local rank fails, not only the ones past the last GPU.
  for (int local : {0, 8}) {
    EXPECT_EQ(topo::choose_gpu(m, local, 9, &index, &gpu), PG_ERR_UNAVAILABLE);
    const std::string &msg = pg::last_error();
    EXPECT_NE(msg.find("local rank " + std::to_string(local) + " of 9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("8 GPUs visible"), std::string::npos) << msg;
  }
}

TEST(GpuChoice, CudaVisibleDevicesReorderAndSubset) {
  ScopedEnv env;
  env.set("CUDA_VISIBLE_DEVICES", "6,1,3");
  topo::Machine m = load(kTwoSocket);
  const std::vector<std::string> expected = {"0000:93:00.0", "0000:04:00.0", "0000:13:00.0"};
  for (int local = 0; local < 3; ++local) {
    int index = -1;
    const topo::Gpu *gpu = nullptr;
    ASSERT_EQ(topo::choose_gpu(m, local, 3, &index, &gpu), PG_OK) << pg::last_error();
    EXPECT_EQ(index, local);
    EXPECT_EQ(gpu->pci_bus_id, expected[local]);
  }
  int index = -1;
  EXPECT_EQ(topo::choose_gpu(m, 0, 4, &index, nullptr), PG_ERR_UNAVAILABLE);
  EXPECT_NE(pg::last_error().find("3 GPUs visible"), std::string::npos) << pg::last_error();
  EXPECT_NE(pg::last_error().find("CUDA_VISIBLE_DEVICES='6,1,3'"), std::string::npos);
}

TEST(GpuChoice, CudaVisibleDevicesGrammar) {
  topo::Machine m = load(kTwoSocket);
  using V = std::vector<std::string>;
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, nullptr)), kTwoSocketGpus);
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "")), V{});
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "-1")), V{});
  // Full UUIDs and unique prefixes, mixed with indices.
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "GPU-3d5c7d1e-0b2f-4e6a-9d3c-7f10a2b3c4d3,GPU-60,0")),
            (V{"0000:13:00.0", "0000:93:00.0", "0000:03:00.0"}));
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "gpu-5F")), V{"0000:84:00.0"});
  // As in CUDA, the list ends at the first entry that matches nothing: an
  // index out of range, an ambiguous prefix, a MIG UUID, a repeat.
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "1,8,2")), V{"0000:04:00.0"});
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "2,GPU-,3")), V{"0000:12:00.0"});
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "MIG-abc,1")), V{});
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "4,4,5")), V{"0000:83:00.0"});
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "7, 0")), (V{"0000:94:00.0", "0000:03:00.0"}));
}

TEST(GpuChoice, CountFromCudaItself) {
  int index = -1;
  EXPECT_EQ(topo::choose_cuda_index(3, 4, 4, &index), PG_OK);
  EXPECT_EQ(index, 3);
  EXPECT_EQ(topo::choose_cuda_index(0, 2, 1, &index), PG_ERR_UNAVAILABLE);
  EXPECT_NE(pg::last_error().find("local rank 0 of 2"), std::string::npos) << pg::last_error();
  EXPECT_NE(pg::last_error().find("1 GPU visible"), std::string::npos) << pg::last_error();
  EXPECT_EQ(topo::choose_cuda_index(0, 1, 0, &index), PG_ERR_UNAVAILABLE);
}

TEST(GpuChoice, FindByBusId) {
  topo::Machine m = load(kTwoSocket);
  for (const char *id : {"0000:83:00.0", "83:00.0", "00000000:83:00.0", "0000:83:00.0"}) {
    const topo::Gpu *g = topo::find_gpu_by_bus_id(m, id);
    ASSERT_NE(g, nullptr) << id;
    EXPECT_EQ(g->pci_bus_id, "0000:83:00.0");
  }
  EXPECT_EQ(topo::find_gpu_by_bus_id(m, "0000:9F:00.0"), nullptr);  // a NIC, not a GPU
  EXPECT_NE(topo::find_gpu_by_bus_id(m, "0000:94:00.0"), nullptr);
  EXPECT_EQ(topo::find_gpu_by_bus_id(m, "garbage"), nullptr);
  EXPECT_EQ(topo::find_gpu_by_bus_id(m, ""), nullptr);
  // hwloc answers the lookup: a Machine built by hand has no topology to ask.
  topo::Machine by_hand;
  by_hand.gpus = m.gpus;
  EXPECT_EQ(topo::find_gpu_by_bus_id(by_hand, "0000:83:00.0"), nullptr);
}

// ---------------------------------------------------------------------------
// The node with GPUs and no NIC (bare PCI devices, no CUDA/NVML OS devices)
// ---------------------------------------------------------------------------

TEST(NoNicNode, GpusFromPciOnly) {
  topo::Machine m = load(kNoNic);
  EXPECT_EQ(m.packages, 1);
  ASSERT_EQ(m.numa.size(), 2u);
  EXPECT_TRUE(m.nics.empty());
  ASSERT_EQ(m.gpus.size(), 4u);
  const std::vector<std::string> ids = {"0000:0a:00.0", "0000:21:00.0", "0000:41:00.0",
                                        "0000:4b:00.0"};
  const int numa[] = {1, 1, 0, 0};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m.gpus[i].pci_bus_id, ids[i]);
    EXPECT_EQ(m.gpus[i].numa, numa[i]);
    EXPECT_TRUE(m.gpus[i].uuid.empty());
    EXPECT_TRUE(m.gpus[i].osdevs.empty());
    EXPECT_EQ(m.gpus[i].nearest_nic, -1);
    EXPECT_EQ(m.gpus[i].nic_rule, topo::NicRule::none);
  }
  EXPECT_EQ(topo::describe_gpu(m, m.gpus[0]), "0000:0a:00.0 NUMA 1, no NIC");
  // Without NVML, UUIDs cannot be matched: nothing is visible.
  EXPECT_TRUE(topo::visible_gpus(m, "GPU-0a5c7d1e").empty());
  EXPECT_EQ(bus_ids(topo::visible_gpus(m, "3,0")),
            (std::vector<std::string>{"0000:4b:00.0", "0000:0a:00.0"}));

  ScopedEnv env;
  env.set("CUDA_VISIBLE_DEVICES", nullptr);
  int index = -1;
  const topo::Gpu *gpu = nullptr;
  ASSERT_EQ(topo::choose_gpu(m, 2, 4, &index, &gpu), PG_OK);
  EXPECT_EQ(gpu->pci_bus_id, "0000:41:00.0");
  EXPECT_EQ(topo::choose_gpu(m, 0, 5, &index, &gpu), PG_ERR_UNAVAILABLE);
  EXPECT_EQ(topo::nic_for_rank(m, gpu, topo::Binding()), nullptr);
}

// ---------------------------------------------------------------------------
// Binding
// ---------------------------------------------------------------------------

TEST(Binding, NumaOfTheGpu) {
  topo::Machine m = load(kTwoSocket);
  for (std::size_t i = 0; i < m.gpus.size(); ++i) {
    topo::Binding b = topo::choose_binding(m, Bind::numa, 0, &m.gpus[i]);
    EXPECT_EQ(b.numa, i < 4 ? 0 : 1);
    EXPECT_EQ(b.cpuset, i < 4 ? "0-3" : "4-7");
  }
  topo::Machine nonic = load(kNoNic);
  topo::Binding b = topo::choose_binding(nonic, Bind::numa, 0, &nonic.gpus[0]);
  EXPECT_EQ(b.numa, 1);
  EXPECT_EQ(b.cpuset, "4-7");
  EXPECT_EQ(topo::describe_binding(b), "numa:1 cpus 4-7 (NUMA node of GPU 0000:0a:00.0)");
}

TEST(Binding, CpuRanksRoundRobin) {
  topo::Machine m = load(kTwoSocket);
  for (int local = 0; local < 5; ++local) {
    topo::Binding b = topo::choose_binding(m, Bind::numa, local, nullptr);
    EXPECT_EQ(b.numa, local % 2);
  }
  EXPECT_EQ(topo::describe_binding(topo::choose_binding(m, Bind::numa, 3, nullptr)),
            "numa:1 cpus 4-7 (local rank 3 round-robin over 2 NUMA nodes)");
  // A CPU rank's NIC: an OpenFabrics NIC on its NUMA node.
  const topo::Nic *nic = topo::nic_for_rank(m, nullptr, topo::choose_binding(m, Bind::numa, 1, nullptr));
  ASSERT_NE(nic, nullptr);
  EXPECT_EQ(nic->name, "mlx5_2");
}

TEST(Binding, NoneBindsNothing) {
  topo::Machine m = load(kTwoSocket);
  topo::Binding b = topo::choose_binding(m, Bind::none, 1, &m.gpus[7]);
  EXPECT_EQ(b.numa, -1);
  EXPECT_EQ(topo::describe_binding(b), "none");
  std::string note;
  EXPECT_EQ(topo::apply_binding(m, b, &note), PG_OK);
  EXPECT_EQ(note, "not bound");
}

TEST(Binding, XmlTopologyIsNeverApplied) {
  topo::Machine m = load(kTwoSocket);
  topo::Binding b = topo::choose_binding(m, Bind::numa, 0, &m.gpus[5]);
  std::string before = topo::current_cpubind(), note;
  EXPECT_EQ(topo::apply_binding(m, b, &note), PG_OK);
  EXPECT_NE(note.find("not applied"), std::string::npos) << note;
  EXPECT_EQ(topo::current_cpubind(), before);
}

TEST(Binding, PrepareRankReport) {
  ScopedEnv env;
  env.set("PGS_TOPOLOGY_XML", kTwoSocket.c_str());
  env.set("PGS_BIND", "numa");
  env.set("CUDA_VISIBLE_DEVICES", nullptr);
  pg::Settings settings;
  ASSERT_EQ(pg::read_settings(&settings), PG_OK) << pg::last_error();
  ASSERT_EQ(settings.bind, Bind::numa);
  topo::Layout layout;
  layout.local_rank = 6;
  layout.local_size = 8;
  std::string report;
  ASSERT_EQ(topo::prepare_rank(settings.rank_options(), layout, 6, &report), PG_OK) << pg::last_error();
  EXPECT_NE(report.find("bind=numa:1 cpus 4-7"), std::string::npos) << report;
  EXPECT_NE(report.find("not applied"), std::string::npos) << report;
  EXPECT_NE(report.find("gpu=cuda:6 0000:93:00.0"), std::string::npos) << report;
  EXPECT_NE(report.find("NIC mlx5_3 (same host bridge)"), std::string::npos) << report;

  // CUDA's bus id wins over the index (CUDA may order GPUs fastest first);
  // an id hwloc does not know falls back to the index.
  ASSERT_EQ(topo::prepare_rank(settings.rank_options(), layout, 0, &report, "0000:93:00.0"), PG_OK);
  EXPECT_NE(report.find("gpu=cuda:0 0000:93:00.0"), std::string::npos) << report;
  EXPECT_NE(report.find("bind=numa:1"), std::string::npos) << report;
  ASSERT_EQ(topo::prepare_rank(settings.rank_options(), layout, 6, &report, "0000:ff:00.0"), PG_OK);
  EXPECT_NE(report.find("gpu=cuda:6 0000:93:00.0"), std::string::npos) << report;

  // A CPU strategy: round-robin, and a NIC on that NUMA node.
  layout.local_rank = 2;
  ASSERT_EQ(topo::prepare_rank(settings.rank_options(), layout, -1, &report), PG_OK) << pg::last_error();
  EXPECT_NE(report.find("bind=numa:0 cpus 0-3"), std::string::npos) << report;
  EXPECT_NE(report.find("nic=mlx5_0"), std::string::npos) << report;
}

// ---------------------------------------------------------------------------
// Nearest-NIC rules on hand-made machines
// ---------------------------------------------------------------------------

TEST(NearestNic, NumaThenAnyAndBalanced) {
  topo::Machine m;
  m.gpus.resize(3);
  m.gpus[0].numa = 0;
  m.gpus[1].numa = 0;
  m.gpus[2].numa = 1;
  m.nics.resize(2);
  m.nics[0].name = "eth0";
  m.nics[0].numa = 0;
  m.nics[1].name = "eth1";
  m.nics[1].numa = 0;
  topo::assign_nearest_nics(&m);
  // Two GPUs, two equally near NICs: one each.
  EXPECT_EQ(m.gpus[0].nearest_nic, 0);
  EXPECT_EQ(m.gpus[1].nearest_nic, 1);
  EXPECT_EQ(m.gpus[0].nic_rule, topo::NicRule::same_numa);
  EXPECT_EQ(m.gpus[2].nic_rule, topo::NicRule::other);
  EXPECT_GE(m.gpus[2].nearest_nic, 0);

  // An OpenFabrics NIC beats a nearer Ethernet port.
  m.nics[1].openfabrics = true;
  m.nics[1].numa = 1;
  topo::assign_nearest_nics(&m);
  EXPECT_EQ(m.gpus[0].nearest_nic, 1);
  EXPECT_EQ(m.gpus[0].nic_rule, topo::NicRule::other);
  EXPECT_EQ(m.gpus[2].nic_rule, topo::NicRule::same_numa);
}

TEST(NearestNic, LeafSwitchBeatsUpperSwitch) {
  topo::Machine m;
  m.gpus.resize(1);
  m.gpus[0].bridges = {10, 20, 1};  // leaf switch 10, upper switch 20, host bridge 1
  m.gpus[0].host_bridges = {1};
  m.nics.resize(2);
  m.nics[0].name = "upper";
  m.nics[0].openfabrics = true;
  m.nics[0].bridges = {20, 1};
  m.nics[0].host_bridges = {1};
  m.nics[1].name = "leaf";
  m.nics[1].openfabrics = true;
  m.nics[1].bridges = {10, 20, 1};
  m.nics[1].host_bridges = {1};
  topo::assign_nearest_nics(&m);
  EXPECT_EQ(m.gpus[0].nearest_nic, 1);
  EXPECT_EQ(m.gpus[0].nic_rule, topo::NicRule::same_switch);
}

// ---------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------

namespace {

pg::launch::Launcher detect(const std::map<std::string, std::string> &vars) {
  return pg::launch::detect_launcher([&vars](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

const std::map<std::string, std::string> kHydra = {
    {"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}};
const std::map<std::string, std::string> kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "5"},
                                                     {"OMPI_COMM_WORLD_SIZE", "8"},
                                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
const std::map<std::string, std::string> kSlurm = {
    {"SLURM_PROCID", "6"},  {"SLURM_LOCALID", "2"},         {"SLURM_NTASKS", "8"},
    {"SLURM_NODEID", "1"},  {"SLURM_JOB_NODELIST", "gpu[01-02]"}, {"SLURM_STEP_ID", "0"}};
const std::map<std::string, std::string> kTorchrun = {
    {"RANK", "2"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"},
    {"GROUP_RANK", "1"}};

std::map<std::string, std::string> merge(std::initializer_list<std::map<std::string, std::string>> parts) {
  std::map<std::string, std::string> out;
  for (const auto &p : parts)  // later parts override earlier ones
    for (const auto &kv : p) out[kv.first] = kv.second;
  return out;
}

}  // namespace

TEST(Launcher, EachLauncher) {
  // describe_launcher shows every field the launcher gave.
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {kHydra, "hydra rank 3/4 local 1/2"},
      {kOpenMpi, "openmpi rank 5/8 local 1/4"},
      {kSlurm, "slurm rank 6/8 local 2 node 1 nodes gpu[01-02]"},
      {kTorchrun, "torchrun rank 2/4 local 0/2 node 1"},
      {{}, "none"},
  };
  for (const auto &c : cases) {
    pg::launch::Launcher l = detect(c.first);
    EXPECT_EQ(pg::launch::describe_launcher(l), c.second);
    EXPECT_TRUE(l.notes.empty()) << l.notes[0];
  }
}

TEST(Launcher, Precedence) {
  EXPECT_EQ(detect(merge({kHydra, kOpenMpi, kSlurm, kTorchrun})).name, "hydra");
  EXPECT_EQ(detect(merge({kOpenMpi, kSlurm, kTorchrun})).name, "openmpi");
  EXPECT_EQ(detect(merge({kSlurm, kTorchrun})).name, "slurm");
  // mpiexec inside an allocation: Hydra's variables win over the Slurm step
  // of its proxies.
  pg::launch::Launcher l = detect(merge({kHydra, kSlurm}));
  EXPECT_EQ(l.name, "hydra");
  EXPECT_EQ(l.rank, 3);
  // srun --mpi=pmi2 sets PMI_RANK/PMI_SIZE but not MPI_LOCALRANKID: Slurm.
  l = detect(merge({kSlurm, {{"PMI_RANK", "6"}, {"PMI_SIZE", "8"}}}));
  EXPECT_EQ(l.name, "slurm");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("hydra variables ignored"), std::string::npos) << l.notes[0];
  // The size of the step, not of the job.
  l = detect(merge({kSlurm, {{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "1"}}}));
  EXPECT_EQ(l.size, 2);
  // A batch script is not a step.
  l = detect(merge({kSlurm, {{"SLURM_STEP_ID", "batch"}}}));
  EXPECT_EQ(l.name, "");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("batch"), std::string::npos);
  // Nor is a batch script without any step variable, as Slurm 22.05 runs it:
  // SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_TASKS_PER_NODE only.
  l = detect({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"},
              {"SLURM_NODEID", "0"}, {"SLURM_TASKS_PER_NODE", "4"}});
  EXPECT_EQ(l.name, "");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("no SLURM_STEP_ID"), std::string::npos) << l.notes[0];
}

TEST(Launcher, SlurmLocalSizeFromTasksPerNode) {
  // Node 1 of a step laid out "4(x2)": 4 tasks on each of 2 nodes.
  pg::launch::Launcher l = detect(merge({kSlurm, {{"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}}}));
  EXPECT_EQ(l.local_size, 4);
  EXPECT_EQ(pg::launch::describe_launcher(l), "slurm rank 6/8 local 2/4 node 1 nodes gpu[01-02]");
  // Irregular steps: the entry of this node; the step's list before the job's.
  const std::vector<std::pair<std::string, int>> cases = {
      {"3,5", 5}, {"2(x1),6", 6}, {"7(x3)", 7}, {"1,3(x2),9", 3}, {"5", -1},
      {"2(x", -1}, {"x(x2)", -1}, {"3,-5", -1},
      {"", -1}};  // "" is unset: then the job's "9", which has no node 1
  for (const auto &c : cases) {
    l = detect(merge({kSlurm, {{"SLURM_TASKS_PER_NODE", "9"},
                               {"SLURM_STEP_TASKS_PER_NODE", c.first}}}));
    EXPECT_EQ(l.local_size, c.second) << "'" << c.first << "'";
  }
  // A local rank beyond the local size: the launcher is not believed.
  l = detect(merge({kSlurm, {{"SLURM_STEP_TASKS_PER_NODE", "4,2"}}}));
  EXPECT_EQ(l.name, "");
}

TEST(Launcher, FallbackVariablesAndEmptyValues) {
  // Older Slurm spells the step SLURM_STEPID.
  auto vars = kSlurm;
  vars.erase("SLURM_STEP_ID");
  vars["SLURM_STEPID"] = "4294967294";
  pg::launch::Launcher l = detect(vars);
  EXPECT_EQ(l.name, "");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("SLURM_STEPID='4294967294'"), std::string::npos) << l.notes[0];
  // The step's node list before the job's.
  l = detect(merge({kSlurm, {{"SLURM_STEP_NODELIST", "gpu02"}}}));
  EXPECT_EQ(l.nodelist, "gpu02");
  // A variable set to "" is unset: no launcher, or the next name.
  EXPECT_EQ(detect({{"RANK", "0"}, {"WORLD_SIZE", ""}}).name, "");
  l = detect(merge({kSlurm, {{"SLURM_STEP_NUM_TASKS", ""}}}));
  EXPECT_EQ(l.size, 8);
  // Local rank and size are optional; what is given must still agree.
  l = detect({{"OMPI_COMM_WORLD_RANK", "1"}});
  EXPECT_EQ(l.name, "openmpi");
  EXPECT_EQ(l.size, -1);
  EXPECT_EQ(l.local_rank, -1);
  l = detect(merge({kTorchrun, {{"LOCAL_RANK", "2"}}}));
  EXPECT_EQ(l.name, "");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("local rank 2 is not below 2"), std::string::npos) << l.notes[0];
}

TEST(Launcher, MalformedVariablesSkipTheLauncher) {
  pg::launch::Launcher l = detect(merge({{{"PMI_RANK", "abc"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}}, kTorchrun}));
  EXPECT_EQ(l.name, "torchrun");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("hydra"), std::string::npos) << l.notes[0];
  EXPECT_NE(l.notes[0].find("PMI_RANK='abc'"), std::string::npos) << l.notes[0];

  for (const char *bad :
       {"-1", "-0", "+4", "4x", " 3", "0x4", "4.0", "2147483648", "99999999999"}) {
    auto vars = kOpenMpi;
    vars["OMPI_COMM_WORLD_SIZE"] = bad;
    EXPECT_NE(detect(vars).name, "openmpi") << "'" << bad << "'";
  }
  // A rank beyond the size is not a launcher we believe either.
  auto vars = kSlurm;
  vars["SLURM_PROCID"] = "8";
  l = detect(vars);
  EXPECT_EQ(l.name, "");
  ASSERT_FALSE(l.notes.empty());
  EXPECT_NE(l.notes.back().find("not below size 8"), std::string::npos) << l.notes.back();
}

const std::string kMpich = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Mar  3 2022\n";
const std::string kOpenMpiLibrary = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4\n";

TEST(Launcher, SingletonWarning) {
  pg::launch::Launcher slurm = detect(kSlurm);
  std::string w = pg::launch::launcher_warning(slurm, 0, 1, kMpich);
  EXPECT_NE(w.find("world of 1 process"), std::string::npos) << w;
  EXPECT_NE(w.find("(slurm) started 8 processes"), std::string::npos) << w;
  EXPECT_NE(w.find("srun ran without an MPI plugin"), std::string::npos) << w;
  EXPECT_NE(w.find("MPICH 4.0.2 connects to srun through PMI-2: run 'srun --mpi=pmi2"),
            std::string::npos) << w;
  EXPECT_NE(w.find("different MPI"), std::string::npos) << w;

  // What srun was given, and what this MPI speaks.
  w = pg::launch::launcher_warning(detect(merge({kSlurm, {{"SLURM_MPI_TYPE", "pmix"}}})), 0, 1, kMpich);
  EXPECT_NE(w.find("srun ran with --mpi=pmix (SLURM_MPI_TYPE), but MPICH 4.0.2"),
            std::string::npos) << w;
  EXPECT_NE(w.find("ignores --mpi=pmix"), std::string::npos) << w;
  w = pg::launch::launcher_warning(detect(merge({kSlurm, {{"SLURM_MPI_TYPE", "pmi2"}}})), 0, 1,
                             kOpenMpiLibrary);
  EXPECT_NE(w.find("Open MPI v4.1.4 connects to srun through PMIx: run 'srun --mpi=pmix"),
            std::string::npos) << w;
  // The right plugin and still singletons: another MPI is linked.
  w = pg::launch::launcher_warning(detect(merge({kSlurm, {{"SLURM_MPI_TYPE", "pmi2"}}})), 0, 1, kMpich);
  EXPECT_NE(w.find("which MPICH 4.0.2 supports, so likely the application is linked against a "
                   "different MPI"), std::string::npos) << w;
  w = pg::launch::launcher_warning(slurm, 0, 1, "Some MPI 1.0");
  EXPECT_NE(w.find("the --mpi value that Some MPI 1.0 supports"), std::string::npos) << w;

  std::string h = pg::launch::launcher_warning(detect(kHydra), 0, 1, kMpich);
  EXPECT_NE(h.find("(hydra) started 4 processes"), std::string::npos) << h;
  EXPECT_NE(h.find("different MPI"), std::string::npos) << h;
  EXPECT_NE(h.find("--mpi=pmi2"), std::string::npos) << h;

  std::string t = pg::launch::launcher_warning(detect(kTorchrun), 0, 1, kMpich);
  EXPECT_NE(t.find("MPI was initialized before pgstrategy could bring these processes into one MPI job"),
            std::string::npos) << t;
  EXPECT_NE(t.find("import pgstrategy_torch"), std::string::npos) << t;
}

// A torchrun worker started inside an srun step (srun torchrun ...) belongs to
// torchrun's job: the step's variables describe the agents.
TEST(Launcher, TorchrunWorkerInsideASlurmStep) {
  pg::launch::Launcher l = detect(merge({kSlurm, kTorchrun, {{"TORCHELASTIC_RUN_ID", "job7"}}}));
  EXPECT_EQ(l.name, "torchrun");
  EXPECT_EQ(l.size, std::stoi(kTorchrun.at("WORLD_SIZE")));
  EXPECT_EQ(detect(merge({kSlurm, kTorchrun})).name, "slurm");
}

TEST(Launcher, OtherDisagreementNamesOnlyTheLauncher) {
  pg::launch::Launcher l = detect(kOpenMpi);
  EXPECT_EQ(pg::launch::launcher_warning(l, 5, 8, kOpenMpiLibrary), "");
  std::string w = pg::launch::launcher_warning(l, 5, 6, kOpenMpiLibrary);
  EXPECT_EQ(w, "the launcher (openmpi) says rank 5 of 8, MPI says rank 5 of 6; using MPI's");
  w = pg::launch::launcher_warning(l, 4, 8, kOpenMpiLibrary);
  EXPECT_NE(w.find("(openmpi) says rank 5 of 8"), std::string::npos) << w;
  EXPECT_EQ(w.find("pmi2"), std::string::npos) << w;
  EXPECT_EQ(pg::launch::launcher_warning(detect({}), 0, 1, kMpich), "");
  // A launcher of size 1 and MPI of size 1 agree.
  EXPECT_EQ(pg::launch::launcher_warning(detect({{"RANK", "0"}, {"WORLD_SIZE", "1"}}), 0, 1, kMpich), "");
}

TEST(Launcher, CheckLauncherWarnsOnceThroughTheLog) {
  ScopedEnv env;
  for (const char *v : {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE", "SLURM_STEPID", "SLURM_STEP_NUM_TASKS",
                        "SLURM_MPI_TYPE"})
    env.set(v, nullptr);
  env.set("SLURM_STEP_ID", "0");
  env.set("SLURM_PROCID", "1");
  env.set("SLURM_NTASKS", "4");
  env.set("SLURM_LOCALID", "1");
  pg::log::set_level(pg::params::LogLevel::warn);
  testing::internal::CaptureStderr();
  pg::launch::check_launcher(MPI_COMM_WORLD);
  pg::launch::check_launcher(MPI_COMM_WORLD);
  std::string err = testing::internal::GetCapturedStderr();
  pg::log::set_level(pg::params::LogLevel::error);
  EXPECT_NE(err.find("warn"), std::string::npos) << err;
  EXPECT_NE(err.find("(slurm) started 4 processes"), std::string::npos) << err;
  EXPECT_NE(err.find("srun ran without an MPI plugin"), std::string::npos) << err;
  EXPECT_EQ(err.find("srun ran"), err.rfind("srun ran")) << "warned twice: " << err;
  // The line names the launcher's rank beside MPI's 0.
  EXPECT_NE(err.find("[pgstrategy 0, slurm rank 1] warn:"), std::string::npos) << err;
}
