#include "ingest/follow_policy.h"

#include <optional>

namespace rangefs {
namespace ingest {

std::string FollowPolicy(const ns::PolicyTable& policies,
                         absl::string_view path, uint64_t size, absl::Time now,
                         IngestOptions& o) {
  // A file being put is created now.
  const ns::PolicyResolution r =
      ns::ResolvePolicy(policies, path, size, now, now);
  if (!r.goal.has_value()) return "";
  if (r.goal->is_ec()) {
    o.ec_data = r.goal->ec_k;
    o.ec_parity = r.goal->ec_m;
  } else {
    o.replicas = r.goal->replicas;
    o.ec_data = 0;
    o.ec_parity = 0;
  }
  return r.policy->dir;
}

}  // namespace ingest
}  // namespace rangefs
