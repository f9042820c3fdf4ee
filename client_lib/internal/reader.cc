#include "client_lib/internal/reader.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace client_internal {

namespace {
// A caller's read at least this big lands straight in the caller's buffer
// when the Reader holds none of its bytes: one copy, where a window would
// make two.
constexpr size_t kDirectMin = size_t{128} << 10;
}  // namespace

PrefetchReader::PrefetchReader(File* file, ReaderOptions options)
    : file_(file),
      impl_(dynamic_cast<FileImpl*>(file)),
      clock_(impl_ != nullptr ? impl_->client()->clock() : Clock::Real()),
      options_(options),
      window_(std::max<size_t>(1, options.initial_readahead)),
      degraded_(impl_ != nullptr && impl_->EcDegraded()) {}

PrefetchReader::~PrefetchReader() { DiscardPrefetch(); }

absl::Status PrefetchReader::Seek(uint64_t position) {
  if (position > file_->size()) {
    return absl::OutOfRangeError(absl::StrCat("seek to ", position, " past ",
                                              file_->path(), " size ",
                                              file_->size()));
  }
  // An in-flight prefetch is kept: it is used if reading continues at its
  // offset, else discarded by the next refill.
  position_ = position;
  return absl::OkStatus();
}

uint64_t PrefetchReader::RowBytes() const {
  return impl_ == nullptr ? 0 : impl_->EcRowBytes();
}

uint64_t PrefetchReader::FillEnd(uint64_t offset, size_t want,
                                 bool sequential) const {
  const uint64_t row = degraded_ && sequential ? RowBytes() : 0;
  if (row == 0) return offset + want;
  const uint64_t size = file_->size();
  const uint64_t end = std::min<uint64_t>(size, offset + want);
  if (end == size) return end;
  const uint64_t down = end / row * row;
  if (down > offset) return down;
  return std::min(size, down + row);  // the rest of the row
}

PrefetchReader::DirectShape PrefetchReader::ShapeDirect(uint64_t start,
                                                        uint64_t end,
                                                        bool sequential) const {
  const uint64_t row = degraded_ && sequential ? RowBytes() : 0;
  const uint64_t size = file_->size();
  if (row == 0 || end >= size || end % row == 0) return {end - start, 0};
  // Past a row boundary: only whole rows now, the rest next call (reader.h).
  const uint64_t down = end / row * row;
  if (down > start) return {down - start, 0};
  // Less than half of the row in the caller's buffer: no tail (reader.h).
  if (2 * (end - start) < row) return {end - start, 0};
  return {end - start, static_cast<size_t>(std::min(size, down + row) - end)};
}

bool PrefetchReader::RowDone(size_t done) const {
  const uint64_t row = degraded_ ? RowBytes() : 0;
  return done > 0 && row > 0 && position_ % row == 0 && !Buffered();
}

void PrefetchReader::StartPrefetch(uint64_t offset, size_t want) {
  want = static_cast<size_t>(FillEnd(offset, want, true) - offset);
  prefetch_.pending = true;
  prefetch_.offset = offset;
  prefetch_.buffer.Reserve(want);
  prefetch_.result = size_t{0};
  // A canceller per prefetch (cancelling is final), linked to the caller's.
  prefetch_.link.reset();
  prefetch_.cancel = std::make_unique<ReadCanceller>();
  prefetch_.link = std::make_unique<client_internal::CancelHook>(
      options_.read.canceller, [c = prefetch_.cancel.get()] { c->Cancel(); });
  ReadOptions ro = options_.read;
  ro.canceller = prefetch_.cancel.get();
  prefetch_.report = CallReport{};
  prefetch_.thread = std::thread([this, offset, want, ro] {
    const absl::Time t0 = clock_->MonotonicNow();
    prefetch_.result =
        ReadFile(offset, absl::MakeSpan(prefetch_.buffer.data(), want), ro,
                 &prefetch_.report);
    prefetch_.took = clock_->MonotonicNow() - t0;
  });
}

