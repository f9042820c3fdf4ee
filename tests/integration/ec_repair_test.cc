// Checks and repair of erasure-coded files against a real etcd and ten
// real rangefs-node processes: `fsck --checksums` recomputes every row
// (clean file, corrupt data and parity cells flipped in the export dirs,
// a deleted cell object, data loss past m), and the real rangefs-keeper
// rebuilds the column of a node killed for good on another node, with a
// library reader running (0 errors), fsck clean and the file byte-exact
// after; the columns are rebuilt by the new nodes' agents
// (RebuildEcColumn), and `repair --dry-run` lists the rebuilds it would do.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "admin/commands.h"
#include "admin/data_commands.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ingest/agents.h"
#include "keeper/ec_rebuild.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "storage_node/node_client.h"
#include "tests/testing/agent_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kCell = 64 << 10;
constexpr uint64_t kRow = 6 * kCell;
constexpr int kAgents = 10;
constexpr absl::Duration kWait = absl::Seconds(90);

std::string Random(uint64_t size, unsigned seed) {
  std::string s(size, '\0');
  std::mt19937_64 gen(seed);
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

// Polls `done` every 50 ms until it holds or `within` passed.
bool Poll(const std::function<bool()>& done, absl::Duration within) {
  const absl::Time deadline = absl::Now() + within;
  while (!done()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(50));  // polling, bounded
  }
  return true;
}

// Flips one byte of `path` at `offset` (as a failing disk would).
void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  ASSERT_TRUE(f.good()) << path;
}

class EcRepairTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = testing::AgentCluster::Start("ec_repair_test");
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

  absl::StatusOr<admin::Table> Run(std::vector<std::string> argv) {
    auto args = admin::Args::Parse(argv);
    if (!args.ok()) return args.status();
    return admin::RunCommand(ctx_, *args);
  }

  // Puts `data` as `path` with RS(6,3) and 64 KiB cells; its layout.
  v1::FileLayout Put(const std::string& path, const std::string& data) {
    const std::string local =
        absl::StrCat(cluster_->dir(), "/local", std::hash<std::string>()(path));
    std::ofstream(local, std::ios::binary) << data;
    auto put = Run({"file", "put", local, path, "--ec=6+3", "--stripe-unit=64K",
                    "--ec-min-rows=0"});
    EXPECT_THAT(put, IsOk());
    auto f = cluster_->store()->GetFile(path);
    EXPECT_THAT(f, IsOk());
    EXPECT_TRUE(f.ok() && ns::IsErasureCoded(f->layout));
    return f.ok() ? f->layout : v1::FileLayout();
  }

  std::string ExportOf(const std::string& node) {
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      if (cluster_->agent(i).id == node) return cluster_->agent(i).export_dir;
    }
    return "/nonexistent";
  }
  size_t Index(const std::string& node) {
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      if (cluster_->agent(i).id == node) return i;
    }
    return 0;
  }

  // Export path of column t's object.
  std::string ColumnPath(const v1::FileLayout& l, int t) {
    const v1::Replica& r = l.striped().targets(t).replicas(0);
    return ExportOf(r.node_id()) + "/" + r.object();
  }

  // fsck --checksums of `dir`: its status and the text it printed.
  std::pair<absl::Status, std::string> Fsck(const std::string& dir) {
    auto r = Run({"fsck", dir, "--checksums"});
    if (!r.ok()) return {r.status(), std::string(r.status().message())};
    return {absl::OkStatus(), admin::FormatHuman(*r)};
  }

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

  std::string ReadBack(Client& client, const std::string& path) {
    auto f = client.OpenFile(path);
    if (!f.ok()) return absl::StrCat("<open: ", f.status().ToString(), ">");
    std::string out((*f)->size(), '\0');
    auto r = (*f)->Read(0, absl::MakeSpan(out));
    if (!r.ok()) return absl::StrCat("<read: ", r.status().ToString(), ">");
    if (*r != out.size()) return "<short read>";
    return out;
  }

  // Bytes of erasure-coded columns agent `node` rebuilt (GetStats).
  uint64_t AgentRebuiltBytes(const std::string& node) {
    auto c = node::NodeClient::Connect(cluster_->agent(Index(node)).address);
    if (!c.ok()) return 0;
    auto s = (*c)->GetStats(absl::Now() + absl::Seconds(10));
    return s.ok() ? s->ec_rebuilt_bytes() : 0;
  }

  static testing::AgentCluster* cluster_;
  admin::Context ctx_;
};

testing::AgentCluster* EcRepairTest::cluster_ = nullptr;

