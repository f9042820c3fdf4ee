// NfsNode and its connections against a real nfs-ganesha (userspace NFS
// server, NFSv4 on loopback, no rpcbind): byte-exact reads at edge sizes,
// sidecar verification, a server stopped mid-read (the request's own
// deadline), killed and restarted (the context rebuilt), paused past its
// NFSv4 lease (a new context), an export that is gone, a file replaced
// while the server was down (a stale handle, v3). (A file replaced while
// the server runs is not stale: ganesha keeps the old inode open and
// serves its bytes, as an open file would.)
#include "client_lib/internal/nfs_node.h"

#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "client_lib/internal/nfs_export.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/sidecar.h"
#include "storage_node/sidecar_format.h"
#include "tests/testing/ganesha_server.h"

namespace rangefs {
namespace client_internal {
namespace {

using ::rangefs::StatusIs;
using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    s[i] = static_cast<char>((i * 131 + seed * 7 + i / 4093) & 0xff);
  }
  return s;
}

struct Result {
  absl::StatusOr<std::string> bytes;
  bool checksum_failure = false;
  absl::Duration took;
};

class NfsNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = testing::ScopedTempDir::Make("nfs_node_test");
    ASSERT_TRUE(d.ok()) << d.status();
    tmp_ = std::make_unique<testing::ScopedTempDir>(std::move(*d));
    export_dir_ = tmp_->path() + "/export";
    ASSERT_EQ(mkdir(export_dir_.c_str(), 0755), 0);
    mkdir((export_dir_ + "/d").c_str(), 0755);
    data_ = Pattern(3 * (1 << 20) + 17, 1);
    WriteFile(export_dir_ + "/d/obj", data_);
    node::BlockChecksummer sums(64 << 10);
    sums.Update(data_.data(), data_.size());
    WriteFile(export_dir_ + "/" + node::SidecarPathFor("d/obj"),
              node::EncodeSidecar(sums.Finish()));
    ASSERT_NO_FATAL_FAILURE(Serve({.version = "4.1"}));
  }

  // Starts a ganesha server of export_dir_ with `options` (export_dir is
  // filled in) as server_, and connects node_ to it over its version.
  void Serve(testing::GaneshaServerOptions options) {
    options.export_dir = export_dir_;
    auto server = testing::GaneshaServer::Start(options);
    ASSERT_THAT(server, ::rangefs::IsOk());
    server_ = std::move(*server);
    Connect(server_->url(), options.version);
  }

  // Stops node_ and its loops, joining their threads.
  void StopNode() {
    node_->Stop();
    StopLoops();
  }

  void StopLoops() {
    if (pool_ != nullptr) pool_->Shutdown(absl::InfiniteFuture());
    pool_.reset();
  }

  void Connect(const std::string& url, const std::string& version = "4.1") {
    absl::StatusOr<NfsExport> e = ParseNfsExport("n1", url, version);
    ASSERT_TRUE(e.ok()) << e.status();
    if (pool_ == nullptr) pool_ = std::make_unique<NfsLoopPool>(1);
    auto n = NfsNode::Create("n1", *e, 1, *pool_);
    ASSERT_TRUE(n.ok()) << n.status();
    node_ = *n;
  }

  void TearDown() override {
    if (node_ != nullptr) node_->Stop();
    if (node2_ != nullptr) node2_->Stop();
    StopLoops();
  }

  Result Read(uint64_t offset, uint64_t length, bool verify = false,
              absl::Duration budget = absl::Seconds(10),
              const std::string& object = "d/obj") {
    return ReadFrom(*node_, offset, length, verify, budget, object);
  }

  // A second node "n2" on pool_'s loops, served by server2_ (a ganesha of
  // the same export directory).
  void ServeSecondNode() {
    auto server = testing::GaneshaServer::Start({.export_dir = export_dir_});
    ASSERT_THAT(server, ::rangefs::IsOk());
    server2_ = std::move(*server);
    absl::StatusOr<NfsExport> e = ParseNfsExport("n2", server2_->url(), "4.1");
    ASSERT_TRUE(e.ok()) << e.status();
    auto n = NfsNode::Create("n2", *e, 1, *pool_);
    ASSERT_TRUE(n.ok()) << n.status();
    node2_ = *n;
  }

  Result ReadFrom(NfsNode& node, uint64_t offset, uint64_t length,
                  bool verify = false,
                  absl::Duration budget = absl::Seconds(10),
                  const std::string& object = "d/obj") {
    Result out;
    absl::Notification done;
    const absl::Time t0 = absl::Now();
    const bool started = node.Read(
        {object, offset, length, verify, t0 + budget},
        [&](const absl::StatusOr<size_t>& r, const char* p, bool cf) {
          out.bytes = r.ok() ? absl::StatusOr<std::string>(std::string(p, *r))
                             : r.status();
          out.checksum_failure = cf;
          done.Notify();
        });
    if (!started) {
      out.bytes = absl::UnavailableError("refused: the node is stopped");
      return out;
    }
    done.WaitForNotification();
    out.took = absl::Now() - t0;
    return out;
  }

  std::unique_ptr<testing::ScopedTempDir> tmp_;
  std::string export_dir_;
  std::string data_;
  std::unique_ptr<testing::GaneshaServer> server_;
  std::shared_ptr<NfsNode> node_;
  std::unique_ptr<NfsLoopPool> pool_;
  std::unique_ptr<testing::GaneshaServer> server2_;
  std::shared_ptr<NfsNode> node2_;
};