absl::StatusOr<size_t> PrefetchReader::ReadFile(
    uint64_t offset, absl::Span<char> dst, const ReadOptions& options,
    CallReport* report, absl::Span<char> tail, size_t* tail_n) {
  if (impl_ == nullptr) return file_->Read(offset, dst, options);
  if (tail.empty()) return impl_->ReadReported(offset, dst, options, report);
  const Request reqs[2] = {{impl_, offset, dst},
                           {impl_, offset + dst.size(), tail}};
  std::vector<absl::StatusOr<size_t>> r =
      impl_->client()->Execute(reqs, options, report);
  if (!r[0].ok()) return r[0].status();
  *tail_n = r[1].ok() && *r[0] == dst.size() ? *r[1] : 0;
  const size_t n = *r[0] + *tail_n;
  if (n > 0) impl_->Hint(offset, n, report->cached_bytes < n);
  return *r[0];
}

void PrefetchReader::Learn(uint64_t offset, size_t n,
                           const CallReport& report) {
  if (n == 0 || impl_ == nullptr) return;
  source_ = report.cached_bytes >= n ? Source::kMemory : Source::kStorage;
  // Degraded until a whole row is read without a rebuild that copied
  // other cells (a rebuild from cells taken in place costs no copies, read
  // in rows or not). Rows again, backing off, if plain reads then copied
  // (some cells in place, others not: a whole row's rebuild took its
  // parity cell in place where a plain read's needed remote cells).
  const uint64_t row = RowBytes();
  const bool plain = !degraded_;  // this call was read as a plain file's
  if (report.rebuilt_bytes > 0 && report.rebuild_copied_bytes > 0) {
    if (plain) {
      rows_before_plain_ = plain_backoff_;
      plain_backoff_ = std::min(2 * plain_backoff_, kMaxPlainBackoff);
    }
    degraded_ = true;
  } else if (row > 0 && (offset + row - 1) / row * row + row <= offset + n) {
    if (rows_before_plain_ > 0) {
      --rows_before_plain_;
    } else {
      degraded_ = false;
    }
  }
  // Plain reads rebuilt with no copy: they work for this stream.
  if (plain && !degraded_ && report.rebuilt_bytes > 0) plain_backoff_ = 1;
  impl_->SetEcDegraded(degraded_);
}

bool PrefetchReader::Prefetching() const {
  // Unknown (the first fill): as storage, which costs a memory source at
  // most one window copied twice.
  return options_.prefetch && source_ != Source::kMemory;
}

bool PrefetchReader::ReadAhead(absl::Span<char> direct, size_t ahead) const {
  if (!Prefetching()) return false;
  // A direct read's prefetch costs a copy (prefetch_policy.h).
  const bool direct_sized = direct.size() >= std::max(kDirectMin, window_);
  return !direct_sized || policy_.Pays(ahead);
}

void PrefetchReader::JoinPrefetch() {
  if (prefetch_.thread.joinable()) prefetch_.thread.join();
}

void PrefetchReader::DiscardPrefetch() {
  if (prefetch_.thread.joinable()) prefetch_.cancel->Cancel();
  JoinPrefetch();
  prefetch_.pending = false;
}

