// Integration tests of the client: a real etcd (EtcdCluster), three real
// rangefs-node agents, and their export directories as the "mounts".
// Files are striped over the three nodes with two replicas per column.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"
#include "storage_node/node_client.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/etcd_namespace.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using testing::EtcdCluster;
using testing::Subprocess;

constexpr int kNodes = 3;
constexpr int kFiles = 4;
constexpr uint64_t kUnit = 256 << 10;
constexpr uint64_t kFileSize = 3 * kUnit * 3 + 12345;

class ClientIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::MakeTempDir("client_it");
    ASSERT_THAT(dir, IsOk());
    dir_ = *dir;
    auto ns = testing::StartEtcdNamespace();
    ASSERT_THAT(ns, IsOk());
    etcd_ = std::move(ns->etcd);
    etcd_client_ = std::move(ns->client);
    kv_ = std::move(ns->kv);
    store_ = std::move(ns->store);
    for (int i = 0; i < kNodes; ++i) StartNode(i);
    absl::BitGen gen(std::seed_seq{11});
    for (int f = 0; f < kFiles; ++f) {
      std::string data(kFileSize, '\0');
      for (char& c : data) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
      CreateFile(absl::StrCat("/it/f", f), data);
      data_.push_back(std::move(data));
    }
  }

  void TearDown() override {
    if (!fuse_control_.empty()) unlink(fuse_control_.c_str());  // release
    files_.clear();
    client_.reset();
    if (fuse_ != nullptr) {
      const std::string cmd = "fusermount3 -u -z " + fuse_mount_;
      EXPECT_EQ(system(cmd.c_str()), 0) << cmd;
      fuse_.reset();
    }
    for (auto& n : nodes_) {
      if (n != nullptr) {
        n->Signal(SIGCONT).IgnoreError();
        n.reset();
      }
    }
    testing::RemoveTree(dir_);
  }

  std::string Export(int i) const { return absl::StrCat(dir_, "/export", i); }

  void StartNode(int i) {
    const std::string id = absl::StrCat("n", i);
    ASSERT_EQ(mkdir(Export(i).c_str(), 0755), 0);
    auto p = Subprocess::Start(
        {.argv = {testing::RunfilePath("storage_node/rangefs-node"),
                  "--node_id=" + id, "--export_root=" + Export(i),
                  "--listen=127.0.0.1:0", "--chunk_size=262144"},
         .log_path = absl::StrCat(dir_, "/", id, ".log")});
    ASSERT_THAT(p, IsOk());
    ASSERT_THAT((*p)->WaitForLog("serving on 127.0.0.1:", absl::Seconds(20)),
                IsOk());
    const std::string log = (*p)->Log();
    const std::string marker = "serving on 127.0.0.1:";
    size_t at = log.find(marker) + marker.size();
    int port = 0;
    ASSERT_TRUE(
        absl::SimpleAtoi(log.substr(at, log.find('\n', at) - at), &port));
    const std::string address = absl::StrCat("127.0.0.1:", port);
    nodes_.push_back(std::move(*p));
    auto nc = node::NodeClient::Connect(address);
    ASSERT_THAT(nc, IsOk());
    agents_.push_back(std::move(*nc));
    v1::NodeRecord r;
    r.set_id(id);
    r.add_addresses(address);
    r.set_export_path(Export(i));
    r.set_mount_path(Export(i));  // the export dir is this node's "mount"
    ASSERT_THAT(store_->AddNode(r), IsOk());
    // rangefs-node's --etcd_endpoints is not functional yet: write the
    // live record for it.
    v1::LiveRecord live;
    live.set_node_id(id);
    live.set_health(v1::LiveRecord::HEALTHY);
    live.add_addresses(address);
    ASSERT_THAT(store_->PutLive(live, 0), IsOk());
  }

  void WriteObject(int node, const std::string& object,
                   const std::string& data) {
    size_t pos = 0;
    auto r = agents_[node]->WriteObject(
        object,
        [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
          size_t n = std::min(buf.size(), data.size() - pos);
          memcpy(buf.data(), data.data() + pos, n);
          pos += n;
          return n;
        },
        {.deadline = absl::Now() + absl::Seconds(20), .block_size = 65536});
    ASSERT_THAT(r, IsOk());
  }

  // Striped over 3 columns; column t has replicas on nodes t and t+1.
  void CreateFile(const std::string& path, const std::string& data) {
    v1::FileLayout l;
    l.set_size(data.size());
    l.set_state(v1::READY);
    l.set_checksum(v1::CRC32C_SIDECAR);
    l.set_checksum_block_size(65536);
    auto* s = l.mutable_striped();
    s->set_stripe_unit(kUnit);
    const uint64_t units = (data.size() + kUnit - 1) / kUnit;
    for (int t = 0; t < kNodes; ++t) {
      std::string column;
      for (uint64_t k = t; k < units; k += kNodes) {
        column += data.substr(k * kUnit, kUnit);
      }
      auto* target = s->add_targets();
      for (int n : {t, (t + 1) % kNodes}) {
        const std::string obj = absl::StrCat("objs", path, "-c", t);
        WriteObject(n, obj, column);
        auto* r = target->add_replicas();
        r->set_node_id(absl::StrCat("n", n));
        r->set_object(obj);
      }
    }
    ASSERT_THAT(store_->CreateFile(path, l), IsOk());
  }

  ClientOptions Options(DataPath path) {
    ClientOptions o;
    o.etcd_endpoints = etcd_->endpoints();
    o.data_path = path;
    o.mount_root = dir_ + "/no-such-root";  // mount_path is set per node
    o.default_deadline = absl::Seconds(10);
    o.attempt_timeout = absl::Milliseconds(500);
    return o;
  }

  void OpenAll() {
    files_.clear();
    for (int f = 0; f < kFiles; ++f) {
      auto file = client_->OpenFile(absl::StrCat("/it/f", f));
      ASSERT_THAT(file, IsOk());
      files_.push_back(std::move(*file));
    }
  }

  // One multi-file ReadV of 1 MiB-ish ranges over every file; returns the
  // number of failed or wrong ranges.
  int ReadAllOnce(absl::BitGen& gen, absl::Duration deadline) {
    std::vector<std::string> bufs;
    std::vector<FileReadRange> ranges;
    bufs.reserve(kFiles * 4);
    for (int f = 0; f < kFiles; ++f) {
      for (int k = 0; k < 4; ++k) {
        uint64_t off = absl::Uniform<uint64_t>(gen, 0, kFileSize - 1);
        bufs.emplace_back(absl::Uniform<size_t>(gen, 1, 1 << 20), '\0');
        ranges.push_back({files_[f].get(), off, absl::MakeSpan(bufs.back())});
      }
    }
    auto results = client_->ReadV(ranges, {.deadline = deadline});
    int bad = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      const int f = static_cast<int>(i) / 4;
      if (!results[i].ok()) {
        ADD_FAILURE() << results[i].status();
        ++bad;
        continue;
      }
      size_t want =
          std::min<size_t>(bufs[i].size(), kFileSize - ranges[i].offset);
      if (*results[i] != want ||
          bufs[i].compare(0, want, data_[f], ranges[i].offset, want) != 0) {
        ADD_FAILURE() << "wrong bytes in range " << i;
        ++bad;
      }
    }
    return bad;
  }

  void PrintStats() {
    ClientStats s = client_->Stats();
    fprintf(stderr, "stats: retries=%lu hedges=%lu wins=%lu crc=%lu\n",
            (unsigned long)s.retries, (unsigned long)s.hedges,
            (unsigned long)s.hedge_wins, (unsigned long)s.checksum_failures);
    for (const NodeStats& n : s.nodes) {
      fprintf(stderr, "  %s req=%lu err=%lu to=%lu mount=%lu agent=%lu\n",
              n.node.c_str(), (unsigned long)n.requests,
              (unsigned long)n.errors, (unsigned long)n.timeouts,
              (unsigned long)n.mount_reads, (unsigned long)n.agent_reads);
    }
  }

  uint64_t NodeRequests(const std::string& id) {
    for (const NodeStats& n : client_->Stats().nodes) {
      if (n.node == id) return n.requests;
    }
    return 0;
  }

  std::string dir_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> etcd_client_;
  std::unique_ptr<ns::KvBackend> kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::vector<std::unique_ptr<Subprocess>> nodes_;
  std::vector<std::unique_ptr<node::NodeClient>> agents_;
  std::vector<std::string> data_;
  std::unique_ptr<Client> client_;
  std::vector<std::unique_ptr<File>> files_;
  std::unique_ptr<Subprocess> fuse_;
  std::string fuse_mount_, fuse_control_;
};