TEST_F(NfsNodeTest, ByteExactAtEdgeSizes) {
  const uint64_t size = data_.size();
  const std::vector<std::pair<uint64_t, uint64_t>> cases = {
      {0, 1},         {0, 4095},     {1, 4096},          {4095, 2},
      {65535, 65538}, {0, 1 << 20},  {1, (1 << 20) + 1}, {12345, 2 << 20},
      {0, size},      {size - 1, 1}, {size - 17, 17}};
  for (bool verify : {false, true}) {
    for (const auto& [off, len] : cases) {
      Result r = Read(off, len, verify);
      ASSERT_TRUE(r.bytes.ok())
          << off << "+" << len << ": " << r.bytes.status();
      EXPECT_TRUE(*r.bytes == data_.substr(off, len))
          << off << "+" << len << " verify=" << verify;
    }
  }
  // Past the end: the mount path's rule, DATA_LOSS naming the object.
  EXPECT_THAT(Read(size - 10, 20).bytes.status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("d/obj")));
  EXPECT_THAT(Read(0, 10, false, absl::Seconds(10), "d/missing").bytes.status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("d/missing")));
  EXPECT_THAT(Read(0, 10, false, absl::Seconds(10), "../x").bytes.status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(node_->mounts(), 1);
}

// Many first reads at once on one connection: their opens must not race
// (NFSv4.0 open-owner sequence ids).
TEST_F(NfsNodeTest, ConcurrentFirstReadsOfManyObjects) {
  constexpr int kObjects = 24;
  std::vector<std::string> want;
  for (int i = 0; i < kObjects; ++i) {
    want.push_back(Pattern(10000 + i, i));
    WriteFile(absl::StrCat(export_dir_, "/d/o", i), want.back());
  }
  std::vector<absl::StatusOr<std::string>> got(2 * kObjects);
  absl::BlockingCounter left(2 * kObjects);
  for (int k = 0; k < 2 * kObjects; ++k) {
    const int i = k % kObjects;
    ASSERT_TRUE(node_->Read(
        {absl::StrCat("d/o", i), 0, want[i].size(), false,
         absl::Now() + absl::Seconds(10)},
        [&, k](const absl::StatusOr<size_t>& r, const char* p, bool) {
          got[k] = r.ok() ? absl::StatusOr<std::string>(std::string(p, *r))
                          : r.status();
          left.DecrementCount();
        }));
  }
  left.Wait();
  for (int k = 0; k < 2 * kObjects; ++k) {
    ASSERT_TRUE(got[k].ok()) << k << ": " << got[k].status();
    EXPECT_TRUE(*got[k] == want[k % kObjects]) << k;
  }
  EXPECT_EQ(node_->mounts(), 1);
}

