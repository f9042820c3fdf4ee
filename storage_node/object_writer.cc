#include "storage_node/object_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace rangefs {
namespace node {
namespace {

// Writeback of what arrived starts every this many bytes.
constexpr uint64_t kWritebackBytes = 8 << 20;

absl::Status WriteFull(int fd, const char* p, size_t n,
                       absl::string_view what) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("write ", what));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectWriter>> ObjectWriter::Begin(
    const ExportRoot* root, std::string path, uint32_t block_size,
    bool direct) {
  RANGEFS_RETURN_IF_ERROR(ExportRoot::ValidateObjectPath(path));
  if (block_size < kMinBlockSize || block_size > kMaxBlockSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("object ", path, ": block_size ", block_size, " outside [",
                     kMinBlockSize, ", ", kMaxBlockSize, "]"));
  }
  RANGEFS_ASSIGN_OR_RETURN(TempFile obj, root->CreateTemp());
  std::unique_ptr<ObjectWriter> w(
      new ObjectWriter(root, std::move(path), std::move(obj), block_size));
  if (direct) {
    // A file system without O_DIRECT refuses the flag: stay buffered.
    const int flags = fcntl(w->obj_.fd.get(), F_GETFL);
    w->direct_ =
        flags >= 0 && fcntl(w->obj_.fd.get(), F_SETFL, flags | O_DIRECT) == 0;
  }
  return w;
}

void ObjectWriter::EndDirect() {
  if (!direct_) return;
  direct_ = false;
  const int flags = fcntl(obj_.fd.get(), F_GETFL);
  if (flags >= 0) (void)fcntl(obj_.fd.get(), F_SETFL, flags & ~O_DIRECT);
}

ObjectWriter::ObjectWriter(const ExportRoot* root, std::string path,
                           TempFile obj, uint32_t block_size)
    : root_(root),
      path_(std::move(path)),
      obj_(std::move(obj)),
      sum_(block_size) {}

ObjectWriter::~ObjectWriter() {
  if (!committed_) RemoveTemps();
}

void ObjectWriter::RemoveTemps() {
  for (const std::string* name : {&obj_.name, &side_name_}) {
    if (name->empty()) continue;
    absl::Status s = root_->RemoveTemp(*name);
    if (!s.ok()) RANGEFS_LOG(WARNING) << s;
  }
}

absl::Status ObjectWriter::Append(const char* p, size_t n) {
  const std::string what =
      absl::StrCat("object ", path_, " (temp ", obj_.name, ")");
  if (direct_ && (reinterpret_cast<uintptr_t>(p) % kDirectAlign != 0 ||
                  n % kDirectAlign != 0)) {
    EndDirect();  // The tail, or a caller's unaligned buffer.
  }
  if (direct_) {
    absl::Status s = WriteFull(obj_.fd.get(), p, n, what);
    if (s.ok()) {
      sum_.Update(p, n);
      return s;
    }
    // Refused (EINVAL) or cut short: write the whole append again
    // buffered at the same place, as the file is now.
    EndDirect();
    if (lseek(obj_.fd.get(), static_cast<off_t>(sum_.size()), SEEK_SET) < 0) {
      return ErrnoStatus(errno, absl::StrCat("seek ", what));
    }
  }
  RANGEFS_RETURN_IF_ERROR(WriteFull(obj_.fd.get(), p, n, what));
  sum_.Update(p, n);
  if (sum_.size() - writeback_from_ >= kWritebackBytes) {
    // Advisory: errors surface at fsync.
    (void)sync_file_range(obj_.fd.get(), static_cast<off_t>(writeback_from_),
                          static_cast<off_t>(sum_.size() - writeback_from_),
                          SYNC_FILE_RANGE_WRITE);
    writeback_from_ = sum_.size();
  }
  return absl::OkStatus();
}

absl::StatusOr<Checksums> ObjectWriter::Commit(
    bool overwrite,
    const std::function<absl::Status(const Checksums&)>& check) {
  if (committed_ || !obj_.fd.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("object ", path_, ": Commit called twice"));
  }
  if (fsync(obj_.fd.get()) != 0) {
    return ErrnoStatus(
        errno, absl::StrCat("fsync object ", path_, " (temp ", obj_.name, ")"));
  }
  obj_.fd.reset();
  const Checksums checksums = sum_.Finish();
  if (check) RANGEFS_RETURN_IF_ERROR(check(checksums));

  RANGEFS_ASSIGN_OR_RETURN(TempFile side, root_->CreateTemp());
  side_name_ = side.name;
  const std::string encoded = EncodeSidecar(checksums);
  RANGEFS_RETURN_IF_ERROR(WriteFull(side.fd.get(), encoded.data(),
                                    encoded.size(),
                                    absl::StrCat("sidecar of ", path_)));
  if (fsync(side.fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fsync sidecar of ", path_));
  }
  side.fd.reset();
  RANGEFS_RETURN_IF_ERROR(
      root_->CommitObject(obj_.name, side_name_, path_, overwrite));
  committed_ = true;
  return checksums;
}

}  // namespace node
}  // namespace rangefs
