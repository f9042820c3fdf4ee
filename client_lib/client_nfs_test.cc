// The `nfs` data path end to end: a real etcd, three real rangefs-node
// agents (they write the objects and their sidecars) and one real
// nfs-ganesha per node serving its export directory, whose NFS export is
// in the node's live record; every test runs over NFSv4.1 and over v3 (a
// private rpcbind per server; libnfs asks the MOUNT port the URL names).
// Files are striped over the three nodes, two replicas per column. No
// kernel mount anywhere: the client reads in userspace (libnfs).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/internal/nfs_node.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/store.h"
#include "storage_node/node_client.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/etcd_namespace.h"
#include "tests/testing/ganesha_server.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using testing::GaneshaServer;
using testing::Subprocess;

constexpr int kNodes = 3;
constexpr uint64_t kUnit = 256 << 10;
constexpr uint64_t kFileSize = 3 * kUnit * 3 + 12345;

// `count` ranges of `len` bytes spread over the file (a stride of 7919
// lengths, wrapping), each with a buffer of its own. Not copyable: the
// ranges point into the buffers.
struct ScatteredRanges {
  ScatteredRanges(int count, uint64_t len)
      : bufs(static_cast<size_t>(count), std::string(len, '\0')) {
    for (int i = 0; i < count; ++i) {
      ranges.push_back({(uint64_t{7919} * len * i) % (kFileSize - len),
                        absl::MakeSpan(bufs[i])});
    }
  }
  ScatteredRanges(const ScatteredRanges&) = delete;
  ScatteredRanges& operator=(const ScatteredRanges&) = delete;

  std::vector<std::string> bufs;
  std::vector<ReadRange> ranges;
};

class ClientNfsTest : public ::testing::TestWithParam<std::string> {
 public:
  // Reads [off, off + len) and compares; false (with a failure) if wrong.
  bool ReadBack(uint64_t off, uint64_t len,
                absl::Duration deadline = absl::Seconds(10)) {
    std::string got(len, '\0');
    auto n = file_->Read(off, absl::MakeSpan(got), {.deadline = deadline});
    if (!n.ok()) {
      ADD_FAILURE() << off << "+" << len << ": " << n.status();
      return false;
    }
    const size_t want = std::min<uint64_t>(len, kFileSize - off);
    if (*n != want || got.compare(0, want, data_, off, want) != 0) {
      ADD_FAILURE() << "wrong bytes at " << off << "+" << len;
      return false;
    }
    return true;
  }

 protected:
  void SetUp() override {
    auto dir = testing::MakeTempDir("client_nfs");
    ASSERT_THAT(dir, IsOk());
    dir_ = *dir;
    auto ns = testing::StartEtcdNamespace();
    ASSERT_THAT(ns, IsOk());
    etcd_ = std::move(ns->etcd);
    etcd_client_ = std::move(ns->client);
    kv_ = std::move(ns->kv);
    store_ = std::move(ns->store);
    for (int i = 0; i < kNodes; ++i) StartNode(i);
    absl::BitGen gen(std::seed_seq{17});
    data_.assign(kFileSize, '\0');
    for (char& c : data_) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
    CreateFile("/nfs/f", data_);
  }

  void TearDown() override {
    file_.reset();
    client_.reset();
    for (auto& s : nfs_) {
      if (s != nullptr) (void)s->Resume();
    }
    nfs_.clear();
    agents_.clear();
    nodes_.clear();
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
    agents_address_.push_back(address);
    nodes_.push_back(std::move(*p));
    auto nc = node::NodeClient::Connect(address);
    ASSERT_THAT(nc, IsOk());
    agents_.push_back(std::move(*nc));
    auto nfs = GaneshaServer::Start({.export_dir = Export(i),
                                     .version = GetParam(),
                                     .lease_lifetime_s = 60});
    ASSERT_THAT(nfs, IsOk());
    nfs_.push_back(std::move(*nfs));
    v1::NodeRecord r;
    r.set_id(id);
    r.add_addresses(address);
    r.set_export_path(Export(i));
    ASSERT_THAT(store_->AddNode(r), IsOk());
    PutLive(i, nfs_.back()->url(), GetParam());
  }

