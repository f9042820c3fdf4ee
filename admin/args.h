// File: args.h
//
// The arguments of one rangefs-admin command as the commands read them:
// positionals plus --name=value, --name value, and boolean --name flags (a
// fixed set). The command line itself is parsed and checked by CLI11
// (cli.h), which hands each command an Args; commands and their unit tests
// build one with Args::Parse. Thread-compatible.
#ifndef RANGEFS_ADMIN_ARGS_H_
#define RANGEFS_ADMIN_ARGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace admin {

class Args {
 public:
  // INVALID_ARGUMENT for "--" alone or a value flag without a value.
  static absl::StatusOr<Args> Parse(const std::vector<std::string>& argv);

  const std::vector<std::string>& positional() const { return positional_; }
  bool Has(absl::string_view name) const;
  // Last value of --name, or `def`.
  std::string Get(absl::string_view name, absl::string_view def = "") const;
  std::vector<std::string> GetAll(absl::string_view name) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view name, int64_t def) const;
  bool GetBool(absl::string_view name) const { return Has(name); }
  // INVALID_ARGUMENT naming any flag not in `allowed`.
  absl::Status CheckAllowed(const std::vector<std::string>& allowed) const;
  // Consumes the first positional (the command word).
  std::string Shift();

 private:
  std::vector<std::string> positional_;
  std::multimap<std::string, std::string> flags_;
};

// Boolean flags (never take a value).
bool IsBoolFlag(absl::string_view name);

// "10G", "512MiB", "1048576" -> bytes.
absl::StatusOr<uint64_t> ParseBytes(absl::string_view text);
// 1234567 -> "1.2 MiB".
std::string HumanBytes(uint64_t bytes);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_ARGS_H_
