#include "base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd =
      open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("create ", tmp));
  auto fail = [&](const char* step) {
    const int e = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(e, absl::StrCat(step, " ", tmp));
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = fail("write");
      close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return fail("close");
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(e, absl::StrCat("rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace rangefs