  void PutLive(int i, const std::string& url, const std::string& version) {
    v1::LiveRecord live;
    live.set_node_id(absl::StrCat("n", i));
    live.set_health(v1::LiveRecord::HEALTHY);
    live.add_addresses(agents_address_[i]);
    live.mutable_nfs_export()->set_url(url);
    live.mutable_nfs_export()->set_version(version);
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
    o.mount_root = dir_ + "/no-such-root";  // no kernel mount here
    o.default_deadline = absl::Seconds(10);
    o.attempt_timeout = absl::Seconds(2);
    return o;
  }

  void Open(const ClientOptions& o) {
    auto c = Client::Open(o);
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
    auto f = client_->OpenFile("/nfs/f");
    ASSERT_THAT(f, IsOk());
    file_ = std::move(*f);
  }

  NodeStats Node(const std::string& id) {
    for (const NodeStats& n : client_->Stats().nodes) {
      if (n.node == id) return n;
    }
    return {};
  }
  uint64_t Sum(uint64_t NodeStats::*f) {
    uint64_t s = 0;
    for (const NodeStats& n : client_->Stats().nodes) s += n.*f;
    return s;
  }

  std::string dir_;
  std::unique_ptr<testing::EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> etcd_client_;
  std::unique_ptr<ns::KvBackend> kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::vector<std::unique_ptr<Subprocess>> nodes_;
  std::vector<std::unique_ptr<node::NodeClient>> agents_;
  std::vector<std::string> agents_address_;
  std::vector<std::unique_ptr<GaneshaServer>> nfs_;
  std::string data_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<File> file_;
};

TEST_P(ClientNfsTest, ByteExactAtEdgeSizes) {
  for (VerifyMode v : {VerifyMode::kOff, VerifyMode::kFull}) {
    ClientOptions o = Options(DataPath::kNfs);
    o.verify = v;
    Open(o);
    for (uint64_t off : {uint64_t{0}, uint64_t{1}, kUnit - 1, kUnit,
                         kFileSize - 4097, kFileSize - 1}) {
      for (uint64_t len : {uint64_t{1}, uint64_t{4095}, uint64_t{4096},
                           uint64_t{65537}, kUnit + 1, kFileSize}) {
        ASSERT_TRUE(ReadBack(off, len)) << "verify=" << static_cast<int>(v);
      }
    }
    EXPECT_GT(Sum(&NodeStats::nfs_reads), 0u);
    EXPECT_EQ(Sum(&NodeStats::agent_reads), 0u);
    EXPECT_EQ(Sum(&NodeStats::mount_reads), 0u);
    EXPECT_EQ(Sum(&NodeStats::errors), 0u);
    file_.reset();
    client_.reset();
  }
}

TEST_P(ClientNfsTest, AutoReadsNfsWithoutAMount) {
  Open(Options(DataPath::kAuto));
  ASSERT_TRUE(ReadBack(0, kFileSize));
  EXPECT_GT(Sum(&NodeStats::nfs_reads), 0u);
  EXPECT_EQ(Sum(&NodeStats::agent_reads), 0u);
}

