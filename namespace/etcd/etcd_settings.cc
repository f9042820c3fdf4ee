#include "namespace/etcd/etcd_settings.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace rangefs {
namespace etcd {

absl::StatusOr<EtcdClientOptions> MakeEtcdClientOptions(const EtcdSettings& s) {
  EtcdClientOptions o;
  o.endpoints = s.endpoints;
  o.ca_file = s.ca_file;
  o.cert_file = s.cert_file;
  o.key_file = s.key_file;
  o.username = s.username;
  o.password = s.password;
  if (o.password.empty() && !s.password_file.empty()) {
    std::ifstream in(s.password_file);
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot read ", s.password_file));
    }
    std::getline(in, o.password);
  }
  if (s.call_timeout.has_value()) o.call_timeout = *s.call_timeout;
  return o;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> OpenEtcdClient(
    const EtcdSettings& s) {
  RANGEFS_ASSIGN_OR_RETURN(EtcdClientOptions o, MakeEtcdClientOptions(s));
  return EtcdClient::Open(o);
}

absl::StatusOr<EtcdSettings> EtcdSettingsFromConfig(const Config& config) {
  EtcdSettings s;
  s.endpoints = absl::StrJoin(config.GetList("etcd_endpoints"), ",");
  s.ca_file = config.GetString("etcd_ca");
  s.cert_file = config.GetString("etcd_cert");
  s.key_file = config.GetString("etcd_key");
  s.username = config.GetString("etcd_user");
  s.password_file = config.GetString("etcd_password_file");
  RANGEFS_ASSIGN_OR_RETURN(s.call_timeout, config.GetDuration("etcd_timeout"));
  return s;
}

}  // namespace etcd
}  // namespace rangefs
