// `rangefs-admin file put --ec=K+M` against a real etcd and ten real
// rangefs-node processes: erasure-coded layouts at edge sizes read back
// byte-exact through the library (mount and agent data paths), parity and
// cell checksums on disk equal to the codec's, the replica fallback under
// the size threshold, refusal when the cluster has too few nodes, and the
// raw-bytes overhead of a large file.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "admin/commands.h"
#include "admin/data_commands.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "ec/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "tests/testing/agent_cluster.h"
#include "tests/testing/linked_agent_suite.h"
#include "tests/testing/random_bytes.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kCell = 64 << 10;  // small cells: edge sizes stay small
constexpr uint64_t kRow = 6 * kCell;
constexpr int kAgents = 10;
constexpr absl::Duration kWait = absl::Seconds(60);

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using testing::RandomBytes;

// Bytes of every regular file under `dir`, recursively.
uint64_t TreeBytes(const std::string& dir) {
  uint64_t total = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    const std::string p = dir + "/" + n;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) total += TreeBytes(p);
    if (S_ISREG(st.st_mode)) total += static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  return total;
}

class EcPutTest : public testing::LinkedAgentSuite<EcPutTest> {
 public:
  static constexpr char kSuiteName[] = "ec_put_test";
  static constexpr int kSuiteAgents = kAgents;

 protected:
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

