#include "base/testing/temp_dir.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {
namespace testing {

std::string TestTempDir() {
  const char* t = getenv("TEST_TMPDIR");
  if (t != nullptr && *t != '\0') return t;
  static std::string* dir = [] {
    char tmpl[] = "/tmp/rangefs-test-XXXXXX";
    char* d = mkdtemp(tmpl);
    return new std::string(d != nullptr ? d : "/tmp");
  }();
  return *dir;
}

absl::StatusOr<std::string> MakeTempDir(absl::string_view prefix) {
  std::string tmpl = absl::StrCat(TestTempDir(), "/", prefix, "XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {
    return ErrnoStatus(errno, absl::StrCat("mkdtemp ", tmpl));
  }
  return tmpl;
}

void RemoveTree(const std::string& path) {
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) {
        remove(p);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

absl::StatusOr<ScopedTempDir> ScopedTempDir::Make(absl::string_view prefix) {
  absl::StatusOr<std::string> path = MakeTempDir(prefix);
  if (!path.ok()) return path.status();
  return ScopedTempDir(*std::move(path));
}

ScopedTempDir& ScopedTempDir::operator=(ScopedTempDir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) RemoveTree(path_);
    path_ = std::exchange(other.path_, "");
  }
  return *this;
}

ScopedTempDir::~ScopedTempDir() {
  if (!path_.empty()) RemoveTree(path_);
}

}  // namespace testing
}  // namespace rangefs
