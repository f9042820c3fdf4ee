#include "base/errno_status.h"

#include <errno.h>
#include <string.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace rangefs {

namespace {

absl::StatusCode CodeForErrno(int e) {
  switch (e) {
    case 0:
      return absl::StatusCode::kOk;
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
    case EXDEV:
    case EISDIR:
    case EBADF:
      return absl::StatusCode::kInvalidArgument;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EAGAIN:
      return absl::StatusCode::kResourceExhausted;
    case ETIMEDOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case ENOSYS:
    case EOPNOTSUPP:
      return absl::StatusCode::kUnimplemented;
    case EINTR:
    case ECANCELED:
      return absl::StatusCode::kCancelled;
    case EIO:
    case ESTALE:
    case ENXIO:
    case ENODEV:
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EPIPE:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kUnknown;
  }
}

}  // namespace

absl::Status ErrnoStatus(int errno_value, absl::string_view what) {
  if (errno_value == 0) return absl::OkStatus();
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be `buf`.
  const char* text = strerror_r(errno_value, buf, sizeof(buf));
  return absl::Status(
      CodeForErrno(errno_value),
      absl::StrCat(what, ": ", text, " (errno ", errno_value, ")"));
}

}  // namespace rangefs