  std::string Local(const std::string& name, const std::string& data) {
    const std::string path = absl::StrCat(cluster_->dir(), "/", name);
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  std::unique_ptr<Client> OpenClient(DataPath path) {
    ClientOptions o;
    o.etcd_endpoints = cluster_->etcd()->endpoints();
    o.cluster = "it";
    o.data_path = path;
    o.mount_root = *mounts_;
    o.default_deadline = absl::Seconds(20);
    auto c = Client::Open(o);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Reads `path` whole through a client on `data_path`, in reads of
  // `chunk` bytes that do not line up with cells.
  std::string ReadBack(DataPath data_path, const std::string& path,
                       size_t chunk = 100003) {
    std::unique_ptr<Client> client = OpenClient(data_path);
    if (client == nullptr) return "<no client>";
    auto f = client->OpenFile(path);
    EXPECT_THAT(f, IsOk()) << path;
    if (!f.ok()) return "<no file>";
    std::string out((*f)->size(), '\0');
    for (uint64_t at = 0; at < out.size(); at += chunk) {
      const size_t n = std::min<uint64_t>(chunk, out.size() - at);
      auto r = (*f)->Read(at, absl::MakeSpan(out.data() + at, n));
      EXPECT_THAT(r, IsOk()) << path << " at " << at;
      if (!r.ok() || *r != n) return "<short read>";
    }
    return out;
  }

  std::string ExportOf(const std::string& node) {
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      if (cluster_->agent(i).id == node) return cluster_->agent(i).export_dir;
    }
    return "/nonexistent";
  }

  // The parity columns and ".cells" objects on disk equal what the codec
  // makes of `data`.
  void ExpectParityOnDisk(const v1::FileLayout& l, const std::string& data) {
    const ns::EcGeometry g = ns::EcGeometryOf(l);
    auto codec = ec::NewCodec({.k = g.k, .m = g.m});
    ASSERT_THAT(codec, IsOk());
    std::vector<std::string> parity(static_cast<size_t>(g.m));
    std::string cells;
    for (uint64_t r = 0; r < g.rows; ++r) {
      std::vector<std::string> in(static_cast<size_t>(g.k),
                                  std::string(g.cell, '\0'));
      std::vector<absl::Span<const char>> spans;
      std::vector<uint32_t> crcs;
      for (int c = 0; c < g.k; ++c) {
        const uint64_t at = (r * g.k + c) * g.cell;
        const uint64_t n = ns::DataCellBytes(g, r, c);
        if (n > 0) data.copy(in[c].data(), n, at);
        crcs.push_back(Crc32c(absl::string_view(in[c].data(), n)));
        spans.emplace_back(in[c].data(), g.cell);
      }
      std::vector<std::string> out(static_cast<size_t>(g.m),
                                   std::string(g.cell, '\0'));
      std::vector<absl::Span<char>> outs;
      for (std::string& p : out) outs.emplace_back(p.data(), p.size());
      ASSERT_THAT((*codec)->Encode(spans, outs), IsOk());
      for (int j = 0; j < g.m; ++j) {
        parity[j] += out[j];
        crcs.push_back(Crc32c(out[j]));
      }
      for (uint32_t v : crcs) {
        for (int b = 0; b < 4; ++b)
          cells.push_back(static_cast<char>(v >> (8 * b)));
      }
    }
    for (int j = 0; j < g.m; ++j) {
      const v1::Replica& p = ns::ParityReplica(l, j);
      const std::string dir = ExportOf(p.node_id());
      EXPECT_TRUE(ReadWhole(dir + "/" + p.object()) == parity[j])
          << "parity column " << j << " of a " << data.size() << "-byte file";
      EXPECT_TRUE(ReadWhole(dir + "/" + ns::EcCellsObject(p.object())) == cells)
          << "cell checksums of parity column " << j;
    }
    // The data objects hold exactly the file's bytes of their column.
    for (int c = 0; c < g.k; ++c) {
      const v1::Replica& d = ns::DataReplica(l, c);
      EXPECT_EQ(ReadWhole(ExportOf(d.node_id()) + "/" + d.object()).size(),
                ns::EcColumnBytes(g, c))
          << "data column " << c;
    }
  }

  admin::Context ctx_;
};

TEST_F(EcPutTest, EdgeSizesReadBackByteExactWithParityOnDisk) {
  const std::vector<uint64_t> sizes = {
      1,        kCell - 1, kCell,    kCell + 1,
      kRow - 1, kRow,      kRow + 1, 7 * kRow + 3 * kCell + 5};
  for (uint64_t size : sizes) {
    SCOPED_TRACE(absl::StrCat("size ", size));
    const std::string data = RandomBytes(size, static_cast<unsigned>(size));
    const std::string path = absl::StrCat("/edge/f", size);
    auto put = Run({"file", "put", Local(absl::StrCat("e", size), data), path,
                    "--ec=6+3", "--stripe-unit=64K", "--ec-min-rows=0"});
    ASSERT_THAT(put, IsOk());
    EXPECT_THAT(put->message, HasSubstr("erasure-coded 6+3"));
    auto f = cluster_->store()->GetFile(path);
    ASSERT_THAT(f, IsOk());
    const v1::FileLayout& l = f->layout;
    ASSERT_TRUE(ns::IsErasureCoded(l));
    EXPECT_EQ(l.state(), v1::READY_EC);
    ASSERT_EQ(l.striped().targets_size(), 9);
    std::set<std::string> nodes;
    for (const auto& t : l.striped().targets()) {
      ASSERT_EQ(t.replicas_size(), 1);
      nodes.insert(t.replicas(0).node_id());
    }
    EXPECT_EQ(nodes.size(), 9u) << "k + m columns on distinct nodes";
    EXPECT_TRUE(ReadBack(DataPath::kMount, path) == data) << "mount path";
    EXPECT_TRUE(ReadBack(DataPath::kAgent, path) == data) << "agent path";
    ExpectParityOnDisk(l, data);
  }
}

TEST_F(EcPutTest, StatShowsTheCodeAndFsckChecksParityWithChecksums) {
  const std::string data = RandomBytes(3 * kRow + 7, 3);
  ASSERT_THAT(Run({"file", "put", Local("stat", data), "/stat/f", "--ec=6+3",
                   "--stripe-unit=64K"}),
              IsOk());
  auto stat = Run({"file", "stat", "/stat/f"});
  ASSERT_THAT(stat, IsOk());
  const std::string shown = admin::FormatHuman(*stat);
  EXPECT_THAT(shown, HasSubstr("ec 6+3"));
  EXPECT_THAT(shown, HasSubstr("ready (erasure-coded)"));
  // 4 rows x 3 parity cells + the file + 3 x 4 rows x 36 B of CRCs.
  EXPECT_THAT(shown,
              HasSubstr(absl::StrCat(data.size() + 12 * kCell + 3 * 4 * 36)));
  auto fsck = Run({"fsck", "/stat", "--checksums"});
  ASSERT_THAT(fsck, IsOk());
  EXPECT_THAT(fsck->message, ::testing::Not(HasSubstr("not checked")));
  auto quick = Run({"fsck", "/stat"});
  ASSERT_THAT(quick, IsOk());
  EXPECT_THAT(quick->message,
              HasSubstr("erasure-coded 6+3: cells and parity not checked"));
}

TEST_F(EcPutTest, SmallFilesGetReplicasWithANote) {
  // Under 2 full rows (the default threshold): replicas.
  const std::string small = RandomBytes(2 * kRow - 1, 5);
  auto put = Run({"file", "put", Local("small", small), "/small/f", "--ec=6+3",
                  "--stripe-unit=64K", "--replicas=2"});
  ASSERT_THAT(put, IsOk());
  EXPECT_THAT(put->message, HasSubstr("stored with 2 replica(s) instead"));
  auto f = cluster_->store()->GetFile("/small/f");
  ASSERT_THAT(f, IsOk());
  EXPECT_FALSE(ns::IsErasureCoded(f->layout));
  EXPECT_EQ(f->layout.state(), v1::READY);
  EXPECT_TRUE(ReadBack(DataPath::kMount, "/small/f") == small);
  // Exactly 2 full rows: coded.
  const std::string two = RandomBytes(2 * kRow, 6);
  ASSERT_THAT(Run({"file", "put", Local("two", two), "/small/two", "--ec=6+3",
                   "--stripe-unit=64K"}),
              IsOk());
  f = cluster_->store()->GetFile("/small/two");
  ASSERT_THAT(f, IsOk());
  EXPECT_TRUE(ns::IsErasureCoded(f->layout));
  // An empty file has no objects either way.
  ASSERT_THAT(Run({"file", "put", Local("empty", ""), "/small/empty",
                   "--ec=6+3", "--ec-min-rows=0"}),
              IsOk());
  f = cluster_->store()->GetFile("/small/empty");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->layout.size(), 0u);
  EXPECT_FALSE(ns::IsErasureCoded(f->layout));
}