absl::Status PrefetchReader::Refill(size_t need, size_t hint,
                                    absl::Span<char> direct, bool report,
                                    size_t* direct_n) {
  *direct_n = 0;
  // Sequential continuation grows the window; a seek resets it.
  const bool sequential = position_ == next_expected_;
  if (sequential && filled_) {
    window_ = std::min(options_.max_readahead, window_ * 2);
  } else if (!sequential) {
    window_ = std::max<size_t>(1, options_.initial_readahead);
  }
  // The next window of this stream, if it continues sequentially.
  const size_t next_want =
      std::max(std::min(options_.max_readahead, window_ * 2), hint);

  if (prefetch_.pending && prefetch_.offset == position_) {
    JoinPrefetch();
    if (!prefetch_.result.ok()) {
      // Reported by the call that returns no bytes, else by the next one.
      if (report) prefetch_.pending = false;
      return prefetch_.result.status();
    }
    prefetch_.pending = false;
    std::swap(buffer_, prefetch_.buffer);
    buffer_offset_ = position_;
    buffer_len_ = *prefetch_.result;
    next_expected_ = position_ + buffer_len_;
    filled_ = true;
    Learn(position_, buffer_len_, prefetch_.report);
    policy_.Fill(prefetch_.took);
    if (ReadAhead(direct, next_want) && buffer_len_ > 0 &&
        next_expected_ < file_->size()) {
      StartPrefetch(next_expected_, next_want);
    }
    return absl::OkStatus();
  }
  if (prefetch_.pending) DiscardPrefetch();

  // Big caller reads go straight to the caller's buffer.
  const bool go_direct = direct.size() >= std::max(kDirectMin, window_) ||
                         (direct.size() >= kDirectMin && !Prefetching());
  // Erasure-coded and degraded: a direct read ends on a row boundary, or
  // reads the rest of its last row (the tail) too.
  const DirectShape shape =
      go_direct ? ShapeDirect(position_, position_ + direct.size(), sequential)
                : DirectShape{};
  const size_t want =
      go_direct ? shape.own
                : static_cast<size_t>(
                      FillEnd(position_, std::max(window_, need), sequential) -
                      position_);
  const size_t tail = shape.tail;
  // A sequential stream reads its next window while this one is fetched
  // and consumed.
  if (ReadAhead(direct, next_want) && sequential &&
      position_ + want + tail < file_->size()) {
    StartPrefetch(position_ + want + tail, next_want);
  }
  CallReport call;
  if (go_direct) {
    if (tail > 0) {
      buffer_len_ = 0;  // the tail overwrites the window
      buffer_.Reserve(tail);
    }
    size_t tail_n = 0;
    const absl::Time t0 = clock_->MonotonicNow();
    RANGEFS_ASSIGN_OR_RETURN(
        *direct_n,
        ReadFile(position_, direct.subspan(0, shape.own), options_.read, &call,
                 absl::MakeSpan(buffer_.data(), tail), &tail_n));
    policy_.Fill(clock_->MonotonicNow() - t0);
    Learn(position_, *direct_n + tail_n, call);
    position_ += *direct_n;
    buffer_offset_ = position_;
    buffer_len_ = tail_n;
    next_expected_ = position_ + tail_n;
    filled_ = true;
    return absl::OkStatus();
  }
  if (buffer_.Reserve(want)) buffer_len_ = 0;  // the old window is gone
  RANGEFS_ASSIGN_OR_RETURN(
      size_t n, ReadFile(position_, absl::MakeSpan(buffer_.data(), want),
                         options_.read, &call));
  Learn(position_, n, call);
  buffer_offset_ = position_;
  buffer_len_ = n;
  next_expected_ = position_ + n;
  filled_ = true;
  return absl::OkStatus();
}

bool PrefetchReader::Buffered() const {
  return position_ >= buffer_offset_ &&
         position_ < buffer_offset_ + buffer_len_;
}

absl::StatusOr<size_t> PrefetchReader::Read(absl::Span<char> dst) {
  // The caller's time between big reads (those the policy is for).
  const bool big = dst.size() >= kDirectMin;
  if (big && returned_ != absl::InfinitePast()) {
    policy_.Gap(clock_->MonotonicNow() - returned_);
  }
  absl::Cleanup mark = [this, big] {
    if (big) returned_ = clock_->MonotonicNow();
  };
  size_t done = 0;
  while (done < dst.size() && position_ < file_->size()) {
    if (Buffered()) {
      size_t at = static_cast<size_t>(position_ - buffer_offset_);
      size_t n = std::min(dst.size() - done, buffer_len_ - at);
      memcpy(dst.data() + done, buffer_.data() + at, n);
      done += n;
      position_ += n;
      continue;
    }
    // A degraded erasure-coded stream's Read ends on a row boundary, so
    // that the next one reads whole rows (reader.h).
    if (RowDone(done)) break;
    size_t direct_n = 0;
    absl::Status s = Refill(dst.size() - done, dst.size(), dst.subspan(done),
                            done == 0, &direct_n);
    if (!s.ok()) {
      if (done > 0) return done;  // the error comes with the next Read
      return s;
    }
    done += direct_n;
    if (direct_n == 0 && !Buffered()) break;  // end of file
  }
  return done;
}

absl::StatusOr<absl::Span<const char>> PrefetchReader::Next(size_t max) {
  if (max == 0 || position_ >= file_->size()) return absl::Span<const char>();
  if (!Buffered()) {
    size_t unused = 0;
    RANGEFS_RETURN_IF_ERROR(Refill(0, 0, absl::Span<char>(), true, &unused));
    if (!Buffered()) return absl::Span<const char>();  // end of file
  }
  const size_t at = static_cast<size_t>(position_ - buffer_offset_);
  const size_t n = std::min(max, buffer_len_ - at);
  position_ += n;
  return absl::Span<const char>(buffer_.data() + at, n);
}

}  // namespace client_internal

std::unique_ptr<Reader> File::NewReader(ReaderOptions options) {
  return std::make_unique<client_internal::PrefetchReader>(this, options);
}

}  // namespace rangefs
