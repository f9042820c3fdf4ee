#include "namespace/content_id.h"

#include "absl/strings/str_cat.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace ns {

namespace {

uint64_t CrcDigest(const v1::FileLayout& l) {
  if (l.size() == 0) return 1;
  if (l.has_striped() || l.extents_size() == 0) return 0;
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const v1::Extent& e : l.extents()) {
    if (!e.has_crc32c()) return 0;
    mix(e.offset());
    mix(e.length());
    mix(e.crc32c());
  }
  return h == 0 ? 1 : h;
}

}  // namespace

ContentId ContentIdOf(const v1::FileLayout& layout) {
  ContentId id;
  id.file_id = layout.file_id();
  id.size = layout.size();
  id.content_generation = layout.content_generation();
  id.crc_digest = CrcDigest(layout);
  id.ready = IsReady(layout);
  return id;
}

bool SameBytes(const ContentId& a, const ContentId& b) {
  if (!a.ready || !b.ready) return false;
  if (a.file_id != b.file_id || a.size != b.size ||
      a.content_generation != b.content_generation) {
    return false;
  }
  return a.crc_digest == 0 || b.crc_digest == 0 || a.crc_digest == b.crc_digest;
}

std::string DescribeContent(const ContentId& id) {
  return absl::StrCat("file_id ", id.file_id, ", size ", id.size,
                      ", content generation ", id.content_generation,
                      id.ready ? "" : ", not ready");
}

}  // namespace ns
}  // namespace rangefs
