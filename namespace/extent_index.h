// File: extent_index.h
//
// Where the extents of an encoded v1::FileLayout are, found by walking the
// protobuf wire format once without allocating per extent: for extent i,
// its start offset in the file and the position of its submessage in the
// encoded bytes. 12 bytes per extent.
//
//   RANGEFS_ASSIGN_OR_RETURN(ExtentIndex index,
//                            IndexExtents(bytes, validated_layout));
//   size_t i = index.Find(offset);  // the extent holding `offset`
//   absl::string_view sub = index.Submessage(bytes, i);
//
// Pure; thread-compatible (immutable once built).
#ifndef RANGEFS_NAMESPACE_EXTENT_INDEX_H_
#define RANGEFS_NAMESPACE_EXTENT_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

class ExtentIndex {
 public:
  size_t size() const { return offsets_.size(); }
  bool empty() const { return offsets_.empty(); }
  uint64_t offset(size_t i) const { return offsets_[i]; }
  // The index of the last extent starting at or before `offset`; size() if
  // there is none (empty index). Extents are sorted (validated).
  // Interpolation first: where `offset` would be if the extents were of
  // equal size (they usually are), then a gallop from there and a binary
  // search of what it brackets. Equal extents: 1-2 cache lines touched,
  // not a binary search's ~log2(size()) cold ones (a lookup's cost over a
  // big namespace is its cache misses).
  size_t Find(uint64_t offset) const;
  // Extent i's submessage in `bytes` (the bytes the index was built from).
  absl::string_view Submessage(absl::string_view bytes, size_t i) const;
  // Heap bytes held.
  size_t MemoryBytes() const {
    return offsets_.capacity() * sizeof(uint64_t) +
           positions_.capacity() * sizeof(uint32_t);
  }

 private:
  friend absl::StatusOr<ExtentIndex> IndexExtents(absl::string_view bytes,
                                                  const v1::FileLayout& layout);
  std::vector<uint64_t> offsets_;
  // Position of each submessage's length prefix in the bytes.
  std::vector<uint32_t> positions_;
};

// Indexes the extents (field 5) of `bytes`, which must be the encoding
// `layout` was parsed from (its extent offsets are taken from `layout`).
// INVALID_ARGUMENT if the wire format is malformed or does not match
// `layout` (extent count), or `bytes` is 4 GiB or more.
absl::StatusOr<ExtentIndex> IndexExtents(absl::string_view bytes,
                                         const v1::FileLayout& layout);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_EXTENT_INDEX_H_
