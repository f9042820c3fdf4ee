// File: layered_config.h
//
// The one configuration story of every rangefs program and the Python
// package: a setting comes from, in this order of precedence,
//   1. the command line (a flag or mount option),
//   2. the environment: $RANGEFS_ETCD (etcd_endpoints), $RANGEFS_CLUSTER
//      (cluster),
//   3. the config file: --config=FILE, else $RANGEFS_CONFIG (config.h),
//   4. the built-in default (KnownConfigKeys).
//
//   RANGEFS_ASSIGN_OR_RETURN(Config c, LoadLayeredConfig(config_flag));
//   if (flag_given) RANGEFS_RETURN_IF_ERROR(c.Set("cluster", flag));
//   std::string cluster = c.GetString("cluster");
//
// Programs with Abseil flags use ApplyLayeredConfigToFlags (flag_config.h)
// instead, before parsing their command line.
#ifndef RANGEFS_BASE_LAYERED_CONFIG_H_
#define RANGEFS_BASE_LAYERED_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/config.h"

namespace rangefs {

struct EnvironmentKey {
  const char* variable;  // "RANGEFS_ETCD"
  const char* key;       // "etcd_endpoints"
};

// The environment variables every program honours, and their config keys.
absl::Span<const EnvironmentKey> EnvironmentKeys();

// The config file (`config_path`, else $RANGEFS_CONFIG when set and not
// empty; none: an empty Config), with the environment variables above set
// over it. The errors of LoadConfig, naming the file and saying whether it
// came from $RANGEFS_CONFIG; INVALID_ARGUMENT for a variable whose value is
// not a valid value of its key.
absl::StatusOr<Config> LoadLayeredConfig(absl::string_view config_path);

}  // namespace rangefs

#endif  // RANGEFS_BASE_LAYERED_CONFIG_H_
