// The operational pieces of rangefs-mount: xattr values, the status file
// doctor reads, the metrics text, file and HTTP endpoint, the reporter.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mount/metrics.h"
#include "mount/mount_status.h"
#include "mount/reporter.h"
#include "mount/xattrs.h"

namespace rangefs {
namespace mount {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/mount_ops_testXXXXXX";
  return mkdtemp(tmpl);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(XattrsTest, ValuesDescribeTheLayout) {
  v1::FileLayout l;
  l.set_file_id(9);
  l.set_generation(3);
  l.set_size(10);
  l.set_state(v1::READY);
  v1::Extent* e = l.add_extents();
  e->set_length(10);
  for (const char* n : {"n2", "n1"}) {
    v1::Replica* r = e->add_replicas();
    r->set_node_id(n);
    r->set_object("obj");
  }
  EXPECT_THAT(XattrValue("user.rangefs.generation", l), IsOk());
  EXPECT_EQ(*XattrValue("user.rangefs.generation", l), "3");
  EXPECT_EQ(*XattrValue("user.rangefs.file_id", l), "9");
  EXPECT_EQ(*XattrValue("user.rangefs.replicas", l), "2");
  EXPECT_EQ(*XattrValue("user.rangefs.nodes", l), "n1,n2");
  auto json = XattrValue("user.rangefs.layout", l);
  ASSERT_THAT(json, IsOk());
  EXPECT_THAT(*json, HasSubstr("\"node_id\":\"n2\""));
  EXPECT_THAT(*json, HasSubstr("\"generation\":\"3\""));
  EXPECT_THAT(XattrValue("user.other", l),
              StatusIs(absl::StatusCode::kNotFound));
  const std::string list = XattrList();
  EXPECT_EQ(list.back(), '\0');
  EXPECT_THAT(list, HasSubstr(std::string("user.rangefs.layout\0", 20)));
}

TEST(MountStatusTest, RoundTripsAndNamesFiles) {
  MountStatus s;
  s.mountpoint = "/mnt/a b";
  s.pid = 77;
  s.cluster = "c";
  s.dir = "/d";
  s.revision = 5;
  s.index_revision = 9;
  s.watch_connected = true;
  s.files = 3;
  s.reads = 100;
  s.updated_unix_ms = 1234;
  auto p = ParseMountStatus(FormatMountStatus(s));
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->mountpoint, s.mountpoint);
  EXPECT_EQ(p->pid, 77);
  EXPECT_EQ(p->dir, "/d");
  EXPECT_EQ(p->revision, 5);
  EXPECT_EQ(p->index_revision, 9);
  EXPECT_TRUE(p->watch_connected);
  EXPECT_EQ(p->files, 3u);
  EXPECT_EQ(p->reads, 100u);
  EXPECT_EQ(p->updated_unix_ms, 1234);
  EXPECT_THAT(ParseMountStatus("pid = 1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseMountStatus("mountpoint = /m\npid = x\n"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseMountStatus("garbage"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(StatusFilePath("/run/x", "/mnt/a b"),
            "/run/x/%2Fmnt%2Fa%20b.status");
}

TEST(MetricsTest, PrometheusText) {
  MountCounters c;
  c.reads = 5;
  c.read_bytes = 4096;
  c.open_files = 2;
  IndexGauges g{7, 1000, 42, true, false};
  const std::string text = MountPrometheusText(c, g);
  EXPECT_THAT(text, HasSubstr("rangefs_mount_reads_total 5\n"));
  EXPECT_THAT(text, HasSubstr("rangefs_mount_read_bytes_total 4096\n"));
  EXPECT_THAT(text, HasSubstr("rangefs_mount_open_files 2\n"));
  EXPECT_THAT(text, HasSubstr("rangefs_mount_files 7\n"));
  EXPECT_THAT(text, HasSubstr("rangefs_mount_watch_connected 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE rangefs_mount_reads_total counter"));
}

TEST(ReporterTest, WritesStatusAndMetricsRemovesStatusOnExit) {
  const std::string dir = TempDir();
  ReporterOptions o;
  o.status_file = StatusFilePath(dir, "/mnt/r");
  o.status_interval = absl::Milliseconds(20);
  o.metrics_file = dir + "/metrics.prom";
  o.metrics_interval = absl::Milliseconds(20);
  int calls = 0;
  {
    Reporter r(
        o,
        [&] {
          MountStatus s;
          s.mountpoint = "/mnt/r";
          s.pid = getpid();
          s.reads = static_cast<uint64_t>(++calls);
          return s;
        },
        [] { return std::string("rangefs_mount_x 1\n"); });
    // Written before the constructor returns.
    auto s = ParseMountStatus(Slurp(o.status_file));
    ASSERT_THAT(s, IsOk());
    EXPECT_EQ(s->interval_ms, 20);
    EXPECT_GT(s->updated_unix_ms, 0);
    EXPECT_EQ(Slurp(o.metrics_file), "rangefs_mount_x 1\n");
    // And again later (polled; the bound is a safety net, it takes ~60 ms).
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    uint64_t reads = 0;
    while (reads < 3 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
      auto again = ParseMountStatus(Slurp(o.status_file));
      if (again.ok()) reads = again->reads;
    }
    EXPECT_GE(reads, 3u);
    std::vector<std::string> errors;
    auto all = ReadStatusDir(dir, &errors);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].mountpoint, "/mnt/r");
    EXPECT_TRUE(errors.empty());
  }
  struct stat st;
  EXPECT_NE(stat(o.status_file.c_str(), &st), 0);
  unlink(o.metrics_file.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
