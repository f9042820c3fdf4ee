#include "storage_node/sidecar.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/errno_status.h"

namespace rangefs {
namespace node {
namespace {

constexpr char kMagic[8] = {'R', 'F', 'S', 'C', 'R', 'C', '0', '1'};
constexpr size_t kHeaderBytes = 24;

void Put32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}
void Put64(std::string* out, uint64_t v) {
  Put32(out, static_cast<uint32_t>(v));
  Put32(out, static_cast<uint32_t>(v >> 32));
}
uint32_t Get32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}
uint64_t Get64(const char* p) {
  return Get32(p) | (uint64_t{Get32(p + 4)} << 32);
}

}  // namespace

std::string EncodeSidecar(const Checksums& c) {
  std::string out(kMagic, sizeof(kMagic));
  Put32(&out, c.block_size);
  Put32(&out, c.crc32c);
  Put64(&out, c.object_size);
  for (uint32_t b : c.block_crc32c) Put32(&out, b);
  Put32(&out, Crc32c(out));
  return out;
}

absl::StatusOr<Checksums> DecodeSidecar(absl::string_view data) {
  if (data.size() < kHeaderBytes + 4 ||
      memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(absl::StrCat("sidecar: bad magic or truncated (",
                                            data.size(), " bytes)"));
  }
  const char* p = data.data();
  Checksums c;
  c.block_size = Get32(p + 8);
  c.crc32c = Get32(p + 12);
  c.object_size = Get64(p + 16);
  if (c.block_size < kMinBlockSize || c.block_size > kMaxBlockSize) {
    return absl::DataLossError(
        absl::StrCat("sidecar: bad block size ", c.block_size));
  }
  const uint64_t n = BlockCount(c.object_size, c.block_size);
  if ((data.size() - kHeaderBytes - 4) / 4 != n ||
      (data.size() - kHeaderBytes - 4) % 4 != 0) {
    return absl::DataLossError(absl::StrCat("sidecar: ", data.size(),
                                            " bytes do not hold ", n,
                                            " block checksums"));
  }
  const size_t body = data.size() - 4;
  if (Crc32c(data.substr(0, body)) != Get32(p + body)) {
    return absl::DataLossError("sidecar: self-check crc mismatch");
  }
  c.block_crc32c.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    c.block_crc32c.push_back(Get32(p + kHeaderBytes + 4 * i));
  }
  return c;
}

absl::StatusOr<Checksums> ReadSidecar(int fd, absl::string_view what) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat sidecar of ", what));
  }
  // 4 bytes per block of >= 4 KiB: even a 16 TiB object stays < 20 MiB.
  if (st.st_size > (64 << 20)) {
    return absl::DataLossError(absl::StrCat("sidecar of ", what, " is ",
                                            st.st_size, " bytes, too large"));
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = pread(fd, &data[done], data.size() - done, done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("read sidecar of ", what));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  absl::StatusOr<Checksums> c = DecodeSidecar(data);
  if (!c.ok()) {
    return absl::DataLossError(absl::StrCat(what, ": ", c.status().message()));
  }
  return c;
}

BlockChecksummer::BlockChecksummer(uint32_t block_size) {
  result_.block_size = block_size;
}

void BlockChecksummer::Update(const char* p, size_t n) {
  result_.crc32c = Crc32cExtend(result_.crc32c, p, n);
  result_.object_size += n;
  while (n > 0) {
    size_t take = std::min<size_t>(n, result_.block_size - block_fill_);
    block_crc_ = Crc32cExtend(block_crc_, p, take);
    block_fill_ += static_cast<uint32_t>(take);
    p += take;
    n -= take;
    if (block_fill_ == result_.block_size) {
      result_.block_crc32c.push_back(block_crc_);
      block_crc_ = 0;
      block_fill_ = 0;
    }
  }
}

Checksums BlockChecksummer::Finish() {
  if (block_fill_ > 0) {
    result_.block_crc32c.push_back(block_crc_);
    block_crc_ = 0;
    block_fill_ = 0;
  }
  return result_;
}

absl::StatusOr<Checksums> ComputeChecksums(int fd, uint32_t block_size,
                                           absl::string_view what) {
  BlockChecksummer sum(block_size);
  std::string buf(std::min<uint32_t>(block_size, 4u << 20), '\0');
  uint64_t off = 0;
  for (;;) {
    ssize_t n = pread(fd, &buf[0], buf.size(), static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("pread ", what, " at ", off));
    }
    if (n == 0) break;
    sum.Update(buf.data(), static_cast<size_t>(n));
    off += static_cast<uint64_t>(n);
  }
  return sum.Finish();
}

}  // namespace node
}  // namespace rangefs
