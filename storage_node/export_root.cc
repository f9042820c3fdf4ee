#include "storage_node/export_root.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"
#include "base/status_macros.h"

namespace rangefs {
namespace node {
namespace {

constexpr int kMaxWalkDepth = 256;

// Returns an fd, or -1 with errno set. Retries EAGAIN (the kernel returns it
// when a concurrent rename or mount may have raced the resolution).
int Openat2(int dirfd, const std::string& path, uint64_t flags,
            uint64_t resolve) {
  struct open_how how = {};
  how.flags = flags | O_CLOEXEC;
  how.resolve = resolve;
  for (int attempt = 0; attempt < 16; ++attempt) {
    long fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof(how));
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EAGAIN && errno != EINTR) return -1;
  }
  return -1;
}

constexpr uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;

// Quotes a client-supplied path for error messages (NULs and control bytes
// escaped, long paths shortened).
std::string Quote(absl::string_view path) {
  std::string shown(path.substr(0, 200));
  std::string out = absl::StrCat("\"", absl::CHexEscape(shown), "\"");
  if (path.size() > 200) absl::StrAppend(&out, "...(", path.size(), " bytes)");
  return out;
}

std::string RandomName() {
  absl::BitGen gen;
  return absl::StrCat(
      absl::Hex(absl::Uniform<uint64_t>(gen), absl::kZeroPad16),
      absl::Hex(absl::Uniform<uint64_t>(gen), absl::kZeroPad16));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExportRoot>> ExportRoot::Open(
    const std::string& root_dir, const ExportRootOptions& options) {
  if (root_dir.empty()) {
    return absl::InvalidArgumentError("export root: empty path");
  }
  ScopedFd root(open(root_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) {
    return ErrnoStatus(errno, absl::StrCat("open export root ", root_dir));
  }
  // Probe openat2: fail closed rather than fall back to unconfined opens.
  {
    ScopedFd probe(Openat2(root.get(), ".", O_PATH | O_DIRECTORY, kBeneath));
    if (!probe.valid()) {
      if (errno == ENOSYS) {
        return absl::FailedPreconditionError(absl::StrCat(
            "export root ", root_dir,
            ": the kernel lacks openat2(2) (Linux >= 5.6 needed); refusing "
            "to serve without path confinement"));
      }
      return ErrnoStatus(errno, absl::StrCat("openat2 probe of ", root_dir));
    }
  }
  ScopedFd tmp;
  struct stat tmp_stat {};
  if (options.writable) {
    if (mkdirat(root.get(), kTempDirName, 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno,
                         absl::StrCat("mkdir ", root_dir, "/", kTempDirName));
    }
    tmp.reset(Openat2(root.get(), kTempDirName, O_PATH | O_DIRECTORY,
                      kBeneath | RESOLVE_NO_SYMLINKS));
    if (!tmp.valid()) {
      return ErrnoStatus(
          errno, absl::StrCat("open temp dir ", root_dir, "/", kTempDirName,
                              " (must be a real directory)"));
    }
    if (fstat(tmp.get(), &tmp_stat) != 0) {
      return ErrnoStatus(errno,
                         absl::StrCat("stat ", root_dir, "/", kTempDirName));
    }
  }
  std::unique_ptr<ExportRoot> er(
      new ExportRoot(root_dir, std::move(root), std::move(tmp)));
  er->tmp_stat_ = tmp_stat;
  return er;
}

absl::Status ExportRoot::ValidateObjectPath(absl::string_view path) {
  if (path.empty()) return absl::InvalidArgumentError("empty object path");
  if (path.size() > kMaxPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat("object path ", Quote(path),
                                                   " is longer than ",
                                                   kMaxPathBytes, " bytes"));
  }
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("object path ", Quote(path), " contains a NUL byte"));
  }
  if (path.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("object path ", Quote(path),
                     " is absolute; paths are relative to the export root"));
  }
  for (absl::string_view comp : absl::StrSplit(path, '/')) {
    if (comp.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("object path ", Quote(path), " has an empty component"));
    }
    if (comp == "." || comp == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "object path ", Quote(path), " has a '", comp, "' component"));
    }
    if (comp.size() > kMaxComponentBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("object path ", Quote(path), " has a component of ",
                       comp.size(), " bytes (max ", kMaxComponentBytes, ")"));
    }
    if (comp == kTempDirName || absl::EndsWith(comp, kSidecarSuffix)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "object path ", Quote(path), " names reserved entry '", comp, "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ScopedFd> ExportRoot::OpenBeneath(absl::string_view path,
                                                 int flags,
                                                 absl::string_view what) const {
  ScopedFd fd(Openat2(root_fd_.get(), std::string(path),
                      static_cast<uint64_t>(flags), kBeneath));
  if (fd.valid()) return fd;
  int e = errno;
  if (e == EXDEV || e == ELOOP) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " ", Quote(path), " resolves outside export root ",
                     root_dir_, " (or through a symlink loop)"));
  }
  if (e == ENOSYS) {
    return absl::FailedPreconditionError("openat2(2) unavailable");
  }
  if (e == ENOENT || e == ENOTDIR) {
    return absl::NotFoundError(absl::StrCat(
        what, " ", Quote(path), " not found in export ", root_dir_));
  }
  return ErrnoStatus(
      e, absl::StrCat("open ", what, " ", Quote(path), " in ", root_dir_));
}

