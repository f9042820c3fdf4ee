#include "client_lib/mountd/mount_status.h"

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace mountd {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::testing::HasSubstr;

TEST(MountStatusTest, RoundTripsThroughText) {
  MountStatusFile f;
  f.updated_unix_ms = 1234;
  f.pass = 7;
  f.mounter = "nfs";
  f.mounts.push_back(
      {"a", MountHealth::kHealthy, "/mnt/rangefs/a", 100, "4096", ""});
  f.mounts.push_back({"b", MountHealth::kUnhealthy, "/mnt/rangefs/b", 200, "",
                      "stat did not\tanswer\nwithin 5s"});
  std::string text = FormatMountStatus(f);
  EXPECT_THAT(text, HasSubstr("node=b\tstate=unhealthy\t"));
  auto g = ParseMountStatus(text);
  ASSERT_THAT(g.status(), IsOk());
  EXPECT_EQ(g->updated_unix_ms, 1234);
  EXPECT_EQ(g->pass, 7);
  EXPECT_EQ(g->mounter, "nfs");
  ASSERT_EQ(g->mounts.size(), 2u);
  EXPECT_EQ(g->Find("a")->readahead_kb, "4096");
  EXPECT_EQ(g->Find("b")->health, MountHealth::kUnhealthy);
  EXPECT_EQ(g->Find("b")->error, "stat did not answer within 5s");
  EXPECT_EQ(g->Find("b")->since_unix_ms, 200);
  EXPECT_EQ(g->Find("c"), nullptr);
}

TEST(MountStatusTest, HungSinceRoundTripsAndIsNeverHealthy) {
  MountStatusFile f;
  f.mounts.push_back({"a", MountHealth::kUnhealthy, "/mnt/rangefs/a", 100, "",
                      "stat of /mnt/rangefs/a did not return within 5s", 90});
  f.mounts.push_back({"b", MountHealth::kHealthy, "/mnt/rangefs/b", 100});
  std::string text = FormatMountStatus(f);
  EXPECT_THAT(text, HasSubstr("\thung_since_unix_ms=90\t"));
  auto g = ParseMountStatus(text);
  ASSERT_THAT(g.status(), IsOk());
  EXPECT_TRUE(g->Find("a")->hung());
  EXPECT_EQ(g->Find("a")->hung_since_unix_ms, 90);
  EXPECT_FALSE(g->Find("b")->hung());
  // A file from before the field, and records that contradict themselves.
  g = ParseMountStatus(
      "node=old\tstate=healthy\n"
      "node=odd\tstate=healthy\thung_since_unix_ms=5\n"
      "node=bad\tstate=healthy\thung_since_unix_ms=-5x\n");
  ASSERT_THAT(g.status(), IsOk());
  EXPECT_FALSE(g->Find("old")->hung());
  EXPECT_EQ(g->Find("odd")->health, MountHealth::kUnhealthy);
  EXPECT_FALSE(g->Find("bad")->hung());
  EXPECT_EQ(g->Find("bad")->health, MountHealth::kHealthy);
}

TEST(MountStatusTest, IgnoresUnknownKeysRejectsBadRecords) {
  auto g = ParseMountStatus("node=a\tstate=failed\tfuture=1\n");
  ASSERT_THAT(g.status(), IsOk());
  EXPECT_EQ(g->mounts[0].health, MountHealth::kFailed);
  EXPECT_THAT(ParseMountStatus("node=a\tstate=weird\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseMountStatus("node=\tstate=healthy\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(MountStatusTest, WritesAtomically) {
  std::string dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  std::string path = absl::StrCat(dir, "/.rangefs-mounts");
  MountStatusFile f;
  f.pass = 3;
  ASSERT_THAT(WriteMountStatus(path, f), IsOk());
  auto g = ReadMountStatus(path);
  ASSERT_THAT(g.status(), IsOk());
  EXPECT_EQ(g->pass, 3);
  EXPECT_THAT(ReadMountStatus(dir + "/missing").status(),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(WriteMountStatus(dir + "/no/such/dir/f", f),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace mountd
}  // namespace rangefs