// Reads of an open object submitted by several threads at once are
// answered byte-exact on one connection.
TEST_F(NfsNodeTest, ConcurrentReadsOfAnOpenObjectAreByteExact) {
  ASSERT_TRUE(Read(0, 4096).bytes.ok());  // opens d/obj
  constexpr int kThreads = 4, kReads = 200;
  std::vector<std::string> mismatches(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kReads; ++i) {
        const uint64_t off =
            (uint64_t{7919} * (t * kReads + i)) % (data_.size() - 8192);
        const uint64_t len = 1 + (i * 37) % 8192;
        Result r = Read(off, len);
        if (!r.bytes.ok() || *r.bytes != data_.substr(off, len)) {
          mismatches[t] = absl::StrCat(
              off, "+", len, ": ",
              r.bytes.ok() ? "bytes differ" : r.bytes.status().ToString());
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& m : mismatches) EXPECT_EQ(m, "");
  EXPECT_EQ(node_->mounts(), 1);
}

TEST_F(NfsNodeTest, CorruptBlockIsDataLoss) {
  std::string bad = data_;
  bad[(1 << 20) + 5] ^= 0x40;
  WriteFile(export_dir_ + "/d/obj", bad);
  Result r = Read(1 << 20, 100, /*verify=*/true);
  EXPECT_THAT(r.bytes.status(), StatusIs(absl::StatusCode::kDataLoss,
                                         HasSubstr("checksum mismatch")));
  EXPECT_TRUE(r.checksum_failure);
  // Unverified, the same bytes pass (the check is what caught it).
  EXPECT_TRUE(Read(1 << 20, 100).bytes.ok());
  // Other blocks are fine.
  EXPECT_TRUE(Read(0, 100, true).bytes.ok());
}

TEST_F(NfsNodeTest, StoppedServerFailsAtTheDeadlineThenRecovers) {
  ASSERT_TRUE(Read(0, 4096).bytes.ok());
  ASSERT_THAT(server_->Pause(), ::rangefs::IsOk());
  Result r = Read(0, 1 << 20, false, absl::Milliseconds(300));
  EXPECT_THAT(r.bytes.status(), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                         HasSubstr("did not answer")));
  EXPECT_LT(r.took, absl::Seconds(2));
  // While it is still stopped, a new context's mount times out too.
  r = Read(0, 4096, false, absl::Milliseconds(200));
  EXPECT_THAT(r.bytes.status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_LT(r.took, absl::Seconds(2));
  ASSERT_THAT(server_->Resume(), ::rangefs::IsOk());
  r = Read(0, 1 << 20);
  ASSERT_TRUE(r.bytes.ok()) << r.bytes.status();
  EXPECT_TRUE(*r.bytes == data_.substr(0, 1 << 20));
  EXPECT_GE(node_->mounts(), 2);  // rebuilt
}

TEST_F(NfsNodeTest, StopWhileServerStoppedReturnsPromptly) {
  ASSERT_TRUE(Read(0, 4096).bytes.ok());
  ASSERT_THAT(server_->Pause(), ::rangefs::IsOk());
  absl::Notification done;
  absl::Status status;
  ASSERT_TRUE(
      node_->Read({"d/obj", 0, 1 << 20, false, absl::Now() + absl::Hours(1)},
                  [&](const absl::StatusOr<size_t>& r, const char*, bool) {
                    status = r.status();
                    done.Notify();
                  }));
  absl::SleepFor(absl::Milliseconds(50));  // let it reach the server
  const absl::Time t0 = absl::Now();
  StopNode();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));
  ASSERT_TRUE(done.HasBeenNotified());
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_THAT(server_->Resume(), ::rangefs::IsOk());
}

TEST_F(NfsNodeTest, KilledAndRestartedServerIsUsedAgain) {
  ASSERT_TRUE(Read(0, 4096).bytes.ok());
  ASSERT_THAT(server_->Kill(), ::rangefs::IsOk());
  Result r = Read(0, 4096, false, absl::Seconds(2));
  EXPECT_FALSE(r.bytes.ok());
  EXPECT_LT(r.took, absl::Seconds(3));
  ASSERT_THAT(server_->Restart(), ::rangefs::IsOk());
  // Within the mount retry gap a read may still fail fast; then it mounts.
  absl::StatusOr<std::string> got = absl::UnknownError("never read");
  for (int i = 0; i < 50 && !got.ok(); ++i) {
    got = Read(4096, 8192, true).bytes;
    if (!got.ok()) absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == data_.substr(4096, 8192));
  EXPECT_GE(node_->mounts(), 2);
}

// NFSv4: a server paused longer than its lease forgets the client; the
// old context fails its next read and is torn down, and the one after it
// mounts a new context (a new client) and succeeds.
TEST_F(NfsNodeTest, LeaseLostWhilePausedIsANewContext) {
  StopNode();
  server_.reset();
  ASSERT_NO_FATAL_FAILURE(Serve({.version = "4.1", .lease_lifetime_s = 2}));
  ASSERT_TRUE(Read(0, 4096).bytes.ok());
  ASSERT_THAT(server_->Pause(), ::rangefs::IsOk());
  absl::SleepFor(absl::Seconds(5));  // the lease (2 s) runs out: the fault
  ASSERT_THAT(server_->Resume(), ::rangefs::IsOk());
  absl::StatusOr<std::string> got = absl::UnknownError("never read");
  for (int i = 0; i < 3 && !got.ok(); ++i) got = Read(8192, 4096).bytes;
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == data_.substr(8192, 4096));
  EXPECT_EQ(node_->mounts(), 2);  // the expired one, then a new one
}

