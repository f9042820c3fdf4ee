// File: internal/reader.h
//
// PrefetchReader: the Reader that File::NewReader returns (file.h says what
// it does). One window buffer, and at most one background read of the next
// window into a buffer of its own.
//
// It adapts to where the bytes come from (CallReport, file_impl.h):
// - from memory (every byte of the last fill was copied by the calling
//   thread out of the page cache of a local file system): a read of the
//   caller's is at the speed of one copy, and a background read would only
//   add a second copy and a thread. So: no prefetch, and big caller reads
//   (kDirectMin and up) land straight in the caller's buffer.
// - from storage (a disk, a network mount, an agent: some byte was waited
//   for): the next window is read in the background while the caller
//   consumes this one (options.prefetch), so that the reads overlap;
//   for a caller whose reads land straight in its buffer (kDirectMin and
//   up, at least a window) only while the caller spends time between
//   calls (PrefetchPolicy, prefetch_policy.h: else the prefetch's extra
//   copy is all it adds). Those times are measured on the clock of the
//   file's host (FileHost::clock: the client's), the real one for a File
//   not ours.
// A new Reader starts as from storage; every fill checks again.
//
// Erasure-coded files (ec_read.h), while the stream is degraded (a fill
// rebuilt bytes from copies of other cells, and no whole row was read
// since without such a rebuild), are read in whole rows (k data cells),
// so that a lost cell
// is rebuilt from the row's other cells the same call reads anyway plus a
// parity cell, not from k cells read again:
// - a window or prefetch fill that continues the stream ends at the last
//   row boundary it reaches, or at the end of the row it ends in;
// - a Read ends on a row boundary: one whose buffer reaches past a row
//   boundary returns the bytes up to the last one it reaches (fewer than
//   asked), so that the next Read starts a row;
// - a read straight into the caller's buffer within one row (less than a
//   row of a caller's buffer) that holds at least half of that row also
//   reads the rest of it, into the window buffer, in the same call, which
//   the next Read returns (a short Read again). So each row is read by one
//   call: with rangefs-bench's 4 MiB reads of 6 MiB RS(6,3) rows, each row
//   is a 4 MiB call with a 2 MiB tail, and a lost cell costs one parity
//   cell read (a third of the bytes copied twice). One that holds less
//   than half reads no tail: a lost cell in that part is then rebuilt from
//   its cells and parity cells (and at most as many data cells as the tail
//   would hold: parity first), and one in the rest is rebuilt by the next
//   call's part from parity cells and that part's cells. Each way costs no
//   more cell reads than the tail, and the tail's bytes are copied twice.
// A healthy stream (and a read after a Seek) is read as a plain file's:
// rows would cost it copies and save nothing. So is a stream whose
// rebuilds took the other cells in place from the page cache (a local
// file system's objects, mapped: ec_read.h), which costs no copies either
// way: the tail's second copy would be all that rows add. Where whole
// rows rebuild in place but plain reads copy (some cells local, others
// not), plain reads are tried again only after 1, 2, 4, ... 64 whole
// rows without copies. A new Reader of a file starts degraded when the
// file's last stream that learned was (FileImpl::EcDegraded): its first
// row is then read whole too, not rebuilt from parity cells (a scan opens
// a Reader per pass over a file).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_READER_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/clock.h"
#include "client_lib/file.h"
#include "client_lib/internal/file_impl.h"
#include "client_lib/internal/prefetch_policy.h"
#include "client_lib/read_canceller.h"

