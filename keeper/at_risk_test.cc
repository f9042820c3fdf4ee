#include "keeper/at_risk.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace keeper {
namespace {

std::map<std::string, NodeView> Nodes(
    std::vector<std::pair<std::string, NodeCondition>> v) {
  std::map<std::string, NodeView> m;
  for (const auto& [id, c] : v) {
    m[id].id = id;
    m[id].condition = c;
  }
  return m;
}

void AddReplica(google::protobuf::RepeatedPtrField<v1::Replica>* reps,
                const std::string& node) {
  v1::Replica* r = reps->Add();
  r->set_node_id(node);
  r->set_object("o-" + node);
}

// A file of extents of `len` bytes each, one per entry of `slots` (the
// nodes of its replicas).
ns::FileEntry Extents(const std::string& path, uint64_t len,
                      std::vector<std::vector<std::string>> slots) {
  ns::FileEntry f;
  f.path = path;
  f.layout.set_state(v1::READY);
  for (const auto& nodes : slots) {
    v1::Extent* e = f.layout.add_extents();
    e->set_offset(f.layout.size());
    e->set_length(len);
    f.layout.set_size(f.layout.size() + len);
    for (const std::string& n : nodes) AddReplica(e->mutable_replicas(), n);
  }
  return f;
}

ns::FileEntry Striped(const std::string& path, uint64_t size, uint64_t unit,
                      std::vector<std::vector<std::string>> columns) {
  ns::FileEntry f;
  f.path = path;
  f.layout.set_state(v1::READY);
  f.layout.set_size(size);
  f.layout.mutable_striped()->set_stripe_unit(unit);
  for (const auto& nodes : columns) {
    auto* t = f.layout.mutable_striped()->add_targets();
    for (const std::string& n : nodes) AddReplica(t->mutable_replicas(), n);
  }
  return f;
}

TEST(StripeColumnBytesTest, ExactPerColumnAndSumsToSize) {
  // 10 units of 4 plus 3 bytes over 3 columns: unit k on column k % 3.
  // Units 0..9 whole: columns 0,1,2 get 4,3,3 units; unit 10 (3 bytes) on
  // column 1.
  EXPECT_EQ(StripeColumnBytes(43, 4, 3, 0), 16u);
  EXPECT_EQ(StripeColumnBytes(43, 4, 3, 1), 15u);
  EXPECT_EQ(StripeColumnBytes(43, 4, 3, 2), 12u);
  for (uint64_t size : {0, 1, 7, 8, 9, 100, 4097}) {
    for (uint64_t width : {1, 2, 3, 5}) {
      uint64_t sum = 0;
      for (uint64_t t = 0; t < width; ++t) {
        sum += StripeColumnBytes(size, 8, width, t);
      }
      EXPECT_EQ(sum, size) << size << " over " << width;
    }
  }
  EXPECT_EQ(StripeColumnBytes(43, 0, 3, 0), 0u);  // Invalid: no crash.
  EXPECT_EQ(StripeColumnBytes(43, 4, 3, 3), 0u);
}

TEST(CountAtRiskTest, CountsSlotsWithAReplicaOnAMissingNode) {
  const auto nodes = Nodes({{"a", NodeCondition::kUp},
                            {"b", NodeCondition::kUp},
                            {"m", NodeCondition::kMissing},
                            {"d", NodeCondition::kDead}});
  std::vector<ns::FileEntry> files = {
      // Two of three extents on m: 2 * 100 bytes.
      Extents("/e", 100, {{"a", "m"}, {"m", "b"}, {"a", "b"}}),
      // Not on m.
      Extents("/safe", 100, {{"a", "b"}, {"d", "a"}}),
      // Column 1 of 43 bytes in units of 4 over 3 columns: 15 bytes.
      Striped("/s", 43, 4, {{"a"}, {"m", "b"}, {"b"}}),
  };
  ns::FileEntry invalid = Extents("/bad", 100, {{"m"}});
  invalid.invalid = "bad record";
  files.push_back(invalid);
  const AtRisk r = CountAtRisk(files, nodes);
  EXPECT_EQ(r.files, 2);
  EXPECT_EQ(r.bytes, 215u);
}

TEST(CountAtRiskTest, NothingWhenNoNodeIsMissing) {
  const auto nodes =
      Nodes({{"a", NodeCondition::kUp}, {"d", NodeCondition::kDead}});
  const AtRisk r =
      CountAtRisk({Extents("/e", 100, {{"a", "d"}, {"d"}})}, nodes);
  EXPECT_EQ(r.files, 0);
  EXPECT_EQ(r.bytes, 0u);
}

TEST(HealStartsTest, EarliestMissingNodePlusDeadAfter) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  const auto nodes = Nodes({{"a", NodeCondition::kUp},
                            {"m1", NodeCondition::kMissing},
                            {"m2", NodeCondition::kMissing},
                            {"d", NodeCondition::kDead}});
  const std::map<std::string, absl::Time> since = {
      {"m1", now - absl::Seconds(20)},
      {"m2", now - absl::Seconds(50)},
      {"d", now - absl::Seconds(900)},  // Dead: healing already.
      {"a", now - absl::Seconds(999)},  // Stale entry; a is up.
  };
  EXPECT_EQ(HealStarts(since, nodes, absl::Seconds(100), now),
            now + absl::Seconds(50));
  EXPECT_EQ(HealStarts(since, Nodes({{"a", NodeCondition::kUp}}),
                       absl::Seconds(100), now),
            absl::InfiniteFuture());
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
