// rangefs-mountd against a real etcd with real bind mounts standing in for
// NFS: nodes added (mounted), drained (stay), disabled and removed
// (unmounted), and hung mounts (stat_hang_fuse, a FUSE layer whose getattr
// stops answering on SIGUSR1): a hung stat and a hung mount(2) are
// reported hung, with since when, while the loop goes on mounting a node
// added afterwards, and recover when the layer answers again.
//
// The test runs in a private mount namespace (base/testing:private_mounts_main)
// so its mounts vanish with the process even if it is killed.
// TearDown is bounded even after a failure: it kills the FUSE layer (which
// fails every call stuck on it), gives the manager's workers a bounded
// grace, and lazily unmounts everything the test made.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "client_lib/mountd/mount_manager.h"
#include "client_lib/mountd/mount_status.h"
#include "client_lib/mountd/mounter.h"
#include "client_lib/mountd/mountinfo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

using ::rangefs::IsOk;
using ::rangefs::mountd::MountHealth;
using ::rangefs::testing::EtcdCluster;
using ::rangefs::testing::MakeTempDir;
using ::rangefs::testing::RunfilePath;
using ::rangefs::testing::Subprocess;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls `cond` every 10 ms until it holds or `timeout` passes. The default
// bound is generous: it holds on a loaded 2-core machine (each wait here is
// for something that takes well under a second idle), and a broken feature
// still fails, only later.
constexpr absl::Duration kWait = absl::Seconds(60);
bool Eventually(const std::function<bool()>& cond,
                absl::Duration timeout = kWait) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return cond();
}

const mountd::MountInfo* Mounted(const std::string& target) {
  static thread_local std::vector<mountd::MountInfo> mounts;
  auto mi = mountd::ReadMountInfo();
  if (!mi.ok()) return nullptr;
  mounts = *std::move(mi);
  return mountd::FindMount(mounts, target);
}

class MountdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir("mountd-");
    ASSERT_THAT(dir.status(), IsOk());
    dir_ = *dir;
    root_ = dir_ + "/mnt";
    auto etcd = EtcdCluster::Start({.members = 1});
    ASSERT_THAT(etcd.status(), IsOk());
    etcd_ = *std::move(etcd);
    auto client = etcd::EtcdClient::Open({.endpoints = etcd_->endpoints()});
    ASSERT_THAT(client.status(), IsOk());
    client_ = *std::move(client);
    kv_ = ns::NewEtcdKv(client_.get());
    store_ = ns::NewKvStore(kv_.get(), {.cluster = "mountd"});
    mounter_ = mountd::NewBindMounter();
  }

  void TearDown() override {
    if (fuse_ != nullptr) (void)fuse_->Kill();  // fails the calls stuck on it
    if (manager_ != nullptr && manager_->Shutdown(absl::Seconds(30)) > 0) {
      // Stuck on something other than the FUSE layer: never join it here.
      ADD_FAILURE() << manager_->running_workers()
                    << " mountd worker(s) still stuck after the FUSE layer "
                       "died; leaking the manager";
      (void)manager_.release();
    }
    manager_.reset();
    // Lazily unmount everything this test mounted, even after a failure.
    auto mi = mountd::ReadMountInfo();
    if (mi.ok()) {
      for (auto it = mi->rbegin(); it != mi->rend(); ++it) {
        if (!dir_.empty() && absl::StartsWith(it->mount_point, dir_ + "/")) {
          umount2(it->mount_point.c_str(), MNT_DETACH);
        }
      }
    }
    fuse_.reset();
    store_.reset();
    kv_.reset();
    client_.reset();
    etcd_.reset();
    if (!dir_.empty()) testing::RemoveTree(dir_);
  }

  // A node whose export is a fresh local directory with one file.
  std::string MakeExport(const std::string& id) {
    std::string path = absl::StrCat(dir_, "/exports/", id);
    mkdir((dir_ + "/exports").c_str(), 0755);
    mkdir(path.c_str(), 0755);
    std::ofstream(path + "/obj") << "data of " << id;
    return path;
  }

  absl::Status AddNode(const std::string& id, const std::string& export_path) {
    v1::NodeRecord n;
    n.set_id(id);
    n.add_addresses("127.0.0.1:7070");
    n.set_export_path(export_path);
    n.set_admin_state(v1::ACTIVE);
    return store_->AddNode(n);
  }

  // A stat of a healthy mount is late after kStatTimeout: long enough that
  // a probe of a local bind mount is never late on a loaded machine (a
  // late probe is correctly reported hung, which would fail the checks of
  // the healthy mounts), short enough to see a hung one quickly.
  static constexpr absl::Duration kStatTimeout = absl::Seconds(1);

  // Fast passes; a stat is late after kStatTimeout, a mount after
  // `op_timeout`.
  void StartManager(mountd::MountManagerOptions o = {},
                    absl::Duration op_timeout = absl::Seconds(5)) {
    o.mount_root = root_;
    o.stat_timeout = kStatTimeout;
    o.reconcile_interval = absl::Milliseconds(200);
    o.op_timeout = op_timeout;
    auto m = mountd::MountManager::Start(store_.get(), mounter_.get(), o);
    ASSERT_THAT(m.status(), IsOk());
    manager_ = *std::move(m);
  }

  // The health of `id` in the status file ("+hung" if it is hung), or
  // "absent".
  std::string FileState(const std::string& id) {
    auto f = mountd::ReadMountStatus(root_ + "/.rangefs-mounts");
    if (!f.ok()) return "no file";
    const mountd::MountStatusEntry* e = f->Find(id);
    if (e == nullptr) return "absent";
    return absl::StrCat(mountd::MountHealthName(e->health),
                        e->hung() ? "+hung" : "");
  }

  std::string dir_, root_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<ns::KvBackend> kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::unique_ptr<mountd::Mounter> mounter_;
  std::unique_ptr<Subprocess> fuse_;
  std::unique_ptr<mountd::MountManager> manager_;
};