namespace rangefs {
namespace client_internal {

// A window's bytes: grows without zero-filling or copying (every growth is
// followed by a read that overwrites it; the old bytes are dropped).
class WindowBuffer {
 public:
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  // At least `n` bytes; returns true if the old contents were dropped.
  bool Reserve(size_t n) {
    if (n <= size_) return false;
    data_.reset(new char[n]);  // not value-initialised: no memset
    size_ = n;
    return true;
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

class PrefetchReader : public Reader {
 public:
  PrefetchReader(File* file, ReaderOptions options);
  ~PrefetchReader() override;
  PrefetchReader(const PrefetchReader&) = delete;
  PrefetchReader& operator=(const PrefetchReader&) = delete;

  absl::StatusOr<size_t> Read(absl::Span<char> dst) override;
  absl::StatusOr<absl::Span<const char>> Next(size_t max) override;
  absl::Status Seek(uint64_t position) override;
  uint64_t position() const override { return position_; }
  size_t readahead() const override { return window_; }

 private:
  // A background read of [offset, offset + want) into `buffer`. `result`
  // and `buffer` belong to `thread` until it is joined; `cancel` ends it
  // (`link` cancels it with options.read.canceller).
  struct Prefetch {
    bool pending = false;
    std::thread thread;
    uint64_t offset = 0;
    WindowBuffer buffer;
    absl::StatusOr<size_t> result;
    absl::Duration took;  // the read's own time
    client_internal::CallReport report;
    std::unique_ptr<ReadCanceller> cancel;
    std::unique_ptr<CancelHook> link;
  };
  // Fetches the window at position_ into buffer_ (or, if `direct` is at
  // least a window, straight into `direct`: *direct_n bytes, position_
  // advanced). `need`: the bytes the caller still wants; `hint`: the
  // caller's whole read size (a prefetch is at least that). `report`: a
  // failed prefetch's error is consumed (else the next call sees it again).
  absl::Status Refill(size_t need, size_t hint, absl::Span<char> direct,
                      bool report, size_t* direct_n);
  bool Buffered() const;  // position_ is inside buffer_
  // Whether a fill for a caller's read of `direct` (its unread part) also
  // reads `ahead` bytes ahead in the background (see above).
  bool ReadAhead(absl::Span<char> direct, size_t ahead) const;
  // Whether fills read ahead in the background now (see above).
  bool Prefetching() const;
  // Learns where `n` bytes just read at `offset` came from, and whether
  // the stream is degraded.
  void Learn(uint64_t offset, size_t n,
             const client_internal::CallReport& report);
  // file_->Read, telling where the bytes came from when file_ is ours
  // (`report`: not null). With a `tail` (file_ ours) the bytes right after
  // dst's are read into it in the same call: *tail_n of them, 0 if dst was
  // not filled or that part failed (it was extra).
  absl::StatusOr<size_t> ReadFile(uint64_t offset, absl::Span<char> dst,
                                  const ReadOptions& options,
                                  client_internal::CallReport* report,
                                  absl::Span<char> tail = {},
                                  size_t* tail_n = nullptr);
  // Bytes per row of file_ if it is ours and erasure-coded, else 0.
  uint64_t RowBytes() const;
  // The end of a fill of `want` bytes at `offset` (see above).
  // (`sequential`: the fill continues the stream).
  uint64_t FillEnd(uint64_t offset, size_t want, bool sequential) const;
  // A direct read of [start, end) as made: the caller's `own` bytes at
  // start, then `tail` bytes into the window (see above).
  struct DirectShape {
    size_t own = 0;
    size_t tail = 0;
  };
  DirectShape ShapeDirect(uint64_t start, uint64_t end, bool sequential) const;
  // Whether a Read that copied `done` bytes ends here: a degraded stream's
  // Read ends on a row boundary (see above).
  bool RowDone(size_t done) const;
  void StartPrefetch(uint64_t offset, size_t want);
  void JoinPrefetch();     // waits for the thread, if any
  void DiscardPrefetch();  // cancels and joins it

  // Where the bytes come from, as the last fill found.
  enum class Source { kUnknown, kMemory, kStorage };

  File* const file_;
  FileImpl* const impl_;  // file_ if it is ours, else null (reports nothing)
  Clock* const clock_;    // impl_'s host's, else the real one; for policy_
  const ReaderOptions options_;
  Source source_ = Source::kUnknown;
  uint64_t position_ = 0;
  size_t window_;
  // A fill rebuilt bytes, and no whole row was read since without a
  // rebuild (see above); a new Reader starts as the file's last stream
  // left it (FileImpl::EcDegraded).
  bool degraded_ = false;
  // Whole rows still to read without copies before plain reads are tried
  // again, and how many the next time plain reads copy (doubling, up to
  // kMaxPlainBackoff; back to 1 once plain reads rebuild with no copy).
  static constexpr uint32_t kMaxPlainBackoff = 64;
  uint32_t rows_before_plain_ = 0;
  uint32_t plain_backoff_ = 1;
  bool filled_ = false;  // a fill happened since construction or last seek
  WindowBuffer buffer_;  // bytes [buffer_offset_, +buffer_len_)
  uint64_t buffer_offset_ = 0;
  size_t buffer_len_ = 0;
  uint64_t next_expected_ = 0;
  Prefetch prefetch_;
  // When the last big Read (kDirectMin and up) returned: the caller's time
  // between big reads for policy_.
  absl::Time returned_ = absl::InfinitePast();
  PrefetchPolicy policy_;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_READER_H_
