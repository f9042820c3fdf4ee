// File: at_risk.h
//
// What a round sees at risk while a node is missing (planner.h: no live
// record, not yet dead_after; nothing moves yet): the files with a slot
// that has a replica on a missing node, those slots' bytes (an extent's
// length; a stripe column's bytes exactly, from size, stripe unit and
// width), and when healing starts (the earliest missing node's
// missing_since + dead_after). Pure functions, no I/O.
//
//   AtRisk r = CountAtRisk(files, views);
//   absl::Time heal = HealStarts(missing_since, views, dead_after);
#ifndef RANGEFS_KEEPER_AT_RISK_H_
#define RANGEFS_KEEPER_AT_RISK_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "namespace/store.h"
#include "repair/planner.h"

namespace rangefs {
namespace keeper {

struct AtRisk {
  int files = 0;
  uint64_t bytes = 0;
};

// Files of `files` (invalid entries skipped) with a slot that has a
// replica on a node whose view in `nodes` is kMissing; each slot counted
// once, whatever its number of missing replicas.
AtRisk CountAtRisk(const std::vector<ns::FileEntry>& files,
                   const std::map<std::string, NodeView>& nodes);

// The earliest missing_since[id] + dead_after over the kMissing nodes of
// `nodes` (a missing node without an entry counts from `now`);
// absl::InfiniteFuture() when none is missing.
absl::Time HealStarts(const std::map<std::string, absl::Time>& missing_since,
                      const std::map<std::string, NodeView>& nodes,
                      absl::Duration dead_after, absl::Time now);

// Bytes of stripe column `t` of a file of `size` bytes striped in units of
// `unit` over `width` columns (unit k lives on column k % width).
uint64_t StripeColumnBytes(uint64_t size, uint64_t unit, uint64_t width,
                           uint64_t t);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_AT_RISK_H_
