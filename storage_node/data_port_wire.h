// File: data_port_wire.h
//
// Wire format of the storage node's raw-TCP data port (server: data_port.h,
// client: data_port_client.h): shared constants, little-endian helpers and
// the pure parsing both ends use (the request header on the server, the
// reply stream on the client); the protocol itself is documented in
// data_port.h. No I/O: the reply parser reads through a callback, so tests
// and the fuzzer (tests/fuzz/data_port_fuzzer.cc) feed it from memory.
#ifndef RANGEFS_STORAGE_NODE_DATA_PORT_WIRE_H_
#define RANGEFS_STORAGE_NODE_DATA_PORT_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rangefs {
namespace node {

inline constexpr uint32_t kDataPortRequestMagic = 0x50444652;  // "RFDP"
inline constexpr uint32_t kDataPortReplyMagic = 0x52444652;    // "RFDR"
inline constexpr uint8_t kDataPortVersion = 1;
inline constexpr uint8_t kDataPortFlagVerify = 1;      // bit 0
inline constexpr uint8_t kDataPortFlagBackground = 2;  // bit 1
inline constexpr uint8_t kDataPortKnownFlags =
    kDataPortFlagVerify | kDataPortFlagBackground;
// magic u32, version u8, flags u8, path_len u16, offset u64, length u64.
inline constexpr size_t kDataPortRequestHeaderBytes = 24;
inline constexpr size_t kDataPortMaxPathBytes = 4096;
// magic u32, code u32, message_len u32, then the message.
inline constexpr size_t kDataPortReplyHeaderBytes = 12;
inline constexpr size_t kDataPortMaxMessageBytes = 4096;
// len u32, crc32c u32, then len bytes.
inline constexpr size_t kDataPortFrameHeaderBytes = 8;
// A frame header with this len is an error trailer: the crc field holds the
// absl status code, then message_len u32 and the message follow.
inline constexpr uint32_t kDataPortErrorFrame = 0xFFFFFFFFu;
inline constexpr uint32_t kDataPortMaxFrameBytes = 16u << 20;

inline void PutLe16(char* p, uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void PutLe32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void PutLe64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline uint16_t GetLe16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) |
                               static_cast<uint8_t>(p[1]) << 8);
}
inline uint32_t GetLe32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint64_t GetLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Returns the request header followed by `path` (which the caller keeps
// within kDataPortMaxPathBytes).
inline std::string EncodeDataPortRequest(absl::string_view path,
                                         uint64_t offset, uint64_t length,
                                         uint8_t flags) {
  std::string out(kDataPortRequestHeaderBytes, '\0');
  PutLe32(&out[0], kDataPortRequestMagic);
  out[4] = static_cast<char>(kDataPortVersion);
  out[5] = static_cast<char>(flags);
  PutLe16(&out[6], static_cast<uint16_t>(path.size()));
  PutLe64(&out[8], offset);
  PutLe64(&out[16], length);
  out.append(path.data(), path.size());
  return out;
}

// Returns code u32, message_len u32 and the message (cut at
// kDataPortMaxMessageBytes): the tail of a reply header or error trailer.
inline std::string EncodeDataPortStatusBody(const absl::Status& s) {
  absl::string_view msg = s.message().substr(0, kDataPortMaxMessageBytes);
  std::string out(8, '\0');
  PutLe32(&out[0], static_cast<uint32_t>(s.code()));
  PutLe32(&out[4], static_cast<uint32_t>(msg.size()));
  out.append(msg.data(), msg.size());
  return out;
}

// A request header, decoded (the path_len bytes of path follow it).
struct DataPortRequestHeader {
  uint8_t flags = 0;
  size_t path_len = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Decodes the first kDataPortRequestHeaderBytes of `hdr`. INVALID_ARGUMENT
// if `hdr` is shorter, or for a bad magic, version or path_len over
// kDataPortMaxPathBytes (the server replies with it and closes the
// connection). Flags are checked apart (CheckDataPortRequestFlags): a
// request with unknown flags is refused after its path was read, so the
// connection stays usable.
absl::StatusOr<DataPortRequestHeader> DecodeDataPortRequestHeader(
    absl::string_view hdr);

// OK if only known flag bits are set; INVALID_ARGUMENT otherwise.
absl::Status CheckDataPortRequestFlags(uint8_t flags);

// Fills exactly n bytes at p, or fails (`what` says what was being read, for
// the message). The client passes its socket; tests pass a buffer.
using DataPortRecvFn =
    absl::FunctionRef<absl::Status(char* p, size_t n, absl::string_view what)>;

struct DataPortReply {
  // OK: the reply ended with the end frame. Otherwise the first failure:
  // the status `recv` returned, INTERNAL for a protocol error, DATA_LOSS for
  // a frame CRC mismatch, or the agent's answer (reply header or error
  // trailer).
  absl::Status status;
  // Data bytes written to dst[0, got) (on failure: before it).
  size_t got = 0;
  // The reply header arrived (else nothing of a reply did).
  bool header_received = false;
  // `status` is the agent's answer in the reply header: no frames followed.
  bool refused = false;
  // The connection can carry the next request.
  bool reusable = false;
};

// Reads one reply (header, then frames until the end frame or an error
// trailer) through `recv` into `dst`, which is as large as the requested
// length. Checks each frame's CRC32C if `check_crc`; `offset` (the
// request's) only names positions in messages. Never writes past `dst`,
// never reads a message over kDataPortMaxMessageBytes or a frame over
// kDataPortMaxFrameBytes. Thread-compatible.
DataPortReply ReadDataPortReply(DataPortRecvFn recv, absl::Span<char> dst,
                                bool check_crc, uint64_t offset);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_DATA_PORT_WIRE_H_
