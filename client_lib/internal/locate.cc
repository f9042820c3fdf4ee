// ClientImpl::Locate: where the bytes of a range live, in the order a read
// would try the replicas (Dispatch: this host's node if healthy, then the
// healthy candidates, the others only as a last resort). Reads the layout cache
// and the node table only.
#include "client_lib/locate.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "client_lib/internal/client_impl.h"
#include "client_lib/internal/local_node.h"
#include "namespace/cached_layout.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"

namespace rangefs {
namespace client_internal {
namespace {

bool SameNodes(const std::vector<ReplicaLocation>& a,
               const std::vector<ReplicaLocation>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].node != b[i].node) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<RangeLocation>> ClientImpl::Locate(
    absl::string_view path, uint64_t offset, uint64_t length) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           cache_->Lookup(path));
  const v1::FileLayout& layout = l->header;
  if (!ns::IsReady(layout)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is not ready (state ", ns::FileStateName(layout.state()), ")"));
  }
  if (offset > layout.size()) {
    return absl::OutOfRangeError(absl::StrCat("locate at ", offset,
                                              " past the end of ", path,
                                              " (size ", layout.size(), ")"));
  }
  length = std::min(length, layout.size() - offset);  // no overflow below
  std::vector<RangeLocation> out;
  RANGEFS_ASSIGN_OR_RETURN(ns::MappedRange m,
                           ns::MapRange(*l, offset, length, 0));
  for (const ns::Piece& p : m.pieces) {
    std::vector<ReplicaLocation> healthy, other;
    for (const v1::Replica& r : *p.replicas) {
      NodeRuntime* n = Node(r.node_id());
      ReplicaLocation loc{.node = r.node_id(), .addresses = n->addresses()};
      for (const std::string& a : loc.addresses) {
        std::string host = HostOfAddress(a);
        if (std::find(loc.hosts.begin(), loc.hosts.end(), host) ==
            loc.hosts.end()) {
          loc.hosts.push_back(std::move(host));
        }
      }
      loc.healthy = Admissible(n);
      if (loc.healthy && n->local()) {  // Dispatch prefers it
        healthy.insert(healthy.begin(), std::move(loc));
      } else {
        (loc.healthy ? healthy : other).push_back(std::move(loc));
      }
    }
    for (ReplicaLocation& r : other) healthy.push_back(std::move(r));
    if (!out.empty() && out.back().offset + out.back().length == p.offset &&
        SameNodes(out.back().replicas, healthy)) {
      out.back().length += p.length;  // same replicas: one range
      continue;
    }
    out.push_back(RangeLocation{.offset = p.offset,
                                .length = p.length,
                                .replicas = std::move(healthy)});
  }
  return out;
}

}  // namespace client_internal
}  // namespace rangefs
