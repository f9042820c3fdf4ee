#include "base/flags_usage.h"

#include <algorithm>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/version.h"

namespace rangefs {
namespace {

bool WantsHelp(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "-h" || a == "--help" || a == "-help" || a == "--helpfull" ||
        a == "--helpshort") {
      return true;
    }
  }
  return false;
}

// Abseil's own flags (--flagfile, --fromenv, ...) come from its sources.
bool IsAbseilFlag(const absl::CommandLineFlag& f) {
  return absl::StrContains(f.Filename(), "absl/");
}

std::string FlagsHelp() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsAbseilFlag(*flag)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const absl::CommandLineFlag* a, const absl::CommandLineFlag* b) {
              return a->Name() < b->Name();
            });
  std::string out = "\nFlags:\n";
  for (const absl::CommandLineFlag* f : flags) {
    const std::string def = f->DefaultValue();
    absl::StrAppend(&out, "  --", f->Name(), "  ", f->Help(),
                    " (default: ", def.empty() ? "\"\"" : def, ")\n");
  }
  return out;
}

}  // namespace

std::optional<std::string> HelpOrVersion(int argc, const char* const* argv,
                                         absl::string_view program,
                                         absl::string_view usage) {
  if (WantsHelp(argc, argv)) {
    std::string out(usage);
    if (!out.empty() && out.back() != '\n') out += '\n';
    absl::StrAppend(&out, "  --version  print the version and exit\n",
                    FlagsHelp());
    return out;
  }
  if (WantsVersion(argc, argv)) return VersionLine(program) + "\n";
  return std::nullopt;
}

}  // namespace rangefs
