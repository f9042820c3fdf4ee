// Degraded reads of erasure-coded files against a real etcd and ten real
// rangefs-node processes: a file put with `rangefs-admin file put --ec=6+3`
// reads back byte-exact through the library's agent path with any 1, 2 or
// 3 of its 9 cell nodes SIGKILLed (every combination for a small file, a
// few for a larger one), with a data cell's node SIGSTOPped (no error, in
// bounded time), and 4 nodes lost gives DATA_LOSS naming the row; the
// FUSE mount reads a degraded file byte-exact too. Runs in a private mount
// namespace (base/testing:private_mounts_main).
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "admin/commands.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "tests/integration/mount_harness.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kCell = 64 << 10;
constexpr uint64_t kRow = 6 * kCell;
constexpr int kAgents = 10;
constexpr absl::Duration kWait = absl::Seconds(60);

std::string Random(uint64_t size, unsigned seed) {
  std::string s(size, '\0');
  std::mt19937_64 gen(seed);
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

// Every subset of {0..n-1} with 1 to `max` members, smallest first.
std::vector<std::vector<int>> Subsets(int n, int max) {
  std::vector<std::vector<int>> out;
  for (int size = 1; size <= max; ++size) {
    for (int mask = 0; mask < (1 << n); ++mask) {
      if (__builtin_popcount(mask) != size) continue;
      std::vector<int> s;
      for (int i = 0; i < n; ++i) {
        if (mask & (1 << i)) s.push_back(i);
      }
      out.push_back(s);
    }
  }
  return out;
}

class EcReadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = testing::AgentCluster::Start("ec_read_test");
    ASSERT_THAT(c, IsOk());
    cluster_ = std::move(*c).release();
    ASSERT_THAT(cluster_->AddLiveAgents(kAgents, kWait), IsOk());
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
  }
  void TearDown() override { ReviveAll(); }

  // Puts `data` at `path` with --ec=6+3; returns the agent index of each
  // of its 9 columns (data then parity).
  std::vector<int> PutEc(const std::string& path, const std::string& data) {
    const std::string local = absl::StrCat(cluster_->dir(), "/put", ++puts_);
    std::ofstream(local, std::ios::binary) << data;
    auto args = admin::Args::Parse({"file", "put", local, path, "--ec=6+3",
                                    "--stripe-unit=64K", "--ec-min-rows=0"});
    EXPECT_THAT(args, IsOk());
    if (!args.ok()) return {};
    auto put = admin::RunCommand(ctx_, *args);
    EXPECT_THAT(put, IsOk());
    auto f = cluster_->store()->GetFile(path);
    EXPECT_THAT(f, IsOk());
    if (!f.ok() || !ns::IsErasureCoded(f->layout)) return {};
    std::vector<int> columns;
    for (const auto& t : f->layout.striped().targets()) {
      columns.push_back(AgentIndex(t.replicas(0).node_id()));
    }
    return columns;
  }

  static int AgentIndex(const std::string& id) {
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      if (cluster_->agent(i).id == id) return static_cast<int>(i);
    }
    return -1;
  }

  // Exactly the agents in `dead` are SIGKILLed; the others serve.
  void KillExactly(const std::set<int>& dead) {
    for (int i = 0; i < kAgents; ++i) {
      const bool is_dead = dead_.count(i) > 0;
      const bool want_dead = dead.count(i) > 0;
      testing::AgentProcess& a = cluster_->agent(i);
      if (want_dead && !is_dead) {
        ASSERT_THAT(a.process->Kill(), IsOk());
        ASSERT_THAT(a.process->Wait(kWait), IsOk());
      } else if (!want_dead && is_dead) {
        ASSERT_THAT(cluster_->Restart(a), IsOk());
      }
    }
    dead_ = dead;
  }
  void ReviveAll() {
    for (int i : stopped_) {
      cluster_->agent(i).process->Signal(SIGCONT).IgnoreError();
    }
    stopped_.clear();
    KillExactly({});
  }

  // A client on the agent data path, new for each check: it learns of the
  // dead nodes by reading.
  std::unique_ptr<Client> OpenClient() {
    ClientOptions o;
    o.etcd_endpoints = cluster_->etcd()->endpoints();
    o.cluster = "it";
    o.data_path = DataPath::kAgent;
    o.default_deadline = absl::Seconds(20);
    auto c = Client::Open(o);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Reads `path` whole in reads of `chunk` bytes (not cell-aligned).
  absl::StatusOr<std::string> ReadBack(Client& client, const std::string& path,
                                       size_t chunk = 100003) {
    auto f = client.OpenFile(path);
    if (!f.ok()) return f.status();
    std::string out((*f)->size(), '\0');
    for (uint64_t at = 0; at < out.size(); at += chunk) {
      const size_t n = std::min<uint64_t>(chunk, out.size() - at);
      auto r = (*f)->Read(at, absl::MakeSpan(out.data() + at, n));
      if (!r.ok()) return r.status();
      if (*r != n) return absl::DataLossError(absl::StrCat("short at ", at));
    }
    return out;
  }

  // Kills the agents of `cells` (column indexes) and reads `path` back.
  void ExpectByteExactWithout(const std::string& path, const std::string& data,
                              const std::vector<int>& columns,
                              const std::vector<int>& cells) {
    std::set<int> dead;
    for (int c : cells) dead.insert(columns[c]);
    KillExactly(dead);
    std::unique_ptr<Client> client = OpenClient();
    ASSERT_NE(client, nullptr);
    absl::StatusOr<std::string> got = ReadBack(*client, path);
    const std::string what =
        absl::StrCat(path, " without cells ", absl::StrJoin(cells, ","));
    ASSERT_THAT(got, IsOk()) << what;
    EXPECT_TRUE(*got == data) << what;
    const ClientStats s = client->Stats();
    const bool data_lost =
        std::any_of(cells.begin(), cells.end(), [](int c) { return c < 6; });
    if (data_lost) {
      EXPECT_GE(s.ec_degraded_reads, 1u) << what;
    }
    // Rebuilt whole cells are checked against the agents' ".cells" while a
    // parity node is left to read them from.
    const bool parity_left = std::count_if(cells.begin(), cells.end(),
                                           [](int c) { return c >= 6; }) < 3;
    if (parity_left) {
      EXPECT_EQ(s.ec_unchecked_cells, 0u) << what;
    }
    EXPECT_EQ(s.ec_crc_mismatches, 0u) << what;
  }

  static testing::AgentCluster* cluster_;
  admin::Context ctx_;
  std::set<int> dead_;
  std::vector<int> stopped_;
  int puts_ = 0;
};

