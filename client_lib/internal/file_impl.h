// File: internal/file_impl.h
//
// FileImpl: an open File (file.h) and its layout-change rule (Current:
// adopt a new layout that holds the same bytes, namespace/content_id.h,
// else ABORTED). It knows
// its client only through FileHost.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_FILE_IMPL_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_FILE_IMPL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "base/clock.h"
#include "client_lib/file.h"
#include "client_lib/internal/readahead_hints.h"
#include "client_lib/options.h"
#include "namespace/content_id.h"
#include "namespace/ec_layout.h"
#include "namespace/layout_cache.h"

namespace rangefs {
namespace client_internal {

namespace v1 = ::rangefs::v1;

class FileImpl;

// One range of a call.
struct Request {
  FileImpl* file = nullptr;
  uint64_t offset = 0;
  absl::Span<char> dst;
};

// Where a call's bytes came from, for callers that adapt to it (the
// Reader: internal/reader.h).
struct CallReport {
  // Bytes the calling thread copied straight out of the page cache of a
  // local file system (ClientOptions::page_cache_reads): no I/O waited for.
  uint64_t cached_bytes = 0;
  // Bytes the call's erasure-coded reads rebuilt from other cells (a lost
  // or slow data cell: ec_read.h).
  uint64_t rebuilt_bytes = 0;
  // Bytes of other cells those rebuilds copied to decode from (none when
  // every helper cell was the call's own or taken in place).
  uint64_t rebuild_copied_bytes = 0;
};

// What a FileImpl needs of its client (ClientImpl implements it).
class FileHost {
 public:
  virtual ~FileHost() = default;
  // Runs one read call over `reqs` (result[i] for reqs[i]); fills `report`
  // if not null.
  virtual std::vector<absl::StatusOr<size_t>> Execute(
      absl::Span<const Request> reqs, const ReadOptions& options,
      CallReport* report = nullptr) = 0;
  // The layouts, current as the namespace watch knows them.
  virtual ns::LayoutCache* cache() = 0;
  // Asks for bytes [r.offset, +r.length) of a file with `layout` ahead of
  // a sequential reader (readahead_hints.h); a hint only, never blocks.
  virtual void HintAhead(const ns::CachedLayout& /*layout*/, HintRange /*r*/) {}
  // The time a FileImpl's Reader measures its caller's gaps and its fills
  // with (reader.h); never null.
  virtual Clock* clock() { return Clock::Real(); }
  // A new layout was adopted / a call ended ABORTED.
  virtual void CountRefresh() = 0;
  virtual void CountAbort() = 0;
  // File::LocalSpans of `file` (local_spans.cc).
  virtual absl::StatusOr<std::vector<ObjectSpan>> LocalSpans(
      FileImpl* /*file*/, uint64_t /*offset*/, uint64_t /*length*/) {
    return absl::UnimplementedError("no local spans here");
  }
};

// Feeds the ranges a ReadV call read into their files' readahead hints
// (FileImpl::Hint), in offset order per file, so that adjacent ranges of
// one call (a FUSE mount's concurrent kernel requests, batched by
// mount/read_batcher.h) continue one sequential stream; random ranges
// start streams that hint nothing. `waited`: the call copied fewer bytes
// from the page cache than it read (hint_ahead.cc).
void HintReadV(absl::Span<const Request> reqs,
               absl::Span<const absl::StatusOr<size_t>> results,
               const CallReport& report);

class FileImpl : public File {
 public:
  FileImpl(FileHost* client, std::shared_ptr<const ns::CachedLayout> l,
           bool pinned)
      : client_(client),
        path_(l->path),
        pinned_(pinned),
        layout_(std::move(l)),
        size_(layout_->header.size()) {}

  const std::string& path() const override { return path_; }
  // Without the lock (jobs ask for it per read): a layout that changes the
  // size is never adopted (SameBytes).
  uint64_t size() const override { return size_; }
  uint64_t generation() const override {
    absl::MutexLock l(&mu_);
    return layout_->header.generation();
  }
  FileInfo info() const override {
    absl::MutexLock l(&mu_);
    const v1::FileLayout& h = layout_->header;
    return FileInfo{.path = path_,
                    .size = h.size(),
                    .file_id = h.file_id(),
                    .generation = h.generation(),
                    .content_generation = h.content_generation(),
                    .ready = ns::IsReady(h),
                    .mod_revision = layout_->mod_revision};
  }
  FileHost* client() const { return client_; }

