#include "mount/mount_options.h"

#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/config.h"
#include "base/layered_config.h"
#include "base/status_macros.h"
#include "namespace/layout.h"

namespace rangefs {
namespace mount {

namespace {

constexpr char kUsage[] =
    "usage: rangefs-mount [--etcd=H:P,...] [--cluster=C] [--dir=/sub/tree]\n"
    "                     [--revision=R] [--config=FILE] [-f] [-o OPT,...]\n"
    "                     [SPEC] MOUNTPOINT\n"
    "Mounts the rangefs namespace (or the subtree --dir) read-only.\n"
    "Every --key=value may also be given as -o key=value. Keys:\n"
    "  etcd (etcd_endpoints) cluster dir revision config etcd_ca etcd_cert\n"
    "  etcd_key etcd_user etcd_password_file etcd_timeout max_staleness\n"
    "  preload data_path=auto|mount|agent|nfs mount_root agent_ca agent_cert\n"
    "  agent_key verify=off|sampled|full o_direct io_uring hedging\n"
    "  read_deadline prefetch splice\n"
    "  foreground (-f) max_threads max_idle_threads readahead_kb\n"
    "  direct_io=auto|true|false max_background attr_timeout"
    " entry_timeout uid gid metrics_port metrics_file metrics_interval\n"
    "  status_dir log_file log_level\n"
    "Other -o options go to libfuse (allow_other, nosuid, nodev, ...).\n"
    "SPEC: the etcd endpoints (as mount(8) passes them from /etc/fstab).\n"
    "--help prints this; --version the version and git commit.\n";

// Keys the shared config file may supply (base/config.cc).
constexpr const char* kSharedKeys[] = {
    "etcd_endpoints", "etcd_ca",   "etcd_cert",
    "etcd_key",       "etcd_user", "etcd_password_file",
    "etcd_timeout",   "cluster",   "log_level",
    "mount_root",     "agent_ca",  "agent_cert",
    "agent_key"};

constexpr const char* kOwnKeys[] = {"etcd_endpoints",
                                    "cluster",
                                    "dir",
                                    "revision",
                                    "config",
                                    "etcd_ca",
                                    "etcd_cert",
                                    "etcd_key",
                                    "etcd_user",
                                    "etcd_password_file",
                                    "etcd_timeout",
                                    "max_staleness",
                                    "preload",
                                    "o_direct",
                                    "io_uring",
                                    "hedging",
                                    "data_path",
                                    "mount_root",
                                    "agent_ca",
                                    "agent_cert",
                                    "agent_key",
                                    "verify",
                                    "read_deadline",
                                    "prefetch",
                                    "splice",
                                    "foreground",
                                    "max_threads",
                                    "max_idle_threads",
                                    "readahead_kb",
                                    "direct_io",
                                    "max_background",
                                    "attr_timeout",
                                    "entry_timeout",
                                    "uid",
                                    "gid",
                                    "metrics_port",
                                    "metrics_file",
                                    "metrics_interval",
                                    "status_dir",
                                    "log_file",
                                    "log_level"};

// mount(8) options that mean nothing to a FUSE daemon.
bool IsMountNoise(absl::string_view o) {
  static constexpr const char* kNoise[] = {
      "defaults", "auto",  "noauto",  "user",   "users", "nouser",
      "owner",    "group", "_netdev", "nofail", "ro",    "rw"};
  for (const char* n : kNoise) {
    if (o == n) return true;
  }
  return absl::StartsWith(o, "x-") || absl::StartsWith(o, "comment=");
}

std::string Normalize(absl::string_view key) {
  std::string k = absl::StrReplaceAll(key, {{"-", "_"}});
  if (k == "etcd") return "etcd_endpoints";
  if (k == "threads") return "max_threads";
  return k;
}

bool IsOwnKey(absl::string_view key) {
  for (const char* k : kOwnKeys) {
    if (key == k) return true;
  }
  return false;
}

absl::StatusOr<bool> ParseBool(absl::string_view key, absl::string_view v) {
  const std::string s = absl::AsciiStrToLower(v);
  if (s == "" || s == "1" || s == "true" || s == "yes" || s == "on") {
    return true;
  }
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("option ", key, "=", v, ": want true or false"));
}

absl::StatusOr<int64_t> ParseInt(absl::string_view key, absl::string_view v,
                                 int64_t min, int64_t max) {
  int64_t n;
  if (!absl::SimpleAtoi(v, &n) || n < min || n > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option ", key, "=", v, ": want an integer in [", min, ", ", max, "]"));
  }
  return n;
}

absl::StatusOr<absl::Duration> ParseDuration(absl::string_view key,
                                             absl::string_view v) {
  absl::Duration d;
  double seconds;
  if (absl::SimpleAtod(v, &seconds) && seconds >= 0) {
    return absl::Seconds(seconds);
  }
  if (!absl::ParseDuration(v, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option ", key, "=", v, ": want a duration such as 500ms or 2s"));
  }
  return d;
}

absl::StatusOr<double> ParseSeconds(absl::string_view key,
                                    absl::string_view v) {
  RANGEFS_ASSIGN_OR_RETURN(absl::Duration d, ParseDuration(key, v));
  return absl::ToDoubleSeconds(d);
}

// Sets one of our keys on `o`.
absl::Status Apply(const std::string& key, const std::string& v,
                   MountOptions& o) {
  if (key == "etcd_endpoints") {
    o.etcd_endpoints = v;
  } else if (key == "cluster") {
    RANGEFS_RETURN_IF_ERROR(ns::ValidateClusterName(v));
    o.cluster = v;
  } else if (key == "dir") {
    RANGEFS_RETURN_IF_ERROR(ns::ValidateDir(v));
    o.dir = v;
  } else if (key == "revision") {
    RANGEFS_ASSIGN_OR_RETURN(o.revision, ParseInt(key, v, 0, INT64_MAX));
  } else if (key == "etcd_ca") {
    o.etcd_ca = v;
  } else if (key == "etcd_cert") {
    o.etcd_cert = v;
  } else if (key == "etcd_key") {
    o.etcd_key = v;
  } else if (key == "etcd_user") {
    o.etcd_user = v;
  } else if (key == "etcd_password_file") {
    o.etcd_password_file = v;
  } else if (key == "etcd_timeout") {
    RANGEFS_ASSIGN_OR_RETURN(o.etcd_timeout, ParseDuration(key, v));
    if (o.etcd_timeout <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError("option etcd_timeout must be > 0");
    }
  } else if (key == "max_staleness") {
    RANGEFS_ASSIGN_OR_RETURN(o.max_staleness, ParseDuration(key, v));
  } else if (key == "preload") {
    RANGEFS_ASSIGN_OR_RETURN(o.preload, ParseBool(key, v));
  } else if (key == "data_path") {
    if (v == "auto") {
      o.data_path = DataPath::kAuto;
    } else if (v == "mount") {
      o.data_path = DataPath::kMount;
    } else if (v == "agent") {
      o.data_path = DataPath::kAgent;
    } else if (v == "nfs") {
      o.data_path = DataPath::kNfs;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "option data_path=", v, ": want auto, mount, agent or nfs"));
    }
  } else if (key == "mount_root") {
    o.mount_root = v;
  } else if (key == "agent_ca") {
    o.agent_ca = v;
  } else if (key == "agent_cert") {
    o.agent_cert = v;
  } else if (key == "agent_key") {
    o.agent_key = v;
  } else if (key == "verify") {
    if (v == "off") {
      o.verify = VerifyMode::kOff;
    } else if (v == "sampled") {
      o.verify = VerifyMode::kSampled;
    } else if (v == "full") {
      o.verify = VerifyMode::kFull;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("option verify=", v, ": want off, sampled or full"));
    }
  } else if (key == "o_direct") {
    RANGEFS_ASSIGN_OR_RETURN(o.o_direct, ParseBool(key, v));
  } else if (key == "io_uring") {
    RANGEFS_ASSIGN_OR_RETURN(o.io_uring, ParseBool(key, v));
  } else if (key == "hedging") {
    RANGEFS_ASSIGN_OR_RETURN(o.hedging, ParseBool(key, v));
  } else if (key == "read_deadline") {
    RANGEFS_ASSIGN_OR_RETURN(o.read_deadline, ParseDuration(key, v));
    if (o.read_deadline <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError("option read_deadline must be > 0");
    }
  } else if (key == "prefetch") {
    RANGEFS_ASSIGN_OR_RETURN(o.prefetch, ParseBool(key, v));
  } else if (key == "splice") {
    RANGEFS_ASSIGN_OR_RETURN(o.splice, ParseBool(key, v));
  } else if (key == "foreground") {
    RANGEFS_ASSIGN_OR_RETURN(o.foreground, ParseBool(key, v));
  } else if (key == "max_threads") {
    RANGEFS_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, v, 1, 1024));
    o.max_threads = static_cast<int>(n);
  } else if (key == "max_idle_threads") {
    RANGEFS_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, v, 1, 1024));
    o.max_idle_threads = static_cast<int>(n);
  } else if (key == "readahead_kb") {
    RANGEFS_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, v, 0, 1 << 20));
    o.readahead_kb = static_cast<int>(n);
  } else if (key == "direct_io") {
    RANGEFS_ASSIGN_OR_RETURN(o.direct_io, ParseDirectIoMode(key, v));
  } else if (key == "max_background") {
    RANGEFS_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, v, 1, 65535));
    o.max_background = static_cast<int>(n);
  } else if (key == "attr_timeout") {
    RANGEFS_ASSIGN_OR_RETURN(o.attr_timeout, ParseSeconds(key, v));
    o.attr_timeout_set = true;
  } else if (key == "entry_timeout") {
    RANGEFS_ASSIGN_OR_RETURN(o.entry_timeout, ParseSeconds(key, v));
    o.entry_timeout_set = true;
  } else if (key == "uid") {
    RANGEFS_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, v, 0, INT32_MAX));
    o.uid = static_cast<int>(n);
  } else if (key == "gid") {
    RANGEFS_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, v, 0, INT32_MAX));
    o.gid = static_cast<int>(n);
  } else if (key == "metrics_port") {
    RANGEFS_ASSIGN_OR_RETURN(int64_t n, ParseInt(key, v, 0, 65535));
    o.metrics_port = static_cast<int>(n);
  } else if (key == "metrics_file") {
    o.metrics_file = v;
  } else if (key == "metrics_interval") {
    RANGEFS_ASSIGN_OR_RETURN(o.metrics_interval, ParseDuration(key, v));
    if (o.metrics_interval < absl::Milliseconds(100)) {
      return absl::InvalidArgumentError(
          "option metrics_interval must be >= 100ms");
    }
  } else if (key == "status_dir") {
    o.status_dir = v;
  } else if (key == "log_file") {
    o.log_file = v;
  } else if (key == "log_level") {
    o.log_level = v;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown option ", key));
  }
  return absl::OkStatus();
}

}  // namespace

