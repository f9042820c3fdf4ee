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
//   user.rangefs.policy      the storage policy the file is under
//                            (namespace/storage_policy.h), e.g. "ec=6+3
//                            from /crawl, min-age 24h"; "none"
//   user.rangefs.policy_state  whether its layout meets it yet: "met",
//                            "pending" (rangefs-keeper has yet to convert
//                            it), "exempt (below min-size N)", "exempt
//                            (younger than min-age D)"; "none"
//
// Directories have none. Pure functions; thread-safe.
#ifndef RANGEFS_MOUNT_XATTRS_H_
#define RANGEFS_MOUNT_XATTRS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "namespace/storage_policy.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace mount {

// The names above, in that order.
const std::vector<std::string>& XattrNames();

// listxattr's answer: every name, each followed by a NUL.
std::string XattrList();

// True for the names whose value needs the file's policy resolution.
bool IsPolicyXattr(absl::string_view name);

// The value of `name` for `layout`; `policy` is the file's resolution
// (ns::ResolvePolicy), needed for IsPolicyXattr names only (null: "none").
// NOT_FOUND for a name not listed above.
absl::StatusOr<std::string> XattrValue(
    absl::string_view name, const v1::FileLayout& layout,
    const ns::PolicyResolution* policy = nullptr);

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_XATTRS_H_
