// rangefs-keeper against a real etcd (3 members), real rangefs-node agents
// and a real client reading all along: a node killed for good is
// re-replicated, a drained node is emptied and removed, and of two keepers
// only the elected one acts until it dies; a target that fills up is backed
// off, and a keeper killed between a move's two layout steps is finished
// by the next one. Where the keeper moves data (a node killed for good, a
// drain, a corrupt replica, a rebalance, a keeper killed mid-move), two
// rangefs-mount FUSE mounts (default options and -o direct_io) are read
// too, through handles opened before the keeper acts. Small files,
// seconds-long timeouts (dead_after 2 s, lease 2 s; 10 s in the election
// test). Every wait polls for its condition (kWait); no fixed sleep stands
// in for one.
#include "keeper/keeper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "admin/args.h"
#include "admin/commands.h"
#include "admin/table.h"
#include "base/testing/http_get.h"
#include "base/testing/ports.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/keys.h"
#include "nlohmann/json.hpp"
#include "storage_node/export_root.h"
#include "storage_node/node_client.h"
#include "tests/integration/mount_harness.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using testing::AgentProcess;
using testing::Subprocess;

constexpr int kNodes = 4;

// Bound on every poll here. The things waited for take from a fraction of
// a second to ~15 s idle (lease and dead_after expiry, rate-limited
// copies); this bound holds on a loaded 2-core machine (5-10x slower), and
// a broken feature still fails, only later.
constexpr absl::Duration kWait = absl::Seconds(120);

class KeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 3 etcd members for the election test, 1 elsewhere (lean).
    const bool election = absl::StrContains(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(),
        "Elected");
    auto c = AgentCluster::Start("keeper_test", {.members = election ? 3 : 1});
    ASSERT_THAT(c, IsOk());
    cluster_ = *std::move(c);
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
    for (int i = 0; i < kNodes; ++i) {
      // Background scrub every second: reports corrupt objects in the live
      // record (a few MiB per node: cheap).
      auto a = cluster_->AddAgent(absl::StrCat("n", i), true, v1::ACTIVE,
                                  {"--scrub_interval_s=1"});
      ASSERT_THAT(a, IsOk());
      ASSERT_TRUE(cluster_->WaitLive(
          (*a)->id, [](bool found, const ns::LiveEntry&) { return found; },
          kWait));
    }
    // Single-extent files and one striped file, 2 replicas each.
    std::mt19937 rng(17);
    for (int i = 0; i < 6; ++i) {
      const bool striped = i == 5;
      std::string data((striped ? 3 << 20 : 150 << 10) + i, '\0');
      for (char& ch : data) ch = static_cast<char>(rng());
      const std::string path = absl::StrCat("/f", i);
      const std::string local = absl::StrCat(cluster_->dir(), "/src", i);
      std::ofstream(local, std::ios::binary) << data;
      std::vector<std::string> argv = {"file", "put", local, path,
                                       "--replicas=2"};
      if (striped) argv.push_back("--stripe-unit=1M");
      ASSERT_THAT(Run(argv), IsOk());
      files_[path] = std::move(data);
    }
  }

  void TearDown() override {
    StopReader();
    mounts_.clear();
    RecordProperty("scans", absl::StrCat(scans_.load()));
    RecordProperty("fuse_scans",
                   absl::StrCat(fuse_scans_.load(), " + ",
                                fuse_direct_scans_.load(), " direct_io"));
    RecordProperty("bytes_verified", absl::StrCat(bytes_verified_.load()));
    if (HasFailure()) {
      for (const auto& [id, k] : keepers_) {
        std::cerr << "--- keeper " << id << " log tail:\n"
                  << k->LogTail(8192) << "\n";
      }
    }
    keepers_.clear();
  }

  absl::StatusOr<admin::Table> Run(std::vector<std::string> argv) {
    auto args = admin::Args::Parse(argv);
    if (!args.ok()) return args.status();
    return admin::RunCommand(ctx_, *args);
  }

  Subprocess* StartKeeper(const std::string& id, double grace_s = 3600,
                          std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        testing::RunfilePath("keeper/rangefs-keeper"),
        "--etcd_endpoints=" + cluster_->etcd()->endpoints(),
        "--cluster=it",
        "--id=" + id,
        "--lease_ttl_s=2",
        "--interval_s=0.2",
        "--dead_after_s=2",
        absl::StrCat("--delete_grace_s=", grace_s),
        "--etcd_timeout_s=2"};
    // Every keeper writes a metrics file (Rounds() reads it), unless the
    // test names one.
    std::string metrics =
        absl::StrCat(cluster_->dir(), "/", id, ".rounds.prom");
    bool named = false;
    for (const std::string& f : extra) {
      absl::string_view v = f;
      if (absl::ConsumePrefix(&v, "--metrics_file=")) {
        metrics = std::string(v);
        named = true;
      }
    }
    if (!named) argv.push_back("--metrics_file=" + metrics);
    metrics_files_[id] = metrics;
    for (std::string& f : extra) argv.push_back(std::move(f));
    auto p = Subprocess::Start(
        {.argv = argv,
         .log_path = absl::StrCat(cluster_->dir(), "/", id, ".log")});
    EXPECT_THAT(p, IsOk());
    if (!p.ok()) return nullptr;
    keepers_[id] = *std::move(p);
    return keepers_[id].get();
  }

  // Rounds keeper `id` has finished (rangefs_keeper_rounds_total in its
  // metrics file, written after each round); 0 before the first.
  int64_t Rounds(const std::string& id) {
    std::ifstream f(metrics_files_[id]);
    std::string line;
    while (std::getline(f, line)) {
      absl::string_view v = line;
      double d;
      if (absl::ConsumePrefix(&v, "rangefs_keeper_rounds_total ") &&
          absl::SimpleAtod(v, &d)) {
        return static_cast<int64_t>(d);
      }
    }
    return 0;
  }

  // Waits until keeper `id` has finished a round begun after the call.
  bool WaitWholeRound(const std::string& id) {
    const int64_t r0 = Rounds(id);
    // The round in flight now may have begun earlier; the next one not.
    return Poll([&] { return Rounds(id) >= r0 + 2; }, kWait);
  }

  // For checks that something does NOT happen once the trash grace period
  // is over (a fixed sleep says nothing on a loaded machine, where the
  // keeper may not have run a round at all meanwhile): waits for a whole
  // round (which stamps every trash record written before the call with
  // its drop time), then for `grace` to pass, then for another whole round.
  bool WaitPastGrace(const std::string& id, absl::Duration grace) {
    if (!WaitWholeRound(id)) return false;
    const absl::Time after = absl::Now() + grace;
    if (!Poll([&] { return absl::Now() >= after; }, kWait)) return false;
    return WaitWholeRound(id);
  }

  // The active keeper's id; empty if none.
  std::string Leader() {
    auto r = cluster_->etcd_client()->Range(
        cluster_->store()->keys().KeeperLeader());
    if (!r.ok() || r->kvs.empty()) return "";
    return r->kvs[0].value;
  }

  // A job scanning every file through the client library, again and again,
  // comparing every byte with the source. Files stay open across scans, so
  // layout changes must be adopted silently.
  // With `fuse`, also two rangefs-mount mounts of the namespace (default
  // options, and -o direct_io) and a reader on each (FuseReader); `verify`
  // is the mounts' verify option, as the library reader's below.
  void StartReader(bool fuse = false, const std::string& verify = "off") {
    if (fuse) {
      for (const bool direct : {false, true}) {
        std::vector<std::string> flags = {"-o", "verify=" + verify};
        if (direct) flags.insert(flags.end(), {"-o", "direct_io"});
        auto m = testing::MountProcess::Start(
            cluster_->etcd()->endpoints(),
            absl::StrCat(cluster_->dir(), direct ? "/mnt-direct" : "/mnt"),
            flags);
        ASSERT_THAT(m, IsOk());
        fuse_readers_.emplace_back(
            [this, dir = (*m)->mountpoint(), direct, files = files_] {
              FuseReader(dir, direct, files);
            });
        mounts_.push_back(*std::move(m));
      }
    }
    StartLibraryReader();
  }

  // Opens every file through the mount at `dir` once, then reads each
  // whole through its handle again and again, comparing every byte. Without
  // direct_io the file's page cache is dropped before each read
  // (POSIX_FADV_DONTNEED), so that every read reaches rangefs-mount.
  void FuseReader(const std::string& dir, bool direct,
                  const std::map<std::string, std::string>& files) {
    std::map<std::string, int> fds;
    for (const auto& [path, data] : files) {
      const int fd = open((dir + path).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        read_errors_.fetch_add(1);
        ADD_FAILURE() << "open " << dir << path << ": " << strerror(errno);
        for (auto& [p, f] : fds) close(f);
        return;
      }
      fds[path] = fd;
    }
    std::string buf;
    while (!stop_reader_.load()) {
      for (const auto& [path, data] : files) {
        const int fd = fds[path];
        if (!direct) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        buf.assign(data.size(), '\0');
        size_t got = 0;
        int error = 0;
        while (got < buf.size()) {
          const ssize_t n =
              pread(fd, &buf[got], buf.size() - got, static_cast<off_t>(got));
          if (n <= 0) {
            error = n < 0 ? errno : -1;
            break;
          }
          got += static_cast<size_t>(n);
        }
        if (error != 0 || buf != data) {
          read_errors_.fetch_add(1);
          ADD_FAILURE() << "read of " << dir << path << " through a handle "
                        << "opened before: "
                        << (error > 0   ? strerror(error)
                            : error < 0 ? "short read"
                                        : "wrong bytes");
        } else {
          bytes_verified_.fetch_add(data.size());
        }
      }
      (direct ? fuse_direct_scans_ : fuse_scans_).fetch_add(1);
    }
    for (auto& [p, f] : fds) close(f);
  }

  void StartLibraryReader() {
    // The reader's own copy: the test may change files_ meanwhile.
    reader_ = std::thread([this, files = files_] {
      ClientOptions o;
      o.etcd_endpoints = cluster_->etcd()->endpoints();
      o.cluster = "it";
      o.data_path = DataPath::kAgent;
      // Every piece checked against the agents' sidecars: a corrupt
      // replica is DATA_LOSS there and the read moves to another one.
      o.verify = VerifyMode::kFull;
      auto client = Client::Open(o);
      if (!client.ok()) {
        read_errors_.fetch_add(1);
        return;
      }
      std::map<std::string, std::unique_ptr<File>> open;
      for (const auto& [path, data] : files) {
        auto f = (*client)->OpenFile(path);
        if (!f.ok()) {
          read_errors_.fetch_add(1);
          ADD_FAILURE() << path << ": " << f.status();
          return;
        }
        open[path] = *std::move(f);
      }
      std::string buf;
      while (!stop_reader_.load()) {
        for (const auto& [path, data] : files) {
          buf.assign(data.size(), '\0');
          auto n = open[path]->Read(0, absl::MakeSpan(&buf[0], buf.size()));
          if (!n.ok() || *n != data.size() || buf != data) {
            read_errors_.fetch_add(1);
            ADD_FAILURE() << "read of " << path << ": "
                          << (n.ok() ? "wrong bytes" : n.status().ToString());
          } else {
            bytes_verified_.fetch_add(data.size());
          }
        }
        scans_.fetch_add(1);
      }
    });
  }
  void StopReader() {
    stop_reader_.store(true);
    if (reader_.joinable()) reader_.join();
    for (std::thread& t : fuse_readers_) t.join();
    fuse_readers_.clear();
  }
  // Waits for `n` more full scans of every reader.
  bool WaitScans(int n, absl::Duration timeout) {
    const bool fuse = !fuse_readers_.empty();
    const int64_t want = scans_.load() + n;
    const int64_t want_fuse = fuse_scans_.load() + n;
    const int64_t want_direct = fuse_direct_scans_.load() + n;
    return Poll(
        [&] {
          return scans_.load() >= want &&
                 (!fuse || (fuse_scans_.load() >= want_fuse &&
                            fuse_direct_scans_.load() >= want_direct));
        },
        timeout);
  }

  static bool Poll(const std::function<bool()>& cond, absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      if (cond()) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return cond();
  }

  // Replica counts per node over every file (and whether every slot has
  // exactly 2 replicas, none of them on `bad`).
  bool AllSlotsHealthy(const std::set<std::string>& bad,
                       std::map<std::string, int>* per_node = nullptr) {
    bool ok = true;
    for (const auto& [path, data] : files_) {
      auto f = cluster_->store()->GetFile(path);
      if (!f.ok()) return false;
      auto check = [&](const auto& reps) {
        if (reps.size() != 2) ok = false;
        std::set<std::string> distinct;
        for (const v1::Replica& r : reps) {
          if (bad.count(r.node_id()) > 0) ok = false;
          distinct.insert(r.node_id());
          if (per_node != nullptr) ++(*per_node)[r.node_id()];
        }
        if (distinct.size() != 2) ok = false;
      };
      for (const auto& e : f->layout.extents()) check(e.replicas());
      for (const auto& t : f->layout.striped().targets()) check(t.replicas());
    }
    return ok;
  }

  // Waits for every slot to have its 2 replicas on distinct nodes (a move
  // in flight has 3); `per_node`: replicas per node then. False (with
  // keeper `id`'s log tail) after kWait.
  bool WaitSettled(const std::string& id,
                   std::map<std::string, int>* per_node) {
    const bool settled = Poll(
        [&] {
          per_node->clear();
          return AllSlotsHealthy({}, per_node);
        },
        kWait);
    if (!settled) ADD_FAILURE() << keepers_[id]->LogTail();
    return settled;
  }

  // Objects in agent i's export.
  std::vector<std::string> Objects(size_t i) {
    std::vector<std::string> out;
    auto root = node::ExportRoot::Open(cluster_->agent(i).export_dir,
                                       {.writable = false});
    if (!root.ok()) return {"<cannot open export>"};
    (void)(*root)->ForEachObject([&](const std::string& p) {
      out.push_back(p);
      return true;
    });
    return out;
  }

  // Agent index of node id "n<i>".
  static size_t Index(const std::string& id) {
    return std::stoul(id.substr(1));
  }

  static std::string Slurp(const std::string& file) {
    std::ifstream f(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  static void FlipByte(const std::string& file, off_t off) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(off);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x01;
    f.seekp(off);
    f.write(&c, 1);
  }

  // Polls (compacting etcd each time, so that trash may go) until agents
  // `live` hold exactly the objects the layouts of files_ reference.
  void ExpectOnlyReferencedObjects(const std::vector<size_t>& live,
                                   Subprocess* keeper) {
    std::string extra;
    EXPECT_TRUE(Poll(
        [&] {
          auto rev = cluster_->store()->CurrentRevision();
          if (rev.ok()) (void)cluster_->etcd_client()->Compact(*rev);
          std::set<std::pair<std::string, std::string>> referenced;
          for (const auto& [path, data] : files_) {
            auto f = cluster_->store()->GetFile(path);
            if (!f.ok()) return false;
            for (const auto& e : f->layout.extents()) {
              for (const auto& r : e.replicas()) {
                referenced.emplace(r.node_id(), r.object());
              }
            }
            for (const auto& t : f->layout.striped().targets()) {
              for (const auto& r : t.replicas()) {
                referenced.emplace(r.node_id(), r.object());
              }
            }
          }
          for (size_t i : live) {
            for (const std::string& o : Objects(i)) {
              if (referenced.count({cluster_->agent(i).id, o}) == 0) {
                extra = cluster_->agent(i).id + " " + o;
                return false;
              }
            }
          }
          return true;
        },
        kWait))
        << "left over: " << extra << "\n"
        << keeper->LogTail();
  }

  // A move half done: keeper ka drains n1 and exits (as if killed) right
  // after its first move's add step. `out`: the slot whose n1 replica is
  // marked leaving, and the new replica (appended to the slot) as ka left
  // it.
  struct HalfDoneMove {
    std::string path, object, added_node;
    int slot = -1;
    struct stat added {};
  };
  void KillKeeperAfterAdd(HalfDoneMove* out) {
    // ka exits (as if killed) right after its first move's first step: the
    // new replica is in the layout, the old one still there, marked leaving.
    ASSERT_NE(StartKeeper("ka", 1,
                          {"--test_exit_after_add", "--parallel_copies=1",
                           "--rebalance_tolerance=0"}),
              nullptr);
    ASSERT_TRUE(Poll([&] { return Leader() == "ka"; }, kWait));
    StartReader(/*fuse=*/true);
    ASSERT_TRUE(WaitScans(1, kWait));
    ASSERT_THAT(Run({"node", "drain", "n1"}), IsOk());
    auto st = keepers_["ka"]->Wait(kWait);
    ASSERT_THAT(st, IsOk()) << keepers_["ka"]->LogTail();
    ASSERT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 9)
        << keepers_["ka"]->LogTail();
    // Exactly one slot is over-replicated: 3 replicas, n1's leaving.
    int leaving = 0;
    for (const auto& [p, data] : files_) {
      auto f = cluster_->store()->GetFile(p);
      ASSERT_THAT(f, IsOk());
      const bool striped = f->layout.extents_size() == 0;
      const int slots = striped ? f->layout.striped().targets_size()
                                : f->layout.extents_size();
      for (int s = 0; s < slots; ++s) {
        const auto& reps = striped ? f->layout.striped().targets(s).replicas()
                                   : f->layout.extents(s).replicas();
        for (const v1::Replica& r : reps) {
          if (!r.leaving()) continue;
          ++leaving;
          out->path = p;
          out->slot = s;
          out->object = r.object();
          EXPECT_EQ(r.node_id(), "n1");
          EXPECT_EQ(reps.size(), 3);
        }
      }
    }
    ASSERT_EQ(leaving, 1);
    // The new replica ka added (appended to the slot) as it is now: a second
    // copy (temp file, then rename) would give it another inode and mtime.
    {
      auto f = cluster_->store()->GetFile(out->path);
      ASSERT_THAT(f, IsOk());
      const auto& reps = f->layout.extents_size() == 0
                             ? f->layout.striped().targets(out->slot).replicas()
                             : f->layout.extents(out->slot).replicas();
      ASSERT_EQ(reps.size(), 3);
      out->added_node = reps[2].node_id();
      ASSERT_FALSE(reps[2].leaving());
      // The mark names the node of the replica that replaces it.
      for (const v1::Replica& r : reps) {
        if (r.leaving()) {
          EXPECT_EQ(r.replaced_by(), out->added_node);
        }
      }
      ASSERT_EQ(stat((cluster_->agent(Index(out->added_node)).export_dir + "/" +
                      out->object)
                         .c_str(),
                     &out->added),
                0)
          << strerror(errno);
    }
  }

  // Keeper kb (grace 1 s, orphan scans every 0.5 s) finishes the drain of
  // n1 that KillKeeperAfterAdd started.
  void FinishDrainWithKeeperKb() {
    ASSERT_NE(StartKeeper(
                  "kb", 1,
                  {"--orphan_scan_interval_s=0.5", "--rebalance_tolerance=0"}),
              nullptr);
    ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({"n1"}); }, kWait))
        << keepers_["kb"]->LogTail();
  }

  // After it: the reader saw no error, fsck is clean, and nothing is left
  // twice: once etcd compacts, every node holds exactly the objects the
  // layouts reference (n1, drained, none).
  void ExpectDrainedCleanly() {
    ASSERT_TRUE(WaitScans(2, kWait));
    StopReader();
    EXPECT_EQ(read_errors_.load(), 0);
    ExpectFsckClean();
    ExpectOnlyReferencedObjects({0, 1, 2, 3}, keepers_["kb"].get());
    EXPECT_THAT(Objects(1), ::testing::IsEmpty());
  }

  void ExpectFsckClean() {
    // OK is fsck's exit 0.
    EXPECT_THAT(Run({"fsck", "/", "--checksums"}), IsOk());
  }

  std::unique_ptr<AgentCluster> cluster_;
  admin::Context ctx_;
  std::map<std::string, std::string> files_;  // path -> bytes
  std::map<std::string, std::unique_ptr<Subprocess>> keepers_;
  std::map<std::string, std::string> metrics_files_;  // by keeper id
  std::thread reader_;
  std::vector<std::unique_ptr<testing::MountProcess>> mounts_;
  std::vector<std::thread> fuse_readers_;
  std::atomic<bool> stop_reader_{false};
  std::atomic<int64_t> read_errors_{0}, bytes_verified_{0}, scans_{0};
  std::atomic<int64_t> fuse_scans_{0}, fuse_direct_scans_{0};
};

