#include "mount/inode_table.h"

#include <utility>

namespace rangefs {
namespace mount {

InodeTable::InodeTable() {
  Node root;
  root.path = "/";
  root.is_dir = true;
  root.lookups = 1;
  by_ino_[kRootInode] = root;
  by_path_["/"] = kRootInode;
}

uint64_t InodeTable::Acquire(absl::string_view path, bool is_dir) {
  absl::MutexLock l(&mu_);
  auto p = by_path_.find(path);
  if (p != by_path_.end()) {
    Node& n = by_ino_[p->second];
    if (n.is_dir == is_dir) {
      ++n.lookups;
      return p->second;
    }
    n.linked = false;  // kind changed: a new inode for the new kind
    by_path_.erase(p);
  }
  const uint64_t ino = next_++;
  Node n;
  n.path = std::string(path);
  n.is_dir = is_dir;
  n.lookups = 1;
  by_ino_[ino] = std::move(n);
  by_path_[std::string(path)] = ino;
  return ino;
}

void InodeTable::Forget(uint64_t ino, uint64_t n) {
  if (ino == kRootInode) return;
  absl::MutexLock l(&mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return;
  Node& node = it->second;
  node.lookups = n >= node.lookups ? 0 : node.lookups - n;
  if (node.lookups > 0) return;
  if (node.linked) by_path_.erase(node.path);
  by_ino_.erase(it);
}

bool InodeTable::Get(uint64_t ino, InodeRef* out) const {
  absl::MutexLock l(&mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  out->path = it->second.path;
  out->is_dir = it->second.is_dir;
  return true;
}

uint64_t InodeTable::Find(absl::string_view path) const {
  absl::MutexLock l(&mu_);
  auto it = by_path_.find(path);
  return it == by_path_.end() ? 0 : it->second;
}

bool InodeTable::SwapCacheTag(uint64_t ino, CacheTag tag) {
  absl::MutexLock l(&mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  const bool same = ns::SameBytes(it->second.cache, tag);
  it->second.cache = tag;
  return same;
}

size_t InodeTable::size() const {
  absl::MutexLock l(&mu_);
  return by_ino_.size();
}

}  // namespace mount
}  // namespace rangefs
