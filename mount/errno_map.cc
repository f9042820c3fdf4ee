#include "mount/errno_map.h"

#include <errno.h>

namespace rangefs {
namespace mount {

int StatusToErrno(const absl::Status& status, CallKind kind) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kNotFound:
      return ENOENT;
    case absl::StatusCode::kDataLoss:
      return EIO;
    case absl::StatusCode::kDeadlineExceeded:
      return ETIMEDOUT;
    case absl::StatusCode::kUnavailable:
      return kind == CallKind::kData ? EIO : EAGAIN;
    case absl::StatusCode::kAborted:
      return ESTALE;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return EINVAL;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return EACCES;
    case absl::StatusCode::kResourceExhausted:
      return EAGAIN;
    case absl::StatusCode::kCancelled:
      return EINTR;
    case absl::StatusCode::kUnimplemented:
      return ENOSYS;
    default:
      return EIO;
  }
}

}  // namespace mount
}  // namespace rangefs