// A ReadV whose window (max_in_flight) is smaller than its pieces: each
// piece's end dispatches the next one on the NFS connection's thread that
// ended it, with no hand-off to the calling thread (window_refills counts
// the pieces so dispatched), byte-exact.
TEST_P(ClientNfsTest, PieceEndsRefillTheWindowOnTheConnectionsThread) {
  for (VerifyMode v : {VerifyMode::kOff, VerifyMode::kFull}) {
    ClientOptions o = Options(DataPath::kNfs);
    o.verify = v;
    o.single_flight = false;  // each range its own piece
    Open(o);
    constexpr int kRanges = 256, kWindow = 4;
    constexpr uint64_t kLen = 4096;
    ScatteredRanges sr(kRanges, kLen);
    const std::vector<std::string>& bufs = sr.bufs;
    const std::vector<ReadRange>& ranges = sr.ranges;
    auto r = file_->ReadV(ranges, {.max_in_flight = kWindow});
    ASSERT_EQ(r.size(), ranges.size());
    for (int i = 0; i < kRanges; ++i) {
      ASSERT_THAT(r[i], IsOk()) << i;
      ASSERT_EQ(*r[i], kLen);
      ASSERT_EQ(bufs[i], data_.substr(ranges[i].offset, kLen)) << i;
    }
    const ClientStats s = client_->Stats();
    // The first kWindow pieces go from the calling thread; an end that
    // comes while it is not waiting (rare: it waits for most of each
    // read's round trip) leaves the next one to it.
    EXPECT_GT(s.window_refills, s.pieces / 2)
        << "verify=" << static_cast<int>(v);
    EXPECT_LE(s.window_refills, s.pieces - kWindow);  // (some straddle units)
    EXPECT_EQ(Sum(&NodeStats::errors), 0u);
    file_.reset();
    client_.reset();
  }
}

// Reads the whole file again and again on another thread until `stop`;
// counts the failed reads.
struct Scan {
  explicit Scan(ClientNfsTest* t) : test(t) {
    thread = std::thread([this] {
      while (!stop.load()) {
        if (!test->ReadBack(0, kFileSize, absl::Seconds(8))) bad++;
        reads++;
      }
    });
  }
  void Join() {
    stop = true;
    thread.join();
  }
  ClientNfsTest* test;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, reads{0};
  std::thread thread;
};

