// The shapes of the reads the Reader (reader.h) makes: over a FileHost that
// serves a file's bytes from memory and records every call's ranges.
#include "client_lib/internal/reader.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "base/testing/status_matchers.h"
#include "client_lib/internal/file_impl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/cached_layout.h"

namespace rangefs {
namespace client_internal {
namespace {

constexpr uint64_t kCell = 64 << 10;
constexpr int kK = 6;
constexpr uint64_t kRow = kK * kCell;  // 384 KiB

struct Range {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
};
using Call = std::vector<Range>;

std::string Describe(const Call& c) {
  std::string s;
  for (const Range& r : c)
    absl::StrAppend(&s, "[", r.offset, ",", r.end(), ")");
  return s;
}

// A Clock with a time line per thread: a thread's time moves only by its
// own SleepFor calls, from where it stood when the thread first asked. So
// what one thread measures (a caller's gap between calls, a prefetch
// thread's read) holds exactly the time that thread was said to spend,
// however the machine's load interleaves the threads: a prefetch's read in
// flight is never part of its caller's gap. Thread-safe.
class ThreadClock : public Clock {
 public:
  absl::Time Now() override { return MonotonicNow(); }
  absl::Time MonotonicNow() override {
    absl::MutexLock l(&mu_);
    return absl::UnixEpoch() + spent_[std::this_thread::get_id()];
  }
  void SleepFor(absl::Duration d) override {
    absl::MutexLock l(&mu_);
    spent_[std::this_thread::get_id()] += d;
  }

 private:
  absl::Mutex mu_;
  std::map<std::thread::id, absl::Duration> spent_ ABSL_GUARDED_BY(mu_);
};

// Serves `data` and records each call; says every call rebuilt bytes if
// `degraded` (as a call with a lost cell does). Each call takes
// latency(its first offset) (a storage's; none if null) on `clock`, the
// host's clock (FileHost::clock), and counts whether a thread other than
// the constructing one made it (a prefetch).
class RecordingHost : public FileHost {
 public:
  RecordingHost(std::string data, bool degraded,
                std::function<absl::Duration(uint64_t)> latency = nullptr,
                Clock* clock = Clock::Real())
      : data_(std::move(data)),
        degraded_(degraded),
        latency_(std::move(latency)),
        clock_(clock) {}

  std::vector<absl::StatusOr<size_t>> Execute(absl::Span<const Request> reqs,
                                              const ReadOptions& /*options*/,
                                              CallReport* report) override {
    std::vector<absl::StatusOr<size_t>> out;
    Call call;
    uint64_t total = 0;
    for (const Request& r : reqs) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(r.dst.size(), data_.size() - r.offset));
      memcpy(r.dst.data(), data_.data() + r.offset, n);
      call.push_back({r.offset, n});
      out.push_back(n);
      total += n;
    }
    if (report != nullptr && degraded_) {
      report->rebuilt_bytes = total;
      // The other cells copied, unless taken in place (no copies); with
      // in_place_rows_, only a call of whole rows takes them in place.
      bool in_place = in_place_;
      if (in_place_rows_ > 0 && !reqs.empty()) {
        const uint64_t begin = reqs.front().offset;
        const uint64_t end = begin + total;
        in_place = begin % in_place_rows_ == 0 &&
                   (end % in_place_rows_ == 0 || end == data_.size());
      }
      report->rebuild_copied_bytes = in_place ? 0 : total;
    }
    if (latency_ != nullptr && !reqs.empty()) {
      clock_->SleepFor(latency_(reqs[0].offset));
    }
    absl::MutexLock l(&mu_);
    calls_.push_back(call);
    if (std::this_thread::get_id() != owner_ && !call.empty()) {
      background_offsets_.push_back(call.front().offset);
    }
    return out;
  }
  ns::LayoutCache* cache() override { return nullptr; }
  Clock* clock() override { return clock_; }
  // Its rebuilds took the other cells in place (ec_read.h): no copies.
  void set_in_place(bool in_place) { in_place_ = in_place; }
  // Only calls of whole rows of `row` bytes take them in place (a whole
  // row's rebuild reads a local parity cell, a plain call remote cells).
  void set_in_place_rows(uint64_t row) { in_place_rows_ = row; }
  void CountRefresh() override {}
  void CountAbort() override {}

