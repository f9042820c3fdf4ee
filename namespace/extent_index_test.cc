// ExtentIndex::Find against a plain binary search, over extents of equal,
// random and very skewed sizes (its interpolation guess is then far off).
#include "namespace/extent_index.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rangefs {
namespace ns {
namespace {

// What Find must return: the last extent starting at or before `offset`.
size_t Reference(const std::vector<uint64_t>& starts, uint64_t offset) {
  auto it = std::upper_bound(starts.begin(), starts.end(), offset);
  return it == starts.begin() ? starts.size()
                              : static_cast<size_t>(it - starts.begin()) - 1;
}

// Indexes a layout whose extents start at `starts`, then checks Find at
// every start, one byte either side of it and `random_probes` offsets.
void CheckFind(const std::vector<uint64_t>& starts, int random_probes) {
  v1::FileLayout l;
  for (uint64_t s : starts) l.add_extents()->set_offset(s);
  const std::string bytes = l.SerializeAsString();
  absl::StatusOr<ExtentIndex> index = IndexExtents(bytes, l);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->size(), starts.size());
  std::vector<uint64_t> probes = {0, std::numeric_limits<uint64_t>::max()};
  for (uint64_t s : starts) {
    probes.push_back(s);
    if (s > 0) probes.push_back(s - 1);
    if (s < std::numeric_limits<uint64_t>::max()) probes.push_back(s + 1);
  }
  std::mt19937_64 rng(starts.size());
  const uint64_t top = starts.empty() ? 1000 : starts.back() + 1000;
  for (int i = 0; i < random_probes; ++i) probes.push_back(rng() % top);
  for (uint64_t p : probes) {
    ASSERT_EQ(index->Find(p), Reference(starts, p))
        << "offset " << p << " over " << starts.size() << " extents";
  }
}

TEST(ExtentIndexTest, EmptyAndTinyIndexes) {
  CheckFind({}, 10);
  CheckFind({0}, 10);
  CheckFind({0, 5}, 10);
  CheckFind({100, 200, 300}, 100);  // nothing at or before 0..99
}

TEST(ExtentIndexTest, EqualExtents) {
  std::vector<uint64_t> starts;
  for (uint64_t i = 0; i < 1000; ++i) starts.push_back(i << 26);
  CheckFind(starts, 20000);
}

TEST(ExtentIndexTest, RandomExtents) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<uint64_t> starts;
    uint64_t off = 0;
    const int n = 1 + static_cast<int>(rng() % 3000);
    for (int i = 0; i < n; ++i) {
      starts.push_back(off);
      off += 1 + rng() % (uint64_t{1} << (rng() % 40));
    }
    CheckFind(starts, 5000);
  }
}

TEST(ExtentIndexTest, SkewedExtentsWhereTheGuessIsFarOff) {
  // Many tiny extents, then one huge one: every guess lands at the far
  // end of the tiny ones or in the middle of them.
  std::vector<uint64_t> starts;
  for (uint64_t i = 0; i < 2000; ++i) starts.push_back(i);
  starts.push_back(uint64_t{1} << 50);
  CheckFind(starts, 20000);
  // One huge extent first, then tiny ones.
  starts.clear();
  starts.push_back(0);
  for (uint64_t i = 0; i < 2000; ++i) starts.push_back((uint64_t{1} << 50) + i);
  CheckFind(starts, 20000);
  // Doubling sizes, and offsets near the top of the range (the guess's
  // product must not overflow).
  starts.clear();
  for (int i = 0; i < 63; ++i) starts.push_back(uint64_t{1} << i);
  starts.push_back(std::numeric_limits<uint64_t>::max() - 1);
  CheckFind(starts, 20000);
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
