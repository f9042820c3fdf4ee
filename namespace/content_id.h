// File: content_id.h
//
// The one rule for "are these the same bytes?", used by every reader that
// holds a layout across changes: library File handles (ABORTED on a change
// of content) and the FUSE mount (ESTALE, page cache kept or dropped).
//
//   ContentId before = ContentIdOf(old_layout);
//   if (!SameBytes(before, ContentIdOf(new_layout))) { /* reopen */ }
//
// Two layouts hold the same bytes when they have the same file_id, size
// and content_generation (store.h: only a create or an overwrite sets it;
// the keeper's moves, copies and repairs keep it), both are READY, and
// where both carry a CRC32C for every extent those CRCs agree (a digest).
// Striped layouts have no per-extent CRCs in etcd (their CRCs are in the
// objects' sidecars): for them content_generation alone tells an
// overwrite from a move. Records written before content generations
// existed have content_generation 0 on both sides: only their file_id,
// size and CRCs are compared (an overwrite by such an old writer at the
// same size of a striped file is not detected; every writer of this
// version sets it).
#ifndef RANGEFS_NAMESPACE_CONTENT_ID_H_
#define RANGEFS_NAMESPACE_CONTENT_ID_H_

#include <cstdint>
#include <string>

#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

struct ContentId {
  uint64_t file_id = 0;
  uint64_t size = 0;
  uint64_t content_generation = 0;
  // FNV-1a over every extent's (offset, length, crc32c); 0 = unknown (a
  // striped layout, or an extent without a CRC).
  uint64_t crc_digest = 0;
  bool ready = false;

  bool operator==(const ContentId& o) const {
    return file_id == o.file_id && size == o.size &&
           content_generation == o.content_generation &&
           crc_digest == o.crc_digest && ready == o.ready;
  }
  bool operator!=(const ContentId& o) const { return !(*this == o); }
};

ContentId ContentIdOf(const v1::FileLayout& layout);

// True when a reader of `a`'s bytes may go on reading through `b`.
bool SameBytes(const ContentId& a, const ContentId& b);

// "file_id 7, size 100, content generation 3" for error messages.
std::string DescribeContent(const ContentId& id);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_CONTENT_ID_H_
