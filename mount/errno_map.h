// File: errno_map.h
//
// The one place rangefs-mount turns an absl::Status into the errno a FUSE
// reply carries. Pure functions; thread-safe.
//
//   NOT_FOUND          ENOENT
//   DATA_LOSS          EIO      (checksum or size mismatch on every replica)
//   DEADLINE_EXCEEDED  ETIMEDOUT
//   UNAVAILABLE        EIO for reads; EAGAIN for metadata calls (open,
//                      getxattr), which the caller can simply retry
//   ABORTED            ESTALE   (the file changed under an open handle)
//   INVALID_ARGUMENT   EINVAL
//   OUT_OF_RANGE       EINVAL   (a read past the end is answered with 0
//                      bytes before it gets here)
//   FAILED_PRECONDITION EACCES  (e.g. a file still importing)
//   PERMISSION_DENIED, UNAUTHENTICATED  EACCES
//   RESOURCE_EXHAUSTED EAGAIN
//   CANCELLED          EINTR
//   UNIMPLEMENTED      ENOSYS
//   anything else      EIO
#ifndef RANGEFS_MOUNT_ERRNO_MAP_H_
#define RANGEFS_MOUNT_ERRNO_MAP_H_

#include "absl/status/status.h"

namespace rangefs {
namespace mount {

enum class CallKind { kData, kMetadata };

// Returns the positive errno for a non-OK status (0 for OK).
int StatusToErrno(const absl::Status& status, CallKind kind);

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_ERRNO_MAP_H_
