#include "repair/planner.h"

#include <map>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/layout.h"

namespace rangefs {
namespace keeper {
namespace {

using ::testing::HasSubstr;

NodeView Node(const std::string& id, NodeCondition c, uint64_t free = 1000,
              const std::string& zone = "") {
  NodeView v;
  v.id = id;
  v.zone = zone;
  v.address = id + ":1";
  v.free_bytes = free;
  v.condition = c;
  return v;
}

std::map<std::string, NodeView> Nodes(std::vector<NodeView> v) {
  std::map<std::string, NodeView> m;
  for (NodeView& n : v) m[n.id] = n;
  return m;
}

// A READY file of `extents` 100-byte extents, extent i on nodes reps[i].
ns::FileEntry File(const std::string& path,
                   std::vector<std::vector<std::string>> reps) {
  ns::FileEntry f;
  f.path = path;
  f.mod_revision = 7;
  f.layout.set_state(v1::READY);
  f.layout.set_size(100 * reps.size());
  for (size_t i = 0; i < reps.size(); ++i) {
    v1::Extent* e = f.layout.add_extents();
    e->set_offset(100 * i);
    e->set_length(100);
    for (const std::string& n : reps[i]) {
      v1::Replica* r = e->add_replicas();
      r->set_node_id(n);
      r->set_object(path + "/e" + std::to_string(i));
    }
  }
  return f;
}

using C = NodeCondition;

TEST(ClassifyNodeTest, LiveAbsenceAndAdminState) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  v1::NodeRecord n;
  n.set_admin_state(v1::ACTIVE);
  v1::LiveRecord live;
  const absl::Duration dead = absl::Seconds(10);
  EXPECT_EQ(ClassifyNode(n, &live, now, now, dead), C::kUp);
  EXPECT_EQ(ClassifyNode(n, nullptr, now - absl::Seconds(9), now, dead),
            C::kMissing);
  EXPECT_EQ(ClassifyNode(n, nullptr, now - absl::Seconds(10), now, dead),
            C::kDead);
  n.set_admin_state(v1::DRAINING);
  EXPECT_EQ(ClassifyNode(n, &live, now, now, dead), C::kDraining);
  EXPECT_EQ(ClassifyNode(n, nullptr, now - absl::Hours(1), now, dead),
            C::kDead);
  n.set_admin_state(v1::DISABLED);
  EXPECT_EQ(ClassifyNode(n, &live, now, now, dead), C::kDisabled);
}

TEST(PlanMovesTest, HealthyClusterPlansNothing) {
  absl::BitGen g;
  auto nodes = Nodes({Node("a", C::kUp), Node("b", C::kUp), Node("c", C::kUp)});
  Plan p = PlanMoves({File("/f", {{"a", "b"}, {"b", "c"}})}, nodes, g);
  EXPECT_TRUE(p.moves.empty());
  EXPECT_TRUE(p.stuck.empty());
}

TEST(PlanMovesTest, DeadReplicaMovesToANodeWithoutOne) {
  absl::BitGen g;
  auto nodes = Nodes({Node("a", C::kDead), Node("b", C::kUp), Node("c", C::kUp),
                      Node("d", C::kUp)});
  Plan p =
      PlanMoves({File("/f", {{"a", "b"}, {"c", "d"}, {"b", "a"}})}, nodes, g);
  ASSERT_EQ(p.moves.size(), 2u);
  for (const Move& m : p.moves) {
    EXPECT_EQ(m.from_node, "a");
    EXPECT_EQ(m.source_node, "b");
    EXPECT_NE(m.target_node, "a");
    EXPECT_NE(m.target_node, "b");
    EXPECT_EQ(m.mod_revision, 7);
    EXPECT_EQ(m.bytes, 100u);
  }
  EXPECT_EQ(p.moves[0].slot, 0);
  EXPECT_EQ(p.moves[0].object, "/f/e0");
  EXPECT_EQ(p.moves[1].slot, 2);
  EXPECT_EQ(p.bytes, 200u);
}

TEST(PlanMovesTest, UnknownNodeCountsAsDead) {
  absl::BitGen g;
  auto nodes = Nodes({Node("b", C::kUp), Node("c", C::kUp)});
  Plan p = PlanMoves({File("/f", {{"gone", "b"}})}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_EQ(p.moves[0].target_node, "c");
}

TEST(PlanMovesTest, MissingNodeWaitsAndIsNoSource) {
  absl::BitGen g;
  auto nodes =
      Nodes({Node("a", C::kMissing), Node("b", C::kDead), Node("c", C::kUp)});
  Plan p = PlanMoves({File("/f", {{"a", "c"}, {"a", "b"}})}, nodes, g);
  // Slot 0: nothing bad. Slot 1: b dead, the only other replica missing.
  EXPECT_TRUE(p.moves.empty());
  ASSERT_EQ(p.stuck.size(), 1u);
  EXPECT_EQ(p.stuck[0].slot, 1);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("no good replica on a live node"));
}

TEST(PlanMovesTest, DrainingNodeIsASourceWhenItIsTheOnlyOne) {
  absl::BitGen g;
  auto nodes = Nodes({Node("a", C::kDraining), Node("b", C::kDead),
                      Node("c", C::kUp), Node("d", C::kUp)});
  Plan p = PlanMoves({File("/f", {{"a", "c"}, {"a", "b"}})}, nodes, g);
  ASSERT_EQ(p.moves.size(), 2u);
  EXPECT_EQ(p.moves[0].from_node, "a");
  EXPECT_EQ(p.moves[0].source_node, "c");  // an up node is preferred
  EXPECT_EQ(p.moves[0].target_node, "d");
  EXPECT_EQ(p.moves[1].from_node, "a");  // one move per slot per round
  EXPECT_EQ(p.moves[1].source_node, "a");
}

TEST(PlanMovesTest, NoTargetIsStuck) {
  absl::BitGen g;
  auto nodes = Nodes({Node("a", C::kDead), Node("b", C::kUp),
                      Node("c", C::kUp, /*free=*/0), Node("d", C::kDisabled)});
  Plan p = PlanMoves({File("/f", {{"a", "b"}})}, nodes, g);
  EXPECT_TRUE(p.moves.empty());
  ASSERT_EQ(p.stuck.size(), 1u);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("free space"));
}

TEST(PlanMovesTest, ANodeTooFullForTheSlotIsNoTarget) {
  absl::BitGen g;
  // c is the only node of the other zone but has 50 bytes free for a
  // 100-byte extent: the copy would fail with no space; d takes it.
  auto nodes =
      Nodes({Node("a", C::kDead, 1000, "z1"), Node("b", C::kUp, 1000, "z1"),
             Node("c", C::kUp, 50, "z2"), Node("d", C::kUp, 1000, "z1")});
  for (int i = 0; i < 20; ++i) {
    Plan p = PlanMoves({File("/f", {{"a", "b"}})}, nodes, g);
    ASSERT_EQ(p.moves.size(), 1u);
    EXPECT_EQ(p.moves[0].target_node, "d");
  }
  nodes["d"].free_bytes = 99;
  Plan p = PlanMoves({File("/f", {{"a", "b"}})}, nodes, g);
  EXPECT_TRUE(p.moves.empty());
  ASSERT_EQ(p.stuck.size(), 1u);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("free space for its 100 bytes"));
}

