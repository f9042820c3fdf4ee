// File: layout_goal.h
//
// The protection a file should have: N full replicas of every extent or
// column, or an erasure code RS(k, m) over a striped layout. Storage
// policies (issue 36) resolve to a goal per file; the keeper converts a
// file whose layout does not meet its goal. Pure functions; thread-safe.
//
//   absl::StatusOr<LayoutGoal> g = ParseLayoutGoal("ec=6+3");
//   if (!LayoutMeetsGoal(layout, *g)) { /* convert */ }
#ifndef RANGEFS_NAMESPACE_LAYOUT_GOAL_H_
#define RANGEFS_NAMESPACE_LAYOUT_GOAL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

// Exactly one of `replicas` and (`ec_k`, `ec_m`) is set.
struct LayoutGoal {
  int replicas = 0;  // > 0: no erasure code, this many replicas per slot
  int ec_k = 0;      // > 0 with ec_m > 0: RS(ec_k, ec_m), one copy per cell
  int ec_m = 0;

  static LayoutGoal Replicas(int n) { return LayoutGoal{.replicas = n}; }
  static LayoutGoal Ec(int k, int m) {
    return LayoutGoal{.ec_k = k, .ec_m = m};
  }
  bool is_ec() const { return ec_k > 0; }
  // "replicas=2" or "ec=6+3".
  std::string ToString() const;

  friend bool operator==(const LayoutGoal& a, const LayoutGoal& b) {
    return a.replicas == b.replicas && a.ec_k == b.ec_k && a.ec_m == b.ec_m;
  }
  friend bool operator!=(const LayoutGoal& a, const LayoutGoal& b) {
    return !(a == b);
  }
};

// Parses ToString()'s form; INVALID_ARGUMENT naming the text otherwise
// (replicas in [1, 16], k >= 1, m >= 1, k + m <= kMaxEcCellsPerRow).
absl::StatusOr<LayoutGoal> ParseLayoutGoal(absl::string_view text);

// True if `layout` already has the goal's shape: for an erasure code, a
// striped layout with erasure {k, m}; for replicas, no erasure code and
// every extent or striped target holding exactly `replicas` replicas that
// are not leaving. Conversions in progress (extra or leaving replicas) do
// not meet it.
bool LayoutMeetsGoal(const ::rangefs::v1::FileLayout& layout,
                     const LayoutGoal& goal);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_LAYOUT_GOAL_H_