TEST_F(EcPutTest, TooFewNodesFailsBeforeWritingAnything) {
  std::map<int, uint64_t> before;
  for (int i = 0; i < kAgents; ++i) {
    before[i] = TreeBytes(cluster_->agent(i).export_dir);
  }
  auto put = Run({"file", "put", Local("big", RandomBytes(4 * kRow, 7)),
                  "/few/f", "--ec=8+3", "--stripe-unit=64K"});
  EXPECT_THAT(put.status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                     HasSubstr("needs 11 live active nodes")));
  EXPECT_THAT(put.status().message(), HasSubstr("nothing was written"));
  for (int i = 0; i < kAgents; ++i) {
    EXPECT_EQ(TreeBytes(cluster_->agent(i).export_dir), before[i]) << i;
  }
  EXPECT_THAT(cluster_->store()->GetFile("/few/f").status(),
              StatusIs(absl::StatusCode::kNotFound));
  // Bad codes are refused by name.
  EXPECT_THAT(
      Run({"file", "put", Local("big", "x"), "/few/g", "--ec=6"}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("K+M")));
  EXPECT_THAT(
      Run({"file", "put", Local("big", "x"), "/few/g", "--ec=30+3"}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(EcPutTest, DirectoryPutTakesEc) {
  const std::string dir = cluster_->dir() + "/tree";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string a = RandomBytes(3 * kRow + 11, 8),
                    b = RandomBytes(kCell, 9);
  std::ofstream(dir + "/a", std::ios::binary) << a;
  std::ofstream(dir + "/b", std::ios::binary) << b;
  auto put = Run({"file", "put", "--recursive", dir, "/tree", "--ec=4+2",
                  "--stripe-unit=64K"});
  ASSERT_THAT(put, IsOk());
  EXPECT_THAT(put->message, HasSubstr("1 file(s) under --ec's minimum size"));
  auto fa = cluster_->store()->GetFile("/tree/a");
  ASSERT_THAT(fa, IsOk());
  ASSERT_TRUE(ns::IsErasureCoded(fa->layout));
  EXPECT_EQ(fa->layout.striped().erasure().data_columns(), 4u);
  EXPECT_TRUE(ReadBack(DataPath::kAgent, "/tree/a") == a);
  ExpectParityOnDisk(fa->layout, a);
  EXPECT_TRUE(ReadBack(DataPath::kMount, "/tree/b") == b);
}

TEST_F(EcPutTest, RawBytesOfALargeFileAreAtMost155PercentOfLogical) {
  // Default cell (1 MiB): 40 MiB + 1 KiB, 7 rows (the last partial).
  const uint64_t size = (uint64_t{40} << 20) + 1024;
  std::vector<uint64_t> before(kAgents);
  for (int i = 0; i < kAgents; ++i) {
    before[i] = TreeBytes(cluster_->agent(i).export_dir);
  }
  const std::string data = RandomBytes(size, 11);
  ASSERT_THAT(
      Run({"file", "put", Local("large", data), "/large/f", "--ec=6+3"}),
      IsOk());
  uint64_t raw = 0;
  for (int i = 0; i < kAgents; ++i) {
    raw += TreeBytes(cluster_->agent(i).export_dir) - before[i];
  }
  const double ratio = static_cast<double>(raw) / static_cast<double>(size);
  RecordProperty("raw_over_logical", absl::StrCat(ratio));
  std::cout << "raw bytes on the agents (objects, sidecars, cell CRCs): " << raw
            << " for " << size << " logical = " << ratio << "x\n";
  EXPECT_LE(ratio, 1.55);
  EXPECT_GE(ratio, 1.5);
  EXPECT_TRUE(ReadBack(DataPath::kMount, "/large/f", 4 << 20) == data);
}

// rangefs-keeper leaves healthy coded files alone: its orphan scan counts
// every data and parity column and every ".cells" object as referenced
// (ec_repair_test: it rebuilds the columns of dead nodes).
TEST_F(EcPutTest, KeeperNeverCollectsTheObjectsOfHealthyCodedFiles) {
  const std::string data = RandomBytes(2 * kRow + 9, 12);
  ASSERT_THAT(Run({"file", "put", Local("kept", data), "/kept/f", "--ec=6+3",
                   "--stripe-unit=64K"}),
              IsOk());
  auto f = cluster_->store()->GetFile("/kept/f");
  ASSERT_THAT(f, IsOk());
  std::vector<std::string> objects;  // export-relative paths, with node dir
  const ns::EcGeometry g = ns::EcGeometryOf(f->layout);
  for (int t = 0; t < g.k + g.m; ++t) {
    const v1::Replica& r = f->layout.striped().targets(t).replicas(0);
    const std::string dir = ExportOf(r.node_id());
    objects.push_back(dir + "/" + r.object());
    if (t >= g.k) objects.push_back(dir + "/" + ns::EcCellsObject(r.object()));
  }
  const std::string metrics = cluster_->dir() + "/keeper.prom";
  // No grace: an object no layout references is trashed at the first scan.
  auto keeper = testing::Subprocess::Start(
      {.argv = {testing::RunfilePath("keeper/rangefs-keeper"),
                "--etcd_endpoints=" + cluster_->etcd()->endpoints(),
                "--cluster=it", "--id=k1", "--lease_ttl_s=2",
                "--interval_s=0.2", "--delete_grace_s=0",
                "--orphan_scan_interval_s=0.2", "--etcd_timeout_s=2",
                "--metrics_file=" + metrics},
       .log_path = cluster_->dir() + "/keeper.log"});
  ASSERT_THAT(keeper, IsOk());
  auto rounds = [&] {
    std::ifstream in(metrics);
    std::string line;
    while (std::getline(in, line)) {
      if (absl::StartsWith(line, "rangefs_keeper_rounds_total ")) {
        return std::atof(line.c_str() + 28);
      }
    }
    return 0.0;
  };
  // Three whole rounds, each with an orphan scan.
  const absl::Time deadline = absl::Now() + kWait;
  while (rounds() < 4 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));  // polling a file, bounded
  }
  ASSERT_GE(rounds(), 4) << (*keeper)->Log();
  const std::string log = (*keeper)->Log();
  EXPECT_THAT(log, ::testing::Not(HasSubstr("keeper: orphan "))) << log;
  for (const std::string& o : objects) {
    struct stat st;
    EXPECT_EQ(stat(o.c_str(), &st), 0) << o << " is gone";
  }
  EXPECT_TRUE(ReadBack(DataPath::kAgent, "/kept/f") == data);
  EXPECT_THAT((*keeper)->Kill(), IsOk());
}

}  // namespace
}  // namespace rangefs
