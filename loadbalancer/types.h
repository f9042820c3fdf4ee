// File: types.h
//
// Small value types shared by the loadbalancer libraries (pickers, the node
// health table and placement).
#ifndef RANGEFS_LOADBALANCER_TYPES_H_
#define RANGEFS_LOADBALANCER_TYPES_H_

#include <string>

#include "absl/strings/string_view.h"

namespace rangefs {
namespace lb {

// A storage node's id as registered in etcd
// (`/rangefs/v1/<cluster>/nodes/<id>`).
using NodeId = std::string;

// The admin state of a node (its etcd node record, set by rangefs-admin).
enum class AdminState {
  kActive,    // serves reads, receives new data
  kDraining,  // no new reads and no new data; in-flight reads finish
  kDisabled,  // out of service
};

// Returns "active", "draining" or "disabled".
absl::string_view AdminStateName(AdminState state);

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_TYPES_H_
