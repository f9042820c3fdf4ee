#include "client_lib/mountd/planner.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace mountd {

bool IsSafeNodeId(absl::string_view id) {
  if (id.empty() || id.size() > 255 || id[0] == '.') return false;
  return id.find('/') == absl::string_view::npos &&
         id.find('\0') == absl::string_view::npos;
}

std::vector<DesiredMount> DesiredMounts(
    const std::vector<v1::NodeRecord>& nodes, absl::string_view mount_root,
    const SourceFn& source_fn, std::vector<std::string>* skipped) {
  std::vector<DesiredMount> out;
  std::string root(mount_root);
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  for (const v1::NodeRecord& n : nodes) {
    if (n.admin_state() != v1::ACTIVE && n.admin_state() != v1::DRAINING) {
      continue;
    }
    if (!IsSafeNodeId(n.id())) {
      if (skipped) {
        skipped->push_back(absl::StrCat("node id \"", n.id(),
                                        "\" is not a safe directory name"));
      }
      continue;
    }
    absl::StatusOr<std::string> source = source_fn(n);
    if (!source.ok()) {
      if (skipped) {
        skipped->push_back(
            absl::StrCat("node ", n.id(), ": ", source.status().message()));
      }
      continue;
    }
    out.push_back({n.id(), *source, absl::StrCat(root, "/", n.id())});
  }
  return out;
}

std::vector<Action> Plan(const std::vector<DesiredMount>& desired,
                         const std::vector<CurrentMount>& current) {
  std::map<std::string, const DesiredMount*> want;
  for (const DesiredMount& d : desired) want[d.node_id] = &d;
  std::map<std::string, const CurrentMount*> have;
  for (const CurrentMount& c : current) have[c.node_id] = &c;

  std::vector<Action> unmounts, mounts;
  for (const auto& [id, c] : have) {
    auto it = want.find(id);
    if (it == want.end()) {
      unmounts.push_back({ActionKind::kUnmount, id, c->target, "",
                          "node disabled or removed"});
      continue;
    }
    const DesiredMount& d = *it->second;
    if (c->target != d.target) {
      unmounts.push_back(
          {ActionKind::kUnmount, id, c->target, "", "mount path changed"});
      mounts.push_back(
          {ActionKind::kMount, id, d.target, d.source, "mount path changed"});
    } else if (!c->source.empty() && c->source != d.source) {
      unmounts.push_back({ActionKind::kUnmount, id, c->target, "",
                          absl::StrCat("source changed from ", c->source)});
      mounts.push_back({ActionKind::kMount, id, d.target, d.source,
                        absl::StrCat("source changed from ", c->source)});
    }
  }
  for (const auto& [id, d] : want) {
    if (have.count(id) == 0) {
      mounts.push_back(
          {ActionKind::kMount, id, d->target, d->source, "not mounted"});
    }
  }
  std::vector<Action> out = std::move(unmounts);
  out.insert(out.end(), mounts.begin(), mounts.end());
  return out;
}

}  // namespace mountd
}  // namespace rangefs
