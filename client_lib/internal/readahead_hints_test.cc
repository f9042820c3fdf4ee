// ReadaheadHints: which ranges a stream of read calls gets hinted.
#include "client_lib/internal/readahead_hints.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kSize = uint64_t{1} << 30;

TEST(ReadaheadHintsTest, SequentialStreamHintsAheadInGrowingBoundedWindows) {
  ReadaheadHints hints({.min_window = kMiB, .max_window = 16 * kMiB});
  std::vector<HintRange> got;
  uint64_t hinted_end = 0;
  for (uint64_t off = 0; off < 200 * kMiB; off += kMiB) {
    const HintRange h = hints.Observe(off, kMiB, kSize, true);
    if (h.length == 0) {
      // Between hints, what was hinted stays at least half a window ahead.
      if (off > kMiB) {
        EXPECT_GT(hinted_end, off + kMiB) << off;
      }
      continue;
    }
    // Contiguous with the last hint (or the reader's end), never behind
    // the reader, never more than max_window past its end.
    EXPECT_EQ(h.offset, std::max(hinted_end, off + kMiB)) << off;
    EXPECT_LE(h.offset + h.length, off + kMiB + 16 * kMiB) << off;
    hinted_end = h.offset + h.length;
    got.push_back(h);
  }
  ASSERT_GE(got.size(), 3u);
  // The first call alone is no stream; the second hints 4 calls' worth.
  EXPECT_EQ(got[0].offset, 2 * kMiB);
  EXPECT_EQ(got[0].length, 4 * kMiB);
  // Windows double up to the cap: the next hint (at 5 MiB read, within
  // half a window of the hinted end) reaches 8 MiB past the reader.
  EXPECT_EQ(got[1].offset, 6 * kMiB);
  EXPECT_EQ(got[1].offset + got[1].length, 5 * kMiB + 8 * kMiB);
  // Steady state: one hint per half window read (16 MiB cap: every 8).
  EXPECT_LE(got.size(), 200u / 8 + 4);
}

TEST(ReadaheadHintsTest, CachedStreamsHintNothingUntilACallWaits) {
  ReadaheadHints hints({.min_window = kMiB, .max_window = 8 * kMiB});
  for (uint64_t off = 0; off < 64 * kMiB; off += kMiB) {
    EXPECT_EQ(hints.Observe(off, kMiB, kSize, false).length, 0u) << off;
  }
  // The first call that waits starts the hints, which then go on while
  // the hinted bytes come from the page cache.
  const HintRange h = hints.Observe(64 * kMiB, kMiB, kSize, true);
  EXPECT_EQ(h.offset, 65 * kMiB);
  EXPECT_EQ(h.length, 4 * kMiB);
  int more = 0;
  for (uint64_t off = 65 * kMiB; off < 100 * kMiB; off += kMiB) {
    if (hints.Observe(off, kMiB, kSize, false).length > 0) ++more;
  }
  EXPECT_GE(more, 3);
}

// Random reads: no read continues one of the last reads (a random pair
// that happens to be adjacent is a sequential stream, and may hint). A
// fixed seed, so every run reads the same offsets.
TEST(ReadaheadHintsTest, RandomReadsNeverHint) {
  ReadaheadHints hints(ReadaheadWindow{});
  std::mt19937_64 gen(34);
  std::deque<uint64_t> recent_ends;
  for (int i = 0; i < 10000; ++i) {
    uint64_t off = 0;
    do {
      off = absl::Uniform<uint64_t>(gen, 0, kSize / 4096) * 4096;
    } while (std::find(recent_ends.begin(), recent_ends.end(), off) !=
             recent_ends.end());
    recent_ends.push_back(off + 4096);
    if (recent_ends.size() > 64) recent_ends.pop_front();
    const HintRange h = hints.Observe(off, 4096, kSize, true);
    EXPECT_EQ(h.length, 0u) << i << " at " << off;
  }
}

