#include "repair/convert_plan.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"

namespace rangefs {
namespace keeper {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kUnit = 1 << 20;

// A striped file of `width` columns, `replicas` each, 4 rows of 1 MiB
// units, column t's replicas on n<(t + i * width) % nodes>.
ns::FileEntry Striped(const std::string& path, int width, int replicas,
                      int nodes = 12) {
  ns::FileEntry f;
  f.path = path;
  v1::FileLayout& l = f.layout;
  l.set_size(4 * width * kUnit - 1000);  // the last unit partial
  l.set_state(v1::READY);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(kUnit);
  l.set_content_generation(3);
  v1::StripedLayout* s = l.mutable_striped();
  s->set_stripe_unit(kUnit);
  for (int t = 0; t < width; ++t) {
    auto* target = s->add_targets();
    for (int i = 0; i < replicas; ++i) {
      v1::Replica* r = target->add_replicas();
      r->set_node_id(absl::StrCat("n", (t + i * width) % nodes));
      r->set_object(absl::StrCat("f/x/c", t));
    }
  }
  return f;
}

std::map<std::string, NodeView> Nodes(int n) {
  std::map<std::string, NodeView> v;
  for (int i = 0; i < n; ++i) {
    NodeView& x = v[absl::StrCat("n", i)];
    x.id = absl::StrCat("n", i);
    x.zone = "z";
    x.free_bytes = uint64_t{1} << 40;
  }
  return v;
}

GoalOf Goal(const std::string& text) {
  return [text](const ns::FileEntry&) -> std::optional<FileGoal> {
    auto g = ns::ParseLayoutGoal(text);
    if (!g.ok()) return std::nullopt;
    return FileGoal{*g, "/d"};
  };
}

std::set<std::string> NodesOf(const v1::FileLayout& l) {
  std::set<std::string> out;
  for (const auto& t : l.striped().targets()) {
    for (const auto& r : t.replicas()) out.insert(r.node_id());
  }
  return out;
}

TEST(ConvertPlanTest, SameWidthReplicasBecomeEcParityOnly) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 6, 2);
  ConvertPlan p = PlanConversions({f}, Nodes(12), {}, Goal("ec=6+3"), gen);
  ASSERT_EQ(p.conversions.size(), 1u);
  const Conversion& c = p.conversions[0];
  EXPECT_EQ(c.kind, ConversionKind::kEcInPlace);
  ASSERT_EQ(c.data.size(), 6u);
  ASSERT_EQ(c.new_nodes.size(), 3u);
  // 4 rows of 1 MiB parity cells per parity column, and their CRCs.
  EXPECT_EQ(c.bytes_to_write, 3 * (4 * kUnit + 4 * 9 * 4));
  EXPECT_GT(c.raw_before, c.raw_after);
  EXPECT_EQ(p.by_policy["/d"].files, 1);
  std::vector<OldReplica> leaving;
  auto next =
      ConvertedLayout(f.layout, c, {}, {"p/c6", "p/c7", "p/c8"}, &leaving);
  ASSERT_THAT(next, IsOk());
  EXPECT_THAT(ns::ValidateLayout(*next, nullptr), IsOk());
  EXPECT_TRUE(ns::LayoutMeetsGoal(*next, c.goal));
  EXPECT_EQ(NodesOf(*next).size(), 9u);
  EXPECT_EQ(leaving.size(), 6u);  // the other replica of each column
  EXPECT_EQ(RawBytes(*next), c.raw_after);
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(ns::DataReplica(*next, t).object(), absl::StrCat("f/x/c", t));
  }
}

