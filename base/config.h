// File: config.h
//
// The configuration file shared by every rangefs binary (rangefs-admin,
// rangefs-node, rangefs-mountd): one `key = value` per line, `#` starts a
// comment (whole line or after a value), blank lines are ignored, keys are
// lower_snake_case, values are trimmed and may be empty. A key may appear
// once. Unknown keys are rejected, so a typo fails at startup instead of
// being ignored. The known keys, their meaning and defaults are listed in
// one place, KnownConfigKeys() (config.cc), and documented with an example
// in deploy/config/rangefs.conf.example.
//
//   # /etc/rangefs/rangefs.conf
//   etcd_endpoints = 10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379
//   etcd_ca   = /etc/rangefs/tls/ca.crt     # TLS when set
//   cluster   = prod
//   mount_root = /mnt/rangefs
//
//   RANGEFS_ASSIGN_OR_RETURN(Config c,
//   LoadConfig("/etc/rangefs/rangefs.conf")); std::string eps =
//   c.GetString("etcd_endpoints"); RANGEFS_ASSIGN_OR_RETURN(absl::Duration t,
//   c.GetDuration("etcd_timeout"));
//
// Flags given on a command line override the file: a binary loads the file
// first, then calls Set() for each flag that was given.
//
// Config is a thread-compatible value type.
#ifndef RANGEFS_BASE_CONFIG_H_
#define RANGEFS_BASE_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace rangefs {

struct ConfigKey {
  const char* name;
  const char* default_value;  // Used by the getters when the key is unset.
  const char* used_by;        // "all", "admin", "node", "mountd", ...
  const char* help;
};

// Every key a config file may contain, in documentation order.
absl::Span<const ConfigKey> KnownConfigKeys();

class Config {
 public:
  Config() = default;

  // Parses file text. INVALID_ARGUMENT "<source>:<line>: ..." for a line
  // without '=', an empty or unknown key, or a repeated key.
  static absl::StatusOr<Config> Parse(absl::string_view text,
                                      absl::string_view source = "config");

  // Sets (or overrides) a key, e.g. from a command-line flag.
  // INVALID_ARGUMENT for an unknown key.
  absl::Status Set(absl::string_view key, absl::string_view value);

  // True if the file (or Set) gave the key a value.
  bool Has(absl::string_view key) const;
  // The value, else the key's default ("" for a key that is not known).
  std::string GetString(absl::string_view key) const;
  // Comma-separated list, entries trimmed, empty entries dropped.
  std::vector<std::string> GetList(absl::string_view key) const;
  // INVALID_ARGUMENT naming the key and where it was set when the value
  // does not parse.
  absl::StatusOr<int64_t> GetInt(absl::string_view key) const;
  // true/false, yes/no, on/off, 1/0.
  absl::StatusOr<bool> GetBool(absl::string_view key) const;
  // absl duration syntax: "500ms", "5s", "1h30m".
  absl::StatusOr<absl::Duration> GetDuration(absl::string_view key) const;

  // Where a key was set ("/etc/rangefs/rangefs.conf:12", "flag"), or "".
  std::string Origin(absl::string_view key) const;

 private:
  struct Value {
    std::string value;
    std::string origin;
  };
  std::map<std::string, Value, std::less<>> values_;
};

// Reads and parses the file at `path`. NOT_FOUND / PERMISSION_DENIED
// naming the path if it cannot be read; parse errors as Config::Parse with
// the path as source.
absl::StatusOr<Config> LoadConfig(const std::string& path);

}  // namespace rangefs

#endif  // RANGEFS_BASE_CONFIG_H_
