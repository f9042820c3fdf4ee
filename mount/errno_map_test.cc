#include "mount/errno_map.h"

#include <errno.h>

#include "gtest/gtest.h"

namespace rangefs {
namespace mount {
namespace {

TEST(ErrnoMapTest, IssueMapping) {
  EXPECT_EQ(StatusToErrno(absl::OkStatus(), CallKind::kData), 0);
  EXPECT_EQ(StatusToErrno(absl::NotFoundError("x"), CallKind::kMetadata),
            ENOENT);
  EXPECT_EQ(StatusToErrno(absl::DataLossError("crc"), CallKind::kData), EIO);
  EXPECT_EQ(StatusToErrno(absl::DeadlineExceededError("t"), CallKind::kData),
            ETIMEDOUT);
  EXPECT_EQ(StatusToErrno(absl::UnavailableError("r"), CallKind::kData), EIO);
  EXPECT_EQ(StatusToErrno(absl::UnavailableError("e"), CallKind::kMetadata),
            EAGAIN);
  EXPECT_EQ(StatusToErrno(absl::AbortedError("changed"), CallKind::kData),
            ESTALE);
}

TEST(ErrnoMapTest, OtherCodes) {
  EXPECT_EQ(StatusToErrno(absl::InvalidArgumentError(""), CallKind::kData),
            EINVAL);
  EXPECT_EQ(
      StatusToErrno(absl::FailedPreconditionError(""), CallKind::kMetadata),
      EACCES);
  EXPECT_EQ(StatusToErrno(absl::PermissionDeniedError(""), CallKind::kData),
            EACCES);
  EXPECT_EQ(StatusToErrno(absl::ResourceExhaustedError(""), CallKind::kData),
            EAGAIN);
  EXPECT_EQ(StatusToErrno(absl::CancelledError(""), CallKind::kData), EINTR);
  EXPECT_EQ(StatusToErrno(absl::UnimplementedError(""), CallKind::kData),
            ENOSYS);
  EXPECT_EQ(StatusToErrno(absl::InternalError(""), CallKind::kData), EIO);
  EXPECT_EQ(StatusToErrno(absl::UnknownError(""), CallKind::kData), EIO);
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
