#include "repair/ec_plan.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace keeper {
namespace {

using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A 6+3 file of 4 full 1 MiB rows on n<first>..n<first+8>.
ns::FileEntry Coded(const std::string& path, int first) {
  ns::FileEntry f;
  f.path = path;
  f.mod_revision = 7;
  v1::FileLayout& l = f.layout;
  l.set_size(4 * 6 << 20);
  l.set_state(v1::READY_EC);
  v1::StripedLayout* s = l.mutable_striped();
  s->set_stripe_unit(1 << 20);
  s->mutable_erasure()->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  s->mutable_erasure()->set_data_columns(6);
  s->mutable_erasure()->set_parity_columns(3);
  for (int t = 0; t < 9; ++t) {
    v1::Replica* r = s->add_targets()->add_replicas();
    r->set_node_id(absl::StrCat("n", first + t));
    r->set_object(absl::StrCat(path, "/c", t));
  }
  return f;
}

std::map<std::string, NodeView> Nodes(int n) {
  std::map<std::string, NodeView> v;
  for (int i = 0; i < n; ++i) {
    NodeView& x = v[absl::StrCat("n", i)];
    x.id = absl::StrCat("n", i);
    x.zone = absl::StrCat("z", i);
    x.free_bytes = uint64_t{1} << 40;
  }
  return v;
}

TEST(EcPlanTest, HealthyFilesNeedNothing) {
  absl::BitGen gen;
  EcPlan p = PlanEcRepairs({Coded("/a", 0)}, Nodes(11), gen);
  EXPECT_THAT(p.files, IsEmpty());
  EXPECT_THAT(p.stuck, IsEmpty());
}

TEST(EcPlanTest, DeadColumnGoesToANodeHoldingNoColumnOfTheFile) {
  absl::BitGen gen;
  auto nodes = Nodes(11);
  nodes["n2"].condition = NodeCondition::kDead;
  nodes["n3"].condition = NodeCondition::kMissing;  // not rebuilt, not read
  EcPlan p = PlanEcRepairs({Coded("/a", 0)}, nodes, gen);
  ASSERT_EQ(p.files.size(), 1u);
  const EcFileRepair& f = p.files[0];
  ASSERT_EQ(f.columns.size(), 1u);
  EXPECT_EQ(f.columns[0].column, 2);
  EXPECT_EQ(f.columns[0].why, "dead");
  EXPECT_THAT(f.columns[0].target_node, AnyOf("n9", "n10"));
  EXPECT_EQ(f.columns[0].bytes, uint64_t{4} << 20);
  EXPECT_THAT(f.unusable, ElementsAre(2, 3));
  EXPECT_EQ(f.good_columns, 7);
  EXPECT_EQ(f.k, 6);
  const EcRepairListing row = ListEcRepair(f, f.columns[0]);
  EXPECT_EQ(row.action, "rebuild");
  EXPECT_EQ(row.reads, absl::StrCat("dead: 6 of 7 columns, by ",
                                    f.columns[0].target_node));
}

TEST(EcPlanTest, DrainingColumnIsListedAsACopyFromItsNode) {
  absl::BitGen gen;
  auto nodes = Nodes(11);
  nodes["n4"].condition = NodeCondition::kDraining;
  EcPlan p = PlanEcRepairs({Coded("/a", 0)}, nodes, gen);
  ASSERT_EQ(p.files.size(), 1u);
  ASSERT_EQ(p.files[0].columns.size(), 1u);
  const EcRepairListing row = ListEcRepair(p.files[0], p.files[0].columns[0]);
  EXPECT_EQ(row.action, "ec copy");
  EXPECT_EQ(row.reads, "n4");
}

TEST(EcPlanTest, CorruptCellsObjectRebuildsItsParityColumn) {
  absl::BitGen gen;
  auto nodes = Nodes(11);
  nodes["n7"].corrupt.insert("/a/c7.cells");
  EcPlan p = PlanEcRepairs({Coded("/a", 0)}, nodes, gen);
  ASSERT_EQ(p.files.size(), 1u);
  EXPECT_EQ(p.files[0].columns[0].column, 7);
  EXPECT_EQ(p.files[0].columns[0].why, "corrupt");
}

TEST(EcPlanTest, FewestGoodColumnsFirstAndStuckPastM) {
  absl::BitGen gen;
  auto nodes = Nodes(20);
  nodes["n1"].condition = NodeCondition::kDead;   // /a: one lost
  nodes["n10"].condition = NodeCondition::kDead;  // /b: three lost
  nodes["n11"].condition = NodeCondition::kDead;
  nodes["n12"].condition = NodeCondition::kDead;
  EcPlan p = PlanEcRepairs({Coded("/a", 0), Coded("/b", 10)}, nodes, gen);
  ASSERT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.files[0].path, "/b");
  EXPECT_EQ(p.files[0].columns.size(), 3u);
  EXPECT_EQ(p.files[1].path, "/a");
  nodes["n13"].condition = NodeCondition::kDead;  // /b: four lost
  p = PlanEcRepairs({Coded("/b", 10)}, nodes, gen);
  EXPECT_THAT(p.files, IsEmpty());
  ASSERT_EQ(p.stuck.size(), 4u);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("only 5 readable column(s)"));
}

TEST(EcPlanTest, RebuiltColumnGoesToARackTheRowDoesNotUse) {
  // One zone; n0..n8 (the file's columns) on racks r0..r8; n9 shares r0
  // and has the most room, n10 is alone on r9: the row's cells stay on
  // distinct racks.
  auto nodes = Nodes(11);
  for (int i = 0; i < 11; ++i) {
    NodeView& v = nodes[absl::StrCat("n", i)];
    v.zone = "z";
    v.rack = absl::StrCat("r", i == 9 ? 0 : i == 10 ? 9 : i);
  }
  nodes["n9"].free_bytes = uint64_t{1} << 45;
  nodes["n2"].condition = NodeCondition::kDead;
  for (int seed = 0; seed < 20; ++seed) {
    std::mt19937 gen(seed);
    EcPlan p = PlanEcRepairs({Coded("/a", 0)}, nodes, gen);
    ASSERT_EQ(p.files.size(), 1u);
    EXPECT_EQ(p.files[0].columns[0].target_node, "n10");
  }
  // With no rack left unused, a node holding no column still takes it.
  nodes["n10"].rack = "r1";
  absl::BitGen gen;
  EcPlan p = PlanEcRepairs({Coded("/a", 0)}, nodes, gen);
  ASSERT_EQ(p.files.size(), 1u);
  EXPECT_THAT(p.files[0].columns[0].target_node, AnyOf("n9", "n10"));
}

TEST(EcPlanTest, NoEligibleTargetIsStuck) {
  absl::BitGen gen;
  auto nodes = Nodes(9);  // every node holds a column
  nodes["n4"].condition = NodeCondition::kDead;
  EcPlan p = PlanEcRepairs({Coded("/a", 0)}, nodes, gen);
  EXPECT_THAT(p.files, IsEmpty());
  ASSERT_EQ(p.stuck.size(), 1u);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("no up node"));
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
