#include "base/crc32c.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace rangefs {
namespace {

using crc32c_internal::ExtendHardware;
using crc32c_internal::ExtendSoftware;
using crc32c_internal::HardwareAvailable;

struct Vector {
  std::string data;
  uint32_t crc;
};

std::vector<Vector> KnownVectors() {
  std::vector<Vector> v;
  v.push_back({"", 0});
  v.push_back({"123456789", 0xE3069283u});
  v.push_back({"a", 0xC1D04330u});
  // RFC 3720 (iSCSI) B.4 test patterns.
  v.push_back({std::string(32, '\0'), 0x8A9136AAu});
  v.push_back({std::string(32, '\xff'), 0x62A8AB43u});
  std::string inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  v.push_back({inc, 0x46DD794Eu});
  std::string dec(32, '\0');
  for (int i = 0; i < 32; ++i) dec[i] = static_cast<char>(31 - i);
  v.push_back({dec, 0x113FDB5Cu});
  return v;
}

TEST(Crc32cTest, KnownVectors) {
  for (const Vector& v : KnownVectors()) {
    EXPECT_EQ(Crc32c(v.data), v.crc) << "size " << v.data.size();
    EXPECT_EQ(ExtendSoftware(0, v.data.data(), v.data.size()), v.crc);
    if (HardwareAvailable()) {
      EXPECT_EQ(ExtendHardware(0, v.data.data(), v.data.size()), v.crc);
    }
  }
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string s = "hello, rangefs storage node";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t c = Crc32c(absl::string_view(s).substr(0, cut));
    c = Crc32cExtend(c, s.data() + cut, s.size() - cut);
    EXPECT_EQ(c, Crc32c(s)) << cut;
  }
}

TEST(Crc32cTest, HardwareMatchesSoftwareOnRandomData) {
  if (!HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937_64 rng(42);
  std::string buf(1 << 16, '\0');
  for (char& ch : buf) ch = static_cast<char>(rng());
  for (int i = 0; i < 2000; ++i) {
    // Random offset (alignment) and length, random seed crc.
    size_t off = rng() % 64;
    size_t len = rng() % (buf.size() - off);
    if (i % 4 == 0) len %= 100;
    uint32_t seed = static_cast<uint32_t>(rng());
    ASSERT_EQ(ExtendHardware(seed, buf.data() + off, len),
              ExtendSoftware(seed, buf.data() + off, len))
        << "off " << off << " len " << len;
  }
}

// Lengths around the three-lane group sizes (3 x 256, 3 x 8192) and big
// buffers, at every alignment: the lane joins must be exact.
TEST(Crc32cTest, HardwareMatchesSoftwareAroundLaneSizes) {
  if (!HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937_64 rng(7);
  std::string buf((3 << 20) + 64, '\0');
  for (char& ch : buf) ch = static_cast<char>(rng());
  for (size_t base :
       {size_t{768}, size_t{24576}, size_t{1} << 20, size_t{3} << 20}) {
    for (size_t len = base - 9; len <= base + 9; ++len) {
      for (size_t off = 0; off < 8; ++off) {
        uint32_t seed = static_cast<uint32_t>(rng());
        ASSERT_EQ(ExtendHardware(seed, buf.data() + off, len),
                  ExtendSoftware(seed, buf.data() + off, len))
            << "off " << off << " len " << len;
      }
    }
  }
}

}  // namespace
}  // namespace rangefs