// A stopped node has no thread left to answer on: Read refuses by its
// return value and never runs `done` itself, whose caller may hold a lock
// that `done` takes (a read call's batch lock: a self-deadlock before).
TEST_F(NfsNodeTest, ReadsAfterStopAreRefusedNeverAnsweredOnTheCaller) {
  ASSERT_TRUE(Read(0, 4096).bytes.ok());  // the loop ran and mounted
  node_->Stop();
  EXPECT_TRUE(node_->stopped());
  StopLoops();
  std::atomic<int> answered{0};
  auto count = [&](const absl::StatusOr<size_t>&, const char*, bool) {
    answered.fetch_add(1);
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  EXPECT_FALSE(node_->Read({"d/obj", 0, 4096, false, deadline}, count));
  EXPECT_FALSE(node_->Read({"d/obj", 0, 4096, true, deadline}, count));
  EXPECT_FALSE(node_->Read({"../x", 0, 10, false, deadline}, count));  // bad
  EXPECT_EQ(answered.load(), 0);
}

TEST_F(NfsNodeTest, MissingExportIsAClearError) {
  StopNode();
  Connect(server_->url() + "-gone");
  Result r = Read(0, 10, false, absl::Seconds(5));
  EXPECT_THAT(r.bytes.status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("-gone")));
  EXPECT_LT(r.took, absl::Seconds(5));
}

// A file replaced (new inode, same bytes) while its server was down: a v3
// context lives through the restart (libnfs reconnects), so its cached
// handle reads NFS3ERR_STALE, and the path is looked up again in the same
// read: no error, no new context. (An NFSv4.0 context of libnfs 4.0 does
// not live through a restart: the next read mounts a new one.)
TEST_F(NfsNodeTest, ReplacedWhileServerDownIsLookedUpAgainOverV3) {
  StopNode();
  server_.reset();
  ASSERT_NO_FATAL_FAILURE(Serve({.version = "3"}));
  ASSERT_TRUE(Read(0, 4096).bytes.ok());  // the handle is cached
  ASSERT_THAT(server_->Kill(), ::rangefs::IsOk());
  const std::string obj = export_dir_ + "/d/obj";
  WriteFile(obj + ".new", data_);
  ASSERT_EQ(rename((obj + ".new").c_str(), obj.c_str()), 0) << strerror(errno);
  ASSERT_THAT(server_->Restart(), ::rangefs::IsOk());
  Result r = Read(4096, 8192);
  ASSERT_TRUE(r.bytes.ok()) << r.bytes.status();
  EXPECT_TRUE(*r.bytes == data_.substr(4096, 8192));
  EXPECT_EQ(node_->mounts(), 1) << "the context did not live through the "
                                   "restart: no stale handle was read";
}