TEST_F(MountdTest, FollowsNodeRecords) {
  std::string e1 = MakeExport("n1"), e2 = MakeExport("n2");
  // Readahead goes to <sysfs>/class/bdi/<dev of the export fs>/.
  struct stat st;
  ASSERT_EQ(stat(e1.c_str(), &st), 0);
  std::string bdi = absl::StrCat(dir_, "/sys/class/bdi/", major(st.st_dev), ":",
                                 minor(st.st_dev));
  ASSERT_EQ(
      system(
          ("mkdir -p " + bdi + " && touch " + bdi + "/read_ahead_kb").c_str()),
      0);
  ASSERT_THAT(AddNode("n1", e1), IsOk());
  StartManager({.readahead_kb = 512, .sysfs_root = dir_ + "/sys"});
  ASSERT_THAT(AddNode("n2", e2), IsOk());  // seen through the watch

  const std::string t1 = root_ + "/n1", t2 = root_ + "/n2";
  ASSERT_TRUE(Eventually([&] {
    return Mounted(t1) && Mounted(t2) && FileState("n1") == "healthy" &&
           FileState("n2") == "healthy";
  })) << ReadFile(root_ + "/.rangefs-mounts");
  EXPECT_TRUE(Mounted(t1)->read_only());
  EXPECT_EQ(ReadFile(t2 + "/obj"), "data of n2");
  // Read-only: writing through the mount fails.
  int fd = open((t1 + "/new").c_str(), O_CREAT | O_WRONLY, 0644);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EROFS);
  if (fd >= 0) close(fd);
  EXPECT_EQ(ReadFile(bdi + "/read_ahead_kb"), "512\n");
  EXPECT_EQ(manager_->Snapshot().Find("n1")->readahead_kb, "512");

  // Draining: stays mounted over several passes.
  ASSERT_THAT(store_->SetNodeState("n2", v1::DRAINING), IsOk());
  int64_t p = manager_->passes();
  ASSERT_TRUE(Eventually([&] { return manager_->passes() >= p + 5; }));
  EXPECT_NE(Mounted(t2), nullptr);
  EXPECT_EQ(FileState("n2"), "healthy");

  // Disabled: unmounted. Removed: unmounted.
  ASSERT_THAT(store_->SetNodeState("n1", v1::DISABLED), IsOk());
  ASSERT_TRUE(Eventually(
      [&] { return Mounted(t1) == nullptr && FileState("n1") == "absent"; }));
  ASSERT_THAT(store_->RemoveNode("n2"), IsOk());
  ASSERT_TRUE(Eventually(
      [&] { return Mounted(t2) == nullptr && FileState("n2") == "absent"; }));
  // The export data is untouched.
  EXPECT_EQ(ReadFile(e1 + "/obj"), "data of n1");

  // Re-enabled: mounted again.
  ASSERT_THAT(store_->SetNodeState("n1", v1::ACTIVE), IsOk());
  ASSERT_TRUE(Eventually([&] { return Mounted(t1) != nullptr; }));
}

