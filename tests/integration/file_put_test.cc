// rangefs-admin's data commands (file put, file register, fsck) against a
// real etcd and three real rangefs-node processes.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "admin/commands.h"
#include "admin/data_commands.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/layout.h"
#include "storage_node/export_root.h"
#include "storage_node/node_client.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using ::testing::HasSubstr;

// Bound on polls for something that takes a few seconds at most idle (an
// agent registering, a live record refreshed, a scrub pass): generous
// enough for a loaded 2-core machine; a broken feature still fails.
constexpr absl::Duration kWait = absl::Seconds(60);

class FilePutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = AgentCluster::Start("file_put_test");
    ASSERT_THAT(c, IsOk());
    cluster_ = *std::move(c);
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
  }

  void StartAgents(int n, std::vector<std::string> extra_last = {}) {
    for (int i = 0; i < n; ++i) {
      auto a = cluster_->AddAgent(
          absl::StrCat("n", i), true, v1::ACTIVE,
          i == n - 1 ? extra_last : std::vector<std::string>{});
      ASSERT_THAT(a, IsOk());
      ASSERT_TRUE(cluster_->WaitLive(
          (*a)->id, [](bool found, const ns::LiveEntry&) { return found; },
          kWait));
    }
  }

  absl::StatusOr<admin::Table> Run(std::vector<std::string> argv) {
    auto args = admin::Args::Parse(argv);
    if (!args.ok()) return args.status();
    return admin::RunCommand(ctx_, *args);
  }

  // Objects and temp files left in agent i's export.
  std::vector<std::string> Objects(size_t i) {
    std::vector<std::string> out;
    auto root = node::ExportRoot::Open(cluster_->agent(i).export_dir,
                                       {.writable = false});
    EXPECT_THAT(root, IsOk());
    EXPECT_THAT((*root)->ForEachObject([&](const std::string& p) {
      out.push_back(p);
      return true;
    }),
                IsOk());
    return out;
  }
  std::vector<std::string> Temps(size_t i) {
    std::vector<std::string> out;
    const std::string dir =
        absl::StrCat(cluster_->agent(i).export_dir, "/", node::kTempDirName);
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return out;
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
    return out;
  }

  // Makes a sparse file of `size` bytes with 64 marker bytes at every MiB.
  std::string MakeFile(const std::string& name, uint64_t size) {
    const std::string path = absl::StrCat(cluster_->dir(), "/", name);
    int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    for (uint64_t off = 0; off < size; off += 1 << 20) {
      std::string mark = absl::StrCat("[mark ", off, "]");
      mark.resize(std::min<uint64_t>(64, size - off), '#');
      EXPECT_EQ(pwrite(fd, mark.data(), mark.size(), static_cast<off_t>(off)),
                static_cast<ssize_t>(mark.size()));
    }
    close(fd);
    return path;
  }

  static uint32_t LocalCrc(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY);
    std::vector<char> buf(8 << 20);
    uint32_t crc = 0;
    ssize_t n;
    while ((n = read(fd, buf.data(), buf.size())) > 0) {
      crc = Crc32cExtend(crc, buf.data(), static_cast<size_t>(n));
    }
    close(fd);
    return crc;
  }

  // CRC32C of the whole logical file read back through the agents'
  // ReadRange (first replica of every piece), in file order.
  absl::StatusOr<uint32_t> RemoteCrc(const std::string& path) {
    RANGEFS_ASSIGN_OR_RETURN(ns::FileEntry f, cluster_->store()->GetFile(path));
    std::map<std::string, std::unique_ptr<node::NodeClient>> clients;
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      RANGEFS_ASSIGN_OR_RETURN(
          clients[cluster_->agent(i).id],
          node::NodeClient::Connect(cluster_->agent(i).address));
    }
    uint32_t crc = 0;
    std::vector<char> buf;
    uint64_t total = 0;
    for (const ns::Piece& p :
         ns::MapRange(f.layout, 0, f.layout.size(), 8 << 20)) {
      const v1::Replica& r = p.replicas->Get(0);
      buf.resize(p.length);
      RANGEFS_ASSIGN_OR_RETURN(
          size_t n, clients[r.node_id()]->ReadRange(
                        r.object(), p.ObjectOffset(r), absl::MakeSpan(buf)));
      if (n != p.length) return absl::DataLossError("short read");
      crc = Crc32cExtend(crc, buf.data(), n);
      total += n;
    }
    if (total != f.layout.size()) return absl::DataLossError("size");
    return crc;
  }

  std::unique_ptr<AgentCluster> cluster_;
  admin::Context ctx_;
};