TEST(NfsExportTest, ParsesAndRefuses) {
  absl::StatusOr<NfsExport> e =
      ParseNfsExport("n1", "nfs://10.0.0.1:2050/srv/x", "3");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "10.0.0.1");
  EXPECT_EQ(e->port, 2050);
  EXPECT_EQ(e->path, "/srv/x");
  EXPECT_EQ(e->version, 3);
  e = ParseNfsExport("n1", "nfs://h/e?mountport=20048", "3");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->LibnfsUrl(), "nfs://h/e?version=3&nfsport=2049&mountport=20048");
  e = ParseNfsExport("n1", "nfs://[::1]:2049/e", "4.1");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->version, 4);
  for (const char* bad :
       {"", "http://h/e", "nfs://h", "nfs:///e", "nfs://h:0/e",
        "nfs://h:99999/e", "nfs://h:/e", "nfs://h:x/e", "nfs://h/e/../x",
        "nfs://h/e?version=3", "nfs://h/e?mountport=0", "nfs://h b/e",
        "nfs://h/e\n", "nfs://[::1/e", "nfs://h/e%2f"}) {
    EXPECT_THAT(ParseNfsExport("n7", bad, "4").status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n7")))
        << bad;
  }
  EXPECT_THAT(
      ParseNfsExport("n7", "nfs://h/e", "2").status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version")));
}

// Two nodes on a pool of one loop: one thread answers both, so that a
// completion of one node starts the next read of the other with no
// hand-off (tests/bench/RESULTS.md part U).
TEST_F(NfsNodeTest, NodesShareOneLoopThread) {
  ASSERT_NO_FATAL_FAILURE(ServeSecondNode());
  EXPECT_EQ(pool_->loops(), 1);
  std::thread::id first, second;
  absl::Notification done;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::Status status;
  ASSERT_TRUE(node_->Read(
      {"d/obj", 0, 4096, false, deadline},
      [&](const absl::StatusOr<size_t>& r, const char*, bool) {
        first = std::this_thread::get_id();
        if (!r.ok()) {
          status = r.status();
          done.Notify();
          return;
        }
        // From the loop's thread, as NodeRuntime's refill does.
        const bool started = node2_->Read(
            {"d/obj", 4096, 4096, false, deadline},
            [&](const absl::StatusOr<size_t>& r2, const char*, bool) {
              second = std::this_thread::get_id();
              status = r2.status();
              done.Notify();
            });
        if (!started) done.Notify();
      }));
  done.WaitForNotification();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(first, second);
  EXPECT_NE(first, std::this_thread::get_id());
}

// A hung server (SIGSTOPped, its mount and reads unanswered) shares a loop
// with a healthy one: the healthy node's first mount and its reads go on
// at full speed; the hung node's read fails at its own deadline.
TEST_F(NfsNodeTest, HungServerDoesNotStallAnotherNodeOnItsLoop) {
  StopNode();  // a fresh node_: its mount is what hangs
  Connect(server_->url());
  ASSERT_NO_FATAL_FAILURE(ServeSecondNode());  // not mounted yet either
  EXPECT_EQ(pool_->loops(), 1);
  ASSERT_THAT(server_->Pause(), ::rangefs::IsOk());
  absl::Notification hung_done;
  absl::Status hung = absl::UnknownError("not answered");
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(
      node_->Read({"d/obj", 0, 4096, false, t0 + absl::Seconds(4)},
                  [&](const absl::StatusOr<size_t>& r, const char*, bool) {
                    hung = r.status();
                    hung_done.Notify();
                  }));
  for (int i = 0; i < 10; ++i) {
    Result r = ReadFrom(*node2_, i * 4096, 4096, /*verify=*/i % 2 == 1,
                        absl::Seconds(10));
    ASSERT_TRUE(r.bytes.ok()) << r.bytes.status();
    EXPECT_TRUE(*r.bytes == data_.substr(i * 4096, 4096));
    EXPECT_LT(r.took, absl::Seconds(1));
  }
  EXPECT_FALSE(hung_done.HasBeenNotified());  // all that, while it hung
  hung_done.WaitForNotification();
  EXPECT_THAT(hung, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_GE(absl::Now() - t0, absl::Seconds(4));
  ASSERT_THAT(server_->Resume(), ::rangefs::IsOk());
}

// Connections fill a loop (kLinksPerLoop) before the next starts, up to
// the pool's most; an export named by host name gets a loop of its own
// (libnfs resolves it with a blocking getaddrinfo), which ends with it.
TEST(NfsLoopPoolTest, LoopsFillUpToTheMostAndHostNamesGetTheirOwn) {
  NfsLoopPool pool(2);
  absl::StatusOr<NfsExport> e =
      ParseNfsExport("n", "nfs://127.0.0.1:1/x", "4.1");
  ASSERT_TRUE(e.ok()) << e.status();
  std::vector<std::shared_ptr<NfsLink>> links;
  const int per = NfsLoopPool::kLinksPerLoop;
  for (int i = 0; i < 3 * per; ++i) {
    auto l = pool.Attach(*e, absl::StrCat("t-", i));
    ASSERT_TRUE(l.ok()) << l.status();
    links.push_back(*l);
    EXPECT_EQ(pool.loops(), i < per ? 1 : 2) << i;
  }
  absl::StatusOr<NfsExport> named =
      ParseNfsExport("n", "nfs://localhost:1/x", "4.1");
  ASSERT_TRUE(named.ok()) << named.status();
  auto own = pool.Attach(*named, "t-named");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(pool.loops(), 3);
  (*own)->Stop();
  for (const auto& l : links) l->Stop();
  pool.Shutdown(absl::Now() + absl::Seconds(10));
  EXPECT_FALSE(pool.Attach(*e, "t-late").ok());
  auto r = std::make_unique<NfsRequest>();
  r->done = [](const absl::Status&, const char*, size_t) {};
  EXPECT_FALSE(links[0]->Submit(std::move(r)));
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
