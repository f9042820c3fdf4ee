// File: round_robin.h
//
// "round_robin": the baseline policy. One atomic counter per Policy object
// (the client keeps one Policy per process, so in practice a process-wide
// counter) rotates over the candidates: pick i uses counter % size. All
// Pickers of one Policy share the counter, so consecutive batches continue
// the rotation. Ignores load, latency and stream_key.
#ifndef RANGEFS_LOADBALANCER_ROUND_ROBIN_H_
#define RANGEFS_LOADBALANCER_ROUND_ROBIN_H_

#include <memory>

#include "loadbalancer/picker.h"

namespace rangefs {
namespace lb {

// Returns a new round-robin Policy. Never null.
std::unique_ptr<Policy> NewRoundRobinPolicy();

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_ROUND_ROBIN_H_