  std::vector<Call> calls() {
    absl::MutexLock l(&mu_);
    return calls_;
  }
  int background_calls() {
    return static_cast<int>(background_offsets().size());
  }
  // The first offset of each call a prefetch made, in the order made.
  std::vector<uint64_t> background_offsets() {
    absl::MutexLock l(&mu_);
    return background_offsets_;
  }

 private:
  const std::string data_;
  const bool degraded_;
  bool in_place_ = false;
  uint64_t in_place_rows_ = 0;
  const std::function<absl::Duration(uint64_t)> latency_;
  Clock* const clock_;
  const std::thread::id owner_ = std::this_thread::get_id();
  absl::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> background_offsets_ ABSL_GUARDED_BY(mu_);
};

std::string Bytes(uint64_t size) {
  std::string s(size, '\0');
  for (uint64_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * 131 + 7);
  return s;
}

// A layout of `size` bytes: RS(6,3) with kCell cells if `ec`, else a plain
// striped layout of the same width.
std::shared_ptr<const ns::CachedLayout> Layout(uint64_t size, bool ec) {
  auto l = std::make_shared<ns::CachedLayout>();
  l->path = "/f";
  l->header.set_size(size);
  l->header.set_state(ec ? v1::READY_EC : v1::READY);
  v1::StripedLayout* s = l->header.mutable_striped();
  s->set_stripe_unit(kCell);
  if (ec) {
    s->mutable_erasure()->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
    s->mutable_erasure()->set_data_columns(kK);
    s->mutable_erasure()->set_parity_columns(3);
  }
  for (int t = 0; t < (ec ? kK + 3 : kK); ++t) {
    v1::Replica* r = s->add_targets()->add_replicas();
    r->set_node_id(absl::StrCat("n", t));
    r->set_object(absl::StrCat("o", t));
  }
  return l;
}

class ReaderShapeTest : public ::testing::Test {
 protected:
  // Reads the whole file through a Reader in `io` byte reads; checks the
  // bytes and returns the calls made.
  std::vector<Call> Scan(uint64_t size, bool ec, bool degraded, size_t io,
                         ReaderOptions ro) {
    const std::string data = Bytes(size);
    RecordingHost host(data, degraded);
    host.set_in_place(in_place_);
    host.set_in_place_rows(in_place_rows_);
    FileImpl file(&host, Layout(size, ec), /*pinned=*/true);
    std::unique_ptr<Reader> reader = file.NewReader(ro);
    std::string got;
    std::string buf(io, '\0');
    while (true) {
      absl::StatusOr<size_t> n = reader->Read(absl::MakeSpan(buf));
      EXPECT_THAT(n, IsOk());
      if (!n.ok() || *n == 0) break;
      got.append(buf, 0, *n);
    }
    EXPECT_TRUE(got == data)
        << "bytes differ, " << got.size() << " of " << data.size();
    reader.reset();  // joins a prefetch
    return host.calls();
  }

  // Each call is the caller's own read of `io` bytes (the last shorter):
  // no tail, no window.
  static void ExpectCallersOwnReads(const std::vector<Call>& calls,
                                    uint64_t size, size_t io) {
    uint64_t at = 0;
    for (const Call& c : calls) {
      ASSERT_EQ(c.size(), 1u) << Describe(c);
      EXPECT_EQ(c[0].offset, at);
      EXPECT_EQ(c[0].length, std::min<uint64_t>(io, size - at));
      at = c[0].end();
    }
    EXPECT_EQ(at, size);
  }
  // The first 5 fills double from ro.initial_readahead.
  static void ExpectDoublingFills(const std::vector<Call>& calls,
                                  const ReaderOptions& ro,
                                  const std::string& what) {
    ASSERT_GE(calls.size(), 5u) << what;
    uint64_t want = ro.initial_readahead;
    for (size_t i = 0; i < 5; ++i) {
      ASSERT_EQ(calls[i].size(), 1u) << Describe(calls[i]);
      EXPECT_EQ(calls[i][0].length, want) << what << " call " << i;
      want *= 2;
    }
  }

