#include "base/config.h"

#include <errno.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"

namespace rangefs {

namespace {

// The one list of configuration keys. Keep deploy/config/rangefs.conf.example
// in step with it (config_test checks that every key is documented there).
constexpr ConfigKey kKeys[] = {
    // etcd connection (every binary).
    {"etcd_endpoints", "127.0.0.1:2379", "all",
     "comma-separated etcd client endpoints host:port (or a grpc-proxy)"},
    {"etcd_ca", "", "all", "PEM CA bundle; setting it turns TLS on"},
    {"etcd_cert", "", "all", "PEM client certificate (client-cert-auth)"},
    {"etcd_key", "", "all", "PEM private key of etcd_cert"},
    {"etcd_user", "", "all", "etcd user name when etcd auth is enabled"},
    {"etcd_password_file", "", "all",
     "file holding the etcd user's password (never put it in this file)"},
    {"etcd_timeout", "5s", "all", "deadline of each etcd call"},
    {"cluster", "default", "all",
     "namespace cluster name: keys live under /rangefs/v1/<cluster>/"},
    {"log_level", "info", "all", "debug, info, warning or error"},
    // Storage node agent.
    {"node_id", "", "node", "this storage node's id (as in `node add`)"},
    {"export_root", "", "node", "the directory this node serves"},
    {"listen", "0.0.0.0:7070", "node", "host:port of the agent's gRPC server"},
    {"data_listen", "auto", "node",
     "host:port of the agent's raw-TCP ReadRange data port; auto: the host "
     "of listen, a free port; off: none, reads use gRPC (always off with "
     "TLS)"},
    {"agent_tls_cert", "", "node",
     "PEM server certificate of the agent's gRPC service; set (with "
     "agent_tls_key) turns TLS on"},
    {"agent_tls_key", "", "node", "PEM private key of agent_tls_cert"},
    {"agent_tls_client_ca", "", "node",
     "PEM CA bundle; set: clients must present a certificate it signed "
     "(mTLS); required on a non-loopback listen unless agent_insecure"},
    {"agent_writers", "", "node",
     "comma-separated certificate identities (CN or SAN) that may write and "
     "delete objects under mTLS; empty: nobody may"},
    {"agent_peer_tls_ca", "", "node",
     "PEM CA of peer agents' certificates, for CopyObject (re-replication: "
     "this agent reads from a peer); empty with the two below: plaintext"},
    {"agent_peer_tls_cert", "", "node",
     "PEM client certificate this agent presents to peer agents (mTLS)"},
    {"agent_peer_tls_key", "", "node",
     "PEM private key of agent_peer_tls_cert"},
    {"agent_insecure", "false", "node",
     "true: serve a non-loopback listen without mTLS (anyone may write); "
     "the agent warns every minute"},
    {"agent_ca", "", "admin,client",
     "PEM CA that signed the agents' certificates; set: talk TLS to agents"},
    {"agent_cert", "", "admin,client",
     "PEM client certificate for agents that demand mTLS"},
    {"agent_key", "", "admin,client", "PEM private key of agent_cert"},
    {"shutdown_grace", "10s", "node",
     "on SIGTERM, how long in-flight reads may finish (drain)"},
    // Client mounts (rangefs-mountd, client library, doctor).
    {"mount_root", "/mnt/rangefs", "mountd,client",
     "node N's export is mounted at <mount_root>/N"},
    {"mount_type", "nfs", "mountd", "nfs (production) or bind (tests)"},
    {"nfs_options",
     "ro,proto=rdma,port=20049,vers=4.2,rsize=1048576,hard,timeo=600,"
     "retrans=2,noatime,nocto,actimeo=600",
     "mountd", "mount -o options of every NFS mount (ro is always added)"},
    {"readahead_kb", "4096", "mountd",
     "per-mount NFS readahead written to /sys/class/bdi/<dev>/read_ahead_kb; "
     "0 leaves the kernel default"},
    {"mount_stat_timeout", "5s", "mountd",
     "a mount that does not answer a stat within this is unhealthy"},
    {"reconcile_interval", "10s", "mountd",
     "full re-list of node records and health probe period"},
    {"status_file", "", "mountd",
     "mount health file; empty means <mount_root>/.rangefs-mounts"},
};

}  // namespace

absl::Span<const ConfigKey> KnownConfigKeys() { return kKeys; }

namespace {

const ConfigKey* FindKey(absl::string_view name) {
  for (const ConfigKey& k : kKeys) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<Config> Config::Parse(absl::string_view text,
                                     absl::string_view source) {
  Config c;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    std::string where = absl::StrCat(source, ":", line_no);
    size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected `key = value`, got \"", line, "\""));
    }
    absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": empty key"));
    }
    if (FindKey(key) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unknown key \"", key,
          "\" (known keys: see deploy/config/rangefs.conf.example)"));
    }
    auto it = c.values_.find(key);
    if (it != c.values_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": key \"", key, "\" already set at ", it->second.origin));
    }
    c.values_[std::string(key)] = Value{std::string(value), where};
  }
  return c;
}

absl::Status Config::Set(absl::string_view key, absl::string_view value) {
  if (FindKey(key) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown config key \"", key, "\""));
  }
  values_[std::string(key)] = Value{std::string(value), "flag"};
  return absl::OkStatus();
}

bool Config::Has(absl::string_view key) const {
  return values_.find(key) != values_.end();
}

std::string Config::GetString(absl::string_view key) const {
  auto it = values_.find(key);
  if (it != values_.end()) return it->second.value;
  const ConfigKey* k = FindKey(key);
  return k == nullptr ? "" : k->default_value;
}

std::string Config::Origin(absl::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? "" : it->second.origin;
}

std::vector<std::string> Config::GetList(absl::string_view key) const {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(GetString(key), ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

namespace {

absl::Status BadValue(const Config& c, absl::string_view key,
                      absl::string_view want) {
  std::string origin = c.Origin(key);
  return absl::InvalidArgumentError(
      absl::StrCat(origin.empty() ? "default" : origin, ": ", key, " = \"",
                   c.GetString(key), "\" is not ", want));
}

}  // namespace

absl::StatusOr<int64_t> Config::GetInt(absl::string_view key) const {
  int64_t v;
  if (!absl::SimpleAtoi(GetString(key), &v)) {
    return BadValue(*this, key, "an integer");
  }
  return v;
}

absl::StatusOr<bool> Config::GetBool(absl::string_view key) const {
  std::string v = absl::AsciiStrToLower(GetString(key));
  if (v == "true" || v == "yes" || v == "on" || v == "1") return true;
  if (v == "false" || v == "no" || v == "off" || v == "0") return false;
  return BadValue(*this, key, "a boolean (true/false)");
}

absl::StatusOr<absl::Duration> Config::GetDuration(
    absl::string_view key) const {
  absl::Duration d;
  if (!absl::ParseDuration(GetString(key), &d)) {
    return BadValue(*this, key, "a duration (e.g. 500ms, 5s, 1h)");
  }
  return d;
}

absl::StatusOr<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus(errno, absl::StrCat("open config ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoStatus(errno, absl::StrCat("read config ", path));
  return Config::Parse(ss.str(), path);
}

}  // namespace rangefs
