#include "client_lib/mountd/mountinfo.h"

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace mountd {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;

constexpr char kText[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "95 22 0:52 / /mnt/rangefs/sn-01 ro,relatime shared:50 - nfs4 "
    "10.0.0.5:/srv/data ro,vers=4.2,rsize=1048576,wsize=1048576,hard,"
    "proto=rdma,port=20049,timeo=600\n"
    "96 22 8:1 /srv/x /mnt/my\\040dir rw,relatime - ext4 /dev/sda1 rw\n";

TEST(MountInfoTest, ParsesFieldsAndOptions) {
  auto m = ParseMountInfo(kText);
  ASSERT_THAT(m.status(), IsOk());
  ASSERT_EQ(m->size(), 3u);
  const MountInfo* nfs = FindMount(*m, "/mnt/rangefs/sn-01");
  ASSERT_NE(nfs, nullptr);
  EXPECT_EQ(nfs->dev(), "0:52");
  EXPECT_EQ(nfs->fs_type, "nfs4");
  EXPECT_EQ(nfs->source, "10.0.0.5:/srv/data");
  EXPECT_TRUE(nfs->read_only());
  EXPECT_EQ(nfs->Option("rsize"), "1048576");
  EXPECT_EQ(nfs->Option("proto"), "rdma");
  EXPECT_EQ(nfs->Option("hard"), "1");
  EXPECT_EQ(nfs->Option("soft"), "");
  const MountInfo* spaced = FindMount(*m, "/mnt/my dir");
  ASSERT_NE(spaced, nullptr);
  EXPECT_EQ(spaced->root, "/srv/x");
  EXPECT_FALSE(spaced->read_only());
  EXPECT_EQ(FindMount(*m, "/nope"), nullptr);
}

TEST(MountInfoTest, RejectsMalformedLines) {
  EXPECT_THAT(ParseMountInfo("1 2 3\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseMountInfo("1 2 x:y / /a rw - ext4 /dev/a rw\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(MountInfoTest, ReadsTheRealFile) {
  auto m = ReadMountInfo();
  ASSERT_THAT(m.status(), IsOk());
  EXPECT_FALSE(m->empty());
  EXPECT_THAT(ReadMountInfo("/nonexistent/mountinfo").status(),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace mountd
}  // namespace rangefs
