// File: layout.h
//
// Pure functions over the namespace schema (proto/layout.proto): path rules,
// validation with precise errors, and mapping a logical byte range onto the
// pieces that live on replicas. No I/O.
//
//   RANGEFS_RETURN_IF_ERROR(ValidatePath("/crawl/seg-0001"));
//   RANGEFS_RETURN_IF_ERROR(ValidateLayout(layout, known_node));
//   std::vector<Piece> pieces = MapRange(layout, offset, length, 1 << 20);
#ifndef RANGEFS_NAMESPACE_LAYOUT_H_
#define RANGEFS_NAMESPACE_LAYOUT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

namespace v1 = ::rangefs::v1;

inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxNameBytes = 255;
// etcd rejects requests over 1.5 MiB; keep one layout well under that.
inline constexpr size_t kMaxLayoutBytes = 1 << 20;
inline constexpr uint64_t kMaxFileSize = uint64_t{1} << 52;  // 4 PiB
inline constexpr int kMaxReplicas = 8;
// Per layout; larger files use the striped form.
inline constexpr int kMaxExtents = 100000;
inline constexpr int kMaxStripeTargets = 4096;

// OK if `path` is a normalized absolute logical path: starts with '/', no
// empty, "." or ".." components, no trailing '/', no NUL, no control chars,
// names <= 255 bytes, whole <= 4096 bytes. "/" itself is not a file path.
// INVALID_ARGUMENT otherwise, saying what is wrong and where.
absl::Status ValidatePath(absl::string_view path);

// Like ValidatePath but for a directory argument: also accepts "/".
absl::Status ValidateDir(absl::string_view dir);

// OK if `object` is a relative path inside a node's export: no leading '/',
// no empty, "." or ".." components, no NUL. INVALID_ARGUMENT otherwise.
absl::Status ValidateObjectPath(absl::string_view object);

// Node ids: 1-64 chars of [A-Za-z0-9._-], not "." or "..".
absl::Status ValidateNodeId(absl::string_view id);
// A cluster name (the <cluster> of /rangefs/v1/<cluster>/...): the same rule
// as node ids. Every program checks the name it was given before use.
absl::Status ValidateClusterName(absl::string_view name);

// "host:port": a port in 1..65535 and a host of at most 253 chars of
// [A-Za-z0-9.-_:[]] (names, IPv4, bracketed IPv6). INVALID_ARGUMENT.
absl::Status ValidateAddress(absl::string_view address);

// Checks a node record: id, "host:port" addresses (ValidateAddress),
// normalized absolute export and (if set) mount paths, a known admin state.
absl::Status ValidateNode(const v1::NodeRecord& node);

// Returns true if a node id is known. May be empty: then unchecked.
using NodeKnownFn = std::function<bool(absl::string_view node_id)>;

// Checks a layout: size and state sane; exactly one of extents/striped
// (none for an empty file); extents sorted, non-overlapping, each non-empty
// and together covering [0, size) exactly; every extent/target has 1-8
// replicas on distinct, known nodes with valid object paths, not all of
// them marked leaving; no offset
// overflows; encoded size under kMaxLayoutBytes; an erasure code only
// in the shape ValidateErasureCode (ec_layout.h) accepts. INVALID_ARGUMENT
// naming the extent/target index and the offending value; FAILED_PRECONDITION
// for an unknown node.
absl::Status ValidateLayout(const v1::FileLayout& layout,
                            const NodeKnownFn& node_known = nullptr);

// A contiguous part of a logical read that lives in one place: bytes
// [offset, offset + length) of the file are at
// replica.object_offset() + object_delta of each replica's object.
struct Piece {
  uint64_t offset = 0;
  uint64_t length = 0;
  // Points into the layout passed to MapRange; valid while it lives.
  const google::protobuf::RepeatedPtrField<v1::Replica>* replicas = nullptr;
  uint64_t object_delta = 0;
  // Extent index, or stripe column for striped layouts.
  uint32_t unit = 0;

  uint64_t ObjectOffset(const v1::Replica& r) const {
    return r.object_offset() + object_delta;
  }
};

// Splits [offset, offset + length) of a valid layout into pieces cut at
// extent / stripe-unit boundaries (erasure-coded: on the k data columns
// only; parity is never a piece) and at most `max_piece` bytes (0 = no
// cap). The range is clipped at the file size. Returns no pieces for an
// empty range.
std::vector<Piece> MapRange(const v1::FileLayout& layout, uint64_t offset,
                            uint64_t length, uint64_t max_piece);

// The extent part of MapRange: appends the pieces of [offset, end) that lie
// in `ext` (sorted, non-overlapping; a run of a valid layout's extents whose
// first is extent `first_unit` of the file), numbering units from
// `first_unit`. Bytes of [offset, end) outside `ext` get no piece.
void MapExtents(const google::protobuf::RepeatedPtrField<v1::Extent>& ext,
                uint32_t first_unit, uint64_t offset, uint64_t end,
                uint64_t max_piece, std::vector<Piece>* out);

// Every node id referenced by the layout, sorted and unique.
std::vector<std::string> ReferencedNodes(const v1::FileLayout& layout);

// Short human names.
absl::string_view AdminStateName(v1::AdminState state);
absl::string_view FileStateName(v1::FileState state);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_LAYOUT_H_
