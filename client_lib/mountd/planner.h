// File: planner.h
//
// The pure half of rangefs-mountd: which node exports should be mounted
// (from node records) and what to do to get there from the mounts that
// exist. No I/O, no clock; unit-tested in planner_test.cc.
//
//   std::vector<DesiredMount> want = DesiredMounts(records, "/mnt/rangefs",
//                                                  source_fn, &skipped);
//   for (const Action& a : Plan(want, current)) ...
//
// Rules: ACTIVE and DRAINING nodes are mounted (a draining node still holds
// the data that layouts point at until it is removed); DISABLED nodes,
// nodes with no admin state and removed nodes are unmounted. A mount whose
// source changed (new export path or address) is unmounted, then mounted
// again. Node ids that are not a safe single path component are skipped.
#ifndef RANGEFS_CLIENT_LIB_MOUNTD_PLANNER_H_
#define RANGEFS_CLIENT_LIB_MOUNTD_PLANNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace mountd {

// A node export that should be mounted.
struct DesiredMount {
  std::string node_id;
  std::string source;  // mounter-specific: "host:/export" or a local dir
  std::string target;  // <mount_root>/<node_id>
};

// A mount that exists now.
struct CurrentMount {
  std::string node_id;
  std::string target;
  // What it was mounted from, if known (mounts made by this process);
  // "" = unknown (found in mountinfo at startup), taken as up to date.
  std::string source;
};

enum class ActionKind { kMount, kUnmount };

struct Action {
  ActionKind kind = ActionKind::kMount;
  std::string node_id;
  std::string target;
  std::string source;  // kMount only
  std::string reason;  // "new node", "node disabled or removed", ...

  bool operator==(const Action& o) const {
    return kind == o.kind && node_id == o.node_id && target == o.target &&
           source == o.source;
  }
};

// True if `id` can name a directory under mount_root: non-empty, at most
// 255 bytes, no '/', no NUL, does not start with '.'.
bool IsSafeNodeId(absl::string_view id);

// Maps a node record to its mount source; an error skips the node.
using SourceFn =
    std::function<absl::StatusOr<std::string>(const v1::NodeRecord&)>;

// The mounts that node records ask for. Nodes that are skipped (bad id, no
// source) are described in `skipped` (may be null).
std::vector<DesiredMount> DesiredMounts(
    const std::vector<v1::NodeRecord>& nodes, absl::string_view mount_root,
    const SourceFn& source_fn, std::vector<std::string>* skipped);

// The actions that turn `current` into `desired`: unmounts first, then
// mounts, each group sorted by node id.
std::vector<Action> Plan(const std::vector<DesiredMount>& desired,
                         const std::vector<CurrentMount>& current);

}  // namespace mountd
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_MOUNTD_PLANNER_H_
