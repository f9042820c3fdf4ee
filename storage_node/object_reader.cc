#include "storage_node/object_reader.h"

#include <errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/errno_status.h"
#include "base/status_macros.h"

namespace rangefs {
namespace node {

absl::StatusOr<ObjectReader> ObjectReader::Open(const ExportRoot& root,
                                                std::string path,
                                                uint64_t offset,
                                                uint64_t length) {
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd fd, root.OpenForRead(path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat object ", path));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset > size) {
    return absl::OutOfRangeError(absl::StrCat("read of ", path, " at offset ",
                                              offset, " past its end (size ",
                                              size, ")"));
  }
  const uint64_t end = offset + std::min(length, size - offset);
  return ObjectReader(&root, std::move(path), std::move(fd), size, offset, end);
}

absl::StatusOr<Checksums> ObjectReader::LoadChecksums() const {
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd sfd, root_->OpenSidecarForRead(path_));
  RANGEFS_ASSIGN_OR_RETURN(Checksums c, ReadSidecar(sfd.get(), path_));
  if (c.object_size != size_) {
    return absl::DataLossError(absl::StrCat("object ", path_, " is ", size_,
                                            " bytes, its sidecar says ",
                                            c.object_size));
  }
  return c;
}

absl::StatusOr<Checksums> ObjectReader::LoadChecksumsForVerify() const {
  absl::StatusOr<Checksums> c = LoadChecksums();
  if (absl::IsNotFound(c.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "object ", path_, " has no checksums; cannot read with verify"));
  }
  return c;
}

absl::Status ObjectReader::Pread(char* p, size_t n, uint64_t off) const {
  return PreadFull(fd_.get(), p, n, off, path_);
}

absl::StatusOr<absl::string_view> ObjectReader::ReadVerifiedBlock(
    const Checksums& sums, uint64_t b, std::string* buf) const {
  const uint64_t bstart = b * sums.block_size;
  const uint64_t bend = std::min(bstart + sums.block_size, size_);
  const size_t blen = static_cast<size_t>(bend - bstart);
  if (buf->size() < blen) buf->resize(blen);
  RANGEFS_RETURN_IF_ERROR(Pread(&(*buf)[0], blen, bstart));
  const uint32_t crc = Crc32cExtend(0, buf->data(), blen);
  const uint32_t stored = sums.block_crc32c[b];
  if (crc != stored) {
    return absl::DataLossError(
        absl::StrCat("object ", path_, " block ", b, " (bytes ", bstart, "..",
                     bend, ") has crc32c ", absl::Hex(crc),
                     ", its sidecar says ", absl::Hex(stored)));
  }
  return absl::string_view(buf->data(), blen);
}

}  // namespace node
}  // namespace rangefs