absl::StatusOr<ScopedFd> ExportRoot::OpenForRead(absl::string_view path) const {
  RANGEFS_RETURN_IF_ERROR(ValidateObjectPath(path));
  // O_NONBLOCK so that a FIFO planted in the export cannot block us.
  RANGEFS_ASSIGN_OR_RETURN(
      ScopedFd fd,
      OpenBeneath(path, O_RDONLY | O_NOCTTY | O_NONBLOCK, "object"));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat object ", Quote(path)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("object ", Quote(path), " is not a regular file"));
  }
  int fl = fcntl(fd.get(), F_GETFL);
  if (fl >= 0) fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

absl::StatusOr<ScopedFd> ExportRoot::OpenSidecarForRead(
    absl::string_view path) const {
  RANGEFS_RETURN_IF_ERROR(ValidateObjectPath(path));
  std::string sidecar = SidecarPathFor(path);
  RANGEFS_ASSIGN_OR_RETURN(
      ScopedFd fd,
      OpenBeneath(sidecar, O_RDONLY | O_NOCTTY | O_NONBLOCK, "sidecar"));
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("sidecar ", Quote(sidecar), " is not a regular file"));
  }
  return fd;
}

absl::StatusOr<struct stat> ExportRoot::Stat(absl::string_view path) const {
  RANGEFS_RETURN_IF_ERROR(ValidateObjectPath(path));
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd fd, OpenBeneath(path, O_PATH, "object"));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat object ", Quote(path)));
  }
  return st;
}

absl::StatusOr<TempFile> ExportRoot::CreateTemp() const {
  if (!tmp_fd_.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("export ", root_dir_, " is read-only"));
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    TempFile t;
    t.name = RandomName();
    t.fd.reset(openat(tmp_fd_.get(), t.name.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                      0644));
    if (t.fd.valid()) return t;
    if (errno != EEXIST) {
      return ErrnoStatus(errno, absl::StrCat("create temp file in ", root_dir_,
                                             "/", kTempDirName));
    }
  }
  return absl::InternalError("could not pick a fresh temp file name");
}

absl::StatusOr<ScopedFd> ExportRoot::OpenNamedTemp(
    const std::string& name) const {
  if (!tmp_fd_.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("export ", root_dir_, " is read-only"));
  }
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("temp file name \"", absl::CEscape(name), "\""));
  }
  ScopedFd fd(openat(tmp_fd_.get(), name.c_str(),
                     O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) {
    return ErrnoStatus(errno, absl::StrCat("open temp ", root_dir_, "/",
                                           kTempDirName, "/", name));
  }
  return fd;
}

