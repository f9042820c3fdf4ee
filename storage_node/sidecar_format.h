// File: sidecar_format.h
//
// The naming of checksum sidecars, shared by the node (export_root.h writes
// and serves them) and the client (which reads them over a mount). The
// sidecar's byte format is in sidecar.h. Nothing here is server-side: the
// client links this target, never export_root.
//
//   node::SidecarPathFor("a/b/part-1")  // "a/b/.part-1.rangefs-crc"
#ifndef RANGEFS_STORAGE_NODE_SIDECAR_FORMAT_H_
#define RANGEFS_STORAGE_NODE_SIDECAR_FORMAT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace rangefs {
namespace node {

inline constexpr char kSidecarSuffix[] = ".rangefs-crc";

// The one place that spells sidecar names: "a/b/c" -> "a/b/.c.rangefs-crc".
// `object_path` must be valid (export_root.h's ValidateObjectPath).
std::string SidecarPathFor(absl::string_view object_path);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_SIDECAR_FORMAT_H_
