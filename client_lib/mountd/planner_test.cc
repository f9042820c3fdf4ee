#include "client_lib/mountd/planner.h"

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace mountd {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

v1::NodeRecord Node(const std::string& id, v1::AdminState state,
                    const std::string& export_path = "") {
  v1::NodeRecord n;
  n.set_id(id);
  n.set_admin_state(state);
  n.set_export_path(export_path.empty() ? "/srv/" + id : export_path);
  n.add_addresses("10.0.0.1:7070");
  return n;
}

absl::StatusOr<std::string> Source(const v1::NodeRecord& n) {
  if (n.export_path() == "/bad") return absl::InvalidArgumentError("no path");
  return absl::StrCat("10.0.0.1:", n.export_path());
}

std::vector<DesiredMount> Desired(const std::vector<v1::NodeRecord>& nodes,
                                  std::vector<std::string>* skipped = nullptr) {
  return DesiredMounts(nodes, "/mnt/rangefs/", Source, skipped);
}

TEST(PlannerTest, ActiveAndDrainingAreWantedDisabledIsNot) {
  auto d = Desired({Node("a", v1::ACTIVE), Node("b", v1::DRAINING),
                    Node("c", v1::DISABLED),
                    Node("d", v1::ADMIN_STATE_UNSPECIFIED)});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].node_id, "a");
  EXPECT_EQ(d[0].target, "/mnt/rangefs/a");
  EXPECT_EQ(d[0].source, "10.0.0.1:/srv/a");
  EXPECT_EQ(d[1].node_id, "b");
}

TEST(PlannerTest, UnsafeIdsAndSourceErrorsAreSkipped) {
  std::vector<std::string> skipped;
  auto d = Desired({Node("../etc", v1::ACTIVE), Node(".hidden", v1::ACTIVE),
                    Node("", v1::ACTIVE), Node("x", v1::ACTIVE, "/bad"),
                    Node("ok", v1::ACTIVE)},
                   &skipped);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].node_id, "ok");
  EXPECT_EQ(skipped.size(), 4u);
  EXPECT_THAT(skipped[3], HasSubstr("node x: no path"));
}

TEST(PlannerTest, MountsNewNodes) {
  auto plan = Plan(Desired({Node("b", v1::ACTIVE), Node("a", v1::ACTIVE)}), {});
  EXPECT_THAT(plan,
              ElementsAre(Action{ActionKind::kMount, "a", "/mnt/rangefs/a",
                                 "10.0.0.1:/srv/a", ""},
                          Action{ActionKind::kMount, "b", "/mnt/rangefs/b",
                                 "10.0.0.1:/srv/b", ""}));
}

TEST(PlannerTest, NothingToDoWhenUpToDate) {
  EXPECT_THAT(Plan(Desired({Node("a", v1::ACTIVE), Node("b", v1::DRAINING)}),
                   {{"a", "/mnt/rangefs/a", "10.0.0.1:/srv/a"},
                    {"b", "/mnt/rangefs/b", ""}}),  // unknown source: keep
              IsEmpty());
}

TEST(PlannerTest, UnmountsDisabledAndRemovedNodesFirst) {
  auto plan = Plan(Desired({Node("a", v1::DISABLED), Node("c", v1::ACTIVE)}),
                   {{"a", "/mnt/rangefs/a", ""}, {"b", "/mnt/rangefs/b", ""}});
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0], (Action{ActionKind::kUnmount, "a", "/mnt/rangefs/a"}));
  EXPECT_EQ(plan[1], (Action{ActionKind::kUnmount, "b", "/mnt/rangefs/b"}));
  EXPECT_EQ(plan[2].kind, ActionKind::kMount);
  EXPECT_EQ(plan[2].node_id, "c");
  EXPECT_THAT(plan[0].reason, HasSubstr("disabled or removed"));
}

TEST(PlannerTest, RemountsWhenSourceChanges) {
  auto plan = Plan(Desired({Node("a", v1::ACTIVE, "/srv/new")}),
                   {{"a", "/mnt/rangefs/a", "10.0.0.1:/srv/old"}});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].kind, ActionKind::kUnmount);
  EXPECT_EQ(plan[1], (Action{ActionKind::kMount, "a", "/mnt/rangefs/a",
                             "10.0.0.1:/srv/new"}));
  EXPECT_THAT(plan[1].reason, HasSubstr("source changed"));
}

TEST(PlannerTest, SafeNodeIds) {
  EXPECT_TRUE(IsSafeNodeId("sn-01"));
  EXPECT_TRUE(IsSafeNodeId("n.1"));
  EXPECT_FALSE(IsSafeNodeId(""));
  EXPECT_FALSE(IsSafeNodeId("."));
  EXPECT_FALSE(IsSafeNodeId(".."));
  EXPECT_FALSE(IsSafeNodeId("a/b"));
  EXPECT_FALSE(IsSafeNodeId(std::string(256, 'x')));
}

}  // namespace
}  // namespace mountd
}  // namespace rangefs