absl::StatusOr<struct stat> ExportRoot::StatTemp(
    const std::string& name) const {
  const std::string what =
      absl::StrCat("temp ", root_dir_, "/", kTempDirName, "/", name);
  if (!tmp_fd_.valid()) return absl::NotFoundError(what);
  struct stat st;
  if (fstatat(tmp_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoStatus(errno, absl::StrCat("stat ", what));
  }
  return st;
}

absl::Status ExportRoot::RemoveTemp(const std::string& name) const {
  if (!tmp_fd_.valid()) return absl::OkStatus();
  if (unlinkat(tmp_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrCat("unlink temp ", root_dir_, "/",
                                           kTempDirName, "/", name));
  }
  return absl::OkStatus();
}

absl::StatusOr<ScopedFd> ExportRoot::MakeParents(absl::string_view path,
                                                 std::string* name) const {
  std::vector<std::string> comps = absl::StrSplit(path, '/');
  *name = comps.back();
  comps.pop_back();
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd dir,
                           OpenBeneath(".", O_PATH | O_DIRECTORY, "export"));
  std::string prefix;
  for (const std::string& comp : comps) {
    prefix = prefix.empty() ? comp : absl::StrCat(prefix, "/", comp);
    ScopedFd next;
    for (int attempt = 0; attempt < 3 && !next.valid(); ++attempt) {
      next.reset(
          Openat2(root_fd_.get(), prefix, O_PATH | O_DIRECTORY, kBeneath));
      if (next.valid()) break;
      int e = errno;
      if (e == EXDEV || e == ELOOP) {
        return absl::PermissionDeniedError(absl::StrCat(
            "directory ", Quote(prefix), " of object ", Quote(path),
            " resolves outside export root ", root_dir_));
      }
      if (e == ENOTDIR) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot create object ", Quote(path), ": ",
                         Quote(prefix), " is not a directory"));
      }
      if (e != ENOENT) {
        return ErrnoStatus(e, absl::StrCat("open directory ", Quote(prefix),
                                           " in ", root_dir_));
      }
      // `dir` is beneath the root and `comp` is a plain name.
      if (mkdirat(dir.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus(
            errno, absl::StrCat("mkdir ", Quote(prefix), " in ", root_dir_));
      }
    }
    if (!next.valid()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create directory ", Quote(prefix), " in ",
                       root_dir_, " (a dangling symlink?)"));
    }
    dir = std::move(next);
  }
  struct stat st;
  if (fstat(dir.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat parent of ", Quote(path)));
  }
  if (st.st_dev == tmp_stat_.st_dev && st.st_ino == tmp_stat_.st_ino) {
    return absl::PermissionDeniedError(absl::StrCat(
        "object ", Quote(path), " resolves into the reserved temp dir"));
  }
  return dir;
}

absl::Status ExportRoot::RenameInto(const std::string& temp_name, int parent_fd,
                                    const std::string& name, bool overwrite,
                                    absl::string_view path) const {
  if (overwrite) {
    if (renameat(tmp_fd_.get(), temp_name.c_str(), parent_fd, name.c_str()) !=
        0) {
      return ErrnoStatus(
          errno, absl::StrCat("rename into ", Quote(path), " in ", root_dir_));
    }
    return absl::OkStatus();
  }
  if (renameat2(tmp_fd_.get(), temp_name.c_str(), parent_fd, name.c_str(),
                RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  int e = errno;
  if (e == EINVAL) {
    // Filesystem without RENAME_NOREPLACE: link(2) fails atomically on an
    // existing name too.
    if (linkat(tmp_fd_.get(), temp_name.c_str(), parent_fd, name.c_str(), 0) ==
        0) {
      unlinkat(tmp_fd_.get(), temp_name.c_str(), 0);
      return absl::OkStatus();
    }
    e = errno;
  }
  if (e == EEXIST) {
    return absl::AlreadyExistsError(
        absl::StrCat("object ", Quote(path), " already exists in ", root_dir_,
                     " (set overwrite to replace it)"));
  }
  return ErrnoStatus(
      e, absl::StrCat("rename into ", Quote(path), " in ", root_dir_));
}

absl::StatusOr<ScopedFd> ExportRoot::PrepareCommit(absl::string_view path,
                                                   std::string* name) const {
  RANGEFS_RETURN_IF_ERROR(ValidateObjectPath(path));
  if (!tmp_fd_.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("export ", root_dir_, " is read-only"));
  }
  return MakeParents(path, name);
}

absl::Status ExportRoot::CommitTemp(const std::string& temp_name,
                                    absl::string_view path,
                                    bool overwrite) const {
  std::string name;
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd parent, PrepareCommit(path, &name));
  return RenameInto(temp_name, parent.get(), name, overwrite, path);
}

