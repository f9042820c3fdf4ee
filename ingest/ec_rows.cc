#include "ingest/ec_rows.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/errno_status.h"

namespace rangefs {
namespace ingest {
namespace {

// Reads exactly dst.size() bytes at `offset` of the local file.
absl::Status PreadFull(int fd, const std::string& name, uint64_t offset,
                       absl::Span<char> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    const ssize_t n = pread(fd, dst.data() + done, dst.size() - done,
                            static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno,
                         absl::StrCat("pread ", name, " at ", offset + done));
    }
    if (n == 0) {
      return absl::DataLossError(
          absl::StrCat("local file ", name, " shrank while being read (EOF at ",
                       offset + done, ")"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

ParityRows::ParityRows(int fd, std::string name, const ns::EcGeometry& g,
                       const ec::Codec& codec)
    : fd_(fd),
      name_(std::move(name)),
      g_(g),
      codec_(codec),
      crcs_(g.rows * static_cast<uint64_t>(g.k + g.m)),
      coded_(g.rows) {}

absl::StatusOr<std::shared_ptr<const CodedRow>> ParityRows::Row(uint64_t row) {
  absl::MutexLock l(&mu_);
  auto it = cache_.find(row);
  if (it != cache_.end()) return it->second;
  absl::StatusOr<std::shared_ptr<const CodedRow>> coded = Code(row);
  if (!coded.ok()) return coded.status();
  cache_[row] = *coded;
  // Keep the newest rows: the writers move forward together.
  while (cache_.size() > kCachedRows) cache_.erase(cache_.begin());
  return coded;
}

absl::StatusOr<std::shared_ptr<const CodedRow>> ParityRows::Code(uint64_t row) {
  const size_t cell = static_cast<size_t>(g_.cell);
  // Data cells zero-padded to a full cell: the padding is coded, never
  // stored.
  std::string data(cell * static_cast<size_t>(g_.k), '\0');
  std::vector<absl::Span<const char>> in;
  const size_t n = static_cast<size_t>(g_.k + g_.m);
  for (int c = 0; c < g_.k; ++c) {
    char* dst = data.data() + static_cast<size_t>(c) * cell;
    const uint64_t bytes = ns::DataCellBytes(g_, row, c);
    if (bytes > 0) {
      const uint64_t offset =
          (row * static_cast<uint64_t>(g_.k) + static_cast<uint64_t>(c)) *
          g_.cell;
      absl::Status s =
          PreadFull(fd_, name_, offset, absl::Span<char>(dst, bytes));
      if (!s.ok()) return s;
    }
    crcs_[row * n + static_cast<size_t>(c)] =
        Crc32cExtend(0, dst, static_cast<size_t>(bytes));
    in.emplace_back(dst, cell);
  }
  auto out = std::make_shared<CodedRow>();
  out->parity.assign(static_cast<size_t>(g_.m), std::string(cell, '\0'));
  std::vector<absl::Span<char>> parity;
  for (std::string& p : out->parity) parity.emplace_back(p.data(), p.size());
  absl::Status s = codec_.Encode(in, parity);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("coding row ", row, " of ",
                                               name_, ": ", s.message()));
  }
  for (int j = 0; j < g_.m; ++j) {
    crcs_[row * n + static_cast<size_t>(g_.k + j)] =
        Crc32c(out->parity[static_cast<size_t>(j)]);
  }
  coded_[row] = true;
  return std::shared_ptr<const CodedRow>(std::move(out));
}

absl::StatusOr<std::string> ParityRows::CellsObject() const {
  absl::MutexLock l(&mu_);
  for (uint64_t r = 0; r < g_.rows; ++r) {
    if (!coded_[r]) {
      return absl::FailedPreconditionError(
          absl::StrCat("row ", r, " of ", name_, " was never coded"));
    }
  }
  return ns::EncodeEcCellCrcs(crcs_);
}

absl::StatusOr<size_t> ParityColumnReader::Read(absl::Span<char> dst) {
  const ns::EcGeometry& g = rows_.geometry();
  size_t filled = 0;
  while (filled < dst.size() && row_ < g.rows) {
    if (current_ == nullptr) {
      absl::StatusOr<std::shared_ptr<const CodedRow>> r = rows_.Row(row_);
      if (!r.ok()) return r.status();
      current_ = *std::move(r);
    }
    const std::string& cell = current_->parity[static_cast<size_t>(j_)];
    const size_t n = static_cast<size_t>(
        std::min<uint64_t>(dst.size() - filled, g.cell - in_cell_));
    std::memcpy(dst.data() + filled, cell.data() + in_cell_, n);
    filled += n;
    in_cell_ += n;
    if (in_cell_ == g.cell) {
      in_cell_ = 0;
      ++row_;
      current_.reset();
    }
  }
  return filled;
}

}  // namespace ingest
}  // namespace rangefs