// Columns whose first replicas share nodes still keep k distinct nodes
// when another choice exists (greedy picks would have failed here).
TEST(ConvertPlanTest, DataColumnsAreMatchedToDistinctNodes) {
  absl::BitGen gen;
  ns::FileEntry f = Striped("/d/a", 3, 2);
  // Column 0: n0, n1; column 1: n0, n2; column 2: n2, n0 (first free
  // replica per column: n0, n2, then none for column 2).
  const char* nodes[3][2] = {{"n0", "n1"}, {"n0", "n2"}, {"n2", "n0"}};
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < 2; ++i) {
      f.layout.mutable_striped()
          ->mutable_targets(t)
          ->mutable_replicas(i)
          ->set_node_id(nodes[t][i]);
    }
  }
  ConvertPlan p = PlanConversions({f}, Nodes(12), {}, Goal("ec=3+2"), gen);
  ASSERT_EQ(p.conversions.size(), 1u);
  const Conversion& c = p.conversions[0];
  EXPECT_EQ(c.kind, ConversionKind::kEcInPlace);
  std::set<std::string> used;
  for (const v1::Replica& r : c.data) used.insert(r.node_id());
  EXPECT_EQ(used.size(), 3u);
}

TEST(ConvertPlanTest, OtherWidthsAreRewritten) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 4, 2);
  ConvertPlan p = PlanConversions({f}, Nodes(12), {}, Goal("ec=6+3"), gen);
  ASSERT_EQ(p.conversions.size(), 1u);
  const Conversion& c = p.conversions[0];
  EXPECT_EQ(c.kind, ConversionKind::kEcRewrite);
  EXPECT_EQ(c.new_nodes.size(), 9u);
  std::vector<OldReplica> leaving;
  auto next = ConvertedLayout(f.layout, c, {"a", "b", "c", "d", "e", "f"},
                              {"g", "h", "i"}, &leaving);
  ASSERT_THAT(next, IsOk());
  EXPECT_THAT(ns::ValidateLayout(*next, nullptr), IsOk());
  EXPECT_EQ(leaving.size(), 8u);
}

TEST(ConvertPlanTest, EcBackToReplicasCopiesDataColumns) {
  absl::BitGen gen;
  ns::FileEntry f = Striped("/d/a", 6, 2);
  ConvertPlan p = PlanConversions({f}, Nodes(12), {}, Goal("ec=6+3"), gen);
  std::vector<OldReplica> leaving;
  auto coded = ConvertedLayout(f.layout, p.conversions[0], {},
                               {"p/c6", "p/c7", "p/c8"}, &leaving);
  ASSERT_THAT(coded, IsOk());
  f.layout = *coded;
  p = PlanConversions({f}, Nodes(12), {}, Goal("replicas=2"), gen);
  ASSERT_EQ(p.conversions.size(), 1u);
  const Conversion& c = p.conversions[0];
  EXPECT_EQ(c.kind, ConversionKind::kEcToReplicas);
  EXPECT_EQ(c.adds.size(), 6u);
  auto plain = ConvertedLayout(f.layout, c, {}, {}, &leaving);
  ASSERT_THAT(plain, IsOk());
  EXPECT_THAT(ns::ValidateLayout(*plain, nullptr), IsOk());
  EXPECT_TRUE(ns::LayoutMeetsGoal(*plain, c.goal));
  EXPECT_EQ(leaving.size(), 6u);  // 3 parity objects and their .cells
  for (const NewReplica& a : c.adds) {
    EXPECT_NE(a.target_node, a.source_node);
  }
}

TEST(ConvertPlanTest, ReplicaCountsGoUpAndDown) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 3, 2);
  ConvertPlan up = PlanConversions({f}, Nodes(12), {}, Goal("replicas=3"), gen);
  ASSERT_EQ(up.conversions.size(), 1u);
  EXPECT_EQ(up.conversions[0].adds.size(), 3u);
  std::vector<OldReplica> leaving;
  auto three = ConvertedLayout(f.layout, up.conversions[0], {}, {}, &leaving);
  ASSERT_THAT(three, IsOk());
  EXPECT_TRUE(ns::LayoutMeetsGoal(*three, ns::LayoutGoal::Replicas(3)));
  ConvertPlan down =
      PlanConversions({f}, Nodes(12), {}, Goal("replicas=1"), gen);
  ASSERT_EQ(down.conversions.size(), 1u);
  EXPECT_EQ(down.conversions[0].drops.size(), 3u);
  auto one = ConvertedLayout(f.layout, down.conversions[0], {}, {}, &leaving);
  ASSERT_THAT(one, IsOk());
  EXPECT_TRUE(ns::LayoutMeetsGoal(*one, ns::LayoutGoal::Replicas(1)));
  EXPECT_EQ(leaving.size(), 3u);
}

