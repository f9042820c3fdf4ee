// File: registry.h
//
// Builds a replica-choice Policy by name (ClientOptions::lb_policy).
#ifndef RANGEFS_LOADBALANCER_REGISTRY_H_
#define RANGEFS_LOADBALANCER_REGISTRY_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "loadbalancer/picker.h"

namespace rangefs {
namespace lb {

// Returns the valid policy names: "round_robin", "least_loaded", "sticky".
std::vector<absl::string_view> PolicyNames();

// Returns a new Policy with default options for `name` (one of
// PolicyNames()). INVALID_ARGUMENT naming the bad name and listing the valid
// ones otherwise.
absl::StatusOr<std::unique_ptr<Policy>> NewPolicy(absl::string_view name);

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_REGISTRY_H_