  // Scan's degraded calls took the other cells in place (only whole rows:
  // in_place_rows_, the row's bytes).
  bool in_place_ = false;
  uint64_t in_place_rows_ = 0;
};

// A degraded stream's window and prefetch fills end at row boundaries
// (after the first, which cannot know), so calls hold whole rows.
TEST_F(ReaderShapeTest, DegradedEcFillsEndAtRowBoundaries) {
  const uint64_t size = 40 * kRow + 1000;
  for (bool prefetch : {false, true}) {
    ReaderOptions ro;
    ro.prefetch = prefetch;
    std::vector<Call> calls =
        Scan(size, /*ec=*/true, /*degraded=*/true, 64 << 10, ro);
    ASSERT_GE(calls.size(), 4u);
    // In file order: a prefetch's call may be recorded before the fill
    // that started it.
    std::sort(calls.begin(), calls.end(), [](const Call& a, const Call& b) {
      return a.front().offset < b.front().offset;
    });
    int whole_rows = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      const Call& c = calls[i];
      ASSERT_EQ(c.size(), 1u) << Describe(c);
      const Range& r = c[0];
      const bool ends_row = r.end() % kRow == 0 || r.end() == size;
      if (i > 0) {
        EXPECT_TRUE(ends_row) << "prefetch " << prefetch << " " << Describe(c);
      }
      if (r.offset % kRow == 0 && ends_row) ++whole_rows;
    }
    // 256 KiB, then [256K, 768K) (2 rows), then whole rows to the end.
    EXPECT_GE(whole_rows, static_cast<int>(calls.size()) - 2)
        << "prefetch " << prefetch;
  }
}

// A degraded stream's reads straight into the caller's buffer hold whole
// rows: a Read ends on a row boundary (a short Read when the caller's
// buffer reaches past it), and one of less than a row but at least half of
// it also reads the rest of the row into the window in the same call, which
// the next Read returns. The first call cannot know; the second ends at the
// first row boundary. So after those, each row is read by one call.
TEST_F(ReaderShapeTest, DegradedEcDirectReadsHoldWholeRows) {
  const uint64_t size = 20 * kRow + 1000;
  // 2/3 of a row (a tail each row), 2 2/3 rows (2 rows a call).
  for (size_t io : {size_t{256} << 10, size_t{1} << 20}) {
    ReaderOptions ro;
    ro.prefetch = false;  // every fill is a direct read
    const std::vector<Call> calls =
        Scan(size, /*ec=*/true, /*degraded=*/true, io, ro);
    ASSERT_GE(calls.size(), 3u);
    EXPECT_EQ(calls[0].size(), 1u) << Describe(calls[0]);
    EXPECT_EQ(calls[1].back().end() % kRow, 0u) << Describe(calls[1]);
    int tails = 0;
    for (size_t i = 2; i < calls.size(); ++i) {
      const Call& c = calls[i];
      const Range& own = c.front();
      EXPECT_LE(own.length, io) << Describe(c);
      EXPECT_EQ(own.offset % kRow, 0u) << "io " << io << " " << Describe(c);
      EXPECT_TRUE(c.back().end() % kRow == 0 || c.back().end() == size)
          << "io " << io << " " << Describe(c);
      if (c.size() == 2) {
        EXPECT_EQ(c[1].offset, own.end()) << Describe(c);
        EXPECT_LT(own.length, kRow) << Describe(c);
        ++tails;
      }
    }
    // One call a row (the first two aside), the last row's part with it.
    if (io < kRow) {
      EXPECT_GE(tails, 15) << "io " << io;
      EXPECT_LE(calls.size(), 2u + 20u + 1u) << "io " << io;
    } else {
      EXPECT_EQ(tails, 0) << "io " << io;
      EXPECT_LE(calls.size(), 2u + 10u + 1u) << "io " << io;
    }
  }
}

