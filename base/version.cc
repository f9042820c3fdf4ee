#include "base/version.h"

#include "absl/strings/str_cat.h"

namespace rangefs {

// version_stamp.cc, generated (BUILD).
extern const char kGitCommit[];

absl::string_view GitCommit() { return kGitCommit; }

std::string VersionLine(absl::string_view program) {
  return absl::StrCat(program, " ", RANGEFS_VERSION, " (commit ", GitCommit(),
                      ")");
}

bool WantsVersion(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "--version" || a == "-version") return true;
  }
  return false;
}

}  // namespace rangefs
