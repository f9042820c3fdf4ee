#include "base/flag_config.h"

#include <string>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/layered_config.h"
#include "base/status_macros.h"

namespace rangefs {

namespace {

// The value of --config in argv ("" if absent).
std::string ConfigFlag(int argc, char** argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view a(argv[i]);
    if (absl::StartsWith(a, "--config=")) path = std::string(a.substr(9));
    if (a == "--config" && i + 1 < argc) path = argv[i + 1];
  }
  return path;
}

}  // namespace

absl::Status ApplyLayeredConfigToFlags(int argc, char** argv,
                                       absl::Span<const FlagBinding> bindings) {
  RANGEFS_ASSIGN_OR_RETURN(Config config,
                           LoadLayeredConfig(ConfigFlag(argc, argv)));
  for (const FlagBinding& b : bindings) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(b.flag);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config key ", b.key, " is bound to no flag --", b.flag));
    }
    if (!config.Has(b.key)) continue;
    const std::string value = config.GetString(b.key);
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config ", b.key, " = ", value, " (for --", b.flag, "): ", error));
    }
  }
  return absl::OkStatus();
}

}  // namespace rangefs
