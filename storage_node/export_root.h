// File: export_root.h
//
// Path confinement for a storage node's export directory. Every object path
// a client names is resolved strictly beneath the export root with
// openat2(2) RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS relative to an O_PATH
// fd of the root, so neither "..", absolute paths nor symlinks (absolute or
// relative) can reach a file outside it. There is no fallback: without
// openat2 (Linux < 5.6) Open fails.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto root, ExportRoot::Open("/export", {}));
//   RANGEFS_ASSIGN_OR_RETURN(ScopedFd fd, root->OpenForRead("a/b/part-1"));
//
// Object paths are relative ("a/b/c"): non-empty, no leading '/', no empty,
// "." or ".." components, no NUL, components <= 255 bytes, whole path
// <= 4096 bytes -> else INVALID_ARGUMENT. Reserved names (the temp dir
// ".rangefs-tmp" and sidecars "*.rangefs-crc") -> PERMISSION_DENIED. A
// path whose resolution leaves the root -> PERMISSION_DENIED. Messages name
// the path.
//
// Layout inside the export:
//   <root>/.rangefs-tmp/<random>   files being written (removed at start)
//   <root>/<dir>/<name>            an object
//   <root>/<dir>/.<name>.rangefs-crc  its checksum sidecar (sidecar.h)
//
// Thread-safe: all methods may be called concurrently.
#ifndef RANGEFS_STORAGE_NODE_EXPORT_ROOT_H_
#define RANGEFS_STORAGE_NODE_EXPORT_ROOT_H_

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage_node/scoped_fd.h"
#include "storage_node/sidecar_format.h"  // SidecarPathFor, kSidecarSuffix

namespace rangefs {
namespace node {

inline constexpr char kTempDirName[] = ".rangefs-tmp";
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxComponentBytes = 255;

// Reads exactly `n` bytes of the object `path` (for messages) open as `fd`
// at `off` into `p`; DATA_LOSS if the file ends first, errno errors as
// ErrnoStatus.
absl::Status PreadFull(int fd, char* p, size_t n, uint64_t off,
                       absl::string_view path);

// A file being written in the temp dir. Remove or commit it; it is not
// removed automatically.
struct TempFile {
  ScopedFd fd;       // O_WRONLY.
  std::string name;  // Name inside the temp dir.
};

struct ExportRootOptions {
  // Creates and uses the temp dir; false for a read-only export (then the
  // temp methods return FAILED_PRECONDITION).
  bool writable = true;
};

class ExportRoot {
 public:
  // Opens `root_dir` (must be an existing directory) and, when writable,
  // creates its temp dir. NOT_FOUND / INVALID_ARGUMENT for a bad root,
  // FAILED_PRECONDITION if the kernel lacks openat2.
  static absl::StatusOr<std::unique_ptr<ExportRoot>> Open(
      const std::string& root_dir, const ExportRootOptions& options = {});

  ExportRoot(const ExportRoot&) = delete;
  ExportRoot& operator=(const ExportRoot&) = delete;

  const std::string& root_dir() const { return root_dir_; }
  bool writable() const { return tmp_fd_.valid(); }

  // Checks `path` lexically (rules in the file comment). Does no I/O.
  static absl::Status ValidateObjectPath(absl::string_view path);

  // Opens a regular file for reading. NOT_FOUND if absent,
  // FAILED_PRECONDITION if not a regular file.
  absl::StatusOr<ScopedFd> OpenForRead(absl::string_view path) const;
  // Opens the sidecar of object `path`. NOT_FOUND if it has none.
  absl::StatusOr<ScopedFd> OpenSidecarForRead(absl::string_view path) const;
  // stat(2) of the object (following symlinks beneath the root).
  absl::StatusOr<struct stat> Stat(absl::string_view path) const;

  // Creates a new empty file in the temp dir.
  absl::StatusOr<TempFile> CreateTemp() const;
  // Opens temp file `name` (one component the caller chose, not a random
  // name) for reading and writing, creating it if absent: state a writer
  // keeps across calls (ec_staging.h). FAILED_PRECONDITION when read-only.
  absl::StatusOr<ScopedFd> OpenNamedTemp(const std::string& name) const;
  // lstat(2) of temp file `name`. NOT_FOUND if absent (or read-only).
  absl::StatusOr<struct stat> StatTemp(const std::string& name) const;
  // Unlinks a temp file; OK if already gone.
  absl::Status RemoveTemp(const std::string& name) const;
  // Moves temp file `temp_name` to `path`, creating missing parent dirs
  // (mkdir -p, each resolved beneath the root). ALREADY_EXISTS if `path`
  // exists and !overwrite (checked atomically by the rename).
  absl::Status CommitTemp(const std::string& temp_name, absl::string_view path,
                          bool overwrite) const;
  // Commits an object and its sidecar: drops the old sidecar (overwrite
  // only), renames the object into place, then the sidecar, then fsyncs the
  // parent dir. A crash in between leaves the object without a sidecar,
  // never with a stale one. On error both temps are left to the caller.
  absl::Status CommitObject(const std::string& object_temp,
                            const std::string& sidecar_temp,
                            absl::string_view path, bool overwrite) const;
  // Unlinks object `path` and its sidecar (a missing sidecar is fine),
  // resolving the parent directory beneath the root. NOT_FOUND if the
  // object is absent, FAILED_PRECONDITION if it is not a regular file or
  // the export is read-only, PERMISSION_DENIED for reserved names or a
  // parent outside the root. Empty parent directories are left in place.
  absl::Status RemoveObject(absl::string_view path) const;
  // Removes every file in the temp dir (left by a crash). Call at start.
  absl::Status ClearTemp() const;
  // Returns the names in the temp dir (for tests and diagnostics).
  absl::StatusOr<std::vector<std::string>> ListTemp() const;

  // Calls `fn` with the relative path of every regular file in the export
  // (not following symlinks, skipping the temp dir and sidecars), in no
  // particular order, until `fn` returns false.
  absl::Status ForEachObject(
      const std::function<bool(const std::string& path)>& fn) const;

  // Free bytes on the export's filesystem (statvfs f_bavail * f_frsize).
  absl::StatusOr<uint64_t> FreeBytes() const;
  // OK if the root is still a reachable directory.
  absl::Status CheckHealth() const;

 private:
  ExportRoot(std::string root_dir, ScopedFd root_fd, ScopedFd tmp_fd)
      : root_dir_(std::move(root_dir)),
        root_fd_(std::move(root_fd)),
        tmp_fd_(std::move(tmp_fd)) {}

  // openat2 beneath the root; `what` names the path in errors.
  absl::StatusOr<ScopedFd> OpenBeneath(absl::string_view path, int flags,
                                       absl::string_view what) const;
  // Opens (creating as needed) the parent dir of valid `path`; returns an
  // O_PATH fd and sets *name to the last component.
  // Checks `path` and that the export is writable, then MakeParents.
  absl::StatusOr<ScopedFd> PrepareCommit(absl::string_view path,
                                         std::string* name) const;
  absl::StatusOr<ScopedFd> MakeParents(absl::string_view path,
                                       std::string* name) const;
  absl::Status RenameInto(const std::string& temp_name, int parent_fd,
                          const std::string& name, bool overwrite,
                          absl::string_view path) const;

  const std::string root_dir_;
  const ScopedFd root_fd_;  // O_PATH | O_DIRECTORY.
  const ScopedFd tmp_fd_;   // O_PATH | O_DIRECTORY; invalid when read-only.
  struct stat tmp_stat_ {};
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_EXPORT_ROOT_H_
