#include "client_lib/internal/mount_reader.h"

#include <string>

#include "absl/status/status.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "client_lib/internal/agent_reader.h"
#include "client_lib/testing/fault_fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/sidecar.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace client_internal {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kBlock = 4096;

// An object of 3.5 blocks with its sidecar under the mount /m.
class MountReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < data_.size(); ++i) {
      data_[i] = static_cast<char>(i * 7 + i / 4096);
    }
    fs_.AddFile("/m/d/obj", data_);
    node::BlockChecksummer sums(kBlock);
    sums.Update(data_.data(), data_.size());
    fs_.AddFile("/m/" + node::SidecarPathFor("d/obj"),
                node::EncodeSidecar(sums.Finish()));
  }

  // Plans, reads and checks `length` bytes at `offset`; the bytes or error.
  absl::StatusOr<std::string> ReadPiece(MountReader& r, uint64_t offset,
                                        uint64_t length, bool verify,
                                        bool* checksum_failure) {
    const MountPiece piece{object_, offset, length, verify};
    MountPlan plan;
    absl::Status planned = r.Plan(piece, "/m", &plan);
    if (!planned.ok()) return planned;
    std::string buf(plan.alloc, '\0');
    absl::StatusOr<size_t> n = r.Read(plan, buf.data());
    if (!n.ok()) return n.status();
    absl::StatusOr<size_t> len =
        MountReader::Check(piece, plan, buf.data(), *n, checksum_failure);
    if (!len.ok()) return len.status();
    return buf.substr(plan.lead, *len);
  }

  const std::string object_ = "d/obj";
  std::string data_ = std::string(kBlock * 3 + kBlock / 2, '\0');
  MemoryFs fs_;
};

TEST_F(MountReaderTest, ReadsAndVerifiesWholeBlocksAroundThePiece) {
  MountReader r(&fs_, /*o_direct=*/false);
  EXPECT_FALSE(r.HasSidecar(object_));
  bool bad = false;
  absl::StatusOr<std::string> got = ReadPiece(r, 5000, 6000, true, &bad);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, data_.substr(5000, 6000));
  EXPECT_FALSE(bad);
  EXPECT_TRUE(r.HasSidecar(object_));  // cached for the next plan
  // The object's tail: the last block is short.
  got = ReadPiece(r, data_.size() - 10, 10, true, &bad);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, data_.substr(data_.size() - 10));
}

TEST_F(MountReaderTest, PlanAlignsToBlocksWhenVerifyingOnly) {
  MountReader r(&fs_, /*o_direct=*/false);
  MountPlan plan;
  ASSERT_THAT(r.Plan({object_, 5000, 100, false}, "/m", &plan), IsOk());
  EXPECT_EQ(plan.start, 5000u);
  EXPECT_EQ(plan.span, 100u);
  EXPECT_EQ(plan.sums, nullptr);
  ASSERT_THAT(r.Plan({object_, 5000, 100, true}, "/m", &plan), IsOk());
  EXPECT_EQ(plan.start, kBlock);
  EXPECT_EQ(plan.end, 2u * kBlock);
  EXPECT_EQ(plan.lead, 5000u - kBlock);
}

// A plan is reused (a ring slot's recycled context): planning into it sets
// every field again, the mount it already holds may be the `dir` given.
TEST_F(MountReaderTest, AReusedPlanIsPlannedAfresh) {
  MountReader r(&fs_, /*o_direct=*/false);
  MountPlan plan;
  ASSERT_THAT(r.Plan({object_, 5000, 100, true}, "/m", &plan), IsOk());
  ASSERT_NE(plan.sums, nullptr);
  EXPECT_EQ(plan.path.full(), "/m/d/obj");
  ASSERT_THAT(r.Plan({object_, 7000, 10, false}, plan.path.mount, &plan),
              IsOk());
  EXPECT_EQ(plan.sums, nullptr);
  EXPECT_EQ(plan.path.full(), "/m/d/obj");
  EXPECT_EQ(plan.start, 7000u);
  EXPECT_EQ(plan.span, 10u);
  EXPECT_EQ(plan.lead, 0u);
  ASSERT_THAT(r.Plan({object_, 5000, 100, false}, "/other", &plan), IsOk());
  EXPECT_EQ(plan.path.mount, "/other");
}

TEST_F(MountReaderTest, CorruptBlockIsDataLossNamingTheBlock) {
  fs_.CorruptByte("/m/d/obj", 2 * kBlock + 3);
  MountReader r(&fs_, /*o_direct=*/false);
  bool bad = false;
  EXPECT_THAT(ReadPiece(r, 2 * kBlock, 10, true, &bad).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("block 2")));
  EXPECT_TRUE(bad);
  // Not verifying: the bytes as they are (the agent path checks chunks).
  bad = false;
  EXPECT_THAT(ReadPiece(r, 2 * kBlock, 10, false, &bad), IsOk());
  EXPECT_FALSE(bad);
}

TEST_F(MountReaderTest, PieceBeyondTheObjectIsDataLoss) {
  MountReader r(&fs_, /*o_direct=*/false);
  bool bad = false;
  EXPECT_THAT(ReadPiece(r, data_.size() - 10, 20, true, &bad).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("sidecar")));
  EXPECT_THAT(ReadPiece(r, data_.size() - 10, 20, false, &bad).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("short read")));
}

TEST_F(MountReaderTest, BadSidecarIsDataLoss) {
  fs_.AddFile("/m/" + node::SidecarPathFor(object_), "not a sidecar");
  MountReader r(&fs_, /*o_direct=*/false);
  bool bad = false;
  EXPECT_THAT(ReadPiece(r, 0, 10, true, &bad).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("sidecar")));
}

TEST(AgentReaderTest, NodeWithoutAnAddressFailsClearly) {
  AgentReader r("n7", {});
  std::string out(10, '\0');
  const std::string object = "d/obj";
  EXPECT_THAT(r.Read({.object = object,
                      .out = absl::MakeSpan(out),
                      .deadline = absl::Now() + absl::Seconds(1)}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("node n7 has no agent address")));
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
