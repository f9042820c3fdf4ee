#include "storage_node/rdma/rdma_devices.h"

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

// Without RDMA hardware (CI: ibv_get_device_list fails with ENOSYS) the
// listing degrades to an empty list; with hardware, every device is named.
TEST(RdmaDevicesTest, ListsOrDegradesCleanly) {
  absl::StatusOr<std::vector<RdmaDevice>> devs = ListRdmaDevices();
  ASSERT_THAT(devs, IsOk());
  for (const RdmaDevice& d : *devs) {
    EXPECT_FALSE(d.name.empty());
    for (const RdmaPort& p : d.ports) {
      EXPECT_GE(p.number, 1);
      EXPECT_FALSE(p.state.empty());
    }
  }
  // Calling twice is fine (no leaked global state).
  EXPECT_THAT(ListRdmaDevices(), IsOk());
}

TEST(RdmaDevicesTest, RateTable) {
  EXPECT_DOUBLE_EQ(RdmaRateGbps(2, 1), 10.0);     // 4x SDR
  EXPECT_DOUBLE_EQ(RdmaRateGbps(2, 64), 200.0);   // 4x HDR
  EXPECT_DOUBLE_EQ(RdmaRateGbps(2, 128), 400.0);  // 4x NDR
  EXPECT_DOUBLE_EQ(RdmaRateGbps(3, 1), 0.0);
  EXPECT_DOUBLE_EQ(RdmaRateGbps(1, 3), 0.0);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