TEST_F(FilePutTest, MultiGibSparsePutRoundTripsByteExact) {
  StartAgents(3);
  const uint64_t size = (uint64_t{2} << 30) + 12345;  // 2 GiB + a tail.
  const std::string local = MakeFile("big", size);
  const absl::Time start = absl::Now();
  auto put =
      Run({"file", "put", local, "/big", "--stripe-unit=4M", "--replicas=2"});
  ASSERT_THAT(put, IsOk());
  const absl::Duration took = absl::Now() - start;
  auto f = cluster_->store()->GetFile("/big");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->layout.size(), size);
  ASSERT_TRUE(f->layout.has_striped());
  EXPECT_EQ(f->layout.striped().targets_size(), 3);
  EXPECT_EQ(f->layout.checksum(), v1::CRC32C_SIDECAR);
  for (const auto& target : f->layout.striped().targets()) {
    EXPECT_EQ(target.replicas_size(), 2);
  }
  auto crc = RemoteCrc("/big");
  ASSERT_THAT(crc, IsOk());
  EXPECT_EQ(*crc, LocalCrc(local));
  RecordProperty("put_seconds", absl::StrCat(absl::ToDoubleSeconds(took)));
  // fsck finds nothing; the bytes written show in the live records.
  auto fsck = Run({"fsck", "/"});
  EXPECT_THAT(fsck, IsOk());
  EXPECT_TRUE(cluster_->WaitLive(
      "n0",
      [](bool found, const ns::LiveEntry& e) {
        return found && e.record.bytes_written() > 0;
      },
      kWait));
}

