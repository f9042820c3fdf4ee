// File: xattrs.h
//
// The extended attributes rangefs-mount shows on files, so `getfattr -d`
// tells where a file's bytes live (like `lfs getstripe`):
//
//   user.rangefs.layout      the FileLayout as one line of JSON (proto
//                            field names, as `rangefs-admin dump` prints)
//   user.rangefs.generation  layout generation, decimal
//   user.rangefs.replicas    copies of every byte: the smallest replica
//                            count of any extent or stripe target
//   user.rangefs.nodes       the nodes holding a replica, comma-separated
//   user.rangefs.file_id     decimal
//
// Directories have none. Pure functions; thread-safe.
#ifndef RANGEFS_MOUNT_XATTRS_H_
#define RANGEFS_MOUNT_XATTRS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace mount {

// The names above, in that order.
const std::vector<std::string>& XattrNames();

// listxattr's answer: every name, each followed by a NUL.
std::string XattrList();

// The value of `name` for `layout`. NOT_FOUND for a name not listed above.
absl::StatusOr<std::string> XattrValue(absl::string_view name,
                                       const v1::FileLayout& layout);

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_XATTRS_H_
