#include "namespace/tree_clash.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace rangefs {
namespace ns {

void TreeClashFinder::Add(absl::string_view path) {
  if (files_.insert(std::string(path)).second) paths_.emplace_back(path);
}

std::vector<TreeClash> TreeClashFinder::Clashes() const {
  absl::flat_hash_map<std::string, TreeClash> found;
  for (const std::string& p : paths_) {
    for (size_t i = p.find('/', 1); i != std::string::npos;
         i = p.find('/', i + 1)) {
      const std::string ancestor = p.substr(0, i);
      if (!files_.contains(ancestor)) continue;
      TreeClash& c = found[ancestor];
      if (c.files_below++ == 0) {
        c.file = ancestor;
        c.below = p;
      }
    }
  }
  std::vector<TreeClash> out;
  out.reserve(found.size());
  for (auto& [path, clash] : found) out.push_back(std::move(clash));
  std::sort(out.begin(), out.end(), [](const TreeClash& a, const TreeClash& b) {
    return a.file < b.file;
  });
  return out;
}

std::string DescribeTreeClash(const TreeClash& c) {
  return absl::StrCat(
      "file ", c.file, " is also a directory: ", c.files_below,
      " file(s) below it (", c.below,
      "); rangefs-mount shows the directory and hides the file: move one "
      "side away (rangefs-admin file mv)");
}

}  // namespace ns
}  // namespace rangefs
