// File: flags_usage.h
//
// --help and --version for the binaries whose flags are Abseil flags
// (rangefs-node, rangefs-keeper, rangefs-bench). absl::ParseCommandLine
// handles both itself, badly for us: --help lists only flags defined in a
// file named like the program (so "No flags matched") and exits 1, and
// --version prints "Debug build (NDEBUG not #defined)". Call this first:
//
//   int main(int argc, char** argv) {
//     if (auto text = rangefs::HelpOrVersion(argc, argv, "rangefs-node",
//                                            kUsage)) {
//       fputs(text->c_str(), stdout);
//       return 0;
//     }
//     absl::ParseCommandLine(argc, argv);
#ifndef RANGEFS_BASE_FLAGS_USAGE_H_
#define RANGEFS_BASE_FLAGS_USAGE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace rangefs {

// For --version (or -version): VersionLine(program) and a newline. For
// --help, -h, -help, --helpfull or --helpshort: `usage`, then every flag
// the program defines (Abseil's own --flagfile and friends left out), sorted,
// with its default and help. nullopt otherwise (parse the flags as usual).
// Options after "--" are not looked at.
std::optional<std::string> HelpOrVersion(int argc, const char* const* argv,
                                         absl::string_view program,
                                         absl::string_view usage);

}  // namespace rangefs

#endif  // RANGEFS_BASE_FLAGS_USAGE_H_
