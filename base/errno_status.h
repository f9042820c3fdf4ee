// File: errno_status.h
//
// The one place where errno values become absl::Status. Messages say what
// failed and where: ErrnoStatus(errno, "pread /mnt/rangefs/n1/obj at 4096").
#ifndef RANGEFS_BASE_ERRNO_STATUS_H_
#define RANGEFS_BASE_ERRNO_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rangefs {

// Returns a Status whose code fits `errno_value` (ENOENT -> NOT_FOUND,
// EACCES -> PERMISSION_DENIED, EIO/ESTALE -> UNAVAILABLE because another
// replica may still serve, ...) and whose message is
// "<what>: <strerror> (errno N)". Returns OK for 0.
absl::Status ErrnoStatus(int errno_value, absl::string_view what);

}  // namespace rangefs

#endif  // RANGEFS_BASE_ERRNO_STATUS_H_