TEST(PlanMovesTest, PrefersANewZoneAndSpreadsByPlannedBytes) {
  absl::BitGen g;
  auto nodes =
      Nodes({Node("a", C::kDead, 1000, "z1"), Node("b", C::kUp, 1000, "z1"),
             Node("c", C::kUp, 1000, "z1"), Node("d", C::kUp, 250, "z2"),
             Node("e", C::kUp, 250, "z2")});
  std::vector<ns::FileEntry> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back(File("/f" + std::to_string(i), {{"a", "b"}}));
  }
  Plan p = PlanMoves(files, nodes, g);
  ASSERT_EQ(p.moves.size(), 4u);
  std::map<std::string, int> per;
  for (const Move& m : p.moves) ++per[m.target_node];
  // z2 is the other zone; its two nodes share the four moves (the planned
  // bytes count against their free space).
  EXPECT_EQ(per["d"], 2);
  EXPECT_EQ(per["e"], 2);
}

TEST(PlanMovesTest, SkipsFilesNotReadyAndInvalid) {
  absl::BitGen g;
  auto nodes =
      Nodes({Node("a", C::kDead), Node("b", C::kUp), Node("c", C::kUp)});
  ns::FileEntry importing = File("/i", {{"a", "b"}});
  importing.layout.set_state(v1::IMPORTING);
  ns::FileEntry invalid = File("/x", {{"a", "b"}});
  invalid.invalid = "bad record";
  EXPECT_TRUE(PlanMoves({importing, invalid}, nodes, g).moves.empty());
}

