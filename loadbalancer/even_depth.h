// File: even_depth.h
//
// Which held-back piece of a call goes next when its in-flight cap
// (ReadOptions::max_in_flight) lets one go: the earliest waiting piece of
// the node with the fewest reads in flight. Plain order piles a capped
// call's reads on whichever nodes happen to be slow: each read that ends
// hands its slot to the next piece, whose node is random (random offsets,
// striping), so a node's depth wanders anywhere from 0 to the whole cap
// (measured over 4 NFS servers, 32 reads held: a server had no read 12% of
// the time and 2 or fewer 26%, and 12 or more 25%; tests/bench/RESULTS.md),
// and a server with none or few idles its link while another queues.
// Taking the shallowest node's piece keeps each node near cap / nodes, as
// a reader per node would. The pieces a deep node leaves behind stay first
// in line, so the scan passes them to find the other nodes' pieces; it
// stops once it has seen every node the call knows, and after
// kEvenDepthScan pieces at most.
//
//   size_t k = lb::PickShallowest(waiting, nodes, [&](size_t k) {
//     return lb::PieceLoad{node_of(k), inflight_of(node_of(k))};
//   });  // k: 0 is the next in order
#ifndef RANGEFS_LOADBALANCER_EVEN_DEPTH_H_
#define RANGEFS_LOADBALANCER_EVEN_DEPTH_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"

namespace rangefs {
namespace lb {

// The most waiting pieces one pick looks at.
inline constexpr size_t kEvenDepthScan = 256;

// A waiting piece's node (any key; equal for pieces of one node) and its
// reads in flight. A negative load: a piece to take at once (done already,
// or no node to weigh).
struct PieceLoad {
  const void* node = nullptr;
  int64_t load = 0;
};

// Of `waiting` pieces in the call's order (`at(k)`: piece k's, 0 the next
// in order), returns the position of the earliest piece of the least
// loaded node, scanning min(waiting, kEvenDepthScan) pieces at most and
// stopping once `nodes` distinct nodes were seen (0: no such stop).
// `waiting` must be > 0.
size_t PickShallowest(size_t waiting, size_t nodes,
                      absl::FunctionRef<PieceLoad(size_t k)> at);

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_EVEN_DEPTH_H_
