// Fuzz target over the storage node's read framing, from untrusted bytes:
//   mode 0: a data-port request as the agent parses it
//           (DecodeDataPortRequestHeader, CheckDataPortRequestFlags);
//   mode 1: a data-port reply stream as the client parses it
//           (ReadDataPortReply) into a buffer of a fuzzed size;
//   mode 2: a gRPC ReadRangeChunk as the client decodes it
//           (DecodeReadRangeChunk) from a fuzzed number of slices.
// The first input byte picks the mode. Each mode checks invariants and
// aborts (FUZZ_CHECK) on a violation; ASan/UBSan catch the rest.
// Corpus: tests/fuzz/corpus/data_port (tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/crc32c.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "storage_node/data_port_wire.h"
#include "storage_node/read_chunk_codec.h"
#include "tests/fuzz/byte_reader.h"
#include "tests/fuzz/fuzz_check.h"

namespace rangefs {
namespace fuzz {
namespace {

using node::kDataPortMaxFrameBytes;
using node::kDataPortMaxMessageBytes;
using node::kDataPortRequestHeaderBytes;

// Mode 0. Input: the bytes the agent receives.
void FuzzRequest(ByteReader& in) {
  const absl::string_view wire = in.Rest();
  absl::StatusOr<node::DataPortRequestHeader> h =
      node::DecodeDataPortRequestHeader(wire);
  if (wire.size() < kDataPortRequestHeaderBytes) {
    FUZZ_CHECK(!h.ok()) << "decoded a " << wire.size() << "-byte header";
  }
  if (!h.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(h.status())) << h.status();
    return;
  }
  FUZZ_CHECK(h->path_len <= node::kDataPortMaxPathBytes) << h->path_len;
  const bool flags_ok = node::CheckDataPortRequestFlags(h->flags).ok();
  FUZZ_CHECK(flags_ok == ((h->flags & ~node::kDataPortKnownFlags) == 0))
      << static_cast<int>(h->flags);
  if (wire.size() - kDataPortRequestHeaderBytes < h->path_len) return;
  // What the agent decoded is exactly what the client would have sent.
  const absl::string_view path =
      wire.substr(kDataPortRequestHeaderBytes, h->path_len);
  const std::string again =
      node::EncodeDataPortRequest(path, h->offset, h->length, h->flags);
  FUZZ_CHECK(again == wire.substr(0, again.size()))
      << "request does not round-trip";
}

// Where [p, p + n) lies relative to `v`'s bytes.
enum class Place { kOutside, kInside, kOverrun };
Place Locate(const char* p, size_t n, const std::vector<char>& v) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const auto b = reinterpret_cast<uintptr_t>(v.data());
  if (a < b || a >= b + v.size()) return Place::kOutside;
  return n <= b + v.size() - a ? Place::kInside : Place::kOverrun;
}

// Mode 1. Input: u16 requested length, u8 check_crc, u32 offset, then the
// bytes the client receives.
void FuzzReply(ByteReader& in) {
  std::vector<char> dst(in.U16());  // Exact size: ASan sees any overrun.
  const bool check_crc = (in.U8() & 1) != 0;
  const uint64_t offset = in.U32();
  const absl::string_view stream = in.Rest();
  size_t pos = 0;
  size_t into_dst = 0;
  bool recv_failed = false;
  auto recv = [&](char* p, size_t n, absl::string_view what) {
    FUZZ_CHECK(n <= kDataPortMaxFrameBytes) << "asked for " << n << " bytes";
    FUZZ_CHECK(!recv_failed) << "read on after a failed recv";
    if (n > stream.size() - pos) {
      recv_failed = true;
      return absl::UnavailableError(
          absl::StrCat("connection closed by the agent while ", what));
    }
    if (n > 0) {
      const Place where = Locate(p, n, dst);
      FUZZ_CHECK(where != Place::kOverrun) << n << "-byte frame runs past dst";
      if (where == Place::kInside) into_dst += n;
      memcpy(p, stream.data() + pos, n);
    }
    pos += n;
    return absl::OkStatus();
  };
  const node::DataPortReply r =
      node::ReadDataPortReply(recv, absl::MakeSpan(dst), check_crc, offset);
  FUZZ_CHECK(r.got <= dst.size()) << r.got << " > " << dst.size();
  FUZZ_CHECK(r.got <= into_dst) << "counted bytes never received";
  if (r.status.ok()) {
    FUZZ_CHECK(r.header_received && !r.refused && r.reusable);
    FUZZ_CHECK(r.got == into_dst) << r.got << " vs " << into_dst;
  } else {
    FUZZ_CHECK(static_cast<int>(r.status.code()) > 0 &&
               static_cast<int>(r.status.code()) <= 16)
        << r.status;
    FUZZ_CHECK(r.status.message().size() <= kDataPortMaxMessageBytes + 512)
        << r.status.message().size();
  }
  FUZZ_CHECK(!r.refused || (!r.status.ok() && r.header_received));
  FUZZ_CHECK(r.header_received || !r.reusable);
  // A connection is only pooled when the reply ended on a message boundary.
  FUZZ_CHECK(!r.reusable || !recv_failed) << r.status;
}

// Mode 2. Input: u16 buffer size, u8 (bit 0 check_crc, rest: slices - 1),
// then the serialized chunk.
void FuzzReadChunk(ByteReader& in) {
  std::vector<char> dst(in.U16());
  const uint8_t flags = in.U8();
  const bool check_crc = (flags & 1) != 0;
  const size_t pieces = 1 + (flags >> 1) % 16;
  const absl::string_view wire = in.Rest();
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < pieces; ++i) {
    const size_t b = wire.size() * i / pieces;
    const size_t e = wire.size() * (i + 1) / pieces;
    slices.emplace_back(wire.data() + b, e - b);
  }
  const grpc::ByteBuffer buffer(slices.data(), slices.size());
  absl::StatusOr<node::DecodedChunk> c =
      node::DecodeReadRangeChunk(buffer, absl::MakeSpan(dst), check_crc);
  if (!c.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(c.status()) ||
               absl::IsOutOfRange(c.status()) || absl::IsDataLoss(c.status()))
        << c.status();
    return;
  }
  FUZZ_CHECK(c->size <= dst.size()) << c->size << " > " << dst.size();
  FUZZ_CHECK(c->size <= wire.size()) << c->size << " > " << wire.size();
  // Encoding what was decoded and decoding it again gives the same chunk.
  const absl::string_view data(dst.data(), c->size);
  const grpc::Slice data_slice(data.data(), data.size());
  const grpc::ByteBuffer again =
      node::EncodeReadRangeChunk(c->offset, data_slice, Crc32c(data));
  std::vector<char> dst2(c->size);
  absl::StatusOr<node::DecodedChunk> c2 = node::DecodeReadRangeChunk(
      again, absl::MakeSpan(dst2), /*check_crc=*/true);
  FUZZ_CHECK(c2.ok()) << c2.status();
  FUZZ_CHECK(c2->offset == c->offset && c2->size == c->size);
  FUZZ_CHECK(absl::string_view(dst2.data(), dst2.size()) == data);
}

}  // namespace
}  // namespace fuzz
}  // namespace rangefs

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rangefs::fuzz::ByteReader in(data, size);
  switch (in.U8() % 3) {
    case 0:
      rangefs::fuzz::FuzzRequest(in);
      break;
    case 1:
      rangefs::fuzz::FuzzReply(in);
      break;
    default:
      rangefs::fuzz::FuzzReadChunk(in);
      break;
  }
  return 0;
}