TEST_F(KeeperTest, NodeKilledForGoodIsReReplicatedWithoutReadErrors) {
  const std::string metrics = absl::StrCat(cluster_->dir(), "/keeper.prom");
  auto metrics_port = testing::PickUnusedPort();
  ASSERT_THAT(metrics_port, IsOk());
  ASSERT_NE(StartKeeper("ka", 3600,
                        {"--metrics_file=" + metrics,
                         absl::StrCat("--metrics_port=", *metrics_port),
                         "--progress_interval_s=0"}),
            nullptr);
  ASSERT_TRUE(Poll([&] { return Leader() == "ka"; }, kWait));
  StartReader(/*fuse=*/true);
  ASSERT_TRUE(WaitScans(2, kWait));
  // The keeper rebalances the initial placement first (default
  // tolerance): a slot mid-move has 3 replicas. Idle that is over before
  // two scans; under load it may not be, so wait for a settled layout.
  std::map<std::string, int> before;
  ASSERT_TRUE(WaitSettled("ka", &before));
  ASSERT_GT(before["n1"], 0);
  const absl::Time killed = absl::Now();
  ASSERT_THAT(cluster_->agent(1).process->Kill(), IsOk());  // kill -9
  // dead_after (2 s) + lease expiry (2 s) + copies.
  ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({"n1"}); }, kWait))
      << keepers_["ka"]->LogTail();
  const absl::Duration healed = absl::Now() - killed;
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  EXPECT_GT(bytes_verified_.load(), 0);
  ExpectFsckClean();
  RecordProperty("healed_seconds", absl::StrCat(absl::ToDoubleSeconds(healed)));
  // `status` shows the active keeper and what its last round saw.
  ASSERT_TRUE(Poll(
      [&] {
        auto st = Run({"status"});
        return st.ok() &&
               absl::StrContains(st->message, "keeper ka active (last round") &&
               absl::StrContains(st->message, " replica move(s) to do (") &&
               absl::StrContains(st->message, "1 dead");
      },
      kWait));
  // --json status: the node rows as before, then the keeper's row.
  nlohmann::json rows;
  ASSERT_TRUE(Poll(
      [&] {
        auto st = Run({"status"});
        if (!st.ok()) return false;
        rows = nlohmann::json::parse(admin::FormatJson(*st), nullptr, false);
        return rows.is_array() && !rows.empty() &&
               rows.back().value("kind", "") == "keeper" &&
               rows.back().value("reported", false) &&
               rows.back().value("dead_nodes", 0) == 1;
      },
      kWait))
      << rows;
  ASSERT_EQ(rows.size(), static_cast<size_t>(kNodes) + 1) << rows;
  for (size_t i = 0; i < kNodes; ++i) {
    EXPECT_EQ(rows[i]["kind"], "node") << rows[i];
    EXPECT_EQ(rows[i]["node"], absl::StrCat("n", i));
    EXPECT_EQ(rows[i]["live"], i == 1 ? "no" : "yes");
  }
  const nlohmann::json& kr = rows.back();
  EXPECT_EQ(kr["active"], true);
  EXPECT_EQ(kr["keeper_id"], "ka");
  EXPECT_EQ(kr["node"], "");  // scripts scanning rows by node still work
  EXPECT_EQ(kr["draining_nodes"], 0);
  EXPECT_EQ(kr["stuck"], 0);
  EXPECT_EQ(kr["moves_failed"], 0);
  EXPECT_TRUE(kr["moves_planned"].is_number()) << kr;
  EXPECT_TRUE(kr["under_replicated_files"].is_number()) << kr;
  EXPECT_TRUE(kr["under_replicated_bytes"].is_number()) << kr;
  EXPECT_TRUE(kr["trash_pending"].is_number()) << kr;
  EXPECT_TRUE(kr.contains("eta_s")) << kr;
  EXPECT_THAT(keepers_["ka"]->Log(), ::testing::HasSubstr("layout updated"));
  // Progress while the moves ran, and the Prometheus metrics, in the file
  // and at the HTTP endpoint.
  EXPECT_THAT(keepers_["ka"]->Log(), ::testing::HasSubstr("round progress: "));
  auto healed_metrics = [](const std::string& text) {
    return absl::StrContains(text, "rangefs_keeper_active 1\n") &&
           absl::StrContains(text, "rangefs_keeper_dead_nodes 1\n") &&
           !absl::StrContains(text, "rangefs_keeper_moves_done_total 0\n");
  };
  ASSERT_TRUE(Poll(
      [&] {
        std::ifstream f(metrics);
        return healed_metrics(std::string((std::istreambuf_iterator<char>(f)),
                                          std::istreambuf_iterator<char>()));
      },
      kWait));
  absl::StatusOr<std::string> scraped;
  ASSERT_TRUE(Poll(
      [&] {
        scraped = testing::HttpGet(*metrics_port, "/metrics");
        return scraped.ok() && absl::StartsWith(*scraped, "HTTP/1.0 200 OK") &&
               healed_metrics(*scraped);
      },
      kWait))
      << (scraped.ok() ? *scraped : scraped.status().ToString());
}

// kill -9 of an agent with a long dead_after: `status` names the node
// unreachable as soon as its live record is gone, and the keeper's record
// adds the files (and bytes) with a replica on it and the countdown to
// healing; nothing is moved meanwhile.
TEST_F(KeeperTest, KilledNodeIsUnreachableAtOnceWithFilesAtRiskAndCountdown) {
  // No rebalancing: the layouts stay as put, so that "nothing moved" below
  // cannot be a rebalance move planned before n1 went missing.
  ASSERT_NE(StartKeeper("ka", 3600,
                        {"--dead_after_s=3600", "--rebalance_tolerance=0"}),
            nullptr);
  ASSERT_TRUE(Poll([&] { return Leader() == "ka"; }, kWait));
  std::map<std::string, int> before;
  ASSERT_TRUE(WaitSettled("ka", &before));
  ASSERT_GT(before["n1"], 0);
  // The files with a replica on n1, and those slots' bytes (a stripe
  // column: every 3rd MiB unit of the 3 MiB + 5 bytes file).
  int want_files = 0;
  uint64_t want_bytes = 0;
  for (const auto& [path, data] : files_) {
    auto f = cluster_->store()->GetFile(path);
    ASSERT_THAT(f, IsOk());
    bool on_n1 = false;
    auto on = [](const auto& reps) {
      for (const v1::Replica& r : reps) {
        if (r.node_id() == "n1") return true;
      }
      return false;
    };
    for (const auto& e : f->layout.extents()) {
      if (on(e.replicas())) {
        on_n1 = true;
        want_bytes += e.length();
      }
    }
    const auto& cols = f->layout.striped().targets();
    const uint64_t unit = f->layout.striped().stripe_unit();
    for (int t = 0; t < cols.size(); ++t) {
      if (!on(cols[t].replicas())) continue;
      on_n1 = true;
      for (uint64_t k = t; k * unit < data.size(); k += cols.size()) {
        want_bytes += std::min<uint64_t>(unit, data.size() - k * unit);
      }
    }
    if (on_n1) ++want_files;
  }
  ASSERT_THAT(cluster_->agent(1).process->Kill(), IsOk());  // kill -9
  nlohmann::json row;
  std::string message;
  ASSERT_TRUE(Poll(
      [&] {
        auto st = Run({"status"});
        if (!st.ok()) return false;
        message = st->message;
        auto rows =
            nlohmann::json::parse(admin::FormatJson(*st), nullptr, false);
        if (!rows.is_array() || rows.empty()) return false;
        row = rows.back();
        return absl::StrContains(message, "1 unreachable (n1)") &&
               row.value("at_risk_files", 0) > 0;
      },
      kWait))
      << message << "\n"
      << row;
  EXPECT_THAT(message,
              ::testing::HasSubstr(absl::StrCat(want_files, " file(s) (")));
  EXPECT_THAT(message, ::testing::ContainsRegex(
                           "at risk on unreachable node\\(s\\); healing "
                           "starts in (59m|1h)"));
  EXPECT_EQ(row["unreachable_nodes"], 1);
  EXPECT_EQ(row["at_risk_files"], want_files);
  EXPECT_EQ(row["at_risk_bytes"], want_bytes);
  EXPECT_EQ(row["dead_nodes"], 0);
  EXPECT_EQ(row["dead_after_s"], 3600);
  ASSERT_TRUE(row["heal_starts_in_s"].is_number()) << row;
  EXPECT_GT(row["heal_starts_in_s"].get<int64_t>(), 3000);
  EXPECT_LE(row["heal_starts_in_s"].get<int64_t>(), 3600);
  // Nothing healed (or rebalanced) while n1 is only missing.
  ASSERT_TRUE(WaitWholeRound("ka"));
  std::map<std::string, int> after;
  AllSlotsHealthy({}, &after);
  EXPECT_EQ(after, before);
}

