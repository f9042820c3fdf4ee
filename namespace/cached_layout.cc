#include "namespace/cached_layout.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "namespace/record_gate.h"

namespace rangefs {
namespace ns {

absl::StatusOr<std::shared_ptr<const CachedLayout>> DecodeCachedLayout(
    std::string path, absl::string_view key,
    std::shared_ptr<const std::string> bytes, int64_t mod_revision) {
  RANGEFS_ASSIGN_OR_RETURN(v1::FileLayout layout,
                           DecodeFileLayout(key, *bytes));
  absl::StatusOr<ExtentIndex> index = IndexExtents(*bytes, layout);
  if (!index.ok()) {
    return absl::DataLossError(absl::StrCat("invalid record at etcd key ", key,
                                            ": ", index.status().message()));
  }
  auto c = std::make_shared<CachedLayout>();
  {
    // clear_extents() would keep the cleared Extent objects for reuse:
    // swap them out and free them.
    google::protobuf::RepeatedPtrField<v1::Extent> drop;
    layout.mutable_extents()->Swap(&drop);
  }
  c->header = std::move(layout);
  c->path = std::move(path);
  c->mod_revision = mod_revision;
  c->bytes = std::move(bytes);
  c->index = *std::move(index);
  return std::shared_ptr<const CachedLayout>(std::move(c));
}

v1::FileLayout FullLayout(const CachedLayout& layout) {
  v1::FileLayout full;
  // Parsed and validated when the CachedLayout was decoded; immutable.
  if (!full.ParseFromString(*layout.bytes)) return layout.header;
  return full;
}

absl::StatusOr<MappedRange> MapRange(const CachedLayout& layout,
                                     uint64_t offset, uint64_t length,
                                     uint64_t max_piece) {
  MappedRange out;
  const uint64_t size = layout.header.size();
  if (layout.index.empty() || offset >= size || length == 0) {
    // Striped or empty: the header holds all there is to map.
    out.pieces = MapRange(layout.header, offset, length, max_piece);
    return out;
  }
  const uint64_t end = size - offset < length ? size : offset + length;
  const size_t first = layout.index.Find(offset);
  const size_t last = layout.index.Find(end - 1);
  if (first >= layout.index.size() || last >= layout.index.size()) {
    return absl::InternalError(absl::StrCat(
        "layout of ", layout.path, ": no extent holds offset ", offset));
  }
  auto extents = std::make_shared<v1::FileLayout>();
  extents->mutable_extents()->Reserve(static_cast<int>(last - first + 1));
  for (size_t i = first; i <= last; ++i) {
    absl::string_view sub = layout.index.Submessage(*layout.bytes, i);
    v1::Extent* e = extents->add_extents();
    if (!e->ParseFromArray(sub.data(), static_cast<int>(sub.size())) ||
        e->offset() != layout.index.offset(i)) {
      return absl::InternalError(
          absl::StrCat("layout of ", layout.path, ": extent ", i,
                       " no longer parses as when it was validated"));
    }
  }
  MapExtents(extents->extents(), static_cast<uint32_t>(first), offset, end,
             max_piece, &out.pieces);
  out.extents = std::move(extents);
  return out;
}

}  // namespace ns
}  // namespace rangefs
