// File: dataset.h
//
// A pinned dataset: a subtree of the namespace read once at one etcd
// revision (Client::OpenDataset), for jobs that open thousands to millions
// of read-only files. Listing, stating and opening its files never touch
// etcd: they work from memory, at memory speed, while etcd is down, and
// see one consistent snapshot (every file as of revision()) whatever is
// removed, renamed or replaced afterwards. Reads go to the storage nodes
// as for any File.
//
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<Dataset> d,
//                            client->OpenDataset("/crawl/2024-06", 0));
//   RANGEFS_ASSIGN_OR_RETURN(std::vector<FileInfo> files, d->List("/"));
//   for (const FileInfo& fi : files) {
//     RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<File> f, d->OpenFile(fi.path));
//     ...
//   }
//
// Memory: each file's record is kept encoded (its path, about 100 bytes for
// a small file, ~60 bytes per extent); OpenFile decodes it. A record that
// failed the record gate (namespace/record_gate.h) is listed with
// FileInfo::invalid and fails only itself, with DATA_LOSS.
//
// Thread-safe. Destroy it, and every File opened from it, before the
// Client that made it.
#ifndef RANGEFS_CLIENT_LIB_DATASET_H_
#define RANGEFS_CLIENT_LIB_DATASET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client_lib/file.h"
#include "client_lib/file_info.h"

namespace rangefs {

class Dataset {
 public:
  virtual ~Dataset() = default;

  // The directory it was opened on, and the etcd revision of its snapshot.
  virtual const std::string& dir() const = 0;
  virtual int64_t revision() const = 0;
  // Files in it (including invalid ones), their total size (valid ones),
  // and how many records failed the record gate.
  virtual size_t file_count() const = 0;
  virtual uint64_t total_bytes() const = 0;
  virtual size_t invalid_count() const = 0;

  // Every file of the dataset below `dir` ("/" for all), sorted by path.
  // INVALID_ARGUMENT for a bad dir. Never blocks on etcd.
  virtual absl::StatusOr<std::vector<FileInfo>> List(
      absl::string_view dir) const = 0;
  // NOT_FOUND (not in the dataset); DATA_LOSS (invalid record).
  virtual absl::StatusOr<FileInfo> Stat(absl::string_view path) const = 0;
  // Opens `path` as of revision(): a File that never changes (as
  // Client::OpenFile(path, revision), without etcd). NOT_FOUND;
  // FAILED_PRECONDITION (not ready then); DATA_LOSS (invalid record).
  virtual absl::StatusOr<std::unique_ptr<File>> OpenFile(
      absl::string_view path) const = 0;
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_DATASET_H_
