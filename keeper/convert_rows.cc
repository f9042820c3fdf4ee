#include "keeper/convert_rows.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"

namespace rangefs {
namespace keeper {

ConvertRows::ConvertRows(const ns::EcGeometry& g, const ec::Codec& codec,
                         DataCellReader read)
    : g_(g),
      codec_(codec),
      read_(std::move(read)),
      crcs_(g.rows * static_cast<uint64_t>(g.k + g.m)),
      coded_(g.rows) {}

ConvertRows::~ConvertRows() {
  std::map<uint64_t, std::shared_future<Coded>> running;
  {
    absl::MutexLock l(&mu_);
    running.swap(cache_);
  }
  for (auto& [row, f] : running) f.wait();
}

absl::StatusOr<std::shared_ptr<const ConvertRow>> ConvertRows::Row(
    uint64_t row) {
  std::vector<std::shared_future<Coded>> dropped;
  std::shared_future<Coded> f;
  {
    absl::MutexLock l(&mu_);
    Start(row, std::min(g_.rows, row + 1 + kAheadRows), dropped);
    f = cache_.at(row);
  }
  dropped.clear();  // waits for rows dropped while still being coded
  return f.get();
}

void ConvertRows::Start(uint64_t first, uint64_t last,
                        std::vector<std::shared_future<Coded>>& dropped) {
  for (uint64_t r = first; r < last; ++r) {
    if (cache_.count(r) != 0) continue;
    cache_[r] =
        std::async(std::launch::async, [this, r] { return Code(r); }).share();
  }
  // Keep the newest rows: the writers move forward together.
  while (cache_.size() > kCachedRows + kAheadRows + 1 &&
         cache_.begin()->first < first) {
    dropped.push_back(std::move(cache_.begin()->second));
    cache_.erase(cache_.begin());
  }
}

ConvertRows::Coded ConvertRows::Code(uint64_t row) {
  const size_t cell = static_cast<size_t>(g_.cell);
  const size_t n = static_cast<size_t>(g_.k + g_.m);
  auto out = std::make_shared<ConvertRow>();
  out->cells.resize(n);
  // The k data cells, read at once.
  std::vector<std::future<absl::StatusOr<std::string>>> reads;
  for (int c = 0; c < g_.k; ++c) {
    if (ns::DataCellBytes(g_, row, c) == 0) {
      reads.emplace_back();
      continue;
    }
    reads.push_back(std::async(std::launch::async,
                               [this, row, c] { return read_(row, c); }));
  }
  std::vector<uint32_t> crcs(n);
  uint64_t read = 0;
  absl::Status failed;
  for (int c = 0; c < g_.k; ++c) {
    const uint64_t bytes = ns::DataCellBytes(g_, row, c);
    std::string& dst = out->cells[static_cast<size_t>(c)];
    if (bytes > 0) {
      absl::StatusOr<std::string> r = reads[static_cast<size_t>(c)].get();
      if (!r.ok()) {
        if (failed.ok()) failed = r.status();
        continue;
      }
      if (r->size() != bytes) {
        if (failed.ok()) {
          failed = absl::DataLossError(absl::StrCat("data cell (", row, ", ", c,
                                                    ") read as ", r->size(),
                                                    " bytes, not ", bytes));
        }
        continue;
      }
      dst = *std::move(r);
      read += bytes;
    }
    crcs[static_cast<size_t>(c)] = Crc32cExtend(0, dst.data(), dst.size());
  }
  if (!failed.ok()) return failed;
  // Coding needs full cells: pad copies, keep the stored bytes.
  std::vector<std::string> padded(static_cast<size_t>(g_.k));
  std::vector<absl::Span<const char>> in;
  for (int c = 0; c < g_.k; ++c) {
    std::string& p = padded[static_cast<size_t>(c)];
    p = out->cells[static_cast<size_t>(c)];
    p.resize(cell, '\0');
    in.emplace_back(p.data(), p.size());
  }
  std::vector<absl::Span<char>> parity;
  for (int j = 0; j < g_.m; ++j) {
    std::string& p = out->cells[static_cast<size_t>(g_.k + j)];
    p.assign(cell, '\0');
    parity.emplace_back(p.data(), p.size());
  }
  absl::Status s = codec_.Encode(in, parity);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("coding row ", row, ": ", s.message()));
  }
  for (int j = 0; j < g_.m; ++j) {
    const size_t t = static_cast<size_t>(g_.k + j);
    crcs[t] = Crc32c(out->cells[t]);
  }
  absl::MutexLock l(&mu_);
  std::copy(crcs.begin(), crcs.end(), crcs_.begin() + row * n);
  bytes_read_ += read;
  coded_[row] = true;
  return std::shared_ptr<const ConvertRow>(std::move(out));
}

absl::StatusOr<std::string> ConvertRows::CellsObject() const {
  absl::MutexLock l(&mu_);
  for (uint64_t r = 0; r < g_.rows; ++r) {
    if (!coded_[r]) {
      return absl::FailedPreconditionError(
          absl::StrCat("row ", r, " was never coded"));
    }
  }
  return ns::EncodeEcCellCrcs(crcs_);
}

uint64_t ConvertRows::bytes_read() const {
  absl::MutexLock l(&mu_);
  return bytes_read_;
}

absl::StatusOr<size_t> ColumnStream::Read(absl::Span<char> dst) {
  const ns::EcGeometry& g = rows_.geometry();
  size_t filled = 0;
  while (filled < dst.size() && row_ < g.rows) {
    if (current_ == nullptr) {
      absl::StatusOr<std::shared_ptr<const ConvertRow>> r = rows_.Row(row_);
      if (!r.ok()) return r.status();
      current_ = *std::move(r);
    }
    const std::string& cell = current_->cells[static_cast<size_t>(t_)];
    const size_t n = static_cast<size_t>(
        std::min<uint64_t>(dst.size() - filled, cell.size() - in_cell_));
    std::memcpy(dst.data() + filled, cell.data() + in_cell_, n);
    filled += n;
    in_cell_ += n;
    if (in_cell_ == cell.size()) {
      in_cell_ = 0;
      ++row_;
      current_.reset();
    }
  }
  return filled;
}

}  // namespace keeper
}  // namespace rangefs