// Runs `reads` multi-file ReadVs while `fault` runs once on another thread
// after the first one; returns the failures.
int ReadWhile(ClientIntegrationTest* t, int reads,
              const std::function<void()>& fault,
              const std::function<int(absl::BitGen&)>& read_once) {
  absl::BitGen gen(std::seed_seq{5});
  int bad = read_once(gen);
  std::thread injector(fault);
  for (int i = 1; i < reads; ++i) bad += read_once(gen);
  injector.join();
  (void)t;
  return bad;
}

TEST_F(ClientIntegrationTest, AgentPathSurvivesSigkillDuringMultiFileReadV) {
  auto c = Client::Open(Options(DataPath::kAgent));
  ASSERT_THAT(c, IsOk());
  client_ = std::move(*c);
  OpenAll();
  int bad = ReadWhile(
      this, 12, [&] { ASSERT_THAT(nodes_[1]->Kill(), IsOk()); },
      [&](absl::BitGen& g) { return ReadAllOnce(g, absl::Seconds(10)); });
  EXPECT_EQ(bad, 0);
  PrintStats();
  ClientStats s = client_->Stats();
  EXPECT_EQ(s.unavailable + s.deadline_exceeded, 0u);
  uint64_t agent_reads = 0, in_place = 0;
  for (const NodeStats& n : s.nodes) {
    agent_reads += n.agent_reads;
    in_place += n.in_place_reads;
  }
  EXPECT_GT(agent_reads, 0u);
  // The agents' bytes landed in the callers' buffers themselves (with a
  // node killed under them, every byte still checked by ReadAllOnce).
  EXPECT_GT(in_place, 0u);
}

