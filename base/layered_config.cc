#include "base/layered_config.h"

#include <stdlib.h>

#include "absl/strings/str_cat.h"

namespace rangefs {

absl::Span<const EnvironmentKey> EnvironmentKeys() {
  static constexpr EnvironmentKey kKeys[] = {
      {"RANGEFS_ETCD", "etcd_endpoints"},
      {"RANGEFS_CLUSTER", "cluster"},
  };
  return kKeys;
}

namespace {

// $name, or "" when unset.
std::string Env(const char* name) {
  const char* v = getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

absl::StatusOr<Config> LoadLayeredConfig(absl::string_view config_path) {
  Config config;
  std::string path(config_path);
  const bool from_env = path.empty();
  if (from_env) path = Env("RANGEFS_CONFIG");
  if (!path.empty()) {
    absl::StatusOr<Config> c = LoadConfig(path);
    if (!c.ok()) {
      if (!from_env) return c.status();
      return absl::Status(
          c.status().code(),
          absl::StrCat(c.status().message(), " (from $RANGEFS_CONFIG)"));
    }
    config = *std::move(c);
  }
  for (const EnvironmentKey& e : EnvironmentKeys()) {
    const std::string v = Env(e.variable);
    if (v.empty()) continue;
    absl::Status s = config.Set(e.key, v);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("$", e.variable, "=", v, ": ", s.message()));
    }
  }
  return config;
}

}  // namespace rangefs