TEST_F(FilePutTest, SmallFileIsOneExtent) {
  StartAgents(2);
  const std::string local = MakeFile("small", 1000);
  ASSERT_THAT(Run({"file", "put", local, "/small", "--replicas=2"}), IsOk());
  auto f = cluster_->store()->GetFile("/small");
  ASSERT_THAT(f, IsOk());
  ASSERT_EQ(f->layout.extents_size(), 1);
  EXPECT_EQ(f->layout.extents(0).replicas_size(), 2);
  EXPECT_TRUE(f->layout.extents(0).has_crc32c());
  auto crc = RemoteCrc("/small");
  ASSERT_THAT(crc, IsOk());
  EXPECT_EQ(*crc, LocalCrc(local));
  // A second put without --overwrite is refused before writing anything.
  EXPECT_THAT(Run({"file", "put", local, "/small"}),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(Run({"file", "put", local, "/small", "--overwrite"}), IsOk());
}

TEST_F(FilePutTest, FailedReplicaLeavesNothing) {
  // The last agent refuses writes: every column placed on it fails.
  StartAgents(3, {"--read_only"});
  const std::string local = MakeFile("f", 64 << 20);
  auto put =
      Run({"file", "put", local, "/f", "--stripe-unit=1M", "--replicas=3"});
  ASSERT_THAT(put, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(put.status().message()),
              HasSubstr("written objects removed"));
  EXPECT_THAT(cluster_->store()->GetFile("/f"),
              StatusIs(absl::StatusCode::kNotFound));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_THAT(Objects(i), ::testing::IsEmpty()) << "agent " << i;
    // A cancelled write stream's temp file is removed by the agent's
    // handler when it sees the cancellation, which may be just after the
    // client returned: allow it a bounded moment.
    const absl::Time deadline = absl::Now() + kWait;
    while (!Temps(i).empty() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_THAT(Temps(i), ::testing::IsEmpty()) << "agent " << i;
  }
}

TEST_F(FilePutTest, AgentKilledMidwayIsReplacedElsewhere) {
  // Three agents, two replicas, three columns: every column with a replica
  // on the killed agent is re-written to the third node.
  StartAgents(3);
  const std::string local = MakeFile("k", uint64_t{1} << 30);
  absl::StatusOr<admin::Table> put = absl::InternalError("not run");
  std::atomic<bool> put_returned{false};
  std::thread putter([&] {
    put = Run({"file", "put", local, "/k", "--stripe-unit=1M", "--replicas=2"});
    put_returned.store(true);
  });
  // Kill agent n2 once data flows to it.
  auto nc = node::NodeClient::Connect(cluster_->agent(2).address);
  ASSERT_THAT(nc, IsOk());
  const absl::Time end = absl::Now() + absl::Seconds(60);
  bool flowing = false;
  while (absl::Now() < end && !flowing) {
    auto st = (*nc)->GetStats(absl::Now() + absl::Seconds(2));
    flowing = st.ok() && st->bytes_written() > (8 << 20);
    if (!flowing) absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_TRUE(flowing);
  // ~680 MiB of the put go to n2: it is far from done when 8 MiB have
  // arrived (a failure here names the cause rather than a missing
  // "re-placed").
  const bool ended_before_kill = put_returned.load();
  ASSERT_THAT(cluster_->agent(2).process->Kill(), IsOk());
  EXPECT_FALSE(ended_before_kill) << "the put ended before n2 was killed";
  putter.join();
  ASSERT_THAT(put, IsOk());
  EXPECT_THAT(put->message, HasSubstr("re-placed "));
  EXPECT_THAT(put->message, HasSubstr(" n2 -> "));
  // The file: every column on two distinct live nodes, none on n2, and
  // byte-exact.
  auto f = cluster_->store()->GetFile("/k");
  ASSERT_THAT(f, IsOk());
  ASSERT_TRUE(f->layout.has_striped());
  std::map<std::string, std::vector<std::string>> referenced;
  for (const auto& target : f->layout.striped().targets()) {
    ASSERT_EQ(target.replicas_size(), 2);
    EXPECT_NE(target.replicas(0).node_id(), target.replicas(1).node_id());
    for (const auto& r : target.replicas()) {
      EXPECT_NE(r.node_id(), "n2");
      referenced[r.node_id()].push_back(r.object());
    }
  }
  auto crc = RemoteCrc("/k");
  ASSERT_THAT(crc, IsOk());
  EXPECT_EQ(*crc, LocalCrc(local));
  EXPECT_THAT(Run({"fsck", "/", "--checksums"}), IsOk());
  // The surviving agents hold exactly the layout's objects, no temp file.
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_THAT(Objects(i), ::testing::UnorderedElementsAreArray(
                                referenced[cluster_->agent(i).id]))
        << "agent " << i;
    EXPECT_THAT(Temps(i), ::testing::IsEmpty()) << "agent " << i;
  }
  // The killed agent clears its temp files when it comes back; an object
  // it committed before dying is in no layout and named as left to the
  // keeper's orphan collector.
  ASSERT_THAT(cluster_->Restart(cluster_->agent(2)), IsOk());
  EXPECT_THAT(Temps(2), ::testing::IsEmpty());
  for (const std::string& o : Objects(2)) {
    EXPECT_THAT(put->message, HasSubstr(absl::StrCat("n2:", o)));
    EXPECT_THAT(put->message, HasSubstr("orphan collector"));
  }
}

TEST_F(FilePutTest, ScrubAndFsckFindFlippedByte) {
  StartAgents(2, {"--scrub_interval_s=1"});
  const std::string local = MakeFile("s", 3 << 20);
  ASSERT_THAT(Run({"file", "put", local, "/s", "--stripe-unit=1M",
                   "--replicas=2", "--width=1"}),
              IsOk());
  ASSERT_THAT(Run({"fsck", "--checksums"}), IsOk());
  auto f = cluster_->store()->GetFile("/s");
  ASSERT_THAT(f, IsOk());
  const std::string object =
      f->layout.striped().targets(0).replicas(0).object();
  // Flip one byte of the replica on n1 (the agent with the scrubber).
  const std::string on_disk =
      absl::StrCat(cluster_->agent(1).export_dir, "/", object);
  int fd = open(on_disk.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c;
  ASSERT_EQ(pread(fd, &c, 1, 1500000), 1);
  c ^= 0x20;
  ASSERT_EQ(pwrite(fd, &c, 1, 1500000), 1);
  close(fd);
  // The background scrub reports it in n1's live record.
  EXPECT_TRUE(cluster_->WaitLive(
      "n1",
      [&](bool found, const ns::LiveEntry& e) {
        return found && e.record.corrupt_objects_size() == 1 &&
               e.record.corrupt_objects(0) == object &&
               e.record.health() == v1::LiveRecord::DEGRADED;
      },
      kWait));
  // fsck without checksums sees sizes only; with them, the flip.
  EXPECT_THAT(Run({"fsck"}), IsOk());
  auto fsck = Run({"fsck", "/", "--checksums"});
  ASSERT_THAT(fsck, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(admin::ExitCode(fsck.status()), 4);
  EXPECT_THAT(std::string(fsck.status().message()),
              HasSubstr("checksum mismatch"));
  EXPECT_THAT(std::string(fsck.status().message()), HasSubstr("n1"));
  auto report = admin::CheckFiles(ctx_, "/", true, 4);
  ASSERT_THAT(report, IsOk());
  ASSERT_EQ(report->findings.size(), 1u);
  EXPECT_EQ(report->findings[0].node, "n1");
  EXPECT_EQ(report->findings[0].object, object);
}

TEST_F(FilePutTest, FsckReportsMissingObject) {
  StartAgents(2);
  const std::string local = MakeFile("m", 5000);
  ASSERT_THAT(Run({"file", "put", local, "/m", "--replicas=2"}), IsOk());
  auto f = cluster_->store()->GetFile("/m");
  ASSERT_THAT(f, IsOk());
  const std::string object = f->layout.extents(0).replicas(0).object();
  const std::string node = f->layout.extents(0).replicas(0).node_id();
  size_t idx = node == "n0" ? 0 : 1;
  ASSERT_EQ(
      unlink(
          absl::StrCat(cluster_->agent(idx).export_dir, "/", object).c_str()),
      0);
  auto report = admin::CheckFiles(ctx_, "/", false, 4);
  ASSERT_THAT(report, IsOk());
  ASSERT_EQ(report->findings.size(), 1u);
  EXPECT_THAT(report->findings[0].problem, HasSubstr("missing"));
}

TEST_F(FilePutTest, RegisterChecksSizes) {
  StartAgents(2);
  // Put an object on each node directly, of different sizes.
  for (size_t i = 0; i < 2; ++i) {
    auto nc = node::NodeClient::Connect(cluster_->agent(i).address);
    ASSERT_THAT(nc, IsOk());
    std::string data(i == 0 ? 4096 : 4000, 'a');
    bool sent = false;
    ASSERT_THAT((*nc)->WriteObject("pre/obj",
                                   [&](absl::Span<char> dst) -> size_t {
                                     if (sent) return 0;
                                     sent = true;
                                     memcpy(dst.data(), data.data(),
                                            data.size());
                                     return data.size();
                                   }),
                IsOk());
  }
  auto bad = Run({"file", "register", "/r", "--replica=n0:pre/obj,n1:pre/obj"});
  ASSERT_THAT(bad, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("size mismatch"));
  EXPECT_THAT(cluster_->store()->GetFile("/r"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(
      Run({"file", "register", "/r", "--replica=n0:pre/obj", "--size=4000"}),
      StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(Run({"file", "register", "/r", "--replica=n0:pre/missing"}),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_THAT(
      Run({"file", "register", "/r", "--replica=n0:pre/obj", "--size=4096"}),
      IsOk());
  auto f = cluster_->store()->GetFile("/r");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->layout.size(), 4096u);
  EXPECT_EQ(f->layout.checksum(), v1::CRC32C_SIDECAR);
  EXPECT_THAT(Run({"fsck", "--checksums"}), IsOk());
}

TEST_F(FilePutTest, StatusShowsLiveData) {
  StartAgents(2);
  auto t = Run({"status"});
  ASSERT_THAT(t, IsOk());
  ASSERT_EQ(t->rows.size(), 2u);
  for (const auto& row : t->rows) {
    EXPECT_EQ(row[2], "yes");
    EXPECT_EQ(row[3], "HEALTHY");
  }
}

}  // namespace
}  // namespace rangefs