TEST_F(ClientIntegrationTest, MountPathSurvivesKilledAgentAndVanishedMount) {
  ClientOptions o = Options(DataPath::kMount);
  o.verify = VerifyMode::kSampled;
  o.verify_sample_every = 4;
  auto c = Client::Open(o);
  ASSERT_THAT(c, IsOk());
  client_ = std::move(*c);
  OpenAll();
  const std::string gone = Export(1) + ".gone";
  int bad = ReadWhile(
      this, 12,
      [&] {
        ASSERT_THAT(nodes_[1]->Kill(), IsOk());
        ASSERT_EQ(rename(Export(1).c_str(), gone.c_str()), 0);
      },
      [&](absl::BitGen& g) { return ReadAllOnce(g, absl::Seconds(10)); });
  EXPECT_EQ(bad, 0);
  PrintStats();
  ClientStats s = client_->Stats();
  uint64_t mount_reads = 0, agent_reads = 0;
  for (const NodeStats& n : s.nodes) {
    mount_reads += n.mount_reads;
    agent_reads += n.agent_reads;
  }
  EXPECT_GT(mount_reads, 0u);
  EXPECT_EQ(agent_reads, 0u);
  rename(gone.c_str(), Export(1).c_str());
}

TEST_F(ClientIntegrationTest, SigstoppedAgentIsRoutedAroundWithinDeadline) {
  auto c = Client::Open(Options(DataPath::kAgent));
  ASSERT_THAT(c, IsOk());
  client_ = std::move(*c);
  OpenAll();
  absl::BitGen gen(std::seed_seq{3});
  ASSERT_EQ(ReadAllOnce(gen, absl::Seconds(10)), 0);  // warm: latencies known
  ASSERT_THAT(nodes_[2]->Signal(SIGSTOP), IsOk());
  // Routed around by a stall or the attempt timeout (<= 500 ms); a call
  // that waited for the hung node would never end by itself. 10 s leaves
  // room for a loaded machine (idle: well under a second).
  const absl::Duration deadline = absl::Seconds(10);
  for (int i = 0; i < 3; ++i) {
    const absl::Time t0 = absl::Now();
    EXPECT_EQ(ReadAllOnce(gen, deadline), 0);
    EXPECT_LT(absl::Now() - t0, deadline);
  }
  ASSERT_THAT(nodes_[2]->Signal(SIGCONT), IsOk());
  PrintStats();
  ClientStats s = client_->Stats();
  EXPECT_GT(s.hedges + s.retries, 0u);
}

