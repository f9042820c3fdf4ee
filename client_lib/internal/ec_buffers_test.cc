#include "client_lib/internal/ec_buffers.h"

#include <vector>

#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(EcBuffersTest, ABufferGivenBackIsTakenAgainWithoutAllocating) {
  EcBuffers pool;
  EcBuffer a = pool.Take(kMiB);
  char* const first = a.get();
  first[kMiB - 1] = 'x';  // at least the size asked for
  a.reset();
  EXPECT_EQ(pool.kept(), 1u);
  EcBuffer b = pool.Take(kMiB / 2);  // a smaller request reuses it too
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(pool.kept(), 0u);
}

TEST(EcBuffersTest, TheSmallestBigEnoughBufferIsTaken) {
  EcBuffers pool;
  EcBuffer big = pool.Take(4 * kMiB), small = pool.Take(kMiB);
  char* const small_data = small.get();
  big.reset();
  small.reset();
  EXPECT_EQ(pool.Take(kMiB).get(), small_data);
  EXPECT_NE(pool.Take(5 * kMiB).get(), nullptr);  // none fits: a new one
}

TEST(EcBuffersTest, SmallAndHugeRequestsAreNotKept) {
  EcBuffers pool;
  pool.Take(EcBuffers::kMinBytes - 1).reset();
  pool.Take(EcBuffers::kMaxBytes + 1).reset();
  EXPECT_EQ(pool.kept(), 0u);
}

TEST(EcBuffersTest, KeepsAtMostkMaxKeptBuffersAndkMaxKeptBytes) {
  EcBuffers pool;
  std::vector<EcBuffer> out;
  for (size_t i = 0; i <= EcBuffers::kMaxKept; ++i) {
    out.push_back(pool.Take(EcBuffers::kMinBytes));
  }
  out.clear();
  EXPECT_EQ(pool.kept(), EcBuffers::kMaxKept);
  EcBuffers bytes;
  const size_t n = EcBuffers::kMaxKeptBytes / EcBuffers::kMaxBytes;
  for (size_t i = 0; i <= n; ++i) {
    out.push_back(bytes.Take(EcBuffers::kMaxBytes));
  }
  out.clear();
  EXPECT_EQ(bytes.kept(), n);
}

TEST(EcBuffersTest, AMovedBufferGoesBackOnce) {
  EcBuffers pool;
  EcBuffer a = pool.Take(kMiB);
  EcBuffer b = std::move(a);
  EXPECT_EQ(a.get(), nullptr);
  a.reset();
  EXPECT_EQ(pool.kept(), 0u);
  b = EcBuffer();
  EXPECT_EQ(pool.kept(), 1u);
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
