// File: version.h
//
// The one version of every rangefs binary: the release (RANGEFS_VERSION,
// also what a storage node's live record carries as "rangefs-node <v>") and
// the git commit the build came from (Bazel's workspace status,
// tools/workspace_status.sh; "unknown" outside a git checkout).
//
//   if (WantsVersion(argc, argv)) { puts(VersionLine("rangefs-x").c_str()); }
#ifndef RANGEFS_BASE_VERSION_H_
#define RANGEFS_BASE_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

// A macro so that constant strings can be built from it
// ("rangefs-node " RANGEFS_VERSION).
#define RANGEFS_VERSION "0.4.0"

namespace rangefs {

// The git commit (12 hex digits), or "unknown".
absl::string_view GitCommit();

// "rangefs-node 0.4.0 (commit 032d297cdd35)": what --version prints.
std::string VersionLine(absl::string_view program);

// Whether argv (argv[0] is the program) holds --version or -version before
// any "--".
bool WantsVersion(int argc, const char* const* argv);

}  // namespace rangefs

#endif  // RANGEFS_BASE_VERSION_H_
