// File: cached_layout.h
//
// A file layout as the client keeps it: the encoded record, every field but
// the extents parsed (`header`), and a compact index of the extents (their
// start offsets and where each one's submessage sits in the bytes), so that
// resolving a read parses only the extents it touches.
//
//   RANGEFS_ASSIGN_OR_RETURN(
//       std::shared_ptr<const CachedLayout> l,
//       DecodeCachedLayout(path, key, bytes, mod_revision));
//   RANGEFS_ASSIGN_OR_RETURN(MappedRange m, MapRange(*l, offset, n, 1 << 20));
//   // m.pieces point into m.extents or into l->header: keep both alive.
//
// Memory: the encoded bytes (shared with the cache's entry), about 12 B per
// extent of index and one parsed header (the striped form, if any, is part
// of the header). The record gate (record_gate.h) validates the whole
// record once, when it is decoded. Immutable after decoding; thread-safe.
#ifndef RANGEFS_NAMESPACE_CACHED_LAYOUT_H_
#define RANGEFS_NAMESPACE_CACHED_LAYOUT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "namespace/extent_index.h"
#include "namespace/layout.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

struct CachedLayout {
  std::string path;
  // Every field of the record except `extents` (see FullLayout).
  v1::FileLayout header;
  int64_t mod_revision = 0;
  // The encoded v1::FileLayout, validated by the record gate.
  std::shared_ptr<const std::string> bytes;
  // Where each extent of `bytes` is; empty for striped and empty files.
  ExtentIndex index;
};

// Decodes `bytes` (the value at etcd `key`) through the record gate
// (DecodeFileLayout) and indexes its extents. DATA_LOSS naming `key` if the
// record is not a valid layout. `bytes` must not be null.
absl::StatusOr<std::shared_ptr<const CachedLayout>> DecodeCachedLayout(
    std::string path, absl::string_view key,
    std::shared_ptr<const std::string> bytes, int64_t mod_revision);

// The whole layout, extents included (parses every extent: for admin views,
// xattrs and layout comparisons, not per read).
v1::FileLayout FullLayout(const CachedLayout& layout);

// The pieces of a range (see MapRange in layout.h, same semantics) and the
// extents they point into.
struct MappedRange {
  std::vector<Piece> pieces;
  // The touched extents, parsed; null for striped layouts (the pieces then
  // point into the CachedLayout's header).
  std::shared_ptr<const v1::FileLayout> extents;
};

// MapRange over a cached layout, parsing only the extents the range
// touches. INTERNAL if an indexed extent no longer parses as it did when
// validated (a bug: the bytes are immutable).
absl::StatusOr<MappedRange> MapRange(const CachedLayout& layout,
                                     uint64_t offset, uint64_t length,
                                     uint64_t max_piece);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_CACHED_LAYOUT_H_