// Erasure-coded columns are no replicas: nothing is moved, repaired or
// reported stuck, even with a column on a dead node (not implemented yet).
TEST(PlanMovesTest, SkipsErasureCodedFiles) {
  absl::BitGen g;
  auto nodes = Nodes({Node("a", C::kDead), Node("b", C::kUp), Node("c", C::kUp),
                      Node("d", C::kUp)});
  ns::FileEntry f;
  f.path = "/ec";
  f.layout.set_state(v1::READY_EC);
  f.layout.set_size(1000);
  f.layout.set_checksum(v1::CRC32C_SIDECAR);
  f.layout.set_checksum_block_size(100);
  f.layout.mutable_striped()->set_stripe_unit(100);
  v1::ErasureCode* e = f.layout.mutable_striped()->mutable_erasure();
  e->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  e->set_data_columns(2);
  e->set_parity_columns(1);
  for (const char* col : {"a", "b", "c"}) {
    v1::Replica* r = f.layout.mutable_striped()->add_targets()->add_replicas();
    r->set_node_id(col);
    r->set_object(std::string("s/c") + col);
  }
  const Plan p = PlanMoves({f}, nodes, g);
  EXPECT_TRUE(p.moves.empty());
  EXPECT_TRUE(p.stuck.empty());
}

TEST(PlanMovesTest, StripedColumns) {
  absl::BitGen g;
  auto nodes =
      Nodes({Node("a", C::kDead), Node("b", C::kUp), Node("c", C::kUp)});
  ns::FileEntry f;
  f.path = "/s";
  f.layout.set_state(v1::READY);
  f.layout.set_size(1000);
  f.layout.mutable_striped()->set_stripe_unit(100);
  for (const char* col : {"b", "a"}) {
    v1::Replica* r = f.layout.mutable_striped()->add_targets()->add_replicas();
    r->set_node_id(col);
    r->set_object(std::string("/s/c") + col);
  }
  Plan p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 0u);  // column 1's only replica is dead
  ASSERT_EQ(p.stuck.size(), 1u);
  f.layout.mutable_striped()->mutable_targets(1)->add_replicas()->set_node_id(
      "b");
  f.layout.mutable_striped()
      ->mutable_targets(1)
      ->mutable_replicas(1)
      ->set_object("/s/ca");
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_TRUE(p.moves[0].striped);
  EXPECT_EQ(p.moves[0].slot, 1);
  EXPECT_EQ(p.moves[0].target_node, "c");
  EXPECT_EQ(p.moves[0].bytes, 500u);
  auto next = AddReplica(f.layout, p.moves[0]);
  ASSERT_THAT(next, IsOk());
  ASSERT_EQ(next->striped().targets(1).replicas_size(), 3);
  EXPECT_EQ(next->striped().targets(1).replicas(2).node_id(), "c");
  next = DropReplica(*next, p.moves[0]);
  ASSERT_THAT(next, IsOk());
  ASSERT_EQ(next->striped().targets(1).replicas_size(), 2);
  EXPECT_EQ(next->striped().targets(1).replicas(1).node_id(), "c");
}

TEST(PlanMovesTest, CorruptReplicaIsRepairedInPlaceAndNeverASource) {
  absl::BitGen g;
  NodeView a = Node("a", C::kUp);
  a.corrupt = {"/f/e0"};
  auto nodes = Nodes({a, Node("b", C::kUp), Node("c", C::kUp)});
  Plan p = PlanMoves({File("/f", {{"a", "b"}, {"a", "c"}})}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);  // /f/e1 on a is fine
  EXPECT_TRUE(p.moves[0].in_place);
  EXPECT_EQ(p.moves[0].slot, 0);
  EXPECT_EQ(p.moves[0].from_node, "a");
  EXPECT_EQ(p.moves[0].target_node, "a");
  EXPECT_EQ(p.moves[0].source_node, "b");
  // b dead, a's copy corrupt: nothing good to copy from.
  nodes["b"].condition = C::kDead;
  p = PlanMoves({File("/f", {{"a", "b"}})}, nodes, g);
  EXPECT_TRUE(p.moves.empty());
  ASSERT_EQ(p.stuck.size(), 1u);
  EXPECT_THAT(p.stuck[0].reason, HasSubstr("corrupt"));
}