TEST_F(EcRepairTest, FsckChecksumsPassesACleanCodedFile) {
  Put("/clean/f", Random(5 * kRow + 3 * kCell + 11, 1));
  auto [s, text] = Fsck("/clean");
  ASSERT_THAT(s, IsOk()) << text;
  EXPECT_THAT(text, HasSubstr("0 problem(s)"));
  EXPECT_THAT(text, Not(HasSubstr("not checked")));
  // Without --checksums the rows are not read, and fsck says so.
  auto quick = Run({"fsck", "/clean"});
  ASSERT_THAT(quick, IsOk());
  EXPECT_THAT(quick->message, HasSubstr("cells and parity not checked"));
}

TEST_F(EcRepairTest, FsckNamesCorruptDataAndParityCellsWithTheirRows) {
  const v1::FileLayout l = Put("/corrupt/f", Random(4 * kRow, 2));
  FlipByte(ColumnPath(l, 2), 1 * kCell + 100);    // data column 2, row 1
  FlipByte(ColumnPath(l, 6 + 1), 3 * kCell + 7);  // parity column 1, row 3
  auto [s, text] = Fsck("/corrupt");
  ASSERT_TRUE(absl::IsFailedPrecondition(s)) << s << text;
  const v1::Replica& d = l.striped().targets(2).replicas(0);
  const v1::Replica& p = l.striped().targets(7).replicas(0);
  EXPECT_THAT(text, HasSubstr(d.object()));
  EXPECT_THAT(text, HasSubstr(p.object()));
  EXPECT_THAT(text, HasSubstr("data column 2, row(s) 1)"));
  EXPECT_THAT(text, HasSubstr("parity column 7, row(s) 3)"));
  EXPECT_THAT(text, HasSubstr("2 of 4 row(s) with lost or corrupt cells"));
  EXPECT_THAT(text, HasSubstr("row 1: 8 of 9 cells good (can lose 2 more)"));
  EXPECT_THAT(text, HasSubstr("row 3: 8 of 9 cells good (can lose 2 more)"));
  EXPECT_THAT(text, Not(HasSubstr("DATA_LOSS")));
  // fsck reported both to the keeper (none runs yet): `repair --dry-run`
  // lists the rebuild of one onto the only node holding no column of the
  // file (10 agents, 9 columns), and the other as stuck.
  auto plan = Run({"repair", "--dry-run"});
  ASSERT_THAT(plan, IsOk());
  int rebuilds = 0, stuck = 0;
  for (const std::vector<std::string>& row : plan->rows) {
    if (row[1] != "/corrupt/f") continue;
    if (row[0] == "stuck") {
      ++stuck;
      EXPECT_THAT(row[7], HasSubstr("no up node with room"));
      continue;
    }
    ++rebuilds;
    EXPECT_EQ(row[0], "rebuild");
    EXPECT_THAT(row[2], AnyOf("2", "7"));
    EXPECT_EQ(row[4], row[2] == "2" ? d.node_id() : p.node_id());
    std::set<std::string> file_nodes;
    for (const auto& t : l.striped().targets()) {
      file_nodes.insert(t.replicas(0).node_id());
    }
    EXPECT_EQ(file_nodes.count(row[5]), 0u) << row[5];
    EXPECT_THAT(row[6], HasSubstr("corrupt: 6 of 7 columns"));
    EXPECT_EQ(row[7], absl::StrCat(4 * kCell));
  }
  EXPECT_EQ(rebuilds, 1) << admin::FormatHuman(*plan);
  EXPECT_EQ(stuck, 1) << admin::FormatHuman(*plan);
  ASSERT_THAT(Run({"file", "rm", "/corrupt/f"}), IsOk());
}

