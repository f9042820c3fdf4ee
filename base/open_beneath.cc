#include "base/open_beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"

namespace rangefs {
namespace {

std::string Shown(const std::string& dir, absl::string_view relative) {
  return absl::StrCat(dir, "/", absl::CHexEscape(relative.substr(0, 256)));
}

absl::Status CheckRelative(const std::string& dir, absl::string_view relative) {
  if (relative.empty() || relative[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("path \"", absl::CHexEscape(relative.substr(0, 256)),
                     "\" under ", dir, " must be relative and non-empty"));
  }
  for (absl::string_view c : absl::StrSplit(relative, '/')) {
    if (c.empty() || c == "." || c == ".." ||
        c.find('\0') != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("path ", Shown(dir, relative),
                       " has an empty, \".\" or \"..\" component"));
    }
  }
  return absl::OkStatus();
}

absl::Status Refused(int e, const std::string& dir,
                     absl::string_view relative) {
  if (e == ELOOP || e == EXDEV) {
    return absl::PermissionDeniedError(
        absl::StrCat("open ", Shown(dir, relative),
                     ": refused, a symlink or a path leaving ", dir,
                     " (reads stay beneath the mount)"));
  }
  return ErrnoStatus(e, absl::StrCat("open ", Shown(dir, relative)));
}

// An fd closed on scope exit unless released.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

absl::StatusOr<int> OpenDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open mount ", dir));
  return fd;
}

// -1 with errno ENOSYS where the kernel lacks openat2.
int Openat2(int dirfd, const std::string& path, int flags) {
  struct open_how how = {};
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < 16; ++attempt) {
    long fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof(how));
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EAGAIN && errno != EINTR) return -1;
  }
  return -1;
}

absl::StatusOr<int> Walk(int dirfd, const std::string& dir,
                         absl::string_view relative, int flags) {
  std::vector<std::string> parts = absl::StrSplit(relative, '/');
  Fd cur(fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
  if (cur.get() < 0) return ErrnoStatus(errno, absl::StrCat("dup ", dir));
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = openat(cur.get(), parts[i].c_str(),
                      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      // O_PATH | O_NOFOLLOW opens a symlink itself; O_DIRECTORY then fails
      // with ENOTDIR, so a symlinked directory is refused like ELOOP.
      return Refused(errno == ENOTDIR ? ELOOP : errno, dir, relative);
    }
    cur.reset(next);
  }
  int fd =
      openat(cur.get(), parts.back().c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Refused(errno, dir, relative);
  return fd;
}

}  // namespace

absl::StatusOr<int> OpenBeneath(const std::string& dir,
                                absl::string_view relative, int flags) {
  if (absl::Status s = CheckRelative(dir, relative); !s.ok()) return s;
  absl::StatusOr<int> d = OpenDir(dir);
  if (!d.ok()) return d.status();
  Fd dirfd(*d);
  const std::string rel(relative);
  int fd = Openat2(dirfd.get(), rel, flags);
  if (fd >= 0) return fd;
  if (errno != ENOSYS) return Refused(errno, dir, relative);
  return Walk(dirfd.get(), dir, relative, flags);
}

absl::StatusOr<int> OpenBeneathByWalk(const std::string& dir,
                                      absl::string_view relative, int flags) {
  if (absl::Status s = CheckRelative(dir, relative); !s.ok()) return s;
  absl::StatusOr<int> d = OpenDir(dir);
  if (!d.ok()) return d.status();
  Fd dirfd(*d);
  return Walk(dirfd.get(), dir, relative, flags);
}

}  // namespace rangefs