TEST_P(ClientNfsTest, StoppedServerMidScan) {
  ClientOptions o = Options(DataPath::kNfs);
  o.teardown_timeout = absl::Milliseconds(500);
  o.hedging = false;  // the stall judgement moves n1's pieces, not hedges
  Open(o);
  Scan scan(this);
  while (scan.reads.load() < 2) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_THAT(nfs_[1]->Pause(), IsOk());
  const int before = scan.reads.load();
  const absl::Time t0 = absl::Now();
  while (scan.reads.load() < before + 5 &&
         absl::Now() - t0 < absl::Seconds(30)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  scan.Join();
  EXPECT_EQ(scan.bad.load(), 0);
  EXPECT_GE(scan.reads.load(), before + 5) << "the scan stalled";
  const NodeStats n1 = Node("n1");
  EXPECT_GT(n1.stalls + n1.moved + n1.errors, 0u) << "n1 was never read";
  // The client closes while the server is still stopped: no thread is
  // left blocked in libnfs.
  const absl::Time c0 = absl::Now();
  file_.reset();
  client_.reset();
  EXPECT_LT(absl::Now() - c0, absl::Seconds(2));
}

TEST_P(ClientNfsTest, KilledAndRestartedServerIsUsedAgain) {
  ClientOptions o = Options(DataPath::kNfs);
  o.hedging = false;
  Open(o);
  Scan scan(this);
  while (scan.reads.load() < 2) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_THAT(nfs_[1]->Kill(), IsOk());
  int at = scan.reads.load();
  while (scan.reads.load() < at + 3) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_THAT(nfs_[1]->Restart(), IsOk());
  const uint64_t bytes = Node("n1").bytes;
  const absl::Time t0 = absl::Now();
  while (Node("n1").bytes <= bytes && absl::Now() - t0 < absl::Seconds(30)) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  scan.Join();
  EXPECT_EQ(scan.bad.load(), 0);
  EXPECT_GT(Node("n1").bytes, bytes) << "n1 was not read again";
}

TEST_P(ClientNfsTest, CorruptObjectIsReadFromTheOtherReplica) {
  // n0's replica of column 0: flip a byte in its second block.
  const std::string obj = Export(0) + "/objs/nfs/f-c0";
  {
    std::fstream f(obj, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(65536 + 100);
    char c = static_cast<char>(data_[65536 + 100] ^ 0x55);
    f.write(&c, 1);
  }
  ClientOptions o = Options(DataPath::kNfs);
  o.verify = VerifyMode::kFull;
  o.lb_policy = "round_robin";
  Open(o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ReadBack(0, kUnit));
  EXPECT_GT(client_->Stats().checksum_failures, 0u);
}

TEST_P(ClientNfsTest, RemovedExportIsAClearErrorAndTheOtherReplica) {
  // n0 publishes an export its server does not have.
  std::string url = nfs_[0]->url();
  url.insert(std::min(url.find('?'), url.size()), "-removed");
  PutLive(0, url, GetParam());
  Open(Options(DataPath::kNfs));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ReadBack(0, kFileSize));
  EXPECT_GT(Node("n0").errors, 0u);
  EXPECT_EQ(Node("n0").bytes, 0u);
  EXPECT_EQ(Node("n0").agent_reads, 0u);
}

TEST_P(ClientNfsTest, BadExportInTheRecordMeansTheAgent) {
  PutLive(0, "nfs://no host/x", GetParam());
  Open(Options(DataPath::kNfs));
  ASSERT_TRUE(ReadBack(0, kFileSize));
  EXPECT_GT(Node("n0").agent_reads, 0u);
  EXPECT_EQ(Node("n0").nfs_reads, 0u);
}

// Every object replaced (a new inode with the same bytes, renamed over it)
// while every server is down, then the servers restarted: a v3 context
// lives through the restart (libnfs reconnects), so each node's cached
// handles read NFS3ERR_STALE and are looked up again within the same
// attempt: no attempt fails. (libnfs 4.0's NFSv4.0 context does not live
// through a restart: the next read mounts a new context, also without a
// failed attempt.)
TEST_P(ClientNfsTest, ObjectsReplacedWhileServersWereDownAreLookedUpAgain) {
  ClientOptions o = Options(DataPath::kNfs);
  o.hedging = false;
  o.lb_policy = "round_robin";  // both replicas of every column are read
  Open(o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ReadBack(0, kFileSize));
  for (int n = 0; n < kNodes; ++n)
    ASSERT_GT(Node(absl::StrCat("n", n)).bytes, 0u);
  for (auto& s : nfs_) ASSERT_THAT(s->Kill(), IsOk());
  for (int n = 0; n < kNodes; ++n) {
    for (int t : {n, (n + kNodes - 1) % kNodes}) {  // the columns n holds
      const std::string obj = absl::StrCat(Export(n), "/objs/nfs/f-c", t);
      std::ifstream in(obj, std::ios::binary);
      std::ofstream out(obj + ".new", std::ios::binary);
      out << in.rdbuf();
      out.close();
      ASSERT_TRUE(out.good()) << obj;
      ASSERT_EQ(rename((obj + ".new").c_str(), obj.c_str()), 0) << obj;
    }
  }
  for (auto& s : nfs_) ASSERT_THAT(s->Restart(), IsOk());
  const uint64_t reads = Sum(&NodeStats::nfs_reads);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ReadBack(0, kFileSize));
  EXPECT_GT(Sum(&NodeStats::nfs_reads), reads);
  EXPECT_EQ(Sum(&NodeStats::errors), 0u);
  EXPECT_EQ(Sum(&NodeStats::agent_reads), 0u);
}

// Runs `fn` on a thread of its own; should it not return within `limit`
// (a deadlocked read never does), the test fails and the process exits at
// once: the hung thread cannot be joined, nor the client torn down.
void WithinOrExit(absl::Duration limit, const std::function<void()>& fn) {
  absl::Notification finished;
  std::thread t([&] {
    fn();
    finished.Notify();
  });
  if (!finished.WaitForNotificationWithTimeout(limit)) {
    fprintf(stderr, "FAILED: still running after %s (deadlocked?)\n",
            absl::FormatDuration(limit).c_str());
    fflush(stderr);
    std::_Exit(1);
  }
  t.join();
}

