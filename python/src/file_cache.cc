#include "python/src/file_cache.h"

#include <utility>

namespace rangefs {
namespace python {

absl::StatusOr<std::shared_ptr<File>> FileCache::Get(Opener open,
                                                     const std::string& path) {
  {
    absl::MutexLock l(&mu_);
    auto it = files_.find(path);
    if (it != files_.end()) return it->second;
  }
  absl::StatusOr<std::unique_ptr<File>> f = open(path);
  if (!f.ok()) return f.status();
  std::shared_ptr<File> file = std::move(*f);
  absl::MutexLock l(&mu_);
  if (files_.size() >= kMaxFiles) files_.clear();
  auto [it, inserted] = files_.emplace(path, file);
  return it->second;  // another thread's, if it won the race
}

absl::StatusOr<std::shared_ptr<File>> FileCache::Refresh(
    Opener open, const std::string& path, const File* file) {
  {
    absl::MutexLock l(&mu_);
    auto it = files_.find(path);
    if (it != files_.end() && it->second.get() == file) files_.erase(it);
  }
  return Get(open, path);
}

void FileCache::Clear() {
  absl::flat_hash_map<std::string, std::shared_ptr<File>> gone;
  absl::MutexLock l(&mu_);
  gone.swap(files_);
}

}  // namespace python
}  // namespace rangefs
