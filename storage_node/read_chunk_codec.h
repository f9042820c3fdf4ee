// File: read_chunk_codec.h
//
// Hand-written wire codec for the ReadRangeChunk message
// (proto/node_agent.proto) on the ReadRange hot path: decoding straight from
// the received gRPC slices into the caller's buffer, so that each data byte
// is copied once and checksummed once, with no protobuf parse and no
// intermediate std::string.
//
//   char* p;
//   grpc::Slice data = NewWritableSlice(n, &p);  // pread into p[0, n)
//   writer->Write(EncodeReadRangeChunk(off, data, Crc32c({p, n})));
//   ...
//   absl::StatusOr<DecodedChunk> c =
//       DecodeReadRangeChunk(buffer, dst.subspan(got), /*check_crc=*/true);
//
// Wire format (proto3): field 1 varint offset, field 2 length-delimited
// data, field 3 fixed32 crc32c; absent fields are zero/empty, fields may
// come in any order, unknown fields are skipped.
#ifndef RANGEFS_STORAGE_NODE_READ_CHUNK_CODEC_H_
#define RANGEFS_STORAGE_NODE_READ_CHUNK_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace rangefs {
namespace node {

// A new slice of `n` uninitialized bytes that the caller fills through
// `*data` (valid while the slice or a copy of it lives).
grpc::Slice NewWritableSlice(size_t n, char** data);

// A serialized ReadRangeChunk {offset, data, crc32c} that references
// `data` instead of copying it (plus two small slices for the field
// headers). Byte-identical to protobuf's serialization.
grpc::ByteBuffer EncodeReadRangeChunk(uint64_t offset, const grpc::Slice& data,
                                      uint32_t crc32c);

struct DecodedChunk {
  uint64_t offset = 0;  // Object offset of the chunk's first data byte.
  size_t size = 0;      // Data bytes, copied to dst[0, size).
};

// Decodes one serialized ReadRangeChunk from `buffer`, copying its data to
// the front of `dst` and, if `check_crc`, checking its CRC32C over the
// copied bytes. Errors (no partial result; `dst` may have been written):
//   INVALID_ARGUMENT: malformed wire data (truncated varint/field, bad wire
//                     type, data field repeated), naming the byte position;
//   OUT_OF_RANGE: the data is larger than `dst`;
//   DATA_LOSS: CRC32C mismatch (message says expected and actual).
// Does not modify `buffer`. Thread-compatible.
absl::StatusOr<DecodedChunk> DecodeReadRangeChunk(
    const grpc::ByteBuffer& buffer, absl::Span<char> dst, bool check_crc);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_READ_CHUNK_CODEC_H_