const char* MountUsage() { return kUsage; }

absl::StatusOr<MountOptions> ParseMountOptions(
    const std::vector<std::string>& argv) {
  MountOptions o;
  // Our keys in order of appearance (the last one wins), and the rest.
  std::map<std::string, std::string> given;
  std::vector<std::string> positional;
  auto add_o = [&](absl::string_view list) -> absl::Status {
    for (absl::string_view item : absl::StrSplit(list, ',')) {
      item = absl::StripAsciiWhitespace(item);
      if (item.empty() || IsMountNoise(item)) continue;
      const size_t eq = item.find('=');
      const std::string key = Normalize(item.substr(0, eq));
      if (IsOwnKey(key)) {
        given[key] = eq == absl::string_view::npos
                         ? std::string()
                         : std::string(item.substr(eq + 1));
      } else {
        o.fuse_options.emplace_back(item);
      }
    }
    return absl::OkStatus();
  };
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-h" || a == "--help") {
      return absl::FailedPreconditionError(kUsage);
    }
    if (a == "-f" || a == "--foreground") {
      given["foreground"] = "true";
    } else if (a == "-d" || a == "--debug") {
      given["foreground"] = "true";
      o.fuse_options.push_back("debug");
    } else if (a == "-o") {
      if (i + 1 == argv.size()) {
        return absl::InvalidArgumentError("-o needs an option list");
      }
      RANGEFS_RETURN_IF_ERROR(add_o(argv[++i]));
    } else if (absl::StartsWith(a, "-o")) {
      RANGEFS_RETURN_IF_ERROR(add_o(absl::string_view(a).substr(2)));
    } else if (absl::StartsWith(a, "--")) {
      const size_t eq = a.find('=');
      const std::string key = Normalize(absl::string_view(a).substr(
          2, eq == std::string::npos ? std::string::npos : eq - 2));
      if (!IsOwnKey(key)) {
        return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
      }
      given[key] = eq == std::string::npos ? "true" : a.substr(eq + 1);
    } else if (absl::StartsWith(a, "-") && a.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty() || positional.size() > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("want [SPEC] MOUNTPOINT, got ", positional.size(),
                     " positional argument(s)"));
  }
  o.mountpoint = positional.back();
  if (positional.size() == 2 && positional[0] != "rangefs" &&
      positional[0] != "none" && given.count("etcd_endpoints") == 0) {
    given["etcd_endpoints"] = positional[0];
  }
  // Options > $RANGEFS_ETCD/$RANGEFS_CLUSTER > the config file (config= or
  // $RANGEFS_CONFIG) > defaults (base/layered_config.h).
  auto config_path = given.find("config");
  RANGEFS_ASSIGN_OR_RETURN(
      Config c,
      LoadLayeredConfig(config_path == given.end() ? std::string()
                                                   : config_path->second));
  given.erase("config");
  for (const char* k : kSharedKeys) {
    if (given.count(k) == 0 && c.Has(k)) given[k] = c.GetString(k);
  }
  if (given.count("etcd_endpoints") == 0) {
    given["etcd_endpoints"] = c.GetString("etcd_endpoints");
  }
  for (const auto& [k, v] : given) RANGEFS_RETURN_IF_ERROR(Apply(k, v, o));
  if (o.revision > 0) {
    if (!o.attr_timeout_set) o.attr_timeout = 3600;
    if (!o.entry_timeout_set) o.entry_timeout = 3600;
  }
  return o;
}

}  // namespace mount
}  // namespace rangefs
