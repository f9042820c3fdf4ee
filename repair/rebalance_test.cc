#include "repair/rebalance.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace keeper {
namespace {

using C = NodeCondition;

NodeView Node(const std::string& id, C c = C::kUp, const std::string& zone = "",
              uint64_t capacity = 1000) {
  NodeView v;
  v.id = id;
  v.zone = zone;
  v.free_bytes = 1000;
  v.capacity_bytes = capacity;
  v.condition = c;
  return v;
}

std::map<std::string, NodeView> Nodes(std::vector<NodeView> v) {
  std::map<std::string, NodeView> m;
  for (NodeView& n : v) m[n.id] = n;
  return m;
}

// `n` one-extent files of 10 bytes, replicas on `a` and `b`.
std::vector<ns::FileEntry> Files(int n, const std::string& a,
                                 const std::string& b) {
  std::vector<ns::FileEntry> out;
  for (int i = 0; i < n; ++i) {
    ns::FileEntry f;
    f.path = "/" + a + b + std::to_string(i);
    f.layout.set_state(v1::READY);
    f.layout.set_size(10);
    v1::Extent* e = f.layout.add_extents();
    e->set_length(10);
    for (const std::string& id : {a, b}) {
      v1::Replica* r = e->add_replicas();
      r->set_node_id(id);
      r->set_object(f.path + "/e0");
    }
    out.push_back(f);
  }
  return out;
}

// Applies the moves to the fill and returns each node's used bytes.
std::map<std::string, uint64_t> After(const std::vector<ns::FileEntry>& files,
                                      const std::map<std::string, NodeView>& n,
                                      const std::vector<Move>& moves) {
  std::map<std::string, uint64_t> used;
  for (const auto& [id, f] : FillOfUpNodes(files, n)) used[id] = f.used;
  for (const Move& m : moves) {
    used[m.from_node] -= m.bytes;
    used[m.target_node] += m.bytes;
  }
  return used;
}

TEST(RebalanceTest, NewEmptyNodesFillToWithinTolerance) {
  // 40 files on a+b (400 bytes each); c and d empty. Mean 200.
  auto files = Files(40, "a", "b");
  auto nodes = Nodes({Node("a"), Node("b"), Node("c"), Node("d")});
  std::vector<Move> moves = PlanRebalance(files, nodes, {.max_moves = 100});
  auto used = After(files, nodes, moves);
  for (const auto& [id, u] : used) {
    EXPECT_GE(u, 180u) << id;
    EXPECT_LE(u, 220u) << id;
  }
  std::set<std::pair<std::string, int>> slots;
  for (const Move& m : moves) {
    EXPECT_TRUE(m.from_node == "a" || m.from_node == "b");
    EXPECT_EQ(m.source_node, m.from_node);
    EXPECT_TRUE(m.target_node == "c" || m.target_node == "d");
    EXPECT_TRUE(slots.insert({m.path, m.slot}).second) << "slot moved twice";
  }
}

TEST(RebalanceTest, RespectsMaxMovesAndTolerance) {
  auto files = Files(40, "a", "b");
  auto nodes = Nodes({Node("a"), Node("b"), Node("c")});
  EXPECT_EQ(PlanRebalance(files, nodes, {.max_moves = 3}).size(), 3u);
  EXPECT_TRUE(PlanRebalance(files, nodes, {.tolerance = 0}).empty());
  // Within tolerance already: nothing.
  auto even = Files(10, "a", "b");
  auto more = Files(10, "b", "c");
  auto more2 = Files(10, "c", "a");
  even.insert(even.end(), more.begin(), more.end());
  even.insert(even.end(), more2.begin(), more2.end());
  EXPECT_TRUE(PlanRebalance(even, nodes, {}).empty());
}

TEST(RebalanceTest, CoarseSlotsDoNotOvershoot) {
  // One 100-byte file on a+b; c empty: moving it would put c over the
  // band, so nothing moves (no ping-pong between rounds).
  std::vector<ns::FileEntry> files = Files(1, "a", "b");
  files[0].layout.set_size(100);
  files[0].layout.mutable_extents(0)->set_length(100);
  auto nodes = Nodes({Node("a"), Node("b"), Node("c")});
  EXPECT_TRUE(PlanRebalance(files, nodes, {}).empty());
}

TEST(RebalanceTest, OnlyUpNodesAndZonesKept) {
  auto files = Files(20, "a", "b");
  // a in z1, b in z2; c (z1) may take a's replicas but not b's.
  auto nodes = Nodes({Node("a", C::kUp, "z1"), Node("b", C::kUp, "z2"),
                      Node("c", C::kUp, "z1"), Node("d", C::kDisabled, "z3"),
                      Node("e", C::kMissing, "z3")});
  std::vector<Move> moves = PlanRebalance(files, nodes, {.max_moves = 100});
  ASSERT_FALSE(moves.empty());
  for (const Move& m : moves) {
    EXPECT_EQ(m.from_node, "a");
    EXPECT_EQ(m.target_node, "c");
  }
}

TEST(RebalanceTest, CapacityWeighsFill) {
  // c has twice the capacity: it should end with about twice a's bytes.
  auto files = Files(40, "a", "b");
  auto nodes = Nodes({Node("a", C::kUp, "", 1000), Node("b", C::kUp, "", 1000),
                      Node("c", C::kUp, "", 2000)});
  auto used =
      After(files, nodes, PlanRebalance(files, nodes, {.max_moves = 100}));
  // Mean fill 800 bytes / 4000 capacity: 200 per 1000.
  EXPECT_NEAR(static_cast<double>(used["a"]), 200, 20);
  EXPECT_NEAR(static_cast<double>(used["c"]), 400, 40);
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