TEST_F(MountdTest, HungMountIsUnhealthyAndDoesNotStallTheLoop) {
  std::string fuse_dir = dir_ + "/fuse";
  ASSERT_EQ(mkdir(fuse_dir.c_str(), 0755), 0);
  auto fuse = Subprocess::Start(
      {.argv = {RunfilePath("tests/integration/stat_hang_fuse"), fuse_dir},
       .log_path = dir_ + "/fuse.log"});
  ASSERT_THAT(fuse.status(), IsOk());
  fuse_ = *std::move(fuse);
  ASSERT_THAT(fuse_->WaitForLog("ready", kWait), IsOk());
  ASSERT_TRUE(Eventually([&] { return Mounted(fuse_dir) != nullptr; }));

  ASSERT_THAT(AddNode("hung", fuse_dir), IsOk());
  ASSERT_THAT(AddNode("ok1", MakeExport("ok1")), IsOk());
  // Two mounts finishing together: the race that once stalled the loop.
  // op_timeout is short so that the hung mount(2) below is seen soon; a
  // healthy mount slower than that under load is reported failed+hung only
  // until it returns (then healthy), which the waits below allow for.
  StartManager({}, /*op_timeout=*/absl::Seconds(1));
  const std::string th = root_ + "/hung";
  ASSERT_TRUE(Eventually([&] {
    return FileState("hung") == "healthy" && FileState("ok1") == "healthy";
  })) << ReadFile(root_ + "/.rangefs-mounts");
  EXPECT_EQ(ReadFile(th + "/hello"), "hello from stat_hang_fuse\n");

  // From now on every stat of the FUSE layer hangs: reported hung.
  ASSERT_THAT(fuse_->Signal(SIGUSR1), IsOk());
  ASSERT_TRUE(Eventually([&] { return FileState("hung") == "unhealthy+hung"; }))
      << ReadFile(root_ + "/.rangefs-mounts");
  {
    auto f = mountd::ReadMountStatus(root_ + "/.rangefs-mounts");
    ASSERT_THAT(f.status(), IsOk());
    const mountd::MountStatusEntry* e = f->Find("hung");
    ASSERT_NE(e, nullptr);
    EXPECT_THAT(e->error, HasSubstr("stat of " + th + " did not return"));
    // Hung since the stat started, at least stat_timeout before the pass.
    EXPECT_LE(e->hung_since_unix_ms,
              f->updated_unix_ms - absl::ToInt64Milliseconds(kStatTimeout));
    EXPECT_FALSE(f->Find("ok1")->hung());
  }
  EXPECT_EQ(manager_->Snapshot().Find("ok1")->health, MountHealth::kHealthy);

  // The loop keeps going: a node added now is mounted while the stat is
  // still hung (a loop that waits for a hung call never mounts it: the
  // stat hangs until SIGUSR2 below), and one whose mount(2) hangs (its
  // source path is looked up on the hung layer) is reported hung after
  // op_timeout. The bound on "late" is far above any load (it takes tens
  // of milliseconds idle) and far below "never".
  const absl::Time added = absl::Now();
  ASSERT_THAT(AddNode("late", MakeExport("late")), IsOk());
  ASSERT_THAT(AddNode("stuck", fuse_dir + "/dir"), IsOk());
  ASSERT_TRUE(Eventually(
      [&] {
        return Mounted(root_ + "/late") != nullptr &&
               FileState("late") == "healthy";
      },
      absl::Seconds(30)))
      << "after " << absl::Now() - added << ": "
      << ReadFile(root_ + "/.rangefs-mounts");
  RecordProperty("late_mounted_ms",
                 absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - added)));
  ASSERT_TRUE(Eventually([&] { return FileState("stuck") == "failed+hung"; }))
      << ReadFile(root_ + "/.rangefs-mounts");
  EXPECT_THAT(manager_->Snapshot().Find("stuck")->error,
              HasSubstr("mount of " + root_ + "/stuck did not return"));
  EXPECT_EQ(FileState("hung"), "unhealthy+hung");
  // One probe worker stuck on "hung", one mount worker on "stuck", and
  // nothing else stuck. The probes of "ok1" and "late" come and go (every
  // reconcile_interval; on a loaded machine one may be running at any
  // sample), so wait for a moment without them: only extra stuck workers
  // (e.g. a new probe of a hung target each pass) keep the count above 2.
  ASSERT_TRUE(Eventually([&] { return manager_->running_workers() == 2u; }))
      << manager_->running_workers() << " workers running";

  // The layer answers again: both calls return, neither mount is hung.
  ASSERT_THAT(fuse_->Signal(SIGUSR2), IsOk());
  ASSERT_TRUE(Eventually([&] {
    return FileState("hung") == "healthy" && FileState("stuck") == "healthy" &&
           manager_->running_workers() == 0;
  })) << ReadFile(root_ + "/.rangefs-mounts");
  EXPECT_NE(Mounted(root_ + "/stuck"), nullptr);
  ASSERT_THAT(store_->SetNodeState("stuck", v1::DISABLED), IsOk());
  ASSERT_TRUE(Eventually([&] { return FileState("stuck") == "absent"; }))
      << ReadFile(root_ + "/.rangefs-mounts");

  // Hung again; disabling the node lazily unmounts it despite the hung stat.
  ASSERT_THAT(fuse_->Signal(SIGUSR1), IsOk());
  ASSERT_TRUE(Eventually([&] { return FileState("hung") == "unhealthy+hung"; }))
      << ReadFile(root_ + "/.rangefs-mounts");
  ASSERT_THAT(store_->SetNodeState("hung", v1::DISABLED), IsOk());
  ASSERT_TRUE(Eventually([&] {
    return Mounted(th) == nullptr && FileState("hung") == "absent";
  })) << ReadFile(root_ + "/.rangefs-mounts");

  // Shutdown is bounded: the hung worker is reported, not waited for. A
  // probe of "ok1" or "late" may still be running when it gives up (more
  // likely under load): it is counted then, and ends on its own; the hung
  // one stays.
  const absl::Time shutdown = absl::Now();
  const size_t left = manager_->Shutdown(absl::Seconds(1));
  const absl::Duration took = absl::Now() - shutdown;
  EXPECT_GE(left, 1u);
  EXPECT_LT(took, absl::Seconds(30)) << "Shutdown(1s) took " << took;
  ASSERT_TRUE(Eventually([&] { return manager_->running_workers() == 1u; }))
      << manager_->running_workers() << " workers running after Shutdown";
  ASSERT_THAT(fuse_->Kill(), IsOk());  // aborts the FUSE connection
  manager_.reset();                    // joins the released worker
}

