// File: etcd_settings.h
//
// The etcd connection settings every program takes (its flags, mount
// options or the shared config file, base/config.h), and the one place
// they become EtcdClientOptions:
//
//   RANGEFS_ASSIGN_OR_RETURN(EtcdSettings s, EtcdSettingsFromConfig(config));
//   RANGEFS_ASSIGN_OR_RETURN(auto etcd, OpenEtcdClient(s));
#ifndef RANGEFS_NAMESPACE_ETCD_ETCD_SETTINGS_H_
#define RANGEFS_NAMESPACE_ETCD_ETCD_SETTINGS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/config.h"
#include "namespace/etcd/etcd_client.h"

namespace rangefs {
namespace etcd {

struct EtcdSettings {
  std::string endpoints;  // "host:port,host:port"
  // TLS when ca_file is set; cert_file and key_file: a client certificate.
  std::string ca_file, cert_file, key_file;
  std::string username;
  std::string password;       // used when set; else
  std::string password_file;  // its first line ("": no password)
  // Deadline of each etcd call; unset: EtcdClientOptions' default.
  std::optional<absl::Duration> call_timeout;
};

// The client options for `s` (the other EtcdClientOptions fields keep their
// defaults). NOT_FOUND "cannot read <file>" when password_file is set and
// cannot be opened.
absl::StatusOr<EtcdClientOptions> MakeEtcdClientOptions(const EtcdSettings& s);

// MakeEtcdClientOptions, then EtcdClient::Open.
absl::StatusOr<std::unique_ptr<EtcdClient>> OpenEtcdClient(
    const EtcdSettings& s);

// The settings of the shared config file: etcd_endpoints (a list),
// etcd_ca, etcd_cert, etcd_key, etcd_user, etcd_password_file and
// etcd_timeout, each with its default when unset. INVALID_ARGUMENT when
// etcd_timeout does not parse.
absl::StatusOr<EtcdSettings> EtcdSettingsFromConfig(const Config& config);

}  // namespace etcd
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_ETCD_ETCD_SETTINGS_H_