TEST(ReadaheadHintsTest, InterleavedStreamsEachHint) {
  ReadaheadHints hints({.min_window = kMiB, .max_window = 8 * kMiB});
  uint64_t a = 0, b = 512 * kMiB;
  int hinted_a = 0, hinted_b = 0;
  for (int i = 0; i < 20; ++i) {
    const HintRange ha = hints.Observe(a, kMiB, kSize, true);
    const HintRange hb = hints.Observe(b, kMiB, kSize, true);
    a += kMiB;
    b += kMiB;
    if (ha.length > 0) {
      ++hinted_a;
      EXPECT_GE(ha.offset, a);
      EXPECT_LE(ha.offset + ha.length, a + 8 * kMiB);
    }
    if (hb.length > 0) {
      ++hinted_b;
      EXPECT_GE(hb.offset, b);
    }
  }
  EXPECT_GE(hinted_a, 2);
  EXPECT_GE(hinted_b, 2);
}

TEST(ReadaheadHintsTest, HintsStopAtTheEndOfTheFile) {
  ReadaheadHints hints({.min_window = kMiB, .max_window = 64 * kMiB});
  const uint64_t size = 5 * kMiB + 100;
  uint64_t last_end = 0;
  for (uint64_t off = 0; off < size; off += kMiB) {
    const HintRange h =
        hints.Observe(off, std::min(kMiB, size - off), size, true);
    if (h.length > 0) last_end = h.offset + h.length;
  }
  EXPECT_EQ(last_end, size);
}

TEST(ReadaheadHintsTest, ASeekStartsOver) {
  ReadaheadHints hints({.min_window = kMiB, .max_window = 8 * kMiB});
  EXPECT_EQ(hints.Observe(0, kMiB, kSize, true).length, 0u);
  EXPECT_GT(hints.Observe(kMiB, kMiB, kSize, true).length, 0u);
  EXPECT_EQ(hints.Observe(100 * kMiB, kMiB, kSize, true).length, 0u);  // a seek
  const HintRange h = hints.Observe(101 * kMiB, kMiB, kSize, true);
  EXPECT_EQ(h.offset, 102 * kMiB);
  EXPECT_EQ(h.length, 4 * kMiB);  // a new stream's first window
}

// ObserveAll (a ReadV's ranges of one file, under one lock) hints what the
// same calls through Observe one by one would: random ranges and a
// sequential run mixed, cached and not.
TEST(ReadaheadHintsTest, ObserveAllHintsAsObserveOneByOne) {
  std::mt19937_64 rng(7);
  ReadaheadHints one({.min_window = kMiB, .max_window = 16 * kMiB});
  ReadaheadHints all({.min_window = kMiB, .max_window = 16 * kMiB});
  uint64_t seq = 0;
  int hints = 0;
  for (int call = 0; call < 200; ++call) {
    std::vector<HintRange> calls;
    for (int k = 0; k < 8; ++k) {
      if (rng() % 2 == 0) {
        calls.push_back({seq, 64 << 10});
        seq += 64 << 10;
      } else {
        calls.push_back({rng() % (kSize / 4096) * 4096, 4096});
      }
    }
    std::sort(calls.begin(), calls.end(),
              [](const HintRange& a, const HintRange& b) {
                return a.offset < b.offset;
              });
    const bool waited = rng() % 3 == 0;
    std::vector<HintRange> want;
    for (const HintRange& c : calls) {
      const HintRange h = one.Observe(c.offset, c.length, kSize, waited);
      if (h.length > 0) want.push_back(h);
    }
    const auto got = all.ObserveAll(calls, kSize, waited);
    ASSERT_EQ(got.size(), want.size()) << call;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].offset, want[i].offset) << call;
      EXPECT_EQ(got[i].length, want[i].length) << call;
    }
    hints += static_cast<int>(want.size());
  }
  EXPECT_GT(hints, 0);  // the sequential run was hinted
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
