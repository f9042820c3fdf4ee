// ParseOptions: Python keyword options -> ClientOptions.
#include <pybind11/pybind11.h>

#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace rangefs {
namespace python {
namespace {

using Setter = std::function<absl::Status(ClientOptions&, py::handle)>;

template <typename T>
Setter Field(T ClientOptions::*field) {
  return [field](ClientOptions& o, py::handle v) {
    o.*field = v.cast<T>();
    return absl::OkStatus();
  };
}

Setter Seconds(absl::Duration ClientOptions::*field) {
  return [field](ClientOptions& o, py::handle v) {
    const double s = v.cast<double>();
    if (!(s >= 0)) return absl::InvalidArgumentError("negative duration");
    o.*field = absl::Seconds(s);
    return absl::OkStatus();
  };
}

Setter Tls(std::string ClientTlsOptions::*field) {
  return [field](ClientOptions& o, py::handle v) {
    o.agent_tls.*field = v.cast<std::string>();
    return absl::OkStatus();
  };
}

absl::Status SetDataPath(ClientOptions& o, py::handle v) {
  const std::string s = v.cast<std::string>();
  if (s == "auto") {
    o.data_path = DataPath::kAuto;
  } else if (s == "mount") {
    o.data_path = DataPath::kMount;
  } else if (s == "agent") {
    o.data_path = DataPath::kAgent;
  } else if (s == "nfs") {
    o.data_path = DataPath::kNfs;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("'", s, "' (auto, mount, agent or nfs)"));
  }
  return absl::OkStatus();
}

absl::Status SetVerify(ClientOptions& o, py::handle v) {
  const std::string s = v.cast<std::string>();
  if (s == "off") {
    o.verify = VerifyMode::kOff;
  } else if (s == "sampled") {
    o.verify = VerifyMode::kSampled;
  } else if (s == "full") {
    o.verify = VerifyMode::kFull;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("'", s, "' (off, sampled or full)"));
  }
  return absl::OkStatus();
}

const std::map<std::string, Setter>& Setters() {
  static const auto* setters = new std::map<std::string, Setter>{
      {"etcd_ca_file", Field(&ClientOptions::etcd_ca_file)},
      {"etcd_cert_file", Field(&ClientOptions::etcd_cert_file)},
      {"etcd_key_file", Field(&ClientOptions::etcd_key_file)},
      {"etcd_username", Field(&ClientOptions::etcd_username)},
      {"etcd_password", Field(&ClientOptions::etcd_password)},
      {"agent_ca_file", Tls(&ClientTlsOptions::ca_file)},
      {"agent_cert_file", Tls(&ClientTlsOptions::cert_file)},
      {"agent_key_file", Tls(&ClientTlsOptions::key_file)},
      {"agent_server_name_override",
       Tls(&ClientTlsOptions::server_name_override)},
      {"max_layout_staleness", Seconds(&ClientOptions::max_layout_staleness)},
      {"mount_root", Field(&ClientOptions::mount_root)},
      {"data_path", SetDataPath},
      {"o_direct", Field(&ClientOptions::o_direct)},
      {"mount_recheck_interval",
       Seconds(&ClientOptions::mount_recheck_interval)},
      {"io_uring", Field(&ClientOptions::io_uring)},
      {"io_uring_depth", Field(&ClientOptions::io_uring_depth)},
      {"nfs_connections_per_node",
       Field(&ClientOptions::nfs_connections_per_node)},
      {"nfs_event_loops", Field(&ClientOptions::nfs_event_loops)},
      {"page_cache_reads", Field(&ClientOptions::page_cache_reads)},
      {"in_place_reads", Field(&ClientOptions::in_place_reads)},
      {"mount_status_file", Field(&ClientOptions::mount_status_file)},
      {"mount_status_max_age", Seconds(&ClientOptions::mount_status_max_age)},
      {"single_flight", Field(&ClientOptions::single_flight)},
      {"max_io_size", Field(&ClientOptions::max_io_size)},
      {"max_inflight_per_node", Field(&ClientOptions::max_inflight_per_node)},
      {"max_inflight_global", Field(&ClientOptions::max_inflight_global)},
      {"default_deadline", Seconds(&ClientOptions::default_deadline)},
      {"attempt_timeout", Seconds(&ClientOptions::attempt_timeout)},
      {"stall_factor", Field(&ClientOptions::stall_factor)},
      {"stall_min_delay", Seconds(&ClientOptions::stall_min_delay)},
      {"cold_latency", Seconds(&ClientOptions::cold_latency)},
      {"lb_policy", Field(&ClientOptions::lb_policy)},
      {"hedging", Field(&ClientOptions::hedging)},
      {"hedge_quantile", Field(&ClientOptions::hedge_quantile)},
      {"hedge_max_ratio", Field(&ClientOptions::hedge_max_ratio)},
      {"hedge_burst", Field(&ClientOptions::hedge_burst)},
      {"hedge_min_delay", Seconds(&ClientOptions::hedge_min_delay)},
      {"local_node", Field(&ClientOptions::local_node)},
      {"seed", Field(&ClientOptions::seed)},
      {"verify", SetVerify},
      {"verify_sample_every", Field(&ClientOptions::verify_sample_every)},
      {"teardown_timeout", Seconds(&ClientOptions::teardown_timeout)},
  };
  return *setters;
}

}  // namespace

absl::StatusOr<ClientOptions> ParseOptions(const std::string& etcd,
                                           const std::string& cluster,
                                           const py::dict& options) {
  ClientOptions o;
  o.etcd_endpoints = etcd;
  o.cluster = cluster;
  for (const auto& [key, value] : options) {
    const std::string name = py::str(key);
    auto it = Setters().find(name);
    if (it == Setters().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown rangefs.Client option '", name, "'"));
    }
    absl::Status s;
    try {
      s = it->second(o, value);
    } catch (const py::cast_error&) {
      s = absl::InvalidArgumentError(absl::StrCat(
          "has type ",
          py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rangefs.Client option ", name, ": ", s.message()));
    }
  }
  return o;
}

}  // namespace python
}  // namespace rangefs
