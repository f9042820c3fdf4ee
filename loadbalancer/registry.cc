#include "loadbalancer/registry.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "loadbalancer/least_loaded.h"
#include "loadbalancer/round_robin.h"
#include "loadbalancer/sticky.h"

namespace rangefs {
namespace lb {

std::vector<absl::string_view> PolicyNames() {
  return {"round_robin", "least_loaded", "sticky"};
}

absl::StatusOr<std::unique_ptr<Policy>> NewPolicy(absl::string_view name) {
  if (name == "round_robin") return NewRoundRobinPolicy();
  if (name == "least_loaded") return NewLeastLoadedPolicy();
  if (name == "sticky") return NewStickyPolicy();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown load-balancing policy \"", name,
                   "\"; valid policies: ", absl::StrJoin(PolicyNames(), ", ")));
}

}  // namespace lb
}  // namespace rangefs