testing::AgentCluster* EcReadTest::cluster_ = nullptr;

TEST_F(EcReadTest, AnyOneTwoOrThreeKilledCellNodesOfASmallFile) {
  // Two rows, the last one partial (its cells 2..5 past the end: zeros).
  const std::string data = Random(kRow + kCell + 1000, 1);
  const std::vector<int> columns = PutEc("/small/f", data);
  ASSERT_EQ(columns.size(), 9u);
  for (const std::vector<int>& cells : Subsets(9, 3)) {
    ExpectByteExactWithout("/small/f", data, columns, cells);
    if (HasFatalFailure()) return;
  }
}

TEST_F(EcReadTest, RandomKilledCellNodesOfALargerFile) {
  const std::string data = Random(5 * kRow + 3 * kCell + 17, 2);
  const std::vector<int> columns = PutEc("/large/f", data);
  ASSERT_EQ(columns.size(), 9u);
  std::mt19937 gen(3);
  for (int round = 0; round < 6; ++round) {
    std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    std::shuffle(all.begin(), all.end(), gen);
    all.resize(1 + round % 3);
    std::sort(all.begin(), all.end());
    ExpectByteExactWithout("/large/f", data, columns, all);
    if (HasFatalFailure()) return;
  }
}

// The default data path (auto) where the nodes' exports are not mounted:
// the io_uring thread hands each attempt to the node's workers (the agent),
// and each node's count of queued attempts stays true (it went below zero
// when the hand-off did not count the attempt as queued again).
TEST_F(EcReadTest, AutoPathWithoutMountsKeepsQueuedCountsTrue) {
  const std::string data = Random(3 * kRow + 5, 7);
  PutEc("/auto/f", data);
  KillExactly({});
  ClientOptions o;
  o.etcd_endpoints = cluster_->etcd()->endpoints();
  o.cluster = "it";
  o.mount_root = absl::StrCat(::testing::TempDir(), "/no-mounts-here");
  o.default_deadline = absl::Seconds(20);
  auto client = Client::Open(o);
  ASSERT_THAT(client, IsOk());
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> got = ReadBack(**client, "/auto/f");
    ASSERT_THAT(got, IsOk());
    EXPECT_TRUE(*got == data);
  }
  const ClientStats s = (*client)->Stats();
  uint64_t agent_reads = 0;
  for (const NodeStats& n : s.nodes) {
    EXPECT_GE(n.queued, 0) << n.node;
    agent_reads += n.agent_reads;
  }
  EXPECT_GT(agent_reads, 0u);
}