absl::Status ExportRoot::CommitObject(const std::string& object_temp,
                                      const std::string& sidecar_temp,
                                      absl::string_view path,
                                      bool overwrite) const {
  std::string name;
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd parent, PrepareCommit(path, &name));
  const std::string sidecar_name = SidecarPathFor(name);
  if (overwrite) {
    if (unlinkat(parent.get(), sidecar_name.c_str(), 0) != 0 &&
        errno != ENOENT) {
      return ErrnoStatus(errno,
                         absl::StrCat("unlink old sidecar of ", Quote(path)));
    }
  }
  RANGEFS_RETURN_IF_ERROR(
      RenameInto(object_temp, parent.get(), name, overwrite, path));
  // The sidecar may be left over from an object deleted behind our back;
  // this object is new, so replace it.
  RANGEFS_RETURN_IF_ERROR(RenameInto(sidecar_temp, parent.get(), sidecar_name,
                                     /*overwrite=*/true, path));
  ScopedFd dirfd(openat(parent.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dirfd.valid()) fsync(dirfd.get());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ExportRoot::ListTemp() const {
  std::vector<std::string> names;
  if (!tmp_fd_.valid()) return names;
  int fd = openat(tmp_fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open temp dir");
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    close(fd);
    return ErrnoStatus(errno, "fdopendir temp dir");
  }
  while (struct dirent* ent = readdir(d)) {
    absl::string_view n(ent->d_name);
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  closedir(d);
  return names;
}

absl::Status ExportRoot::ClearTemp() const {
  RANGEFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListTemp());
  for (const std::string& n : names) RANGEFS_RETURN_IF_ERROR(RemoveTemp(n));
  return absl::OkStatus();
}

absl::Status ExportRoot::ForEachObject(
    const std::function<bool(const std::string& path)>& fn) const {
  struct Frame {
    std::string rel;  // "" for the root.
    int depth;
  };
  std::vector<Frame> stack = {{"", 0}};
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    ScopedFd dfd(Openat2(root_fd_.get(), f.rel.empty() ? "." : f.rel,
                         O_RDONLY | O_DIRECTORY,
                         kBeneath | RESOLVE_NO_SYMLINKS));
    if (!dfd.valid()) {
      if (errno == ENOENT) continue;  // Removed while walking.
      return ErrnoStatus(
          errno, absl::StrCat("open directory \"", f.rel, "\" in ", root_dir_));
    }
    int walk_fd = dup(dfd.get());
    DIR* d = walk_fd >= 0 ? fdopendir(walk_fd) : nullptr;
    if (d == nullptr) {
      if (walk_fd >= 0) close(walk_fd);
      return ErrnoStatus(
          errno, absl::StrCat("read directory \"", f.rel, "\" in ", root_dir_));
    }
    std::vector<std::string> files;
    while (struct dirent* ent = readdir(d)) {
      absl::string_view n(ent->d_name);
      if (n == "." || n == "..") continue;
      if (f.rel.empty() && n == kTempDirName) continue;
      if (absl::EndsWith(n, kSidecarSuffix)) continue;
      struct stat st;
      if (fstatat(dfd.get(), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        continue;
      }
      std::string rel =
          f.rel.empty() ? std::string(n) : absl::StrCat(f.rel, "/", n);
      if (S_ISDIR(st.st_mode) && f.depth < kMaxWalkDepth) {
        stack.push_back({rel, f.depth + 1});
      } else if (S_ISREG(st.st_mode)) {
        files.push_back(std::move(rel));
      }
    }
    closedir(d);
    for (const std::string& rel : files) {
      if (!fn(rel)) return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status ExportRoot::RemoveObject(absl::string_view path) const {
  RANGEFS_RETURN_IF_ERROR(ValidateObjectPath(path));
  if (!tmp_fd_.valid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "export ", root_dir_, " is read-only; cannot remove ", Quote(path)));
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == absl::string_view::npos
                              ? std::string(".")
                              : std::string(path.substr(0, slash));
  const std::string name = slash == absl::string_view::npos
                               ? std::string(path)
                               : std::string(path.substr(slash + 1));
  ScopedFd parent(Openat2(root_fd_.get(), dir, O_PATH | O_DIRECTORY, kBeneath));
  if (!parent.valid()) {
    const int e = errno;
    if (e == EXDEV || e == ELOOP) {
      return absl::PermissionDeniedError(
          absl::StrCat("directory of object ", Quote(path),
                       " resolves outside export root ", root_dir_));
    }
    if (e == ENOENT || e == ENOTDIR) {
      return absl::NotFoundError(
          absl::StrCat("object ", Quote(path), " not found in ", root_dir_));
    }
    return ErrnoStatus(
        e, absl::StrCat("open parent of ", Quote(path), " in ", root_dir_));
  }
  struct stat st;
  if (fstat(parent.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat parent of ", Quote(path)));
  }
  if (st.st_dev == tmp_stat_.st_dev && st.st_ino == tmp_stat_.st_ino) {
    return absl::PermissionDeniedError(
        absl::StrCat("object ", Quote(path), " is in the temp dir"));
  }
  if (fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("object ", Quote(path), " not found in ", root_dir_));
    }
    return ErrnoStatus(errno, absl::StrCat("stat ", Quote(path)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("object ", Quote(path), " in ", root_dir_,
                     " is not a regular file; not removed"));
  }
  // Sidecar first: a crash in between leaves an object without checksums,
  // never checksums without their object being re-used by a new one.
  const std::string sidecar = SidecarPathFor(name);
  if (unlinkat(parent.get(), sidecar.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrCat("unlink sidecar of ", Quote(path)));
  }
  if (unlinkat(parent.get(), name.c_str(), 0) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("object ", Quote(path), " not found in ", root_dir_));
    }
    return ErrnoStatus(errno, absl::StrCat("unlink object ", Quote(path)));
  }
  ScopedFd dirfd(openat(parent.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dirfd.valid()) fsync(dirfd.get());
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ExportRoot::FreeBytes() const {
  ScopedFd fd(Openat2(root_fd_.get(), ".", O_RDONLY | O_DIRECTORY, kBeneath));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("open ", root_dir_));
  struct statvfs sv;
  if (fstatvfs(fd.get(), &sv) != 0) {
    return ErrnoStatus(errno, absl::StrCat("statvfs ", root_dir_));
  }
  return static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
}

absl::Status ExportRoot::CheckHealth() const {
  struct stat st;
  if (fstat(root_fd_.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("stat export root ", root_dir_));
  }
  ScopedFd fd(Openat2(root_fd_.get(), ".", O_RDONLY | O_DIRECTORY, kBeneath));
  if (!fd.valid()) {
    return ErrnoStatus(errno, absl::StrCat("open export root ", root_dir_));
  }
  if (st.st_nlink == 0) {
    return absl::UnavailableError(
        absl::StrCat("export root ", root_dir_, " was removed"));
  }
  return absl::OkStatus();
}

absl::Status PreadFull(int fd, char* p, size_t n, uint64_t off,
                       absl::string_view path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, p + done, n - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(
          errno, absl::StrCat("pread object ", path, " at ", off + done));
    }
    if (r == 0) {
      return absl::DataLossError(absl::StrCat("object ", path, " ended at ",
                                              off + done, " while reading"));
    }
    done += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

}  // namespace node
}  // namespace rangefs