// One that holds less than half of a row reads no tail (its lost cell is
// rebuilt from parity cells instead of copying the tail twice), and ends on
// the row's boundary when it reaches it.
TEST_F(ReaderShapeTest, DegradedEcDirectReadsOfLessThanHalfARowReadNoTail) {
  const uint64_t size = 20 * kRow + 1000;
  const size_t io = 160 << 10;  // 5/12 of a row
  ReaderOptions ro;
  ro.prefetch = false;
  const std::vector<Call> calls =
      Scan(size, /*ec=*/true, /*degraded=*/true, io, ro);
  for (size_t i = 1; i < calls.size(); ++i) {
    const Call& c = calls[i];
    ASSERT_EQ(c.size(), 1u) << Describe(c);
    // Within one row: no call crosses a boundary (but the one that reaches
    // the end of the file).
    if (c[0].end() == size) continue;
    EXPECT_EQ(c[0].offset / kRow, (c[0].end() - 1) / kRow) << Describe(c);
  }
}

// A healthy stream's direct reads are the caller's own: no tail, no copy.
TEST_F(ReaderShapeTest, HealthyEcDirectReadsAreTheCallersOwn) {
  const uint64_t size = 20 * kRow + 1000;
  const size_t io = 256 << 10;
  ReaderOptions ro;
  ro.prefetch = false;
  ExpectCallersOwnReads(Scan(size, /*ec=*/true, /*degraded=*/false, io, ro),
                        size, io);
}

// A stream whose rebuilds took the other cells in place (the page cache:
// no copies) is read as a healthy one: rows would only add the tail's
// second copy. Direct reads are the caller's own; fills keep their sizes.
TEST_F(ReaderShapeTest, DegradedEcWithCellsInPlaceReadsAsAHealthyOne) {
  in_place_ = true;
  const uint64_t size = 20 * kRow + 1000;
  const size_t io = 256 << 10;
  ReaderOptions ro;
  ro.prefetch = false;
  ExpectCallersOwnReads(Scan(size, /*ec=*/true, /*degraded=*/true, io, ro),
                        size, io);
  ExpectDoublingFills(
      Scan(2 * size, /*ec=*/true, /*degraded=*/true, 64 << 10, ro), ro,
      "fills");
}

// A stream whose whole rows rebuild in place but whose plain reads copy
// (some cells local, others not) stays with rows: it tries plain reads
// again only after more and more rows (backing off), never every other
// call.
TEST_F(ReaderShapeTest, DegradedEcInPlaceOnlyInRowsKeepsToRows) {
  in_place_rows_ = kRow;
  const uint64_t size = 300 * kRow;
  ReaderOptions ro;
  ro.prefetch = false;
  // Reads of 2/3 of a row (a row a call, with its tail, while in rows)
  // and of 2 2/3 rows (2 rows a call).
  for (size_t io : {size_t{256} << 10, size_t{1} << 20}) {
    const std::vector<Call> calls =
        Scan(size, /*ec=*/true, /*degraded=*/true, io, ro);
    int plain = 0;
    for (const Call& c : calls) {
      const uint64_t begin = c.front().offset;
      const uint64_t end = c.back().end();
      if (begin % kRow != 0 || (end % kRow != 0 && end != size)) ++plain;
    }
    // A plain try per back-off (1, 2, 4, ... 64 rows, then every 64 rows:
    // 9 over 300 rows), each of a call or two before the copies show:
    // ~20, against ~200 (2 calls in 3) if each whole row turned plain
    // reads on again.
    EXPECT_LE(plain, 24) << "io " << io << ", " << calls.size() << " calls";
  }
}

// A plain striped file's fills, and a healthy erasure-coded file's, keep
// their sizes: the window doubles.
TEST_F(ReaderShapeTest, PlainAndHealthyEcFillsAreUnchanged) {
  const uint64_t size = 40 * kRow + 1000;
  for (bool ec : {false, true}) {
    ReaderOptions ro;
    ro.prefetch = false;
    // A plain file is read the same whatever its calls report.
    ExpectDoublingFills(Scan(size, ec, /*degraded=*/!ec, 64 << 10, ro), ro,
                        absl::StrCat("ec ", ec));
  }
}

