#include "client_lib/internal/dataset_impl.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "namespace/cached_layout.h"
#include "namespace/layout.h"

namespace rangefs {
namespace client_internal {
namespace {

FileInfo ToInfo(const ns::SnapshotFile& f) {
  FileInfo i;
  i.path = f.path;
  i.invalid = f.invalid;
  if (!f.invalid.empty()) return i;
  i.size = f.size;
  i.file_id = f.file_id;
  i.generation = f.generation;
  i.ready = f.ready;
  i.mod_revision = f.mod_revision;
  return i;
}

}  // namespace

absl::StatusOr<std::vector<FileInfo>> DatasetImpl::List(
    absl::string_view dir) const {
  RANGEFS_RETURN_IF_ERROR(ns::ValidateDir(dir));
  const auto [first, last] = snap_.Below(dir);
  std::vector<FileInfo> out;
  out.reserve(last - first);
  for (size_t i = first; i < last; ++i) out.push_back(ToInfo(snap_.files[i]));
  return out;
}

absl::StatusOr<const ns::SnapshotFile*> DatasetImpl::Find(
    absl::string_view path) const {
  RANGEFS_RETURN_IF_ERROR(ns::ValidatePath(path));
  const ns::SnapshotFile* f = snap_.Find(path);
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat("file ", path,
                                            " is not in dataset ", snap_.dir,
                                            " at revision ", snap_.revision));
  }
  if (!f->invalid.empty()) return absl::DataLossError(f->invalid);
  return f;
}

absl::StatusOr<FileInfo> DatasetImpl::Stat(absl::string_view path) const {
  RANGEFS_ASSIGN_OR_RETURN(const ns::SnapshotFile* f, Find(path));
  return ToInfo(*f);
}

absl::StatusOr<std::unique_ptr<File>> DatasetImpl::OpenFile(
    absl::string_view path) const {
  RANGEFS_ASSIGN_OR_RETURN(const ns::SnapshotFile* f, Find(path));
  if (!f->ready) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " was not ready at revision ", snap_.revision));
  }
  // Passed the record gate when the snapshot was loaded; the bytes are
  // ours and immutable since (decoded again into the indexed form).
  absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> c =
      ns::DecodeCachedLayout(f->path, f->path,
                             std::make_shared<const std::string>(f->layout),
                             f->mod_revision);
  if (!c.ok()) {
    return absl::InternalError(
        absl::StrCat("dataset record of ", path,
                     " no longer decodes: ", c.status().message()));
  }
  return std::unique_ptr<File>(new FileImpl(host_, *std::move(c), true));
}

}  // namespace client_internal
}  // namespace rangefs
