#include "loadbalancer/types.h"

namespace rangefs {
namespace lb {

absl::string_view AdminStateName(AdminState state) {
  switch (state) {
    case AdminState::kActive:
      return "active";
    case AdminState::kDraining:
      return "draining";
    case AdminState::kDisabled:
      return "disabled";
  }
  return "unknown";
}

}  // namespace lb
}  // namespace rangefs
