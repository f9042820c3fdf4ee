// File: internal/dataset_impl.h
//
// DatasetImpl: a Dataset (dataset.h) over an ns::SubtreeSnapshot. Opens
// its files as pinned FileImpls of its client (FileHost); never calls etcd.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_DATASET_IMPL_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_DATASET_IMPL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client_lib/dataset.h"
#include "client_lib/internal/file_impl.h"
#include "namespace/subtree_snapshot.h"

namespace rangefs {
namespace client_internal {

// Thread-safe (immutable).
class DatasetImpl : public Dataset {
 public:
  // `host` is not owned and must outlive the dataset and its files.
  DatasetImpl(FileHost* host, ns::SubtreeSnapshot snapshot)
      : host_(host), snap_(std::move(snapshot)) {}

  const std::string& dir() const override { return snap_.dir; }
  int64_t revision() const override { return snap_.revision; }
  size_t file_count() const override { return snap_.files.size(); }
  uint64_t total_bytes() const override { return snap_.bytes; }
  size_t invalid_count() const override { return snap_.invalid; }

  absl::StatusOr<std::vector<FileInfo>> List(
      absl::string_view dir) const override;
  absl::StatusOr<FileInfo> Stat(absl::string_view path) const override;
  absl::StatusOr<std::unique_ptr<File>> OpenFile(
      absl::string_view path) const override;

 private:
  // The valid file at `path`: NOT_FOUND or DATA_LOSS otherwise.
  absl::StatusOr<const ns::SnapshotFile*> Find(absl::string_view path) const;

  FileHost* const host_;
  const ns::SubtreeSnapshot snap_;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_DATASET_IMPL_H_
