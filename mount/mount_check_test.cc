#include "mount/mount_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace mount {
namespace {

using ::testing::HasSubstr;

mountd::MountInfo Fuse(const std::string& mp, int minor) {
  mountd::MountInfo m;
  m.major = 0;
  m.minor = minor;
  m.mount_point = mp;
  m.fs_type = "fuse.rangefs";
  m.source = "rangefs:prod:/";
  return m;
}

MountStatus Status(const std::string& mp, int64_t pid, absl::Time now) {
  MountStatus s;
  s.mountpoint = mp;
  s.pid = pid;
  s.cluster = "prod";
  s.dir = "/";
  s.index_revision = 77;
  s.watch_connected = true;
  s.files = 5;
  s.updated_unix_ms = absl::ToUnixMillis(now - absl::Seconds(1));
  s.interval_ms = 2000;
  return s;
}

class MountCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mount_check_testXXXXXX";
    sys_ = mkdtemp(tmpl);
    for (int minor : {50, 51, 52, 53}) {
      const std::string d = absl::StrCat(sys_, "/class/bdi/0:", minor);
      ASSERT_EQ(system(absl::StrCat("mkdir -p ", d).c_str()), 0);
      std::ofstream(d + "/read_ahead_kb")
          << (minor == 53 ? "128\n" : "16384\n");
    }
    o_.cluster = "prod";
    o_.now = absl::Now();
    o_.sysfs_root = sys_;
    o_.pid_alive = [](pid_t pid) { return pid != 666; };
  }
  void TearDown() override {
    ASSERT_EQ(system(absl::StrCat("rm -rf ", sys_).c_str()), 0);
  }
  std::string sys_;
  MountCheckOptions o_;
};

TEST_F(MountCheckTest, OneFindingPerMountAndPerOrphanStatus) {
  std::vector<mountd::MountInfo> mounts = {
      Fuse("/mnt/ok", 50), Fuse("/mnt/dead", 51), Fuse("/mnt/nostatus", 52),
      Fuse("/mnt/slowra", 53)};
  mountd::MountInfo nfs;
  nfs.mount_point = "/mnt/rangefs/n1";
  nfs.fs_type = "nfs4";
  mounts.push_back(nfs);
  MountStatus stuck = Status("/mnt/stuck", 10, o_.now);
  stuck.updated_unix_ms = absl::ToUnixMillis(o_.now - absl::Minutes(2));
  mounts.push_back(Fuse("/mnt/stuck", 50));
  MountStatus other = Status("/mnt/other", 11, o_.now);
  other.cluster = "test";
  other.watch_connected = false;
  mounts.push_back(Fuse("/mnt/other", 50));
  std::vector<MountStatus> statuses = {Status("/mnt/ok", 1, o_.now),
                                       Status("/mnt/dead", 666, o_.now),
                                       Status("/mnt/slowra", 2, o_.now),
                                       stuck,
                                       other,
                                       Status("/mnt/gone", 3, o_.now)};
  auto f = CheckRangefsMounts(mounts, statuses, o_);
  ASSERT_EQ(f.size(), 7u);
  EXPECT_EQ(f[0].check, "fuse /mnt/ok");
  EXPECT_EQ(f[0].status, "OK");
  EXPECT_THAT(f[0].finding, HasSubstr("prod:/, 5 files (revision 77), pid 1"));
  EXPECT_THAT(f[0].finding, HasSubstr("readahead 16384 KiB"));
  EXPECT_EQ(f[1].status, "FAIL");
  EXPECT_THAT(f[1].finding, HasSubstr("pid 666) is gone"));
  EXPECT_THAT(f[1].fix, HasSubstr("fusermount3 -u -z /mnt/dead"));
  EXPECT_EQ(f[2].status, "WARN");
  EXPECT_THAT(f[2].finding, HasSubstr("no status file"));
  EXPECT_EQ(f[3].status, "WARN");
  EXPECT_THAT(f[3].finding, HasSubstr("readahead 128 KiB"));
  EXPECT_EQ(f[4].status, "FAIL");
  EXPECT_THAT(f[4].finding, HasSubstr("not updated for 2m"));
  EXPECT_EQ(f[5].status, "WARN");
  EXPECT_THAT(f[5].finding, HasSubstr("watch disconnected"));
  EXPECT_THAT(f[5].finding, HasSubstr("cluster test, not prod"));
  EXPECT_EQ(f[6].check, "fuse /mnt/gone");
  EXPECT_EQ(f[6].status, "WARN");
  EXPECT_THAT(f[6].finding, HasSubstr("nothing is mounted there"));
}

TEST_F(MountCheckTest, PinnedMountsHaveNoWatch) {
  MountStatus s = Status("/mnt/p", 1, o_.now);
  s.revision = 42;
  s.watch_connected = false;
  auto f = CheckRangefsMounts({Fuse("/mnt/p", 50)}, {s}, o_);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, "OK");
  EXPECT_THAT(f[0].finding, HasSubstr("at revision 42"));
  EXPECT_TRUE(CheckRangefsMounts({}, {}, o_).empty());
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