// A caller whose reads land straight in its buffer (a window each) and who
// calls again at once gets no prefetch after its first call: a prefetch
// would be the same single read in flight plus a copy (over NFS on capped
// links it cost the scan a third of its rate). One who spends time between
// calls keeps reading ahead in the background while storage takes its time
// too (prefetch_policy.h). Time is a ThreadClock's: the caller's gaps and
// the reads' times are exactly what each case says, whatever the load.
TEST(ReaderPrefetchTest, DirectReadsPrefetchOnlyWhileTheCallerTakesItsTime) {
  constexpr size_t kIo = 4 << 20;  // a copy's cost: 1 ms (policy: 2 ms)
  constexpr int kCalls = 16;
  const std::string data = Bytes(kCalls * kIo);
  struct Case {
    const char* what;
    absl::Duration latency;  // each read's, in storage
    absl::Duration gap;      // the caller's, before each call but the first
    int late_call;           // -1, or the one call after `gap`; others at once
    int background;          // prefetches expected
  };
  const absl::Duration k5ms = absl::Milliseconds(5);
  const Case cases[] = {
      // The first call's prefetch only (nothing is known yet).
      {"the caller calls again at once", k5ms, absl::ZeroDuration(), -1, 1},
      // One late call (a scheduler's delay) does not turn prefetching on:
      // the smaller of the last two gaps counts.
      {"the caller calls at once but once late", k5ms, k5ms, kCalls / 2, 1},
      // Every call's prefetch but the last's (the end of the file).
      {"the caller takes 5 ms between calls", k5ms, k5ms, -1, kCalls - 1},
      // A read of 1 ms overlaps too little to pay for the copy.
      {"the caller takes 5 ms, reads take 1 ms", absl::Milliseconds(1), k5ms,
       -1, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ThreadClock clock;
    RecordingHost host(
        data, false, [&c](uint64_t) { return c.latency; }, &clock);
    FileImpl file(&host, Layout(data.size(), false), /*pinned=*/true);
    std::unique_ptr<Reader> reader = file.NewReader({.max_readahead = kIo});
    std::string buf(kIo, '\0');
    for (int i = 0; i < kCalls; ++i) {
      if (i > 0 && (c.late_call < 0 || c.late_call == i)) {
        clock.SleepFor(c.gap);
      }
      absl::StatusOr<size_t> n = reader->Read(absl::MakeSpan(buf));
      ASSERT_THAT(n, IsOk());
      ASSERT_EQ(*n, kIo);
      ASSERT_EQ(memcmp(buf.data(), data.data() + i * kIo, kIo), 0) << i;
    }
    reader.reset();  // joins a prefetch
    EXPECT_EQ(host.background_calls(), c.background);
  }
}

// The same caller, taking its time, while storage turns fast and then slow
// again: prefetching follows each fill's time, a prefetch's (it stops
// once they take less than twice the copy) and a direct read's (it starts
// again once those take long again).
TEST(ReaderPrefetchTest, DirectReadsPrefetchFollowsTheStoragesPace) {
  constexpr size_t kIo = 4 << 20;
  constexpr int kCalls = 16;
  const std::string data = Bytes(kCalls * kIo);
  ThreadClock clock;
  // Windows 6 to 10 take 1 ms, the others 5 ms.
  RecordingHost host(
      data, false,
      [](uint64_t offset) {
        const uint64_t w = offset / kIo;
        return w >= 6 && w <= 10 ? absl::Milliseconds(1)
                                 : absl::Milliseconds(5);
      },
      &clock);
  FileImpl file(&host, Layout(data.size(), false), /*pinned=*/true);
  std::unique_ptr<Reader> reader = file.NewReader({.max_readahead = kIo});
  std::string buf(kIo, '\0');
  for (int i = 0; i < kCalls; ++i) {
    if (i > 0) clock.SleepFor(absl::Milliseconds(5));
    absl::StatusOr<size_t> n = reader->Read(absl::MakeSpan(buf));
    ASSERT_THAT(n, IsOk());
    ASSERT_EQ(*n, kIo);
    ASSERT_EQ(memcmp(buf.data(), data.data() + i * kIo, kIo), 0) << i;
  }
  reader.reset();  // joins a prefetch
  // Windows 1 to 6 are prefetched (6's 1 ms turns it off), 7 to 12 read
  // directly (12's read starts before 11's 5 ms is known), 13 to 15
  // prefetched again.
  std::vector<uint64_t> prefetched;
  for (uint64_t offset : host.background_offsets()) {
    prefetched.push_back(offset / kIo);
  }
  EXPECT_THAT(prefetched, ::testing::ElementsAre(1, 2, 3, 4, 5, 6, 13, 14, 15));
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