TEST(ConvertPlanTest, FilesMeetingTheirGoalOrWithoutOneAreLeftAlone) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 6, 2);
  EXPECT_THAT(
      PlanConversions({f}, Nodes(12), {}, Goal("replicas=2"), gen).conversions,
      IsEmpty());
  GoalOf none = [](const ns::FileEntry&) { return std::nullopt; };
  EXPECT_THAT(PlanConversions({f}, Nodes(12), {}, none, gen).conversions,
              IsEmpty());
}

TEST(ConvertPlanTest, AFileWithAReplicaToRepairWaits) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 6, 2);
  auto nodes = Nodes(12);
  nodes["n1"].condition = NodeCondition::kDead;
  ConvertPlan p = PlanConversions({f}, nodes, {}, Goal("ec=6+3"), gen);
  EXPECT_THAT(p.conversions, IsEmpty());
  ASSERT_EQ(p.stuck.size(), 1u);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("repair first"));
  EXPECT_EQ(p.by_policy["/d"].stuck, 1);
}

TEST(ConvertPlanTest, TooFewNodesForKPlusMIsStuck) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 6, 1, 6);
  ConvertPlan p = PlanConversions({f}, Nodes(8), {}, Goal("ec=6+3"), gen);
  EXPECT_THAT(p.conversions, IsEmpty());
  ASSERT_EQ(p.stuck.size(), 1u);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("parity column"));
}

TEST(ConvertPlanTest, ParityGoesToDistinctRacksWhenNodesCarryRacks) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 6, 1, 6);
  // n0..n5: data; n6, n7 share rack r6; n8.. have racks of their own.
  std::map<std::string, std::string> racks;
  for (int i = 0; i < 12; ++i)
    racks[absl::StrCat("n", i)] = absl::StrCat("r", i);
  racks["n7"] = "r6";
  for (int round = 0; round < 20; ++round) {
    ConvertPlan p = PlanConversions({f}, Nodes(12), racks, Goal("ec=6+3"), gen);
    ASSERT_EQ(p.conversions.size(), 1u);
    std::set<std::string> used;
    for (const std::string& n : p.conversions[0].new_nodes) {
      used.insert(racks[n]);
    }
    EXPECT_EQ(used.size(), 3u);
  }
}

TEST(ConvertPlanTest, AChangedLayoutIsRefusedAtTheSwap) {
  absl::BitGen gen;
  const ns::FileEntry f = Striped("/d/a", 6, 2);
  ConvertPlan p = PlanConversions({f}, Nodes(12), {}, Goal("ec=6+3"), gen);
  ASSERT_EQ(p.conversions.size(), 1u);
  v1::FileLayout moved = f.layout;
  moved.mutable_striped()->mutable_targets(0)->mutable_replicas(0)->set_node_id(
      "n11");
  std::vector<OldReplica> leaving;
  EXPECT_THAT(
      ConvertedLayout(moved, p.conversions[0], {}, {"a", "b", "c"}, &leaving)
          .status(),
      StatusIs(absl::StatusCode::kFailedPrecondition));
  v1::FileLayout rewritten = f.layout;
  rewritten.set_content_generation(4);
  EXPECT_THAT(ConvertedLayout(rewritten, p.conversions[0], {}, {"a", "b", "c"},
                              &leaving)
                  .status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
