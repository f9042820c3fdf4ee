#include "storage_node/data_port_wire.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/status_macros.h"

namespace rangefs {
namespace node {
namespace {

// The highest absl::StatusCode (UNAUTHENTICATED); codes past it are not
// ones an agent sends.
constexpr uint32_t kMaxStatusCode = 16;

// The status an agent sent. A struct, not a bare absl::Status: in
// StatusOr<absl::Status> an error returned as the outer status would
// silently become the value (the agent's answer).
struct AgentStatus {
  absl::Status status;
};

// Reads the message after `body` (code u32, message_len u32). An error is
// a transport or protocol failure; the value is the agent's answer.
absl::StatusOr<AgentStatus> ReadStatusBody(DataPortRecvFn recv,
                                           const char* body) {
  const uint32_t code = GetLe32(body);
  const uint32_t len = GetLe32(body + 4);
  if (len > kDataPortMaxMessageBytes) {
    return absl::InternalError(
        absl::StrCat("protocol error: status message of ", len, " bytes"));
  }
  if (code > kMaxStatusCode) {
    return absl::InternalError(
        absl::StrCat("protocol error: unknown status code ", code));
  }
  std::string msg(len, '\0');
  RANGEFS_RETURN_IF_ERROR(recv(&msg[0], len, "reading the status"));
  return AgentStatus{absl::Status(static_cast<absl::StatusCode>(code), msg)};
}

}  // namespace

absl::StatusOr<DataPortRequestHeader> DecodeDataPortRequestHeader(
    absl::string_view hdr) {
  if (hdr.size() < kDataPortRequestHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("data port: request header of ", hdr.size(),
                     " bytes, need ", kDataPortRequestHeaderBytes));
  }
  const char* p = hdr.data();
  if (GetLe32(p) != kDataPortRequestMagic) {
    return absl::InvalidArgumentError(
        "data port: bad request magic (not a rangefs data port client?)");
  }
  const uint8_t version = static_cast<uint8_t>(p[4]);
  if (version != kDataPortVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data port: unsupported protocol version ", static_cast<int>(version),
        " (this agent speaks ", static_cast<int>(kDataPortVersion), ")"));
  }
  DataPortRequestHeader h;
  h.flags = static_cast<uint8_t>(p[5]);
  h.path_len = GetLe16(p + 6);
  h.offset = GetLe64(p + 8);
  h.length = GetLe64(p + 16);
  if (h.path_len > kDataPortMaxPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat("data port: path_len ",
                                                   h.path_len, " exceeds ",
                                                   kDataPortMaxPathBytes));
  }
  return h;
}

absl::Status CheckDataPortRequestFlags(uint8_t flags) {
  if ((flags & ~kDataPortKnownFlags) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("data port: unknown request flags 0x", absl::Hex(flags)));
  }
  return absl::OkStatus();
}

DataPortReply ReadDataPortReply(DataPortRecvFn recv, absl::Span<char> dst,
                                bool check_crc, uint64_t offset) {
  DataPortReply out;
  char hdr[kDataPortReplyHeaderBytes];
  out.status = recv(hdr, sizeof(hdr), "waiting for the reply");
  if (!out.status.ok()) return out;
  out.header_received = true;
  if (GetLe32(hdr) != kDataPortReplyMagic) {
    out.status = absl::InternalError(
        "protocol error: bad reply magic (not a rangefs data port?)");
    return out;
  }
  absl::StatusOr<AgentStatus> reply = ReadStatusBody(recv, hdr + 4);
  if (!reply.ok()) {
    out.status = reply.status();
    return out;
  }
  if (!reply->status.ok()) {
    // The agent's answer to a well-formed request leaves the connection
    // usable (it closes it after malformed requests and when over its
    // connection cap).
    out.status = reply->status;
    out.refused = true;
    out.reusable = !absl::IsResourceExhausted(out.status) &&
                   !absl::IsInvalidArgument(out.status) &&
                   !absl::IsInternal(out.status);
    return out;
  }
  for (;;) {
    char fh[kDataPortFrameHeaderBytes];
    out.status = recv(fh, sizeof(fh), "reading a frame header");
    if (!out.status.ok()) return out;
    const uint32_t len = GetLe32(fh);
    const uint32_t crc = GetLe32(fh + 4);
    if (len == 0) break;
    if (len == kDataPortErrorFrame) {
      char full[8];
      PutLe32(full, crc);  // The code.
      out.status = recv(full + 4, 4, "reading an error trailer");
      if (!out.status.ok()) return out;
      absl::StatusOr<AgentStatus> trailer = ReadStatusBody(recv, full);
      if (!trailer.ok()) {
        out.status = trailer.status();
        return out;
      }
      out.status = trailer->status;
      out.reusable = !out.status.ok();
      if (out.status.ok()) {
        out.status = absl::InternalError("protocol error: OK error trailer");
      }
      return out;
    }
    const size_t room = dst.size() - out.got;
    if (len > room || len > kDataPortMaxFrameBytes) {
      out.status = absl::InternalError(
          absl::StrCat("protocol error: frame of ", len, " bytes with ", room,
                       " bytes of the request left"));
      return out;
    }
    char* p = dst.data() + out.got;
    out.status = recv(p, len, "reading frame data");
    if (!out.status.ok()) return out;
    if (check_crc) {
      const uint32_t actual = Crc32cExtend(0, p, len);
      if (actual != crc) {
        out.status = absl::DataLossError(absl::StrCat(
            "CRC32C mismatch in frame at ", offset + out.got, " (+", len,
            "): data has ", absl::Hex(actual), ", the agent sent ",
            absl::Hex(crc),
            " (for whole blocks the checksum stored at ingest: the object "
            "may be corrupt on the node's disk)"));
        return out;
      }
    }
    out.got += len;
  }
  out.reusable = true;
  return out;
}

}  // namespace node
}  // namespace rangefs