TEST_F(EcRepairTest, FsckNamesADeletedCellObjectAndDataLossPastM) {
  const v1::FileLayout l = Put("/lost/f", Random(2 * kRow + 5, 3));
  ASSERT_EQ(unlink(ColumnPath(l, 4).c_str()), 0);
  auto [s, text] = Fsck("/lost");
  ASSERT_TRUE(absl::IsFailedPrecondition(s)) << s << text;
  EXPECT_THAT(text, HasSubstr("missing"));
  EXPECT_THAT(text, HasSubstr(l.striped().targets(4).replicas(0).object()));
  // Row 2 holds 5 bytes, all in column 0: column 4's cell there is empty,
  // known without its object.
  EXPECT_THAT(text, HasSubstr("2 of 3 row(s) with lost or corrupt cells"));
  EXPECT_THAT(text, HasSubstr("row 0: 8 of 9 cells good (can lose 2 more)"));
  // Three more (a data and two parity columns): rows 0 and 1 keep 5 of 9
  // cells, fewer than k = 6; row 2 loses its only data cell and two
  // parity cells and keeps 6.
  ASSERT_EQ(unlink(ColumnPath(l, 0).c_str()), 0);
  ASSERT_EQ(unlink(ColumnPath(l, 6).c_str()), 0);
  ASSERT_EQ(unlink(ColumnPath(l, 8).c_str()), 0);
  auto [s2, text2] = Fsck("/lost");
  EXPECT_TRUE(absl::IsDataLoss(s2)) << s2 << text2;
  EXPECT_THAT(text2, HasSubstr("DATA_LOSS: row(s) 0,1 have fewer than k=6"));
  EXPECT_THAT(text2, HasSubstr("row 2: 6 of 9 cells good (can lose 0 more)"));
  EXPECT_THAT(text2, HasSubstr("5 of 9 cells good (unrecoverable)"));
  ASSERT_THAT(Run({"file", "rm", "/lost/f"}), IsOk());
}

// The keeper's rebuild call (keeper/ec_rebuild.h) against real agents, in
// ranges of 3 rows (a 10-row file: 4 calls of one attempt): a data and a
// parity column appear on a node holding none of the file's, byte-exact
// with their sidecars (and the parity's ".cells" object), and no staging
// object is left in its temp dir.
TEST_F(EcRepairTest, AgentRebuildsAColumnInRangesOfRows) {
  const v1::FileLayout l =
      Put("/ranges/f", Random(9 * kRow + 3 * kCell + 5, 8));
  const ns::EcGeometry g = ns::EcGeometryOf(l);
  ASSERT_EQ(g.rows, 10u);
  std::set<std::string> file_nodes;
  for (const auto& t : l.striped().targets()) {
    file_nodes.insert(t.replicas(0).node_id());
  }
  std::string target;
  for (size_t i = 0; i < cluster_->agents(); ++i) {
    if (file_nodes.count(cluster_->agent(i).id) == 0) {
      target = cluster_->agent(i).id;
    }
  }
  ASSERT_FALSE(target.empty());
  auto nodes = cluster_->store()->ListNodes();
  ASSERT_THAT(nodes, IsOk());
  ingest::Agents agents(*nodes, {});
  const keeper::CellCrcTable crcs =
      keeper::ReadCellCrcs(keeper::AgentReader(agents, absl::Seconds(10)), l);
  ASSERT_FALSE(crcs.empty());
  const uint64_t rebuilt_before = AgentRebuiltBytes(target);
  uint64_t written = 0;
  for (int t : {2, 7}) {
    SCOPED_TRACE(t);
    const v1::Replica& from = l.striped().targets(t).replicas(0);
    const keeper::EcColumnRepair c{.column = t,
                                   .from_node = from.node_id(),
                                   .object = "ranges-copy/" + from.object(),
                                   .target_node = target,
                                   .bytes = ns::EcColumnBytes(g, t)};
    auto r =
        keeper::RebuildColumn(agents, l, crcs, c, {}, {.rows_per_call = 3});
    ASSERT_THAT(r, IsOk());
    written += r->bytes_written;
    const std::string out = ExportOf(target) + "/" + c.object;
    std::ifstream got(out, std::ios::binary),
        want(ColumnPath(l, t), std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(got), {}),
              std::string(std::istreambuf_iterator<char>(want), {}));
    // Verified reads work: the sidecar came with it.
    auto client =
        node::NodeClient::Connect(cluster_->agent(Index(target)).address);
    ASSERT_THAT(client, IsOk());
    std::string back(c.bytes, '\0');
    auto n = (*client)->ReadRange(c.object, 0, absl::MakeSpan(back),
                                  {.deadline = absl::Now() + absl::Seconds(10),
                                   .verify_on_server = true});
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(*n, c.bytes);
    if (t >= 6) {
      std::ifstream cells(ns::EcCellsObject(out), std::ios::binary);
      EXPECT_EQ(std::string(std::istreambuf_iterator<char>(cells), {}),
                keeper::CellsObjectBytes(crcs));
      ASSERT_THAT((*client)->DeleteObject(ns::EcCellsObject(c.object),
                                          absl::Now() + absl::Seconds(10)),
                  IsOk());
    }
    ASSERT_THAT(
        (*client)->DeleteObject(c.object, absl::Now() + absl::Seconds(10)),
        IsOk());
  }
  EXPECT_EQ(AgentRebuiltBytes(target) - rebuilt_before,
            ns::EcColumnBytes(g, 2) + ns::EcColumnBytes(g, 7));
  EXPECT_EQ(written, ns::EcColumnBytes(g, 2) + ns::EcColumnBytes(g, 7) +
                         ns::EcCellsBytes(g));
  // Nothing staged is left behind.
  const std::string tmp = ExportOf(target) + "/.rangefs-tmp";
  for (const auto& e : std::filesystem::directory_iterator(tmp)) {
    ADD_FAILURE() << "left in the temp dir: " << e.path();
  }
  ASSERT_THAT(Run({"file", "rm", "/ranges/f"}), IsOk());
}

