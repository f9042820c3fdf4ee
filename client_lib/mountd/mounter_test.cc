#include "client_lib/mountd/mounter.h"

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace mountd {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;

v1::NodeRecord Node() {
  v1::NodeRecord n;
  n.set_id("sn-01");
  n.add_addresses("10.0.0.5:7070");
  n.set_export_path("/srv/rangefs/data");
  return n;
}

TEST(MounterTest, NfsCommandHasTheRdmaOptionsAndIsReadOnly) {
  auto m = NewNfsMounter(
      "proto=rdma,port=20049,rsize=1048576,hard,timeo=600,retrans=2");
  auto src = m->SourceFor(Node());
  ASSERT_THAT(src.status(), IsOk());
  EXPECT_EQ(*src, "10.0.0.5:/srv/rangefs/data");
  EXPECT_EQ(m->MountCommand(*src, "/mnt/rangefs/sn-01"),
            "/bin/mount -t nfs -o ro,proto=rdma,port=20049,rsize=1048576,hard,"
            "timeo=600,retrans=2 10.0.0.5:/srv/rangefs/data "
            "/mnt/rangefs/sn-01");
  EXPECT_EQ(m->UnmountCommand("/mnt/rangefs/sn-01"),
            "umount -l /mnt/rangefs/sn-01");
  // "ro" is not added twice.
  auto m2 = NewNfsMounter("ro,soft");
  EXPECT_EQ(m2->MountCommand("h:/e", "/t"),
            "/bin/mount -t nfs -o ro,soft h:/e /t");
}

TEST(MounterTest, NfsSourceNeedsAddressAndExport) {
  auto m = NewNfsMounter("ro");
  v1::NodeRecord n = Node();
  n.clear_addresses();
  EXPECT_THAT(m->SourceFor(n).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  n = Node();
  n.set_export_path("relative");
  EXPECT_THAT(m->SourceFor(n).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(MounterTest, BindSourceIsTheExportDir) {
  auto m = NewBindMounter();
  EXPECT_EQ(*m->SourceFor(Node()), "/srv/rangefs/data");
  EXPECT_EQ(m->MountCommand("/a", "/b"), "mount --bind -o ro /a /b");
}

TEST(MounterTest, HostOfAddress) {
  EXPECT_EQ(HostOfAddress("10.0.0.5:7070"), "10.0.0.5");
  EXPECT_EQ(HostOfAddress("node1"), "node1");
  EXPECT_EQ(HostOfAddress("[fe80::1]:7070"), "[fe80::1]");
  EXPECT_EQ(HostOfAddress("fe80::1"), "fe80::1");
}

TEST(MounterTest, UnmountOfNothingIsOk) {
  auto m = NewBindMounter();
  EXPECT_THAT(m->Unmount("/nonexistent/rangefs/target"), IsOk());
}

}  // namespace
}  // namespace mountd
}  // namespace rangefs
