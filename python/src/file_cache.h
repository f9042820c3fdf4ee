// File: python/src/file_cache.h
//
// Files that Client.read_ranges (or Dataset.read_ranges) opened, kept open
// by path for the next calls, so that a batch of small reads does not open
// (and set up) its files anew each time. A kept File re-checks the namespace on
// each read (file.h): one replaced since returns ABORTED, and the caller drops
// it and reopens (Refresh). Bounded: when full, every entry is dropped.
// Thread-safe.
#ifndef RANGEFS_PYTHON_SRC_FILE_CACHE_H_
#define RANGEFS_PYTHON_SRC_FILE_CACHE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/file.h"

namespace rangefs {
namespace python {

class FileCache {
 public:
  static constexpr size_t kMaxFiles = 4096;
  // Opens a path (Client::OpenFile, Dataset::OpenFile). Called unlocked.
  using Opener = absl::FunctionRef<absl::StatusOr<std::unique_ptr<File>>(
      const std::string& path)>;

  // The kept File of `path`, or a newly opened one (kept if it opened).
  absl::StatusOr<std::shared_ptr<File>> Get(Opener open,
                                            const std::string& path);
  // Drops `file` if it is still the one kept for `path`, and opens anew.
  absl::StatusOr<std::shared_ptr<File>> Refresh(Opener open,
                                                const std::string& path,
                                                const File* file);
  // Drops every File (before the Client goes).
  void Clear();

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<File>> files_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_FILE_CACHE_H_
