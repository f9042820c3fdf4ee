// File: tree_clash.h
//
// The namespace is a tree: a path is a file or a directory, never both.
// NamespaceStore refuses writes that would break this (store.h); records
// written by older versions or by hand can still break it. TreeClashFinder
// finds them in a listing, for fsck and doctor:
//
//   TreeClashFinder finder;
//   for (const FileEntry& f : listing) finder.Add(f.path);
//   for (const TreeClash& c : finder.Clashes()) { ... c.file, c.below ... }
#ifndef RANGEFS_NAMESPACE_TREE_CLASH_H_
#define RANGEFS_NAMESPACE_TREE_CLASH_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace ns {

// A file that is also a directory: `below` is a file under `file`.
struct TreeClash {
  std::string file;
  std::string below;  // The first file below it, in listing order.
  size_t files_below = 0;
};

// Collects paths in any order; Clashes() lists each file that has files
// below it, sorted by path. Thread-compatible.
class TreeClashFinder {
 public:
  void Add(absl::string_view path);
  std::vector<TreeClash> Clashes() const;

 private:
  std::vector<std::string> paths_;  // In the order added.
  absl::flat_hash_set<std::string> files_;
};

// One line that says what a clash is and what to do about it.
std::string DescribeTreeClash(const TreeClash& clash);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_TREE_CLASH_H_