  absl::StatusOr<size_t> Read(uint64_t offset, absl::Span<char> dst,
                              const ReadOptions& options) override {
    return ReadReported(offset, dst, options, nullptr);
  }
  // Read, telling where the bytes came from.
  absl::StatusOr<size_t> ReadReported(uint64_t offset, absl::Span<char> dst,
                                      const ReadOptions& options,
                                      CallReport* report) {
    Request r{this, offset, dst};
    CallReport mine;  // Execute sets it
    if (report == nullptr) report = &mine;
    absl::StatusOr<size_t> n =
        std::move(client_->Execute({&r, 1}, options, report)[0]);
    if (n.ok()) Hint(offset, *n, report->cached_bytes < *n);
    return n;
  }
  std::vector<absl::StatusOr<size_t>> ReadV(
      absl::Span<const ReadRange> ranges, const ReadOptions& options) override {
    std::vector<Request> reqs;
    reqs.reserve(ranges.size());
    for (const ReadRange& r : ranges) reqs.push_back({this, r.offset, r.dst});
    CallReport report;
    std::vector<absl::StatusOr<size_t>> out =
        client_->Execute(reqs, options, &report);
    HintReadV(reqs, out, report);
    return out;
  }

  absl::StatusOr<std::vector<ObjectSpan>> LocalSpans(uint64_t offset,
                                                     uint64_t length) override {
    return client_->LocalSpans(this, offset, length);
  }

  // The layout to read with now (see file.h for the ABORTED rule).
  absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> Current() {
    std::shared_ptr<const ns::CachedLayout> cur;
    {
      absl::MutexLock l(&mu_);
      cur = layout_;
    }
    if (pinned_) return cur;
    absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> now =
        client_->cache()->Lookup(path_);
    if (!now.ok()) {
      if (absl::IsNotFound(now.status())) {
        client_->CountAbort();
        return absl::AbortedError(
            absl::StrCat(path_, " was deleted since it was opened; reopen"));
      }
      return cur;  // etcd unreachable: the snapshot stays valid
    }
    const v1::FileLayout& a = cur->header;
    const v1::FileLayout& b = (*now)->header;
    if (a.generation() == b.generation() && a.file_id() == b.file_id()) {
      return cur;
    }
    const ns::ContentId was = ns::ContentIdOf(ns::FullLayout(*cur));
    const ns::ContentId is = ns::ContentIdOf(ns::FullLayout(**now));
    if (!ns::SameBytes(was, is)) {
      client_->CountAbort();
      return absl::AbortedError(absl::StrCat(
          path_, " changed since it was opened (", ns::DescribeContent(was),
          " -> ", ns::DescribeContent(is), "); reopen"));
    }
    client_->CountRefresh();
    absl::MutexLock l(&mu_);
    layout_ = *now;
    return *now;
  }

  // Bytes per row of the layout read with now if it is erasure-coded (k
  // data cells), else 0: a call that holds whole rows rebuilds a lost cell
  // from the row's other cells it reads anyway (ec_call_cells.h).
  uint64_t EcRowBytes() const {
    absl::MutexLock l(&mu_);
    const ns::EcGeometry g = ns::EcGeometryOf(layout_->header);
    return g.cell * static_cast<uint64_t>(g.k);
  }

  // Whether the last Reader stream of this file that learned it found it
  // degraded (reader.h): a new Reader starts so, reading whole rows from
  // its first Read instead of rebuilding its first row from parity cells.
  bool EcDegraded() const {
    return ec_degraded_.load(std::memory_order_relaxed);
  }
  void SetEcDegraded(bool degraded) {
    ec_degraded_.store(degraded, std::memory_order_relaxed);
  }

  // Hints the bytes ahead of a sequential reader whose call read `n` bytes
  // at `offset`, `waited` for some (readahead_hints.h).
  void Hint(uint64_t offset, size_t n, bool waited) {
    const HintRange h = hints_.Observe(offset, n, size_, waited);
    if (h.length == 0) return;
    std::shared_ptr<const ns::CachedLayout> l;
    {
      absl::MutexLock lock(&mu_);
      l = layout_;
    }
    client_->HintAhead(*l, h);
  }
  // Hint for each of a ReadV's `calls` to this file (offset order), with
  // one hold of the hints' lock for them all.
  void HintAll(absl::Span<const HintRange> calls, bool waited) {
    const absl::InlinedVector<HintRange, 2> hs =
        hints_.ObserveAll(calls, size_, waited);
    if (hs.empty()) return;
    std::shared_ptr<const ns::CachedLayout> l;
    {
      absl::MutexLock lock(&mu_);
      l = layout_;
    }
    for (const HintRange& h : hs) client_->HintAhead(*l, h);
  }

 private:
  FileHost* const client_;
  const std::string path_;
  const bool pinned_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ns::CachedLayout> layout_ ABSL_GUARDED_BY(mu_);
  const uint64_t size_;  // layout_'s, for its whole life
  ReadaheadHints hints_{ReadaheadWindow{}};
  std::atomic<bool> ec_degraded_{false};
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_FILE_IMPL_H_
