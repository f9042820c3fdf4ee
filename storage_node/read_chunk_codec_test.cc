#include "storage_node/read_chunk_codec.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"
#include "proto/node_agent.pb.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::HasSubstr;

// A ByteBuffer holding `wire` split into slices of `piece` bytes (0: one).
grpc::ByteBuffer Buffer(const std::string& wire, size_t piece = 0) {
  if (piece == 0) piece = wire.size() + 1;
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < wire.size(); i += piece) {
    std::string part = wire.substr(i, piece);
    slices.emplace_back(part.data(), part.size());
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Chunk(uint64_t offset, const std::string& data, uint32_t crc) {
  ReadRangeChunk c;
  c.set_offset(offset);
  c.set_data(data);
  c.set_crc32c(crc);
  return c.SerializeAsString();
}

TEST(ReadChunkCodecTest, DecodesAcrossSlicesIntoBuffer) {
  std::string data(100000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  const std::string wire = Chunk(123456789012, data, Crc32c(data));
  for (size_t piece : {size_t{0}, size_t{1}, size_t{3}, size_t{4096}}) {
    std::string dst(data.size() + 10, 'z');
    auto c = DecodeReadRangeChunk(Buffer(wire, piece), absl::MakeSpan(dst),
                                  /*check_crc=*/true);
    ASSERT_THAT(c, IsOk()) << piece;
    EXPECT_EQ(c->offset, 123456789012u);
    EXPECT_EQ(c->size, data.size());
    EXPECT_EQ(dst.substr(0, data.size()), data);
    EXPECT_EQ(dst.substr(data.size()), std::string(10, 'z'));
  }
}

std::string Flatten(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(b.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

TEST(ReadChunkCodecTest, EncodeMatchesProtobuf) {
  for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 40}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{200}, size_t{70000}}) {
      char* p;
      grpc::Slice data = NewWritableSlice(n, &p);
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<char>(i * 13);
      const std::string bytes(p, n);
      for (uint32_t crc : {uint32_t{0}, Crc32c(bytes)}) {
        const grpc::ByteBuffer b = EncodeReadRangeChunk(offset, data, crc);
        EXPECT_EQ(Flatten(b), Chunk(offset, bytes, crc));
        ReadRangeChunk parsed;
        ASSERT_TRUE(parsed.ParseFromString(Flatten(b)));
        EXPECT_EQ(parsed.offset(), offset);
        EXPECT_EQ(parsed.data(), bytes);
        EXPECT_EQ(parsed.crc32c(), crc);
      }
    }
  }
}

TEST(ReadChunkCodecTest, EmptyAndDefaultFields) {
  char dst[1];
  auto c =
      DecodeReadRangeChunk(grpc::ByteBuffer(), absl::MakeSpan(dst, 0), true);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->offset, 0u);
  EXPECT_EQ(c->size, 0u);
}

TEST(ReadChunkCodecTest, SkipsUnknownFields) {
  std::string wire = Chunk(5, "abc", Crc32c("abc"));
  wire += std::string("\x20\x96\x01", 3);  // field 4 varint
  wire += std::string("\x2a\x02xy", 4);    // field 5 bytes
  wire += std::string("\x31\x01\x02\x03\x04\x05\x06\x07\x08", 9);  // fixed64
  wire += std::string("\x3d\x01\x02\x03\x04", 5);  // field 7 fixed32
  char dst[3];
  auto c = DecodeReadRangeChunk(Buffer(wire, 2), absl::MakeSpan(dst), true);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->offset, 5u);
  EXPECT_EQ(std::string(dst, 3), "abc");
}

TEST(ReadChunkCodecTest, CrcMismatchIsDataLoss) {
  std::string wire = Chunk(0, "hello world", Crc32c("hello world"));
  wire[wire.find("world")] ^= 1;  // Corrupt one data byte.
  char dst[32];
  EXPECT_THAT(DecodeReadRangeChunk(Buffer(wire), absl::MakeSpan(dst), true),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("CRC32C")));
  EXPECT_THAT(DecodeReadRangeChunk(Buffer(wire), absl::MakeSpan(dst), false),
              IsOk());
}

TEST(ReadChunkCodecTest, DataLargerThanBufferIsOutOfRange) {
  const std::string wire = Chunk(0, "hello", Crc32c("hello"));
  char dst[4];
  EXPECT_THAT(DecodeReadRangeChunk(Buffer(wire), absl::MakeSpan(dst), true),
              StatusIs(absl::StatusCode::kOutOfRange));
}

TEST(ReadChunkCodecTest, MalformedWireDataIsInvalidArgument) {
  const std::string good = Chunk(300, "payload", Crc32c("payload"));
  std::vector<std::string> bad = {
      good.substr(0, good.size() - 1),  // Truncated crc32c.
      good.substr(0, 2),                // Truncated offset varint.
      good.substr(0, 6),                // Data shorter than its length.
      std::string("\x08") + std::string(11, '\xff'),  // Varint > 10 bytes.
      std::string("\x0b", 1),                         // Wire type 3.
      std::string("\x00\x01", 2),                     // Field number 0.
      std::string("\x12\x01x\x12\x01y", 6),           // Data twice.
      std::string("\x2a\xff\xff\xff\xff\x0f", 6),     // Unknown, too long.
  };
  for (const std::string& wire : bad) {
    char dst[64];
    for (size_t piece : {size_t{0}, size_t{1}}) {
      EXPECT_THAT(
          DecodeReadRangeChunk(Buffer(wire, piece), absl::MakeSpan(dst), true),
          StatusIs(absl::StatusCode::kInvalidArgument,
                   HasSubstr("malformed ReadRangeChunk")))
          << absl::CEscape(wire);
    }
  }
}

}  // namespace
}  // namespace node
}  // namespace rangefs