TEST_F(EcReadTest, StoppedDataCellNodeCostsNoErrorAndBoundedTime) {
  const std::string data = Random(4 * kRow, 4);
  const std::vector<int> columns = PutEc("/stop/f", data);
  ASSERT_EQ(columns.size(), 9u);
  std::unique_ptr<Client> client = OpenClient();
  ASSERT_NE(client, nullptr);
  ASSERT_THAT(ReadBack(*client, "/stop/f"), IsOk());  // warm
  const int victim = columns[2];
  ASSERT_THAT(cluster_->agent(victim).process->Signal(SIGSTOP), IsOk());
  stopped_.push_back(victim);
  const absl::Time start = absl::Now();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> got = ReadBack(*client, "/stop/f");
    ASSERT_THAT(got, IsOk()) << "pass " << i;
    EXPECT_TRUE(*got == data) << "pass " << i;
  }
  // attempt_timeout (5 s) is never waited for: stalls and hedges move on.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  const ClientStats s = client->Stats();
  EXPECT_GE(s.ec_degraded_reads + s.ec_parity_hedge_wins, 1u);
}

TEST_F(EcReadTest, FuseMountReadsAFileWithAKilledDataCellNode) {
  const std::string data = Random(3 * kRow + 777, 6);
  const std::vector<int> columns = PutEc("/fuse/f", data);
  ASSERT_EQ(columns.size(), 9u);
  const std::string local = cluster_->dir() + "/fuse-src";
  std::ofstream(local, std::ios::binary) << data;
  KillExactly({columns[1]});
  auto m = testing::MountProcess::Start(cluster_->etcd()->endpoints(),
                                        cluster_->dir() + "/mnt",
                                        {"--data_path=agent"});
  ASSERT_THAT(m, IsOk());
  const testing::ShResult r = testing::Sh(
      absl::StrCat("cmp ", testing::Q(local), " ",
                   testing::Q((*m)->path("/fuse/f")), " && echo same"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("same"));
}

TEST_F(EcReadTest, FourKilledCellNodesIsDataLossNamingTheRow) {
  const std::string data = Random(2 * kRow, 5);
  const std::vector<int> columns = PutEc("/lost/f", data);
  ASSERT_EQ(columns.size(), 9u);
  KillExactly({columns[0], columns[1], columns[6], columns[7]});
  std::unique_ptr<Client> client = OpenClient();
  ASSERT_NE(client, nullptr);
  auto f = client->OpenFile("/lost/f");
  ASSERT_THAT(f, IsOk());
  std::string buf(1000, '\0');
  auto n = (*f)->Read(kRow + 10, absl::MakeSpan(buf));  // row 1, cell 0
  ASSERT_THAT(n, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(n.status().message(), HasSubstr("/lost/f"));
  EXPECT_THAT(n.status().message(), HasSubstr("row 1"));
  EXPECT_THAT(n.status().message(),
              HasSubstr(absl::StrCat("data cell 1 on node ",
                                     cluster_->agent(columns[1]).id)));
}

}  // namespace
}  // namespace rangefs