// Set on the thread that makes the read call (the hook below leaves its
// reads alone).
thread_local bool calling_thread = false;
std::atomic<bool> stop_off_calling_thread_only{false};
std::atomic<int> stops_off_calling_thread{0};

// Stops the node's NFS export just as a read is submitted to it, as a
// replaced export (SetNfsExport) or the client closing (BeginStop) may do
// between nfs() handing the export out and the read's submission.
void StopAsReadIsSubmitted(client_internal::NfsNode& n) {
  if (stop_off_calling_thread_only.load() && calling_thread) return;
  if (!calling_thread) stops_off_calling_thread.fetch_add(1);
  n.Stop();
}

// A read submitted to an NFS export stopped meanwhile, from the calling
// thread (under the call's lock: Flush) and from a connection's thread
// refilling the call's window (under it too: CompletedAndRefill). The
// stopped connection used to answer it on the submitting thread, whose
// `done` then took the call's lock again: a self-deadlock, for good. Now
// the read is dispatched again, to the node's agent: byte-exact, promptly.
TEST_P(ClientNfsTest, ExportStoppedAsAReadIsSubmittedReadsTheAgent) {
  struct Unhook {
    ~Unhook() { client_internal::NfsNode::SetBeforeReadForTest(nullptr); }
  } unhook;
  // From the calling thread: every node's export stops at its first read.
  Open(Options(DataPath::kNfs));
  client_internal::NfsNode::SetBeforeReadForTest(&StopAsReadIsSubmitted);
  stop_off_calling_thread_only = false;
  const absl::Time t0 = absl::Now();
  WithinOrExit(absl::Seconds(30), [&] {
    calling_thread = true;
    EXPECT_TRUE(ReadBack(0, kFileSize));
  });
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5));
  EXPECT_EQ(Sum(&NodeStats::errors), 0u);
  EXPECT_GT(Sum(&NodeStats::agent_reads), 0u);
  file_.reset();
  client_.reset();

  // From a connection's thread: the first pieces go out from the calling
  // thread and are read over NFS; their ends dispatch the next ones.
  ClientOptions o = Options(DataPath::kNfs);
  o.single_flight = false;  // each range its own piece
  Open(o);
  stop_off_calling_thread_only = true;
  constexpr int kRanges = 64, kWindow = 2;
  constexpr uint64_t kLen = 4096;
  ScatteredRanges sr(kRanges, kLen);
  const std::vector<std::string>& bufs = sr.bufs;
  const std::vector<ReadRange>& ranges = sr.ranges;
  std::vector<absl::StatusOr<size_t>> r;
  const absl::Time t1 = absl::Now();
  WithinOrExit(absl::Seconds(30), [&] {
    calling_thread = true;
    r = file_->ReadV(ranges, {.max_in_flight = kWindow});
  });
  EXPECT_LT(absl::Now() - t1, absl::Seconds(5));
  ASSERT_EQ(r.size(), ranges.size());
  for (int i = 0; i < kRanges; ++i) {
    ASSERT_THAT(r[i], IsOk()) << i;
    ASSERT_EQ(bufs[i], data_.substr(ranges[i].offset, kLen)) << i;
  }
  EXPECT_GT(stops_off_calling_thread.load(), 0);  // the refill path ran
  EXPECT_GT(Sum(&NodeStats::nfs_reads), 0u);
  EXPECT_GT(Sum(&NodeStats::agent_reads), 0u);
  // (Reads a stopped export held fail UNAVAILABLE, and go elsewhere.)
}

INSTANTIATE_TEST_SUITE_P(Versions, ClientNfsTest,
                         ::testing::Values(std::string("4.1"),
                                           std::string("3")));

}  // namespace
}  // namespace rangefs
