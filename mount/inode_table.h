// File: inode_table.h
//
// The inode numbers rangefs-mount hands to the kernel: one per (path, kind)
// while the kernel holds a reference (FUSE lookup counts), so a path keeps
// its number as long as the kernel remembers it. Inode 1 is the root and
// is never forgotten. Numbers are not reused within a mount.
//
//   InodeTable t;
//   uint64_t ino = t.Acquire("/a/b", /*is_dir=*/false);  // lookup: +1
//   t.Forget(ino, 1);                                     // forget: -1
//
// A path whose kind changed (a file became a directory) gets a new number;
// the old one stays valid for Get until the kernel forgets it.
// Thread-safe.
#ifndef RANGEFS_MOUNT_INODE_TABLE_H_
#define RANGEFS_MOUNT_INODE_TABLE_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "namespace/content_id.h"

namespace rangefs {
namespace mount {

inline constexpr uint64_t kRootInode = 1;

// What the kernel's page cache of a file inode holds: these bytes
// (namespace/content_id.h). Default = nothing known.
using CacheTag = ns::ContentId;

struct InodeRef {
  std::string path;
  bool is_dir = false;
};

class InodeTable {
 public:
  InodeTable();

  // The inode of `path` with that kind, adding one kernel reference.
  uint64_t Acquire(absl::string_view path, bool is_dir);
  // Drops `n` references of `ino`; at zero the inode is forgotten (never
  // the root). Unknown inodes are ignored.
  void Forget(uint64_t ino, uint64_t n);
  // The path and kind of `ino`; false if unknown.
  bool Get(uint64_t ino, InodeRef* out) const;
  // The current inode of `path` (either kind), or 0.
  uint64_t Find(absl::string_view path) const;
  // Records that the kernel will cache `tag`'s bytes for `ino`; returns true
  // if it cached the same bytes before (ns::SameBytes: the open may keep
  // the page cache).
  bool SwapCacheTag(uint64_t ino, CacheTag tag);
  size_t size() const;

 private:
  struct Node {
    std::string path;
    bool is_dir = false;
    bool linked = true;  // by_path_ points here
    uint64_t lookups = 0;
    CacheTag cache;
  };

  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Node> by_ino_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> by_path_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = kRootInode + 1;
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_INODE_TABLE_H_