TEST(AddDropReplicaTest, AddsThenRemovesAndRefusesAChangedLayout) {
  ns::FileEntry f = File("/f", {{"a", "b"}, {"b", "c"}});
  Move m;
  m.path = "/f";
  m.slot = 0;
  m.object = "/f/e0";
  m.from_node = "a";
  m.target_node = "d";
  // The second step before the first: nothing is marked leaving.
  EXPECT_THAT(DropReplica(f.layout, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // Step 1: the new replica joins the slot, the old one is marked leaving.
  auto added = AddReplica(f.layout, m);
  ASSERT_THAT(added, IsOk());
  ASSERT_EQ(added->extents(0).replicas_size(), 3);
  EXPECT_EQ(added->extents(0).replicas(0).node_id(), "a");
  EXPECT_TRUE(added->extents(0).replicas(0).leaving());
  EXPECT_EQ(added->extents(0).replicas(0).replaced_by(), "d");
  EXPECT_FALSE(added->extents(0).replicas(1).leaving());
  EXPECT_EQ(added->extents(0).replicas(2).node_id(), "d");
  EXPECT_EQ(added->extents(0).replicas(2).object(), "/f/e0");
  EXPECT_FALSE(added->extents(0).replicas(2).leaving());
  EXPECT_EQ(added->extents(1).SerializeAsString(),
            f.layout.extents(1).SerializeAsString());
  // Already applied (a lost reply, or someone else): refused.
  EXPECT_THAT(AddReplica(*added, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // Step 2: only the leaving replica goes.
  auto dropped = DropReplica(*added, m);
  ASSERT_THAT(dropped, IsOk());
  ASSERT_EQ(dropped->extents(0).replicas_size(), 2);
  EXPECT_EQ(dropped->extents(0).replicas(0).node_id(), "b");
  EXPECT_EQ(dropped->extents(0).replicas(1).node_id(), "d");
  EXPECT_THAT(DropReplica(*dropped, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // The new replica was removed meanwhile (an admin change): the old one
  // stays.
  v1::FileLayout no_target = *added;
  no_target.mutable_extents(0)->mutable_replicas()->RemoveLast();
  EXPECT_THAT(DropReplica(no_target, m),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("new replica")));
  // ...and counts again: its leaving mark is cleared (a later drop would
  // leave the slot a replica short).
  auto kept = UnmarkLeaving(no_target, m);
  ASSERT_THAT(kept, IsOk());
  ASSERT_EQ(kept->extents(0).replicas_size(), 2);
  EXPECT_EQ(kept->extents(0).replicas(0).node_id(), "a");
  EXPECT_FALSE(kept->extents(0).replicas(0).leaving());
  EXPECT_TRUE(kept->extents(0).replicas(0).replaced_by().empty());
  EXPECT_THAT(UnmarkLeaving(*kept, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // Not while the new replica is there: the drop applies.
  EXPECT_THAT(UnmarkLeaving(*added, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // A drop never empties a slot.
  Move d = m;
  d.drop = true;
  d.target_node.clear();
  v1::FileLayout alone = f.layout;
  alone.mutable_extents(0)->mutable_replicas()->RemoveLast();
  alone.mutable_extents(0)->mutable_replicas(0)->set_leaving(true);
  EXPECT_THAT(DropReplica(alone, d),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  m.target_node = "b";  // the slot already has a replica there
  EXPECT_THAT(AddReplica(f.layout, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  m.target_node = "d";
  m.slot = 5;
  EXPECT_THAT(AddReplica(f.layout, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(DropReplica(*added, m),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(AddDropReplicaTest, AFullSlotCannotTakeTheAddAndIsSwappedInOneStep) {
  // 8 replicas (ns::kMaxReplicas): the add step would make 9.
  ns::FileEntry f =
      File("/f", {{"a", "b", "c", "d", "e", "f", "g", "h"}, {"a", "b"}});
  for (v1::Extent& e : *f.layout.mutable_extents()) {
    for (v1::Replica& r : *e.mutable_replicas()) r.set_object("f/e0");
  }
  f.layout.mutable_extents(1)->mutable_replicas(0)->set_object("f/e1");
  f.layout.mutable_extents(1)->mutable_replicas(1)->set_object("f/e1");
  ASSERT_THAT(ns::ValidateLayout(f.layout), IsOk());
  Move m;
  m.path = "/f";
  m.slot = 0;
  m.object = "f/e0";
  m.from_node = "c";
  m.source_node = "a";
  m.target_node = "z";
  absl::Status fits = CheckAddFits(f.layout, m);
  EXPECT_TRUE(absl::IsInvalidArgument(fits)) << fits;
  EXPECT_THAT(fits.message(), HasSubstr("slot 0"));
  EXPECT_THAT(fits.message(), HasSubstr("9 replicas (max 8)"));
  auto swapped = SwapReplica(f.layout, m);
  ASSERT_THAT(swapped, IsOk());
  EXPECT_THAT(ns::ValidateLayout(*swapped), IsOk());
  const auto& reps = swapped->extents(0).replicas();
  ASSERT_EQ(reps.size(), 8);
  EXPECT_EQ(reps[2].node_id(), "z");
  EXPECT_EQ(reps[2].object(), "f/e0");
  EXPECT_FALSE(reps[2].leaving());
  EXPECT_FALSE(References(*swapped, "c", "f/e0"));
  // Slot 1 has room.
  m.slot = 1;
  m.object = "f/e1";
  m.from_node = "b";
  EXPECT_THAT(CheckAddFits(f.layout, m), IsOk());
  // Changed layouts are refused, as by AddReplica.
  m.from_node = "q";
  EXPECT_TRUE(absl::IsFailedPrecondition(CheckAddFits(f.layout, m)));
  EXPECT_TRUE(absl::IsFailedPrecondition(SwapReplica(f.layout, m).status()));
  m.from_node = "b";
  m.target_node = "a";
  EXPECT_TRUE(absl::IsFailedPrecondition(SwapReplica(f.layout, m).status()));
}

TEST(AddDropReplicaTest, ALayoutAtItsSizeLimitCannotTakeTheAdd) {
  // A layout that one more replica pushes over ns::kMaxLayoutBytes.
  ns::FileEntry f;
  f.path = "/big";
  f.layout.set_state(v1::READY);
  const std::string object(200, 'o');
  for (uint64_t i = 0; f.layout.ByteSizeLong() + 1000 < ns::kMaxLayoutBytes;
       ++i) {
    v1::Extent* e = f.layout.add_extents();
    e->set_offset(i);
    e->set_length(1);
    for (const char* n : {"a", "b"}) {
      v1::Replica* r = e->add_replicas();
      r->set_node_id(n);
      r->set_object(object);
      r->set_object_offset(i);
    }
    f.layout.set_size(i + 1);
  }
  Move m;
  m.path = "/big";
  m.slot = 0;
  m.object = object;
  m.from_node = "b";
  m.source_node = "a";
  m.target_node = "z";
  auto added = AddReplica(f.layout, m);
  ASSERT_THAT(added, IsOk());
  const size_t delta = added->ByteSizeLong() - f.layout.ByteSizeLong();
  // Pad the last extent's object name until the add no longer fits.
  v1::Replica* pad = f.layout.mutable_extents(f.layout.extents_size() - 1)
                         ->mutable_replicas(0);
  while (f.layout.ByteSizeLong() + delta <= ns::kMaxLayoutBytes) {
    pad->mutable_object()->append(pad->object().size() % 100 == 0 ? "/" : "x");
  }
  ASSERT_THAT(ns::ValidateLayout(f.layout), IsOk());
  absl::Status fits = CheckAddFits(f.layout, m);
  EXPECT_TRUE(absl::IsInvalidArgument(fits)) << fits;
  EXPECT_THAT(fits.message(), HasSubstr("layout encodes to"));
  auto swapped = SwapReplica(f.layout, m);
  ASSERT_THAT(swapped, IsOk());
  EXPECT_THAT(ns::ValidateLayout(*swapped), IsOk());
  EXPECT_EQ(swapped->extents(0).replicas(1).node_id(), "z");
}

// A slot left over-replicated by a move whose second step never happened
// (keeper killed, etcd outage): the leaving replica is dropped, not copied
// again, once the others are healthy.
TEST(PlanMovesTest, LeftOverLeavingReplicaIsDroppedNotCopied) {
  absl::BitGen g;
  auto nodes = Nodes({Node("a", C::kDraining), Node("b", C::kUp),
                      Node("c", C::kUp), Node("d", C::kUp)});
  ns::FileEntry f = File("/f", {{"a", "b", "c"}, {"b", "c"}});
  f.layout.mutable_extents(0)->mutable_replicas(0)->set_leaving(true);
  Plan p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_TRUE(p.stuck.empty());
  const Move& m = p.moves[0];
  EXPECT_TRUE(m.drop);
  EXPECT_FALSE(m.in_place);
  EXPECT_EQ(m.slot, 0);
  EXPECT_EQ(m.from_node, "a");
  EXPECT_EQ(m.object, "/f/e0");
  EXPECT_TRUE(m.target_node.empty());
  EXPECT_TRUE(m.source_node.empty());
  EXPECT_EQ(p.bytes, 0u);  // nothing to copy
  auto next = DropReplica(f.layout, m);
  ASSERT_THAT(next, IsOk());
  ASSERT_EQ(next->extents(0).replicas_size(), 2);
  EXPECT_EQ(next->extents(0).replicas(0).node_id(), "b");
  EXPECT_EQ(next->extents(0).replicas(1).node_id(), "c");

  // Leaving on an up node (a rebalancing move) or on a dead one: dropped.
  nodes["a"].condition = C::kUp;
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_TRUE(p.moves[0].drop);
  nodes["a"].condition = C::kDead;
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_TRUE(p.moves[0].drop);

  // The new replica's node died since: that one is replaced (the leaving
  // replica is no move's `from`), the drop waits for a later round.
  nodes["a"].condition = C::kDraining;
  nodes["c"].condition = C::kDead;
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 2u);  // slot 0 and slot 1 each lose c
  for (const Move& mv : p.moves) {
    EXPECT_FALSE(mv.drop);
    EXPECT_EQ(mv.from_node, "c");
    EXPECT_EQ(mv.target_node, "d");  // a holds slot 0; only d is up and free
  }

  // Corrupt non-leaving replica: repaired in place first, no drop yet.
  nodes["c"].condition = C::kUp;
  nodes["b"].corrupt = {"/f/e0"};
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_TRUE(p.moves[0].in_place);
  EXPECT_EQ(p.moves[0].from_node, "b");
  nodes["b"].corrupt.clear();

  // A corrupt leaving replica is dropped, not repaired.
  nodes["a"].corrupt = {"/f/e0"};
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_TRUE(p.moves[0].drop);

  // Three replicas without a mark (put with --replicas=3), one draining:
  // a copy, never a drop.
  nodes["a"].corrupt.clear();
  f.layout.mutable_extents(0)->mutable_replicas(0)->set_leaving(false);
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_FALSE(p.moves[0].drop);
  EXPECT_EQ(p.moves[0].from_node, "a");
  EXPECT_EQ(p.moves[0].target_node, "d");
}

// A leaving mark names its replacement (replaced_by): the drop a later
// round plans requires that replica, so a slot whose new replica was
// removed since keeps its count (the keeper clears the mark instead).
TEST(PlanMovesTest, ADropNeedsTheReplicaTheMarkNames) {
  absl::BitGen g;
  auto nodes = Nodes({Node("a", C::kDraining), Node("b", C::kUp),
                      Node("c", C::kUp), Node("d", C::kUp)});
  ns::FileEntry f = File("/f", {{"a", "b", "c"}, {"b", "c"}});
  v1::Replica* a = f.layout.mutable_extents(0)->mutable_replicas(0);
  a->set_leaving(true);
  a->set_replaced_by("c");
  Plan p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  Move m = p.moves[0];
  EXPECT_TRUE(m.drop);
  EXPECT_EQ(m.target_node, "c");
  EXPECT_THAT(DropReplica(f.layout, m), IsOk());
  // c's replica removed (an admin change): no drop, the mark goes.
  ns::FileEntry short_slot = File("/f", {{"a", "b"}, {"b", "c"}});
  *short_slot.layout.mutable_extents(0)->mutable_replicas(0) = *a;
  p = PlanMoves({short_slot}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  m = p.moves[0];
  EXPECT_THAT(DropReplica(short_slot.layout, m),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no longer has the new replica on c")));
  auto kept = UnmarkLeaving(short_slot.layout, m);
  ASSERT_THAT(kept, IsOk());
  EXPECT_FALSE(kept->extents(0).replicas(0).leaving());
  EXPECT_TRUE(kept->extents(0).replicas(0).replaced_by().empty());
  // A mark written without replaced_by is dropped as before.
  a->clear_replaced_by();
  p = PlanMoves({f}, nodes, g);
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_TRUE(p.moves[0].target_node.empty());
  EXPECT_THAT(DropReplica(f.layout, p.moves[0]), IsOk());
}

TEST(ReferencesTest, ExtentsAndStripes) {
  ns::FileEntry f = File("/f", {{"a", "b"}});
  EXPECT_TRUE(References(f.layout, "a", "/f/e0"));
  EXPECT_FALSE(References(f.layout, "c", "/f/e0"));
  EXPECT_FALSE(References(f.layout, "a", "/f/e1"));
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