// A column fsck found corrupt is rebuilt on another node, and the lost
// parity column of a 2+1 file with it its only .cells object. Then the node
// of a parity column is killed for good while a library reader
// scans the file (healthy reads use data cells only: 0 errors); then the
// node of a data column. The real keeper rebuilds each column on a node
// holding none of the file's; a draining node's column is copied. fsck
// --checksums is clean and the file reads byte-exact.
TEST_F(EcRepairTest, KeeperRebuildsTheColumnsOfKilledNodes) {
  // Two spare nodes: after two kills a 6+3 file still finds a ninth.
  for (const char* id : {"n10", "n11"}) {
    auto a = cluster_->AddAgent(id);
    ASSERT_THAT(a, IsOk());
    ASSERT_TRUE(cluster_->WaitLive(
        id, [](bool found, const ns::LiveEntry&) { return found; }, kWait));
  }
  const std::string data = Random(7 * kRow + 2 * kCell + 17, 4);
  const v1::FileLayout before = Put("/heal/f", data);
  auto keeper = testing::Subprocess::Start(
      {.argv = {testing::RunfilePath("keeper/rangefs-keeper"),
                "--etcd_endpoints=" + cluster_->etcd()->endpoints(),
                "--cluster=it", "--id=k1", "--lease_ttl_s=2",
                "--interval_s=0.2", "--dead_after_s=2", "--etcd_timeout_s=2",
                "--rebalance_tolerance=0"},
       .log_path = cluster_->dir() + "/keeper.log"});
  ASSERT_THAT(keeper, IsOk());

  // A corrupt data cell that fsck reports: the keeper rebuilds the column
  // on another node (the corrupt object goes to the trash).
  const std::string other = Random(3 * kRow + 1, 5);
  const v1::FileLayout g0 = Put("/healg/g", other);
  const std::string bad_node = g0.striped().targets(2).replicas(0).node_id();
  FlipByte(ColumnPath(g0, 2), kCell + 3);
  auto [s, text] = Fsck("/healg");
  ASSERT_TRUE(absl::IsFailedPrecondition(s)) << s << text;
  EXPECT_THAT(text, HasSubstr("reported to rangefs-keeper"));
  ASSERT_TRUE(Poll(
      [&] {
        auto now = cluster_->store()->GetFile("/healg/g");
        return now.ok() &&
               now->layout.striped().targets(2).replicas(0).node_id() !=
                   bad_node;
      },
      kWait))
      << (*keeper)->Log();
  auto [s2, text2] = Fsck("/healg");
  EXPECT_THAT(s2, IsOk()) << text2;
  // The new node's agent rebuilt it (RebuildEcColumn), not the keeper.
  {
    auto now = cluster_->store()->GetFile("/healg/g");
    ASSERT_THAT(now, IsOk());
    const std::string to =
        now->layout.striped().targets(2).replicas(0).node_id();
    EXPECT_GE(AgentRebuiltBytes(to),
              ns::EcColumnBytes(ns::EcGeometryOf(now->layout), 2))
        << (*keeper)->Log();
  }

  // 2+1: the only parity column and its .cells object are lost; the
  // keeper recomputes the cell CRCs from the data columns, then rebuilds.
  const std::string small = Random(5 * 2 * kCell + 77, 6);
  const std::string local21 = cluster_->dir() + "/local21";
  std::ofstream(local21, std::ios::binary) << small;
  ASSERT_THAT(Run({"file", "put", local21, "/heal21/f", "--ec=2+1",
                   "--stripe-unit=64K", "--ec-min-rows=0"}),
              IsOk());
  auto f21 = cluster_->store()->GetFile("/heal21/f");
  ASSERT_THAT(f21, IsOk());
  const std::string parity_node =
      f21->layout.striped().targets(2).replicas(0).node_id();
  ASSERT_EQ(unlink(ColumnPath(f21->layout, 2).c_str()), 0);
  ASSERT_EQ(unlink((ColumnPath(f21->layout, 2) + ".cells").c_str()), 0);
  auto [s3, text3] = Fsck("/heal21");
  ASSERT_TRUE(absl::IsFailedPrecondition(s3)) << s3 << text3;
  EXPECT_THAT(text3, HasSubstr("2 replica(s) reported to rangefs-keeper"));
  ASSERT_TRUE(Poll(
      [&] {
        auto now = cluster_->store()->GetFile("/heal21/f");
        return now.ok() &&
               now->layout.striped().targets(2).replicas(0).node_id() !=
                   parity_node;
      },
      kWait))
      << (*keeper)->Log();
  EXPECT_THAT((*keeper)->Log(), HasSubstr("cell CRCs recomputed"));
  auto [s4, text4] = Fsck("/heal21");
  EXPECT_THAT(s4, IsOk()) << text4;

  std::unique_ptr<Client> client = OpenClient();
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(ReadBack(*client, "/healg/g") == other);
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, scans{0};
  std::string first_error;
  std::thread reader([&] {
    while (!stop.load()) {
      const std::string got = ReadBack(*client, "/heal/f");
      if (got != data) {
        if (errors.fetch_add(1) == 0) first_error = got.substr(0, 200);
      }
      scans.fetch_add(1);
    }
  });
  // Column t's node is killed; waits until the file's layout has moved the
  // column to a node that was not killed.
  std::set<std::string> killed;
  auto kill_and_heal = [&](int t) {
    auto f = cluster_->store()->GetFile("/heal/f");
    ASSERT_THAT(f, IsOk());
    const std::string node =
        f->layout.striped().targets(t).replicas(0).node_id();
    ASSERT_THAT(cluster_->agent(Index(node)).process->Kill(), IsOk());
    killed.insert(node);
    ASSERT_TRUE(Poll(
        [&] {
          auto now = cluster_->store()->GetFile("/heal/f");
          if (!now.ok()) return false;
          for (const auto& c : now->layout.striped().targets()) {
            if (killed.count(c.replicas(0).node_id()) > 0) return false;
          }
          return true;
        },
        kWait))
        << "column " << t << " on " << node << " not rebuilt\n"
        << (*keeper)->Log();
  };
  const int scans0 = scans.load();
  kill_and_heal(6 + 1);  // a parity column
  if (HasFatalFailure()) {
    stop.store(true);
    reader.join();
    return;
  }
  ASSERT_TRUE(Poll([&] { return scans.load() >= scans0 + 3; }, kWait));
  stop.store(true);
  reader.join();
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_GT(scans.load(), scans0);
  // Degraded reads are not this test's business: a data column's node is
  // killed with no reader running.
  kill_and_heal(3);
  if (HasFatalFailure()) return;
  // A draining node's column is still readable: copied, not rebuilt.
  {
    auto f = cluster_->store()->GetFile("/heal/f");
    ASSERT_THAT(f, IsOk());
    const std::string node =
        f->layout.striped().targets(0).replicas(0).node_id();
    ASSERT_THAT(Run({"node", "drain", node}), IsOk());
    ASSERT_TRUE(Poll(
        [&] {
          auto now = cluster_->store()->GetFile("/heal/f");
          return now.ok() &&
                 now->layout.striped().targets(0).replicas(0).node_id() != node;
        },
        kWait))
        << (*keeper)->Log();
    EXPECT_THAT((*keeper)->Log(), HasSubstr("copying from " + node));
  }
  auto after = cluster_->store()->GetFile("/heal/f");
  ASSERT_THAT(after, IsOk());
  std::set<std::string> nodes;
  for (int t = 0; t < 9; ++t) {
    const v1::Replica& r = after->layout.striped().targets(t).replicas(0);
    nodes.insert(r.node_id());
    EXPECT_EQ(r.object(), before.striped().targets(t).replicas(0).object());
  }
  EXPECT_EQ(nodes.size(), 9u) << "k + m distinct nodes after repair";
  // fsck --checksums: every row of every file clean (other files of this
  // suite had columns on the killed nodes too).
  std::string last;
  ASSERT_TRUE(Poll(
      [&] {
        auto [s, text] = Fsck("/");
        last = text;
        return s.ok();
      },
      kWait))
      << last << "\n"
      << (*keeper)->Log();
  std::unique_ptr<Client> fresh = OpenClient();
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(ReadBack(*fresh, "/heal/f") == data);
  const std::string log = (*keeper)->Log();
  EXPECT_THAT(log, HasSubstr("rebuilt onto"));
  EXPECT_THAT(log, HasSubstr("rebuilt column(s) swapped in"));
  EXPECT_THAT((*keeper)->Kill(), IsOk());
}

}  // namespace
}  // namespace rangefs
