// File: subtree_snapshot.h
//
// A subtree of the namespace read once, at one etcd revision: every file
// record below a directory, each passed through the record gate, kept
// encoded. What a pinned dataset (client_lib/dataset.h) stands on.
//
//   RANGEFS_ASSIGN_OR_RETURN(SubtreeSnapshot s,
//                            LoadSubtree(kv, keys, "/crawl", /*revision=*/0));
//   const SnapshotFile* f = s.Find("/crawl/part-0001");
//
// Reads pages of `page_size` keys (0: NextPageSize) at one revision (the
// first page's when `revision` is 0) through ForEachRangePage (kv.h), so the
// snapshot is consistent. A record that fails the gate is kept with `invalid`
// set (naming the key and the rule) and hides no other file.
#ifndef RANGEFS_NAMESPACE_SUBTREE_SNAPSHOT_H_
#define RANGEFS_NAMESPACE_SUBTREE_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "namespace/keys.h"
#include "namespace/kv.h"

namespace rangefs {
namespace ns {

struct SnapshotFile {
  std::string path;
  std::string layout;   // encoded v1::FileLayout that passed the gate
  std::string invalid;  // non-empty: the record failed the gate (why)
  int64_t mod_revision = 0;
  uint64_t size = 0;
  uint64_t file_id = 0;
  uint64_t generation = 0;
  bool ready = false;
};

// Immutable after LoadSubtree; thread-safe to read.
struct SubtreeSnapshot {
  std::string dir;       // as given ("/" for all)
  int64_t revision = 0;  // the etcd revision every record was read at
  uint64_t bytes = 0;    // sum of the valid files' sizes
  size_t invalid = 0;    // records that failed the gate
  std::vector<SnapshotFile> files;  // sorted by path

  // The file at `path`, or nullptr.
  const SnapshotFile* Find(absl::string_view path) const;
  // Index range [first, last) of the files below directory `sub` ("/" or
  // a directory path; need not be under `dir`).
  std::pair<size_t, size_t> Below(absl::string_view sub) const;
};

// INVALID_ARGUMENT (bad dir or page_size outside 0..10000); OUT_OF_RANGE
// when `revision` is compacted or in the future (saying so); UNAVAILABLE /
// DEADLINE_EXCEEDED when etcd cannot be reached.
absl::StatusOr<SubtreeSnapshot> LoadSubtree(KvBackend& kv, const Keys& keys,
                                            absl::string_view dir,
                                            int64_t revision,
                                            int64_t page_size = 0);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_SUBTREE_SNAPSHOT_H_
