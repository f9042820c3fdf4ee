// File: rebalance.h
//
// Rebalancing moves: when nodes were added or used space is skewed, moves
// replicas from the fullest up node to the emptiest until every up node's
// fill (bytes referenced by layouts / capacity) is within `tolerance` of
// the mean fill. Pure; rangefs-keeper asks for these only in a round with
// no repair to do. A move never overshoots: the target stays under its
// upper bound and the source above its lower bound, so rounds do not
// ping-pong when slots are coarse. The target holds no replica of the slot
// and, when the slot's other replicas are in other zones, is in a zone
// they do not use or in the source's zone.
//
//   std::vector<Move> moves = PlanRebalance(files, nodes, {.tolerance = 0.1});
#ifndef RANGEFS_REPAIR_REBALANCE_H_
#define RANGEFS_REPAIR_REBALANCE_H_

#include <map>
#include <string>
#include <vector>

#include "namespace/store.h"
#include "repair/planner.h"

namespace rangefs {
namespace keeper {

struct RebalanceOptions {
  double tolerance = 0.10;  // <= 0: no rebalancing.
  int max_moves = 8;        // Per round.
};

// Fill of each up node: bytes of the slots it holds a replica of, and its
// capacity (NodeView.capacity_bytes; if any up node reports none, every
// node counts 1, so bytes are balanced).
struct NodeFill {
  uint64_t used = 0;
  uint64_t capacity = 1;
};
std::map<std::string, NodeFill> FillOfUpNodes(
    const std::vector<ns::FileEntry>& files,
    const std::map<std::string, NodeView>& nodes);

std::vector<Move> PlanRebalance(const std::vector<ns::FileEntry>& files,
                                const std::map<std::string, NodeView>& nodes,
                                const RebalanceOptions& options);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_REPAIR_REBALANCE_H_
