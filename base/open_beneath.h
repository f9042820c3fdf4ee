// File: open_beneath.h
//
// Opens a file strictly beneath a directory, whatever the relative path or
// the directory's contents say: no "..", no absolute path, no symlink (not
// even one that stays inside), no magic link. The client's mount path uses
// it so that neither a layout nor a file planted in an export can make it
// read outside the node's mount.
//
//   RANGEFS_ASSIGN_OR_RETURN(int fd,
//       OpenBeneath("/mnt/rangefs/n1", "crawl/seg-1", O_RDONLY));
//
// openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS relative to an O_PATH fd of `dir`; on kernels
// without openat2 (ENOSYS, Linux < 5.6), a walk that opens each component
// with O_NOFOLLOW (directories as O_PATH). Both refuse the same things.
// The directory `dir` itself is opened normally (it is local configuration).
//
// Errors: INVALID_ARGUMENT for a relative path that is empty, absolute or
// has empty, "." or ".." components (checked before any syscall);
// PERMISSION_DENIED naming the path when resolution meets a symlink or
// would leave `dir`; otherwise errno as ErrnoStatus (NOT_FOUND, ...).
// The returned fd is O_CLOEXEC and owned by the caller. Blocks as long as
// the file system does (a hung mount blocks it). Thread-safe.
#ifndef RANGEFS_BASE_OPEN_BENEATH_H_
#define RANGEFS_BASE_OPEN_BENEATH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {

absl::StatusOr<int> OpenBeneath(const std::string& dir,
                                absl::string_view relative, int flags);

// The fallback walk alone (what OpenBeneath uses without openat2), for
// tests and for callers that want it.
absl::StatusOr<int> OpenBeneathByWalk(const std::string& dir,
                                      absl::string_view relative, int flags);

}  // namespace rangefs

#endif  // RANGEFS_BASE_OPEN_BENEATH_H_