TEST_F(MountdTest, DryRunPrintsNfsCommandsAndTouchesNothing) {
  ASSERT_THAT(AddNode("sn-01", "/srv/rangefs/data"), IsOk());
  std::string log = dir_ + "/dry.log";
  auto p = Subprocess::Start(
      {.argv = {RunfilePath("client_lib/mountd/rangefs-mountd"),
                "--etcd_endpoints=" + etcd_->endpoints(), "--cluster=mountd",
                "--mount_root=" + root_, "--dry-run"},
       .log_path = log});
  ASSERT_THAT(p.status(), IsOk());
  auto st = (*p)->Wait(kWait);
  ASSERT_THAT(st.status(), IsOk());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << ReadFile(log);
  std::string out = ReadFile(log);
  EXPECT_THAT(
      out, HasSubstr("/bin/mount -t nfs -o ro,proto=rdma,port=20049,"
                     "vers=4.2,rsize=1048576,hard,timeo=600,retrans=2,"
                     "noatime,nocto,actimeo=600 127.0.0.1:/srv/rangefs/data " +
                     root_ + "/sn-01"));
  EXPECT_THAT(out, HasSubstr("read_ahead_kb"));
  EXPECT_THAT(out, HasSubstr("dry run, nothing changed"));
  struct stat sb;
  EXPECT_NE(stat(root_.c_str(), &sb), 0);  // not even mount_root was made
}

}  // namespace
}  // namespace rangefs
