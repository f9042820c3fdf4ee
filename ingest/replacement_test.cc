#include "ingest/replacement.h"

#include <vector>

#include "absl/random/random.h"
#include "base/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace ingest {
namespace {

lb::PlacementNode Node(const std::string& id, const std::string& zone,
                       uint64_t free_bytes) {
  lb::PlacementNode n;
  n.id = id;
  n.zone = zone;
  n.free_bytes = free_bytes;
  return n;
}

// The node picked, or the error as text.
std::string Picked(const absl::StatusOr<lb::NodeId>& r) {
  return r.ok() ? *r : r.status().ToString();
}

TEST(PickReplacementTest, SkipsExcludedDeadAndInactiveNodes) {
  std::vector<lb::PlacementNode> c = {
      Node("n1", "z0", 100), Node("n2", "z0", 100), Node("n3", "z0", 100),
      Node("n4", "z0", 100), Node("n5", "z0", 100)};
  c[2].live = false;
  c[3].admin = lb::AdminState::kDraining;
  absl::BitGen gen;
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Picked(PickReplacement(c, {"n1", "n2"}, {"z0"}, {}, gen)), "n5");
  }
  EXPECT_EQ(
      PickReplacement(c, {"n1", "n2", "n5"}, {"z0"}, {}, gen).status().code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST(PickReplacementTest, PrefersANewZoneThenFreeSpace) {
  std::vector<lb::PlacementNode> c = {
      Node("a", "z0", 1000), Node("b", "z1", 10), Node("c", "z0", 500)};
  absl::BitGen gen;
  // The column's other replica is in z0: z1 wins despite less space.
  EXPECT_EQ(Picked(PickReplacement(c, {"x"}, {"z0"}, {}, gen)), "b");
  // No new zone left: the most free space.
  EXPECT_EQ(Picked(PickReplacement(c, {"b"}, {"z0", "z1"}, {}, gen)), "a");
}

TEST(PickReplacementTest, CountsBytesAlreadyPlanned) {
  std::vector<lb::PlacementNode> c = {Node("a", "", 1000), Node("b", "", 600)};
  absl::BitGen gen;
  EXPECT_EQ(Picked(PickReplacement(c, {}, {}, {{"a", 700}}, gen)), "b");
  // Full once this put's bytes are counted: not eligible at all.
  EXPECT_EQ(PickReplacement(c, {"b"}, {}, {{"a", 1000}}, gen).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(NodeFailureTest, NodeErrorsOnly) {
  EXPECT_TRUE(NodeFailure(absl::UnavailableError("down")));
  EXPECT_TRUE(NodeFailure(absl::ResourceExhaustedError("ENOSPC")));
  EXPECT_TRUE(NodeFailure(absl::FailedPreconditionError("read-only")));
  EXPECT_FALSE(NodeFailure(absl::CancelledError("put aborted")));
  EXPECT_FALSE(NodeFailure(absl::InvalidArgumentError("bad name")));
  EXPECT_FALSE(NodeFailure(absl::AlreadyExistsError("exists")));
  EXPECT_FALSE(NodeFailure(absl::OkStatus()));
}

}  // namespace
}  // namespace ingest
}  // namespace rangefs