TEST_F(KeeperTest, DrainUnderReadsEmptiesTheNodeThenRemoveSucceeds) {
  ASSERT_NE(StartKeeper("ka", /*grace_s=*/1), nullptr);
  StartReader(/*fuse=*/true);
  ASSERT_TRUE(WaitScans(2, kWait));
  ASSERT_FALSE(Objects(2).empty());
  // Refused while the node holds replicas.
  EXPECT_THAT(Run({"node", "remove", "n2"}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_THAT(Run({"node", "drain", "n2"}), IsOk());
  ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({"n2"}); }, kWait))
      << keepers_["ka"]->LogTail();
  ASSERT_TRUE(WaitScans(2, kWait));
  // The dropped objects stay until the grace period is over AND etcd has
  // compacted past the revision that dropped them: past the grace (1 s
  // from now at most), whole rounds later, nothing has gone yet.
  ASSERT_TRUE(WaitPastGrace("ka", absl::Seconds(1)))
      << keepers_["ka"]->LogTail();
  EXPECT_FALSE(Objects(2).empty());
  auto rev = cluster_->store()->CurrentRevision();
  ASSERT_THAT(rev, IsOk());
  ASSERT_THAT(cluster_->etcd_client()->Compact(*rev), IsOk());
  ASSERT_TRUE(Poll([&] { return Objects(2).empty(); }, kWait))
      << keepers_["ka"]->LogTail();
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  EXPECT_THAT(Run({"node", "remove", "n2"}), IsOk());
  ExpectFsckClean();
}

TEST_F(KeeperTest, OnlyTheElectedKeeperActsAndAnotherTakesOver) {
  // Copies at 256 KiB/s each (a 1 MiB stripe column: ~4 s), grace 1 s,
  // orphan scans every 0.5 s, no rebalancing. A 10 s leader lease: the
  // standby must not act while the leader runs, and with the 2 s lease of
  // the other tests a leader starved for ~1.5 s on a loaded machine loses
  // it (correctly), and the standby takes over.
  const std::vector<std::string> flags = {
      "--copy_bytes_per_sec=1048576", "--orphan_scan_interval_s=0.5",
      "--rebalance_tolerance=0", "--lease_ttl_s=10"};
  ASSERT_NE(StartKeeper("ka", 1, flags), nullptr);
  ASSERT_TRUE(Poll([&] { return !Leader().empty(); }, kWait));
  ASSERT_NE(StartKeeper("kb", 1, flags), nullptr);
  const std::string first = Leader();
  const std::string second = first == "ka" ? "kb" : "ka";
  ASSERT_THAT(keepers_[second]->WaitForLog("started", kWait), IsOk());
  StartReader();
  // Work for the leader: a dead node.
  ASSERT_THAT(cluster_->agent(3).process->Kill(), IsOk());
  ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({"n3"}); }, kWait))
      << keepers_[first]->LogTail();
  // The standby never acted.
  EXPECT_THAT(keepers_[first]->Log(), ::testing::HasSubstr("layout updated"));
  EXPECT_THAT(keepers_[second]->Log(),
              ::testing::Not(::testing::HasSubstr("keeper: move")));
  EXPECT_THAT(keepers_[second]->Log(),
              ::testing::Not(::testing::HasSubstr("is active")));
  // New work, and kill -9 the active keeper in the middle of a move: the
  // other takes over (the lease expires within 10 s) and finishes the
  // drain.
  ASSERT_THAT(Run({"node", "drain", "n0"}), IsOk());
  ASSERT_TRUE(Poll(
      [&] {
        for (absl::string_view line :
             absl::StrSplit(keepers_[first]->Log(), '\n')) {
          if (absl::StrContains(line, " n0 -> ") &&
              absl::StrContains(line, "copying from")) {
            return true;
          }
        }
        return false;
      },
      kWait))
      << keepers_[first]->LogTail();
  ASSERT_THAT(keepers_[first]->Kill(), IsOk());
  ASSERT_TRUE(Poll([&] { return Leader() == second; }, kWait));
  ASSERT_TRUE(Poll(
      [&] {
        return AllSlotsHealthy({"n0", "n3"});
      },
      kWait))
      << keepers_[second]->LogTail();
  EXPECT_THAT(keepers_[second]->Log(), ::testing::HasSubstr("is active"));
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  ExpectFsckClean();
  // Nothing left twice: once etcd compacts, every live node holds exactly
  // the objects layouts reference (n0, drained, none; a copy the killed
  // keeper left behind is collected as an orphan).
  ExpectOnlyReferencedObjects({0, 1, 2}, keepers_[second].get());
  EXPECT_TRUE(Objects(0).empty());
}

TEST_F(KeeperTest, EtcdOutageDuringAMoveLosesNothing) {
  ASSERT_NE(
      StartKeeper("ka", 1,
                  {"--copy_bytes_per_sec=1048576",
                   "--orphan_scan_interval_s=0.5", "--rebalance_tolerance=0"}),
      nullptr);
  StartReader();
  ASSERT_THAT(cluster_->agent(3).process->Kill(), IsOk());
  ASSERT_TRUE(Poll(
      [&] {
        for (absl::string_view line :
             absl::StrSplit(keepers_["ka"]->Log(), '\n')) {
          if (absl::StrContains(line, " n3 -> ") &&
              absl::StrContains(line, "copying from")) {
            return true;
          }
        }
        return false;
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // etcd goes away mid-move: the keeper loses its lease and stops acting.
  ASSERT_THAT(cluster_->etcd()->KillMember(0), IsOk());
  ASSERT_TRUE(Poll(
      [&] {
        return absl::StrContains(keepers_["ka"]->Log(),
                                 "leader lease lost; stopped acting");
      },
      kWait))
      << keepers_["ka"]->LogTail();
  ASSERT_THAT(cluster_->etcd()->RestartMember(0), IsOk());
  ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({"n3"}); }, kWait))
      << keepers_["ka"]->LogTail();
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  ExpectFsckClean();
  ExpectOnlyReferencedObjects({0, 1, 2}, keepers_["ka"].get());
}

TEST_F(KeeperTest, CorruptReplicaIsRepairedInPlace) {
  ASSERT_NE(StartKeeper("ka"), nullptr);
  auto f = cluster_->store()->GetFile("/f0");
  ASSERT_THAT(f, IsOk());
  ASSERT_EQ(f->layout.extents_size(), 1);
  const v1::Replica r = f->layout.extents(0).replicas(0);
  ASSERT_EQ(r.object_offset(), 0u);
  const std::string object =
      cluster_->agent(Index(r.node_id())).export_dir + "/" + r.object();
  ASSERT_EQ(Slurp(object), files_["/f0"]);
  StartReader(/*fuse=*/true, /*verify=*/"full");
  FlipByte(object, 1000);
  ASSERT_NE(Slurp(object), files_["/f0"]);
  // The node's scrub reports it, the keeper copies a good replica over it.
  ASSERT_TRUE(Poll([&] { return Slurp(object) == files_["/f0"]; }, kWait))
      << keepers_["ka"]->LogTail();
  EXPECT_THAT(keepers_["ka"]->Log(), ::testing::HasSubstr("repair of corrupt"));
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  // The client verifies chunk CRCs and falls back to the good replica.
  EXPECT_EQ(read_errors_.load(), 0);
  ExpectFsckClean();

  // A replica that only fsck finds wrong (its object gone: no scrub sees
  // a missing file): fsck reports it to the keeper, which copies a good
  // replica back and drops the report.
  auto f1 = cluster_->store()->GetFile("/f1");
  ASSERT_THAT(f1, IsOk());
  ASSERT_EQ(f1->layout.extents_size(), 1);
  const v1::Replica r1 = f1->layout.extents(0).replicas(1);
  ASSERT_EQ(r1.object_offset(), 0u);
  const std::string lost =
      cluster_->agent(Index(r1.node_id())).export_dir + "/" + r1.object();
  ASSERT_EQ(unlink(lost.c_str()), 0);
  auto fsck = Run({"fsck", "/", "--checksums"});
  ASSERT_THAT(fsck, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(fsck.status().message()),
              ::testing::HasSubstr("1 replica(s) reported to rangefs-keeper"));
  ASSERT_TRUE(Poll([&] { return Slurp(lost) == files_["/f1"]; }, kWait))
      << keepers_["ka"]->LogTail();
  ASSERT_TRUE(Poll(
      [&] {
        auto r = cluster_->etcd_client()->Range(
            cluster_->store()->keys().KeeperSuspectPrefix(), {.prefix = true});
        return r.ok() && r->kvs.empty();
      },
      kWait));
  EXPECT_THAT(keepers_["ka"]->Log(),
              ::testing::HasSubstr("fsck's report on " + r1.object()));
  ExpectFsckClean();
}

