#include "admin/args.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace rangefs {
namespace admin {

bool IsBoolFlag(absl::string_view name) {
  static const char* const kBool[] = {"json",        "help",      "force",
                                      "yes",         "recompute", "verbose",
                                      "no-progress", "overwrite", "keys-only",
                                      "checksums",   "dry-run",   "recursive"};
  for (const char* b : kBool) {
    if (name == b) return true;
  }
  return false;
}

absl::StatusOr<Args> Args::Parse(const std::vector<std::string>& argv) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      for (++i; i < argv.size(); ++i) a.positional_.push_back(argv[i]);
      break;
    }
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      a.positional_.push_back(arg);
      continue;
    }
    std::string body = arg.substr(2);
    size_t eq = body.find('=');
    if (eq != std::string::npos) {
      a.flags_.emplace(body.substr(0, eq), body.substr(eq + 1));
    } else if (IsBoolFlag(body)) {
      a.flags_.emplace(body, "true");
    } else if (i + 1 < argv.size()) {
      a.flags_.emplace(body, argv[++i]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", body, " needs a value"));
    }
  }
  return a;
}

bool Args::Has(absl::string_view name) const {
  return flags_.find(std::string(name)) != flags_.end();
}

std::string Args::Get(absl::string_view name, absl::string_view def) const {
  auto range = flags_.equal_range(std::string(name));
  if (range.first == range.second) return std::string(def);
  return std::prev(range.second)->second;
}

std::vector<std::string> Args::GetAll(absl::string_view name) const {
  std::vector<std::string> out;
  auto range = flags_.equal_range(std::string(name));
  for (auto it = range.first; it != range.second; ++it) {
    out.push_back(it->second);
  }
  return out;
}

absl::StatusOr<int64_t> Args::GetInt(absl::string_view name,
                                     int64_t def) const {
  if (!Has(name)) return def;
  int64_t v;
  std::string s = Get(name);
  if (!absl::SimpleAtoi(s, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, "=", s, " is not an integer"));
  }
  return v;
}

absl::Status Args::CheckAllowed(const std::vector<std::string>& allowed) const {
  for (const auto& [k, v] : flags_) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag --", k,
          allowed.empty() ? " (this command takes no flags)"
                          : absl::StrCat(" (allowed: --",
                                         absl::StrJoin(allowed, ", --"), ")")));
    }
  }
  return absl::OkStatus();
}

std::string Args::Shift() {
  if (positional_.empty()) return "";
  std::string first = positional_.front();
  positional_.erase(positional_.begin());
  return first;
}

absl::StatusOr<uint64_t> ParseBytes(absl::string_view text) {
  std::string t = absl::AsciiStrToLower(text);
  uint64_t mult = 1;
  struct Suffix {
    const char* s;
    uint64_t m;
  };
  static const Suffix kSuffixes[] = {
      {"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30},
      {"tib", 1ull << 40}, {"k", 1ull << 10},   {"m", 1ull << 20},
      {"g", 1ull << 30},   {"t", 1ull << 40},   {"b", 1}};
  for (const Suffix& s : kSuffixes) {
    if (absl::EndsWith(t, s.s)) {
      mult = s.m;
      t.resize(t.size() - strlen(s.s));
      break;
    }
  }
  uint64_t v;
  if (t.empty() || !absl::SimpleAtoi(t, &v) || v > UINT64_MAX / mult) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a byte count (e.g. 4096, 10G)"));
  }
  return v * mult;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.1f %s", v, kUnits[u]);
}

}  // namespace admin
}  // namespace rangefs
