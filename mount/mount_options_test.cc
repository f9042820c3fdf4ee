#include "mount/mount_options.h"

#include <stdio.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace mount {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<MountOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "rangefs-mount");
  return ParseMountOptions(args);
}

TEST(MountOptionsTest, Flags) {
  auto o = Parse({"--etcd=h:1,h:2", "--cluster=prod", "--dir=/crawl",
                  "--revision=42", "--data_path=agent", "-f", "/mnt/x"});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->etcd_endpoints, "h:1,h:2");
  EXPECT_EQ(o->cluster, "prod");
  EXPECT_EQ(o->dir, "/crawl");
  EXPECT_EQ(o->revision, 42);
  EXPECT_EQ(o->data_path, DataPath::kAgent);
  EXPECT_TRUE(o->foreground);
  EXPECT_EQ(o->mountpoint, "/mnt/x");
  // Large files direct, small ones through the page cache.
  EXPECT_EQ(o->direct_io, DirectIoMode::kAuto);
  EXPECT_TRUE(o->splice);  // replies spliced from the object files
  // A pinned snapshot caches metadata for long.
  EXPECT_EQ(o->attr_timeout, 3600);
  EXPECT_EQ(o->entry_timeout, 3600);
}

TEST(MountOptionsTest, FstabStyle) {
  // mount.rangefs: SPEC DIR -o options, with mount(8)'s noise.
  auto o = Parse(
      {"-o",
       "rw,defaults,_netdev,nofail,x-systemd.automount,cluster=c,"
       "dir=/d,allow_other,attr_timeout=2.5,readahead_kb=4096,"
       "threads=8,max_idle_threads=2,nosuid,comment=x,o_direct,io_uring=false,"
       "direct_io",
       "10.0.0.1:2379", "/mnt/y"});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->etcd_endpoints, "10.0.0.1:2379");
  EXPECT_EQ(o->cluster, "c");
  EXPECT_EQ(o->dir, "/d");
  EXPECT_EQ(o->attr_timeout, 2.5);
  EXPECT_EQ(o->entry_timeout, 1.0);
  EXPECT_EQ(o->readahead_kb, 4096);
  EXPECT_EQ(o->max_threads, 8);
  EXPECT_EQ(o->max_idle_threads, 2);
  EXPECT_TRUE(o->o_direct);
  EXPECT_EQ(o->direct_io, DirectIoMode::kAlways);  // bare: as =true
  EXPECT_FALSE(o->io_uring);
  EXPECT_FALSE(o->foreground);
  EXPECT_THAT(o->fuse_options, ElementsAre("allow_other", "nosuid"));
  o = Parse({"-o", "splice=false", "e:1", "/m"});
  ASSERT_THAT(o, IsOk());
  EXPECT_FALSE(o->splice);
  // -oLIST and the placeholder SPEC.
  o = Parse({"-oetcd=e:1", "rangefs", "/m"});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->etcd_endpoints, "e:1");
}

TEST(MountOptionsTest, ConfigFileSuppliesSharedKeysFlagsWin) {
  char path[] = "/tmp/mount_options_testXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text =
      "etcd_endpoints = c:1\ncluster = fromfile\nmount_root = /mr\n"
      "etcd_timeout = 3s\nagent_ca = /ca.pem\nnode_id = ignored\n";
  ASSERT_EQ(write(fd, text.data(), text.size()),
            static_cast<ssize_t>(text.size()));
  close(fd);
  auto o = Parse({std::string("--config=") + path, "--cluster=flag", "/m"});
  unlink(path);
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->etcd_endpoints, "c:1");
  EXPECT_EQ(o->cluster, "flag");
  EXPECT_EQ(o->mount_root, "/mr");
  EXPECT_EQ(o->etcd_timeout, absl::Seconds(3));
  EXPECT_EQ(o->agent_ca, "/ca.pem");
  EXPECT_THAT(Parse({"--config=/nonexistent/rangefs.conf", "/m"}),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(MountOptionsTest, EnvironmentAndRangefsConfigAsEveryToolReadsThem) {
  for (const char* v : {"RANGEFS_CONFIG", "RANGEFS_ETCD", "RANGEFS_CLUSTER"})
    unsetenv(v);
  // Nothing given: the built-in defaults, as rangefs-admin's.
  auto o = Parse({"/m"});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->etcd_endpoints, "127.0.0.1:2379");
  EXPECT_EQ(o->cluster, "default");
  char path[] = "/tmp/mount_options_envXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text =
      "etcd_endpoints = c:1\ncluster = fromfile\nmount_root = /mr\n";
  ASSERT_EQ(write(fd, text.data(), text.size()),
            static_cast<ssize_t>(text.size()));
  close(fd);
  setenv("RANGEFS_CONFIG", path, 1);
  o = Parse({"/m"});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->etcd_endpoints, "c:1");
  EXPECT_EQ(o->cluster, "fromfile");
  EXPECT_EQ(o->mount_root, "/mr");
  setenv("RANGEFS_CLUSTER", "fromenv", 1);
  setenv("RANGEFS_ETCD", "e:9", 1);
  o = Parse({"/m"});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->etcd_endpoints, "e:9");
  EXPECT_EQ(o->cluster, "fromenv");
  o = Parse({"--cluster=flag", "/m"});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->cluster, "flag");
  for (const char* v : {"RANGEFS_CONFIG", "RANGEFS_ETCD", "RANGEFS_CLUSTER"})
    unsetenv(v);
  unlink(path);
}

TEST(MountOptionsTest, Errors) {
  EXPECT_THAT(
      Parse({"--etcd=e:1"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("MOUNTPOINT")));
  EXPECT_THAT(
      Parse({"--etcd=e:1", "--cluster=a/b", "/m"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cluster name")));
  EXPECT_THAT(Parse({"--etcd=e:1", "--bogus=1", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bogus")));
  EXPECT_THAT(Parse({"--etcd=e:1", "--dir=rel", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Parse({"--etcd=e:1", "--revision=-3", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Parse({"--etcd=e:1", "--data_path=dnfs", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("want auto, mount, agent or nfs")));
  EXPECT_THAT(Parse({"--etcd=e:1", "-o", "direct_io=maybe", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("direct_io=maybe")));
  EXPECT_THAT(Parse({"--etcd=e:1", "--threads=0", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Parse({"--etcd=e:1", "--etcd_timeout=soon", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Parse({"--etcd=e:1", "-x", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Parse({"--etcd=e:1", "a", "b", "/m"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Parse({"--help"}), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          HasSubstr("usage")));
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
