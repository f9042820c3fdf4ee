#include "namespace/subtree_snapshot.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"

namespace rangefs {
namespace ns {
namespace {

// One record through the gate: the file, or the file marked invalid.
SnapshotFile ToSnapshotFile(std::string path, KvEntry& kv) {
  SnapshotFile f;
  f.path = std::move(path);
  f.mod_revision = kv.mod_revision;
  if (absl::Status p = ValidatePath(f.path); !p.ok()) {
    f.invalid = absl::StrCat("invalid record at etcd key ",
                             absl::CEscape(kv.key), ": ", p.message());
    return f;
  }
  absl::StatusOr<v1::FileLayout> l = DecodeFileLayout(kv.key, kv.value);
  if (!l.ok()) {
    f.invalid = std::string(l.status().message());
    return f;
  }
  f.size = l->size();
  f.file_id = l->file_id();
  f.generation = l->generation();
  f.ready = IsReady(*l);
  f.layout = std::move(kv.value);
  return f;
}

}  // namespace

const SnapshotFile* SubtreeSnapshot::Find(absl::string_view path) const {
  auto it = std::lower_bound(
      files.begin(), files.end(), path,
      [](const SnapshotFile& f, absl::string_view p) { return f.path < p; });
  if (it == files.end() || it->path != path) return nullptr;
  return &*it;
}

std::pair<size_t, size_t> SubtreeSnapshot::Below(absl::string_view sub) const {
  std::string prefix(sub);
  if (prefix.empty() || prefix.back() != '/') prefix.push_back('/');
  auto less = [](const SnapshotFile& f, absl::string_view p) {
    return f.path < p;
  };
  auto first = std::lower_bound(files.begin(), files.end(), prefix, less);
  // Paths below `prefix` sort before prefix with its '/' bumped to '0'.
  std::string end = prefix;
  end.back() = '/' + 1;
  auto last = std::lower_bound(first, files.end(), end, less);
  return {static_cast<size_t>(first - files.begin()),
          static_cast<size_t>(last - files.begin())};
}

absl::StatusOr<SubtreeSnapshot> LoadSubtree(KvBackend& kv, const Keys& keys,
                                            absl::string_view dir,
                                            int64_t revision,
                                            int64_t page_size) {
  RANGEFS_RETURN_IF_ERROR(ValidateDir(dir));
  if (page_size < 0 || page_size > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("page size ", page_size, " is not in 1..10000"));
  }
  if (revision < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("revision ", revision, " is negative"));
  }
  SubtreeSnapshot s;
  s.dir = std::string(dir);
  const std::string prefix = keys.FileDirPrefix(dir);
  int64_t pinned = revision;  // named by a compaction error between pages
  auto on_page = [&](std::vector<KvEntry>& page, int64_t at) {
    pinned = at;
    for (KvEntry& e : page) {
      std::string path;
      if (!keys.ParseFile(e.key, &path)) continue;
      s.files.push_back(ToSnapshotFile(std::move(path), e));
      const SnapshotFile& f = s.files.back();
      if (f.invalid.empty()) {
        s.bytes += f.size;
      } else {
        ++s.invalid;
      }
    }
    return absl::OkStatus();
  };
  absl::StatusOr<int64_t> at = ForEachRangePage(
      kv, prefix, PrefixRangeEnd(prefix), revision, page_size, on_page);
  if (!at.ok()) {
    if (absl::IsOutOfRange(at.status())) {
      return absl::OutOfRangeError(absl::StrCat(
          "namespace ", dir, " as of revision ", pinned,
          " is no longer available (compacted) or not yet written: ",
          at.status().message()));
    }
    return at.status();
  }
  s.revision = *at;
  // etcd returns keys sorted; paths inherit the order (same prefix).
  s.files.shrink_to_fit();
  return s;
}

}  // namespace ns
}  // namespace rangefs
