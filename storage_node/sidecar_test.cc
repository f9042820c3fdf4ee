#include "storage_node/sidecar.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <random>
#include <string>

#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(SidecarTest, ChecksummerBlocksAndWhole) {
  const uint32_t bs = kMinBlockSize;
  for (size_t size : {size_t{0}, size_t{1}, size_t{bs - 1}, size_t{bs},
                      size_t{bs + 1}, size_t{5 * bs + 17}}) {
    std::string data = RandomBytes(size, static_cast<uint32_t>(size));
    BlockChecksummer sum(bs);
    // Feed in odd pieces to cross block boundaries mid-update.
    for (size_t off = 0; off < size; off += 777) {
      sum.Update(data.data() + off, std::min<size_t>(777, size - off));
    }
    Checksums c = sum.Finish();
    EXPECT_EQ(c.object_size, size);
    EXPECT_EQ(c.crc32c, Crc32c(data));
    ASSERT_EQ(c.block_crc32c.size(), BlockCount(size, bs));
    for (size_t b = 0; b < c.block_crc32c.size(); ++b) {
      EXPECT_EQ(c.block_crc32c[b],
                Crc32c(absl::string_view(data).substr(b * bs, bs)));
    }
  }
}

TEST(SidecarTest, EncodeDecodeRoundTrip) {
  BlockChecksummer sum(kMinBlockSize);
  std::string data = RandomBytes(3 * kMinBlockSize + 5, 7);
  sum.Update(data.data(), data.size());
  Checksums c = sum.Finish();
  std::string enc = EncodeSidecar(c);
  EXPECT_EQ(enc.size(), 24u + 4 * 4 + 4);
  EXPECT_EQ(enc.substr(0, 8), "RFSCRC01");
  auto d = DecodeSidecar(enc);
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ(d->block_size, c.block_size);
  EXPECT_EQ(d->object_size, c.object_size);
  EXPECT_EQ(d->crc32c, c.crc32c);
  EXPECT_EQ(d->block_crc32c, c.block_crc32c);
}

TEST(SidecarTest, DecodeRejectsDamage) {
  BlockChecksummer sum(kMinBlockSize);
  std::string data = RandomBytes(10000, 9);
  sum.Update(data.data(), data.size());
  std::string enc = EncodeSidecar(sum.Finish());
  for (size_t i = 0; i < enc.size(); ++i) {
    std::string bad = enc;
    bad[i] ^= 0x10;
    EXPECT_THAT(DecodeSidecar(bad), StatusIs(absl::StatusCode::kDataLoss))
        << "flip at " << i;
  }
  EXPECT_THAT(DecodeSidecar(enc.substr(0, enc.size() - 4)),
              StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeSidecar(""), StatusIs(absl::StatusCode::kDataLoss));
}

TEST(SidecarTest, ComputeChecksumsFromFile) {
  char tmpl[] = "/tmp/sidecar_testXXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  unlink(tmpl);
  std::string data = RandomBytes(3 * kMinBlockSize + 100, 3);
  ASSERT_EQ(write(fd, data.data(), data.size()),
            static_cast<ssize_t>(data.size()));
  auto c = ComputeChecksums(fd, kMinBlockSize, "tmp");
  close(fd);
  ASSERT_THAT(c, IsOk());
  BlockChecksummer sum(kMinBlockSize);
  sum.Update(data.data(), data.size());
  Checksums want = sum.Finish();
  EXPECT_EQ(c->crc32c, want.crc32c);
  EXPECT_EQ(c->block_crc32c, want.block_crc32c);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