TEST_F(KeeperTest, AdminRmAndMvRacingAMoveWinCleanly) {
  // Two 2 MiB files outside the reader's set; copies at 256 KiB/s each
  // (1 MiB/s over 4 copies) leave a window of ~8 s per move for the rm or
  // mv to land in (it comes within a poll of the move's log line).
  std::mt19937 rng(5);
  std::map<std::string, std::string> race;
  for (const char* path : {"/race", "/race2"}) {
    std::string data(2 << 20, '\0');
    for (char& ch : data) ch = static_cast<char>(rng());
    const std::string local = cluster_->dir() + "/src" + (path + 1);
    std::ofstream(local, std::ios::binary) << data;
    ASSERT_THAT(Run({"file", "put", local, path, "--replicas=2"}), IsOk());
    race[path] = std::move(data);
  }
  auto layout = [&](const std::string& path) {
    auto f = cluster_->store()->GetFile(path);
    EXPECT_THAT(f, IsOk());
    return f.ok() ? f->layout : v1::FileLayout();
  };
  // The replicas of the first extent or stripe column.
  auto slot0 = [](const v1::FileLayout& l) {
    return l.extents_size() > 0 ? l.extents(0).replicas()
                                : l.striped().targets(0).replicas();
  };
  ASSERT_NE(
      StartKeeper("ka", 3600,
                  {"--copy_bytes_per_sec=1048576", "--rebalance_tolerance=0"}),
      nullptr);
  StartReader();
  auto wait_copying = [&](const std::string& path) {
    return Poll(
        [&] {
          return absl::StrContains(keepers_["ka"]->Log(),
                                   "move of " + path + " slot 0");
        },
        kWait);
  };

  // rm during the copy: the move is abandoned and its copy deleted.
  const v1::FileLayout r1 = layout("/race");
  ASSERT_EQ(slot0(r1).size(), 2);
  const std::string x = slot0(r1)[0].node_id();
  const std::string object = slot0(r1)[0].object();
  std::set<std::string> holders = {x, slot0(r1)[1].node_id()};
  ASSERT_THAT(Run({"node", "drain", x}), IsOk());
  ASSERT_TRUE(wait_copying("/race")) << keepers_["ka"]->LogTail();
  ASSERT_THAT(Run({"file", "rm", "/race"}), IsOk());
  ASSERT_TRUE(Poll(
      [&] {
        return AllSlotsHealthy({x}) &&
               absl::StrContains(keepers_["ka"]->Log(), "file gone; abandoned");
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // The abandoned copy is deleted (right after the log line).
  EXPECT_TRUE(Poll(
      [&] {
        for (size_t i = 0; i < cluster_->agents(); ++i) {
          if (holders.count(cluster_->agent(i).id) > 0) continue;
          for (const std::string& o : Objects(i)) {
            if (o == object) return false;
          }
        }
        return true;
      },
      kWait));

  // mv during the copy: abandoned at the old path, then done at the new.
  // The drain of x moves /race2 too where x holds one of its replicas (it
  // is not among the files AllSlotsHealthy looks at): that move ends first.
  v1::FileLayout r2;
  ASSERT_TRUE(Poll(
      [&] {
        r2 = layout("/race2");
        const auto s0 = slot0(r2);
        return s0.size() == 2 && s0[0].node_id() != x && s0[1].node_id() != x;
      },
      kWait))
      << keepers_["ka"]->LogTail();
  std::string y = slot0(r2)[0].node_id();
  if (y == x) y = slot0(r2)[1].node_id();
  ASSERT_NE(y, x);
  ASSERT_THAT(Run({"node", "drain", y}), IsOk());
  ASSERT_TRUE(wait_copying("/race2")) << keepers_["ka"]->LogTail();
  ASSERT_THAT(Run({"file", "mv", "/race2", "/moved2"}), IsOk());
  files_["/moved2"] = race["/race2"];  // checked below, not by the reader
  ASSERT_TRUE(Poll(
      [&] {
        return AllSlotsHealthy({x, y});
      },
      kWait))
      << keepers_["ka"]->LogTail();
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  const v1::FileLayout moved = layout("/moved2");
  EXPECT_EQ(moved.file_id(), r2.file_id());
  EXPECT_EQ(slot0(moved)[0].object(), slot0(r2)[0].object());
  ExpectFsckClean();
}

TEST_F(KeeperTest, DeadNodeBackMidRepairAbandonsItsMoves) {
  // Copies at 64 KiB/s each: a 1 MiB stripe column takes ~16 s, the window
  // in which the victim must come back (restart and register: a second or
  // two idle, several under load) for the move to be abandoned.
  auto f5 = cluster_->store()->GetFile("/f5");
  ASSERT_THAT(f5, IsOk());
  ASSERT_TRUE(f5->layout.has_striped());
  const std::string victim =
      f5->layout.striped().targets(0).replicas(0).node_id();
  ASSERT_NE(StartKeeper("ka", 3600, {"--copy_bytes_per_sec=262144"}), nullptr);
  StartReader();
  AgentProcess& a = cluster_->agent(Index(victim));
  ASSERT_THAT(a.process->Kill(), IsOk());
  ASSERT_TRUE(Poll(
      [&] {
        return absl::StrContains(keepers_["ka"]->Log(), "move of /f5 slot 0");
      },
      kWait))
      << keepers_["ka"]->LogTail();
  ASSERT_THAT(cluster_->Restart(a), IsOk());  // same export, same objects
  ASSERT_TRUE(Poll(
      [&] {
        return absl::StrContains(keepers_["ka"]->Log(),
                                 victim + " is back; abandoned");
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // Every slot has 2 replicas on live nodes (the victim's included).
  ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({}); }, kWait));
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  ExpectFsckClean();
}

TEST_F(KeeperTest, TwoEmptyNodesAddedAreFilledToWithinTenPercent) {
  // Fine-grained data for a ±10% band: 48 files of 32 KiB, 2 replicas.
  for (const auto& [path, data] : files_) {
    ASSERT_THAT(Run({"file", "rm", path}), IsOk());
  }
  files_.clear();
  std::mt19937 rng(3);
  for (int i = 0; i < 48; ++i) {
    std::string data(32 << 10, '\0');
    for (char& ch : data) ch = static_cast<char>(rng());
    const std::string path = absl::StrCat("/s", i);
    const std::string local = absl::StrCat(cluster_->dir(), "/s", i);
    std::ofstream(local, std::ios::binary) << data;
    ASSERT_THAT(Run({"file", "put", local, path, "--replicas=2"}), IsOk());
    files_[path] = std::move(data);
  }
  ASSERT_NE(StartKeeper("ka"), nullptr);
  StartReader(/*fuse=*/true);
  for (int i = kNodes; i < kNodes + 2; ++i) {
    auto a = cluster_->AddAgent(absl::StrCat("n", i), true, v1::ACTIVE,
                                {"--scrub_interval_s=1"});
    ASSERT_THAT(a, IsOk());
  }
  // Replicas per node (all slots are 32 KiB; capacities are equal: one
  // file system): 96 over 6 nodes, mean 16, band [14.4, 17.6].
  std::map<std::string, int> per;
  ASSERT_TRUE(Poll(
      [&] {
        per.clear();
        if (!AllSlotsHealthy({}, &per) || per.size() != kNodes + 2)
          return false;
        for (const auto& [id, n] : per) {
          if (n < 15 || n > 17) return false;
        }
        return true;
      },
      kWait))
      << keepers_["ka"]->LogTail();
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  ExpectFsckClean();
}

TEST_F(KeeperTest, OrphanIsCollectedAfterGraceReferencedObjectsNever) {
  // An object no layout references (a failed put's leftover), written
  // straight to agent n0.
  auto nc = node::NodeClient::Connect(cluster_->agent(0).address);
  ASSERT_THAT(nc, IsOk());
  const std::string orphan = "f/orphan/e0";
  size_t sent = 0;
  ASSERT_THAT((*nc)->WriteObject(
                  orphan,
                  [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
                    const size_t n = std::min<size_t>(buf.size(), 1000 - sent);
                    sent += n;
                    return n;
                  },
                  {.deadline = absl::Now() + kWait}),
              IsOk());
  // Every object in a layout, and where.
  std::set<std::pair<std::string, std::string>> referenced;
  for (const auto& [path, data] : files_) {
    auto f = cluster_->store()->GetFile(path);
    ASSERT_THAT(f, IsOk());
    for (const auto& e : f->layout.extents()) {
      for (const auto& r : e.replicas())
        referenced.emplace(r.node_id(), r.object());
    }
    for (const auto& t : f->layout.striped().targets()) {
      for (const auto& r : t.replicas())
        referenced.emplace(r.node_id(), r.object());
    }
  }
  auto has = [&](size_t agent, const std::string& object) {
    for (const std::string& o : Objects(agent)) {
      if (o == object) return true;
    }
    return false;
  };
  // Grace 1 s; orphan scans every 0.5 s; no rebalancing (nothing moves).
  ASSERT_NE(
      StartKeeper("ka", /*grace_s=*/1,
                  {"--orphan_scan_interval_s=0.5", "--rebalance_tolerance=0"}),
      nullptr);
  ASSERT_TRUE(Poll(
      [&] {
        return absl::StrContains(keepers_["ka"]->Log(),
                                 "orphan " + orphan + " on n0");
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // Past the grace (1 s from now at most), whole rounds later, it still
  // waits for etcd to compact past its revision.
  ASSERT_TRUE(WaitPastGrace("ka", absl::Seconds(1)))
      << keepers_["ka"]->LogTail();
  EXPECT_TRUE(has(0, orphan));
  ASSERT_TRUE(Poll(
      [&] {
        auto rev = cluster_->store()->CurrentRevision();
        if (rev.ok()) (void)cluster_->etcd_client()->Compact(*rev);
        return !has(0, orphan);
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // Several more scans and collections later: every referenced object is
  // still in place.
  ASSERT_TRUE(Poll(
      [&] {
        return absl::StrContains(keepers_["ka"]->Log(), "deleted " + orphan);
      },
      kWait));
  for (const auto& [node_id, object] : referenced) {
    EXPECT_TRUE(has(Index(node_id), object)) << node_id << " " << object;
  }
  // The only object ever taken for an orphan is the orphan.
  for (absl::string_view line : absl::StrSplit(keepers_["ka"]->Log(), '\n')) {
    if (absl::StrContains(line, "keeper: orphan ")) {
      EXPECT_TRUE(absl::StrContains(line, "orphan " + orphan + " on n0"))
          << line;
    }
  }
  ExpectFsckClean();
}

TEST_F(KeeperTest, CorruptSourceIsNeverCopied) {
  // /f1's replicas: one corrupted on disk, the other's node killed. The
  // keeper must not spread the corrupt bytes; the other files heal.
  auto f = cluster_->store()->GetFile("/f1");
  ASSERT_THAT(f, IsOk());
  const v1::Replica bad = f->layout.extents(0).replicas(0);
  const std::string dead = f->layout.extents(0).replicas(1).node_id();
  FlipByte(
      cluster_->agent(Index(bad.node_id())).export_dir + "/" + bad.object(),
      10);
  ASSERT_THAT(cluster_->agent(Index(dead)).process->Kill(), IsOk());
  // --dry_run prints the plan and changes nothing (once the dead node's
  // live record is gone).
  std::map<std::string, int64_t> revisions;
  for (const auto& [path, data] : files_) {
    auto f = cluster_->store()->GetFile(path);
    ASSERT_THAT(f, IsOk());
    revisions[path] = f->mod_revision;
  }
  std::string plan;
  int runs = 0;
  ASSERT_TRUE(Poll(
      [&] {
        auto p = Subprocess::Start(
            {.argv = {testing::RunfilePath("keeper/rangefs-keeper"),
                      "--etcd_endpoints=" + cluster_->etcd()->endpoints(),
                      "--cluster=it", "--dry_run"},
             .log_path =
                 absl::StrCat(cluster_->dir(), "/dry", ++runs, ".log")});
        if (!p.ok()) return false;
        auto st = (*p)->Wait(kWait);
        plan = (*p)->Log();
        return st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0 &&
               absl::StrContains(plan, " 1 dead, 0 draining node(s)") &&
               // once the scrub reported the corrupt replica too
               absl::StrContains(plan, "stuck /f1 slot 0: no good replica");
      },
      kWait))
      << plan;
  EXPECT_THAT(plan, ::testing::HasSubstr(" " + dead + " -> "));
  for (const auto& [path, rev] : revisions) {
    auto now = cluster_->store()->GetFile(path);
    ASSERT_THAT(now, IsOk());
    EXPECT_EQ(now->mod_revision, rev) << path << " changed by a dry run";
  }
  ASSERT_NE(StartKeeper("ka"), nullptr);
  ASSERT_TRUE(Poll(
      [&] {
        auto log = keepers_["ka"]->Log();
        return absl::StrContains(log, "/f1 slot 0 cannot be repaired") &&
               absl::StrContains(log, "corrupt");
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // Every other file is back to 2 healthy replicas.
  files_.erase("/f1");
  ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({dead}); }, kWait))
      << keepers_["ka"]->LogTail();
  // `status` counts /f1 as under-replicated (stuck), and only /f1.
  nlohmann::json keeper_row;
  EXPECT_TRUE(Poll(
      [&] {
        auto st = Run({"status"});
        if (!st.ok()) return false;
        auto rows =
            nlohmann::json::parse(admin::FormatJson(*st), nullptr, false);
        if (!rows.is_array() || rows.empty()) return false;
        keeper_row = rows.back();
        return keeper_row.value("kind", "") == "keeper" &&
               keeper_row.value("moves_planned", -1) == 0 &&
               keeper_row.value("stuck", 0) == 1 &&
               keeper_row.value("under_replicated_files", 0) == 1 &&
               keeper_row.value("under_replicated_bytes", uint64_t{0}) ==
                   f->layout.size() &&
               absl::StrContains(st->message, "1 under-replicated file(s)");
      },
      kWait))
      << keeper_row;
  // No live node but the corrupt one holds /f1's object (the dead node's
  // export still has its files).
  for (size_t i = 0; i < cluster_->agents(); ++i) {
    const std::string& id = cluster_->agent(i).id;
    if (id == bad.node_id() || id == dead) continue;
    for (const std::string& o : Objects(i)) EXPECT_NE(o, bad.object());
  }
}

// Mounts a size-limited tmpfs (a small disk that really fills up: ENOSPC)
// over an agent's export, in a private mount namespace of the calling
// thread (unshare(CLONE_NEWNS), propagation private): the agent restarted
// from this thread sees it, the host never does, so a crash or a timeout
// that skips every cleanup cannot leave it mounted (it goes away with the
// last process in the namespace). When the test ends, passed or failed,
// the agent is killed, the tmpfs lazily unmounted and the thread returned
// to its own mount namespace.
class TmpfsExport {
 public:
  // Kills `agent`, mounts `size` of tmpfs over its export and restarts it
  // there. Not OK (and nothing mounted) if a namespace or mount call fails.
  static absl::StatusOr<std::unique_ptr<TmpfsExport>> Mount(
      AgentCluster& cluster, AgentProcess& agent, const std::string& size) {
    const int host_ns = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (host_ns < 0) {
      return absl::ErrnoToStatus(errno, "open /proc/thread-self/ns/mnt");
    }
    if (unshare(CLONE_NEWNS) != 0) {
      const int e = errno;
      close(host_ns);
      return absl::ErrnoToStatus(e, "unshare(CLONE_NEWNS)");
    }
    // From here on the destructor goes back to host_ns.
    std::unique_ptr<TmpfsExport> m(new TmpfsExport(&agent, host_ns));
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return absl::ErrnoToStatus(errno, "make / private in the namespace");
    }
    RANGEFS_RETURN_IF_ERROR(agent.process->Kill());
    if (mount("tmpfs", agent.export_dir.c_str(), "tmpfs", 0,
              ("size=" + size).c_str()) != 0) {
      return absl::ErrnoToStatus(errno, "mount tmpfs " + agent.export_dir);
    }
    m->mounted_ = true;
    RANGEFS_RETURN_IF_ERROR(cluster.Restart(agent));
    return m;
  }
  ~TmpfsExport() {
    if (mounted_) {
      (void)agent_->process->Kill();
      if (umount2(agent_->export_dir.c_str(), MNT_DETACH) != 0) {
        ADD_FAILURE() << "umount " << agent_->export_dir << ": "
                      << strerror(errno);
      }
    }
    // A thread this one started since the unshare (gRPC starts some on
    // demand, more often on a loaded machine) shares its filesystem
    // attributes, and setns(CLONE_NEWNS) refuses a thread that shares them
    // (EINVAL): take a copy of its own first.
    if (unshare(CLONE_FS) != 0 || setns(host_ns_, CLONE_NEWNS) != 0) {
      ADD_FAILURE() << "back to the host mount namespace: " << strerror(errno);
    }
    close(host_ns_);
  }

 private:
  TmpfsExport(AgentProcess* agent, int host_ns)
      : agent_(agent), host_ns_(host_ns) {}
  AgentProcess* const agent_;
  const int host_ns_;
  bool mounted_ = false;
};

// Writes `path` until its file system is full (ENOSPC); false on any other
// error, or if `max_bytes` fit (not the small disk expected).
bool FillUp(const std::string& path, uint64_t max_bytes = 64 << 20) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  const std::string chunk(64 << 10, 'x');
  bool full = false;
  for (uint64_t written = 0; written < max_bytes;) {
    const ssize_t n = write(fd, chunk.data(), chunk.size());
    if (n < 0) {
      full = errno == ENOSPC;
      break;
    }
    if (n == 0) break;
    written += static_cast<uint64_t>(n);
  }
  close(fd);
  return full;
}

TEST_F(KeeperTest, TargetThatFillsUpIsBackedOffAndAnotherNodeGetsTheCopy) {
  // One 1 MiB file, so that exactly one replica moves.
  for (const auto& [path, data] : files_) {
    ASSERT_THAT(Run({"file", "rm", path}), IsOk());
  }
  files_.clear();
  std::mt19937 rng(11);
  std::string data(1 << 20, '\0');
  for (char& ch : data) ch = static_cast<char>(rng());
  const std::string local = cluster_->dir() + "/big";
  std::ofstream(local, std::ios::binary) << data;
  ASSERT_THAT(Run({"file", "put", local, "/big", "--replicas=2",
                   "--stripe-unit=4M"}),  // one extent
              IsOk());
  files_["/big"] = data;
  // n4: a 2 MiB tmpfs export (room for the 1 MiB object when the move is
  // planned), in a zone of its own: placement prefers a zone the slot's
  // other replica does not use, so n4 is the move's target.
  auto added = cluster_->AddAgent("n4", true, v1::ACTIVE);
  ASSERT_THAT(added, IsOk());
  AgentProcess& tiny = **added;
  auto mounted = TmpfsExport::Mount(*cluster_, tiny, "2m");
  if (absl::IsPermissionDenied(mounted.status())) {
    GTEST_SKIP() << "a mount namespace and a tmpfs need root: "
                 << mounted.status();
  }
  ASSERT_THAT(mounted, IsOk());
  // The mount is this test's alone: not in the host's mount table.
  EXPECT_THAT(Slurp("/proc/1/mounts"),
              ::testing::Not(::testing::HasSubstr(tiny.export_dir)));
  auto node = cluster_->store()->GetNode("n4");
  ASSERT_THAT(node, IsOk());
  node->record.set_zone("small");
  ASSERT_THAT(cluster_->store()->UpdateNode(node->record, node->mod_revision),
              IsOk());
  ASSERT_TRUE(cluster_->WaitLive(
      "n4",
      [](bool found, const ns::LiveEntry& e) {
        // The restarted agent, on the tmpfs.
        return found && e.record.free_bytes() > (1 << 20) &&
               e.record.total_bytes() <= (2 << 20);
      },
      kWait));
  auto f = cluster_->store()->GetFile("/big");
  ASSERT_THAT(f, IsOk());
  ASSERT_EQ(f->layout.extents_size(), 1);
  const std::string object = f->layout.extents(0).replicas(0).object();
  const std::string drained = f->layout.extents(0).replicas(0).node_id();
  // Copies at 256 KiB/s: the agent waits ~4 s for its throttle before it
  // writes the 1 MiB, long enough to fill the disk under it.
  ASSERT_NE(
      StartKeeper("ka", 3600,
                  {"--copy_bytes_per_sec=262144", "--rebalance_tolerance=0"}),
      nullptr);
  StartReader();
  ASSERT_THAT(Run({"node", "drain", drained}), IsOk());
  ASSERT_TRUE(Poll(
      [&] {
        return absl::StrContains(
            keepers_["ka"]->Log(),
            absl::StrCat("move of /big slot 0 (", object, ") ", drained,
                         " -> n4: copying from"));
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // Someone else fills the disk while the copy runs.
  ASSERT_TRUE(FillUp(tiny.export_dir + "/filler"));
  ASSERT_TRUE(Poll(
      [&] {
        const std::string log = keepers_["ka"]->Log();
        return absl::StrContains(log, "RESOURCE_EXHAUSTED") &&
               absl::StrContains(log, "n4 is out of space");
      },
      kWait))
      << keepers_["ka"]->LogTail();
  // The next round puts the replica on another node.
  ASSERT_TRUE(Poll(
      [&] {
        return AllSlotsHealthy({drained, "n4"});
      },
      kWait))
      << keepers_["ka"]->LogTail();
  EXPECT_THAT(keepers_["ka"]->Log(),
              ::testing::HasSubstr(absl::StrCat("move of /big slot 0 (", object,
                                                ") ", drained, " -> n")));
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  EXPECT_GT(bytes_verified_.load(), 0);
  // Every byte of both replicas, straight from the exports.
  f = cluster_->store()->GetFile("/big");
  ASSERT_THAT(f, IsOk());
  for (const v1::Replica& r : f->layout.extents(0).replicas()) {
    EXPECT_EQ(Slurp(cluster_->agent(Index(r.node_id())).export_dir + "/" +
                    r.object()),
              data)
        << r.node_id();
  }
  ExpectFsckClean();
  // Nothing partial on the full node: no object but the filler, and no
  // temp file.
  EXPECT_THAT(Objects(4), ::testing::ElementsAre("filler"));
  std::vector<std::string> temps;
  if (DIR* d = opendir((tiny.export_dir + "/.rangefs-tmp").c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") {
        temps.push_back(e->d_name);
      }
    }
    closedir(d);
  }
  EXPECT_THAT(temps, ::testing::IsEmpty());
}

TEST_F(KeeperTest, KeeperKilledBetweenAddAndRemoveIsFinishedByADrop) {
  HalfDoneMove hm;
  ASSERT_NO_FATAL_FAILURE(KillKeeperAfterAdd(&hm));
  const std::string& path = hm.path;
  const std::string& object = hm.object;
  const std::string& added_node = hm.added_node;
  const int slot = hm.slot;
  const struct stat& before = hm.added;
  // The next keeper drops the leaving replica (no second copy) and
  // finishes the drain.
  ASSERT_NO_FATAL_FAILURE(FinishDrainWithKeeperKb());
  const std::string drop = absl::StrCat("drop of leaving ", object, " (", path,
                                        " slot ", slot, ") on n1");
  EXPECT_THAT(keepers_["kb"]->Log(),
              ::testing::HasSubstr(drop + ": leaving replica removed"));
  // That slot was never copied again: the new replica is the same file
  // (inode, mtime), still in the slot, and kb logged no move of it.
  {
    struct stat after {};
    ASSERT_EQ(
        stat((cluster_->agent(Index(added_node)).export_dir + "/" + object)
                 .c_str(),
             &after),
        0)
        << strerror(errno);
    EXPECT_EQ(after.st_ino, before.st_ino);
    EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    auto f = cluster_->store()->GetFile(path);
    ASSERT_THAT(f, IsOk());
    EXPECT_TRUE(keeper::References(f->layout, added_node, object));
  }
  EXPECT_THAT(keepers_["kb"]->Log(),
              ::testing::Not(::testing::HasSubstr(
                  absl::StrCat("move of ", path, " slot ", slot, " ("))));
  ExpectDrainedCleanly();
}

// An admin removes the new replica of a half-done move (the keeper killed
// between the add and the remove). The next keeper must not drop the
// leaving replica, which would leave the slot one replica short for good
// (nothing marks a slot as under-replicated by count): it clears the mark,
// deletes the copy no layout references, and the drain then moves that
// replica as any other.
TEST_F(KeeperTest, NewReplicaRemovedBetweenTheStepsKeepsTheSlotWhole) {
  HalfDoneMove hm;
  ASSERT_NO_FATAL_FAILURE(KillKeeperAfterAdd(&hm));
  {
    auto f = cluster_->store()->GetFile(hm.path);
    ASSERT_THAT(f, IsOk());
    v1::FileLayout layout = f->layout;
    auto* reps = layout.extents_size() == 0
                     ? layout.mutable_striped()
                           ->mutable_targets(hm.slot)
                           ->mutable_replicas()
                     : layout.mutable_extents(hm.slot)->mutable_replicas();
    ASSERT_EQ(reps->size(), 3);
    ASSERT_EQ((*reps)[2].node_id(), hm.added_node);
    reps->RemoveLast();
    ASSERT_THAT(
        cluster_->store()->ReplaceLayout(hm.path, layout, f->mod_revision),
        IsOk());
  }
  ASSERT_NO_FATAL_FAILURE(FinishDrainWithKeeperKb());
  EXPECT_THAT(keepers_["kb"]->Log(),
              ::testing::HasSubstr(
                  absl::StrCat(": the new replica on ", hm.added_node,
                               " is gone; n1 no longer marked leaving")));
  ExpectDrainedCleanly();
}

// A slot with 8 replicas (the layout limit) cannot take a move's add step
// (9 replicas): the move is one swap, copied once, never re-copied.
TEST_F(KeeperTest, AFullSlotIsMovedInOneSwapAndCopiedOnce) {
  auto f0 = cluster_->store()->GetFile("/f0");
  ASSERT_THAT(f0, IsOk());
  v1::FileLayout layout = f0->layout;
  auto* reps = layout.mutable_extents(0)->mutable_replicas();
  ASSERT_EQ(reps->size(), 2);
  const std::string object = (*reps)[0].object();
  std::set<std::string> original = {(*reps)[0].node_id(), (*reps)[1].node_id()};
  // Six more replicas on nodes with a record and no agent: dead after
  // dead_after, each to be replaced.
  for (int i = 0; i < 6; ++i) {
    v1::NodeRecord n;
    n.set_id(absl::StrCat("gone", i));
    n.add_addresses("127.0.0.1:1");
    n.set_export_path(absl::StrCat(cluster_->dir(), "/nowhere", i));
    n.set_admin_state(v1::ACTIVE);
    ASSERT_THAT(cluster_->store()->AddNode(n), IsOk());
    v1::Replica* r = reps->Add();
    r->set_node_id(n.id());
    r->set_object(object);
  }
  ASSERT_THAT(cluster_->store()->ReplaceLayout("/f0", layout, f0->mod_revision),
              IsOk());
  ASSERT_NE(StartKeeper("ka", 3600, {"--rebalance_tolerance=0"}), nullptr);
  // Both free nodes take a replica, one swap each; then the slot is stuck
  // (no node left without one).
  std::string log;
  ASSERT_TRUE(Poll(
      [&] {
        auto f = cluster_->store()->GetFile("/f0");
        if (!f.ok()) return false;
        int live = 0;
        for (const v1::Replica& r : f->layout.extents(0).replicas()) {
          if (r.leaving()) return false;
          if (!absl::StartsWith(r.node_id(), "gone")) ++live;
        }
        return f->layout.extents(0).replicas_size() == 8 && live == 4;
      },
      kWait))
      << keepers_["ka"]->LogTail();
  log = keepers_["ka"]->Log();
  EXPECT_THAT(log, ::testing::HasSubstr("9 replicas (max 8)"));
  EXPECT_THAT(log, ::testing::HasSubstr("replica swapped in one step"));
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("new replica added")));
  // One copy per swap: none failed, none repeated.
  int copies = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, "move of /f0 slot 0") &&
        absl::StrContains(line, ": copied from")) {
      ++copies;
    }
  }
  EXPECT_EQ(copies, 2) << keepers_["ka"]->LogTail();
  // The swapped-in replicas hold the bytes.
  auto f = cluster_->store()->GetFile("/f0");
  ASSERT_THAT(f, IsOk());
  for (const v1::Replica& r : f->layout.extents(0).replicas()) {
    if (absl::StartsWith(r.node_id(), "gone")) continue;
    EXPECT_EQ(Slurp(cluster_->agent(Index(r.node_id())).export_dir + "/" +
                    r.object()),
              files_["/f0"])
        << r.node_id();
  }
}

// A node whose record was removed (agent gone, `node rm`): its replicas
// are replaced in one swap (a layout still naming it would be refused).
TEST_F(KeeperTest, ReplicasOnANodeWithoutARecordAreReplaced) {
  StartReader();
  ASSERT_TRUE(WaitScans(1, kWait));
  ASSERT_THAT(cluster_->agent(1).process->Kill(), IsOk());
  ASSERT_THAT(cluster_->store()->SetNodeState("n1", v1::DISABLED), IsOk());
  ASSERT_THAT(cluster_->store()->RemoveNode("n1"), IsOk());
  ASSERT_NE(StartKeeper("ka", 3600, {"--rebalance_tolerance=0"}), nullptr);
  ASSERT_TRUE(Poll([&] { return AllSlotsHealthy({"n1"}); }, kWait))
      << keepers_["ka"]->LogTail();
  const std::string log = keepers_["ka"]->Log();
  EXPECT_THAT(log, ::testing::HasSubstr("n1 has no node record"));
  ASSERT_TRUE(WaitScans(2, kWait));
  StopReader();
  EXPECT_EQ(read_errors_.load(), 0);
  ExpectFsckClean();
}

// A move off n1 stopped between its steps (column 0: n1 leaving), then
// n1's record removed while column 1 still has a replica there: the drop
// of column 0's leaving replica and the move of column 1 are one
// compare-and-swap (either alone would leave a layout naming n1).
TEST_F(KeeperTest, ALeavingReplicaOnANodeWithoutARecordIsDroppedWithItsFile) {
  for (const auto& [path, data] : files_) {
    ASSERT_THAT(Run({"file", "rm", path}), IsOk());
  }
  files_.clear();
  // Every column on every node n0..n3; n4 the only target.
  std::mt19937 rng(5);
  std::string data(2 << 20, '\0');
  for (char& ch : data) ch = static_cast<char>(rng());
  const std::string local = cluster_->dir() + "/wide";
  std::ofstream(local, std::ios::binary) << data;
  ASSERT_THAT(Run({"file", "put", local, "/wide", "--replicas=4",
                   "--stripe-unit=1M", "--width=2"}),
              IsOk());
  files_["/wide"] = data;
  auto added = cluster_->AddAgent("n4", true, v1::ACTIVE);
  ASSERT_THAT(added, IsOk());
  ASSERT_TRUE(cluster_->WaitLive(
      "n4", [](bool found, const ns::LiveEntry&) { return found; }, kWait));
  // An in-process keeper that stops acting right after its first add.
  std::atomic<bool> acting{true};
  keeper::KeeperOptions o;
  o.id = "k";
  o.parallel_copies = 1;
  o.orphan_scan_interval = absl::ZeroDuration();
  o.rebalance.tolerance = 0;
  o.after_add = [&](const keeper::Move&) { acting.store(false); };
  keeper::Keeper k(cluster_->store(), cluster_->etcd_client(), o);
  ASSERT_THAT(Run({"node", "drain", "n1"}), IsOk());
  auto r = k.RunRound([&] { return acting.load(); });
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->stopped);
  auto f = cluster_->store()->GetFile("/wide");
  ASSERT_THAT(f, IsOk());
  ASSERT_EQ(f->layout.striped().targets_size(), 2);
  int leaving = 0, n1 = 0;
  for (const auto& t : f->layout.striped().targets()) {
    for (const v1::Replica& rep : t.replicas()) {
      if (rep.node_id() == "n1") ++n1;
      if (rep.leaving()) ++leaving;
    }
  }
  ASSERT_EQ(leaving, 1);
  ASSERT_EQ(n1, 2);
  // n1 goes for good, record and all.
  ASSERT_THAT(cluster_->agent(1).process->Kill(), IsOk());
  ASSERT_THAT(cluster_->store()->RemoveNode("n1"), IsOk());
  ASSERT_NE(StartKeeper("ka", 3600, {"--rebalance_tolerance=0"}), nullptr);
  ASSERT_TRUE(Poll(
      [&] {
        auto g = cluster_->store()->GetFile("/wide");
        if (!g.ok()) return false;
        for (const auto& t : g->layout.striped().targets()) {
          if (t.replicas_size() != 4) return false;
          for (const v1::Replica& rep : t.replicas()) {
            if (rep.node_id() == "n1" || rep.leaving()) return false;
          }
        }
        return true;
      },
      kWait))
      << keepers_["ka"]->LogTail();
  EXPECT_THAT(keepers_["ka"]->Log(),
              ::testing::HasSubstr("moves of /wide (2 slots) off n1: n1 has no "
                                   "node record: one swap of every slot"));
  ExpectFsckClean();
}

// A move whose new replica is removed between its two steps (an admin
// change): the old replica's leaving mark is cleared, so no later round
// drops it and leaves the slot a replica short.
TEST_F(KeeperTest, AMoveWhoseNewReplicaIsGoneKeepsTheOldOne) {
  keeper::KeeperOptions o;
  o.id = "k";
  o.parallel_copies = 1;
  o.orphan_scan_interval = absl::ZeroDuration();
  o.rebalance.tolerance = 0;
  std::atomic<bool> removed{false};
  keeper::Move first;
  o.after_add = [&](const keeper::Move& m) {
    if (removed.exchange(true)) return;
    first = m;
    // Someone removes the new replica from the layout.
    for (int attempt = 0; attempt < 10; ++attempt) {
      auto f = cluster_->store()->GetFile(m.path);
      ASSERT_THAT(f, IsOk());
      v1::FileLayout l = f->layout;
      auto* reps =
          m.striped
              ? l.mutable_striped()->mutable_targets(m.slot)->mutable_replicas()
              : l.mutable_extents(m.slot)->mutable_replicas();
      for (int i = 0; i < reps->size(); ++i) {
        if ((*reps)[i].node_id() == m.target_node) {
          reps->erase(reps->begin() + i);
          break;
        }
      }
      if (cluster_->store()->ReplaceLayout(m.path, l, f->mod_revision).ok()) {
        return;
      }
    }
    ADD_FAILURE() << "could not remove the new replica";
  };
  keeper::Keeper k(cluster_->store(), cluster_->etcd_client(), o);
  ASSERT_THAT(Run({"node", "drain", "n1"}), IsOk());
  auto r = k.RunRound([] { return true; });
  ASSERT_THAT(r, IsOk());
  ASSERT_TRUE(removed.load());
  EXPECT_GE(r->moves_abandoned, 1);
  // The old replica is in the slot, no longer leaving; the new one gone.
  auto f = cluster_->store()->GetFile(first.path);
  ASSERT_THAT(f, IsOk());
  const auto& reps = first.striped
                         ? f->layout.striped().targets(first.slot).replicas()
                         : f->layout.extents(first.slot).replicas();
  ASSERT_EQ(reps.size(), 2);
  for (const v1::Replica& rep : reps) {
    EXPECT_FALSE(rep.leaving()) << rep.node_id();
    EXPECT_NE(rep.node_id(), first.target_node);
  }
  EXPECT_TRUE(std::any_of(reps.begin(), reps.end(), [&](const v1::Replica& x) {
    return x.node_id() == "n1";
  }));
  // Later rounds move it like any other: every slot ends with 2 replicas.
  ASSERT_TRUE(Poll(
      [&] {
        auto round = k.RunRound([] { return true; });
        return round.ok() && AllSlotsHealthy({"n1"});
      },
      kWait));
  ExpectFsckClean();
}

TEST_F(KeeperTest, AKeeperWithoutTheLeaderLeaseCannotWrite) {
  // An in-process keeper that believes it is active (may_act says yes)
  // while the leader key is under another lease: a keeper whose lease
  // expired before its keep-alive noticed. etcd refuses each of its writes
  // (the lease compare is in the same transaction), so it changes nothing.
  etcd::EtcdClient* etcd = cluster_->etcd_client();
  const ns::Keys& keys = cluster_->store()->keys();
  // No keep-alive: TTLs far beyond the test's length (under load it may
  // take minutes), both revoked when it ends, passed or failed.
  auto theirs = etcd->LeaseGrant(absl::Hours(1));
  auto mine = etcd->LeaseGrant(absl::Hours(1));
  ASSERT_THAT(theirs, IsOk());
  ASSERT_THAT(mine, IsOk());
  struct Revoke {
    etcd::EtcdClient* etcd;
    std::vector<int64_t> leases;
    ~Revoke() {
      for (int64_t l : leases) (void)etcd->LeaseRevoke(l);
    }
  } revoke{etcd, {*theirs, *mine}};
  ASSERT_THAT(etcd->Put(keys.KeeperLeader(), "other", *theirs), IsOk());
  keeper::KeeperOptions o;
  o.id = "stale";
  o.orphan_scan_interval = absl::ZeroDuration();
  o.rebalance.tolerance = 0;
  o.leader_lease = [&] { return *mine; };
  keeper::Keeper stale(cluster_->store(), etcd, o);
  ASSERT_THAT(Run({"node", "drain", "n1"}), IsOk());
  std::map<std::string, int64_t> revisions;
  for (const auto& [path, data] : files_) {
    auto f = cluster_->store()->GetFile(path);
    ASSERT_THAT(f, IsOk());
    revisions[path] = f->mod_revision;
  }
  auto trash = [&] {
    auto r = etcd->Range(keys.KeeperTrashPrefix(), {.prefix = true});
    EXPECT_THAT(r, IsOk());
    std::set<std::string> out;
    if (r.ok()) {
      for (const auto& kv : r->kvs) out.insert(kv.key);
    }
    return out;
  };
  // A round: the copy runs (agents are not etcd), its layout change is
  // refused and the round stops.
  auto r = stale.RunRound([] { return true; });
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->stopped);
  EXPECT_GT(r->moves_planned, 0);
  EXPECT_EQ(r->moves_done, 0);
  for (const auto& [path, rev] : revisions) {
    auto f = cluster_->store()->GetFile(path);
    ASSERT_THAT(f, IsOk());
    EXPECT_EQ(f->mod_revision, rev) << path << " changed by a stale keeper";
  }
  EXPECT_THAT(trash(), ::testing::IsEmpty());
  // A trash record the active keeper would drop (its object is in a
  // layout, on a node that is not drained): the stale keeper cannot.
  auto f0 = cluster_->store()->GetFile("/f0");
  ASSERT_THAT(f0, IsOk());
  const auto& reps = f0->layout.extents(0).replicas();
  const v1::Replica& ref = reps[0].node_id() != "n1" ? reps[0] : reps[1];
  ASSERT_NE(ref.node_id(), "n1");
  const std::string record = keys.KeeperTrash(ref.node_id(), ref.object());
  v1::TrashRecord t;
  t.set_path("/f0");
  t.set_dropped_revision(1);
  ASSERT_THAT(etcd->Put(record, t.SerializeAsString()), IsOk());
  r = stale.RunRound([] { return true; });
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->stopped);
  EXPECT_THAT(trash(), ::testing::ElementsAre(record));

  // Once the leader key is under its lease, the same keeper does the work.
  ASSERT_THAT(etcd->LeaseRevoke(*theirs), IsOk());  // the key goes with it
  ASSERT_THAT(etcd->Put(keys.KeeperLeader(), "stale", *mine), IsOk());
  ASSERT_TRUE(Poll(
      [&] {
        auto round = stale.RunRound([] { return true; });
        return round.ok() && !round->stopped && AllSlotsHealthy({"n1"});
      },
      kWait));
  EXPECT_EQ(trash().count(record), 0u);  // referenced: dropped
  ExpectFsckClean();
}

}  // namespace
}  // namespace rangefs