TEST_F(ClientIntegrationTest, FlippedByteIsCaughtWithFullVerify) {
  // Flip a byte of column 0's replica on node 0 (the on-disk object).
  const std::string obj = Export(0) + "/objs/it/f0-c0";
  int fd = open(obj.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char byte;
  ASSERT_EQ(pread(fd, &byte, 1, 1000), 1);
  byte ^= 0x40;
  ASSERT_EQ(pwrite(fd, &byte, 1, 1000), 1);
  close(fd);
  for (DataPath path : {DataPath::kMount, DataPath::kAgent}) {
    ClientOptions o = Options(path);
    o.verify = VerifyMode::kFull;
    o.lb_policy = "round_robin";
    auto c = Client::Open(o);
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
    OpenAll();
    for (int i = 0; i < 4; ++i) {
      std::string buf(4096, '\0');
      auto n = files_[0]->Read(0, absl::MakeSpan(buf));
      ASSERT_THAT(n, IsOk());
      EXPECT_EQ(buf, data_[0].substr(0, 4096));
    }
    EXPECT_GE(client_->Stats().checksum_failures, 1u)
        << (path == DataPath::kMount ? "mount" : "agent");
    files_.clear();
    client_.reset();
  }
}

TEST_F(ClientIntegrationTest, DrainedNodeStopsReceivingReads) {
  auto c = Client::Open(Options(DataPath::kAuto));
  ASSERT_THAT(c, IsOk());
  client_ = std::move(*c);
  OpenAll();
  absl::BitGen gen(std::seed_seq{9});
  ASSERT_EQ(ReadAllOnce(gen, absl::Seconds(10)), 0);
  ASSERT_GT(NodeRequests("n0"), 0u);
  ASSERT_THAT(store_->SetNodeState("n0", v1::DRAINING), IsOk());
  // The watch applies it asynchronously: poll the client's verdict.
  bool drained = false;
  for (const absl::Time end = absl::Now() + absl::Seconds(30);
       !drained && absl::Now() < end;) {
    for (const NodeStats& n : client_->Stats().nodes) {
      if (n.node == "n0" && !n.admissible) drained = true;
    }
    if (!drained) absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(drained);
  const uint64_t before = NodeRequests("n0");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ReadAllOnce(gen, absl::Seconds(10)), 0);
  EXPECT_EQ(NodeRequests("n0"), before);
  EXPECT_GT(NodeRequests("n1"), 0u);
}

TEST_F(ClientIntegrationTest, BlockingFuseMountIsRoutedAroundWithinDeadline) {
  // Node 1's mount becomes a FUSE passthrough of its export that hangs
  // every read while the control file exists (a hung hard NFS mount).
  fuse_mount_ = dir_ + "/fuse1";
  fuse_control_ = dir_ + "/block1";
  ASSERT_EQ(mkdir(fuse_mount_.c_str(), 0755), 0);
  auto p = Subprocess::Start(
      {.argv = {testing::RunfilePath("client_lib/blocking_fuse"), Export(1),
                fuse_control_, fuse_mount_, "-f"},
       .log_path = dir_ + "/fuse1.log"});
  ASSERT_THAT(p, IsOk());
  fuse_ = std::move(*p);
  const std::string probe = fuse_mount_ + "/objs";
  ASSERT_THAT(fuse_->WaitUntil([&] { return access(probe.c_str(), F_OK) == 0; },
                               absl::Seconds(10), "FUSE mount"),
              IsOk());
  auto n1 = store_->GetNode("n1");
  ASSERT_THAT(n1, IsOk());
  n1->record.set_mount_path(fuse_mount_);
  ASSERT_THAT(store_->UpdateNode(n1->record, n1->mod_revision), IsOk());

  ClientOptions o = Options(DataPath::kMount);
  o.attempt_timeout = absl::Milliseconds(300);
  auto c = Client::Open(o);
  ASSERT_THAT(c, IsOk());
  client_ = std::move(*c);
  OpenAll();
  absl::BitGen gen(std::seed_seq{4});
  ASSERT_EQ(ReadAllOnce(gen, absl::Seconds(10)), 0);  // opens the files
  ASSERT_GT(NodeRequests("n1"), 0u);
  const int fd = open(fuse_control_.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  // Routed around by a stall or the attempt timeout (<= 500 ms); a call
  // that waited for the hung node would never end by itself. 10 s leaves
  // room for a loaded machine (idle: well under a second).
  const absl::Duration deadline = absl::Seconds(10);
  for (int i = 0; i < 3; ++i) {
    const absl::Time t0 = absl::Now();
    EXPECT_EQ(ReadAllOnce(gen, deadline), 0);
    EXPECT_LT(absl::Now() - t0, deadline);
  }
  PrintStats();
  EXPECT_GT(client_->Stats().retries + client_->Stats().hedges, 0u);
  unlink(fuse_control_.c_str());
}

}  // namespace
}  // namespace rangefs
