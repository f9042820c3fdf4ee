// rangefs-admin: manages nodes, files and layouts in the etcd namespace.
// main only parses the connection flags and wires objects; the commands
// live in commands.cc.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "admin/args.h"
#include "admin/cli.h"
#include "admin/commands.h"
#include "admin/doctor.h"
#include "base/config.h"
#include "base/layered_config.h"
#include "base/version.h"
#include "namespace/clusters.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd/etcd_settings.h"
#include "namespace/etcd_kv.h"
#include "namespace/layout.h"
#include "namespace/store.h"

namespace {

int Fail(const absl::Status& s, bool json) {
  if (json) fputs(rangefs::admin::FormatJsonError(s).c_str(), stdout);
  fprintf(stderr, "rangefs-admin: %s: %s\n",
          absl::StatusCodeToString(s.code()).c_str(),
          std::string(s.message()).c_str());
  return rangefs::admin::ExitCode(s);
}

}  // namespace

// A wrong or missing cluster name gives an empty world: say so on stderr,
// naming the clusters that exist (not for `node add` and `restore`, which
// fill a new cluster, nor `doctor`, which checks it itself).
void WarnIfEmptyCluster(rangefs::ns::KvBackend& kv, const std::string& cluster,
                        const std::string& endpoints,
                        const rangefs::admin::Args& command) {
  const std::vector<std::string>& words = command.positional();
  const std::string first = words.empty() ? "" : words[0];
  const std::string second = words.size() < 2 ? "" : words[1];
  if ((first == "node" && second == "add") || first == "restore" ||
      first == "doctor") {
    return;
  }
  absl::StatusOr<std::string> why =
      rangefs::ns::EmptyClusterMessage(kv, cluster, endpoints);
  if (why.ok() && !why->empty()) {
    fprintf(stderr, "rangefs-admin: warning: %s\n", why->c_str());
  }
}

int main(int argc, char** argv) {
  std::vector<std::string> raw(argv + 1, argv + argc);
  // --json is needed before parsing succeeds, for the error's form.
  bool json = false;
  for (const std::string& a : raw) json = json || a == "--json";
  auto parsed = rangefs::admin::ParseCommandLine(raw);
  if (!parsed.ok()) return Fail(parsed.status(), json);
  if (parsed->version) {
    puts(rangefs::VersionLine("rangefs-admin").c_str());
    return 0;
  }
  if (parsed->help) {
    fputs(parsed->help_text.c_str(), stdout);
    return parsed->no_command ? 2 : 0;
  }
  const rangefs::admin::Args& args = parsed->global;
  rangefs::admin::Args& command_args = parsed->command;
  json = args.GetBool("json");
  rangefs::etcd::EtcdSettings es;
  // Precedence: flags, then $RANGEFS_ETCD/$RANGEFS_CLUSTER, then the config
  // file (--config or $RANGEFS_CONFIG), then built-in defaults
  // (base/layered_config.h).
  auto layered = rangefs::LoadLayeredConfig(args.Get("config"));
  if (!layered.ok()) return Fail(layered.status(), json);
  const rangefs::Config& config = *layered;
  auto setting = [&](const char* flag, const char* key) -> std::string {
    if (args.Has(flag)) return args.Get(flag);
    return config.GetString(key);
  };
  es.endpoints = setting("etcd", "etcd_endpoints");
  std::string cluster = setting("cluster", "cluster");
  if (absl::Status s = rangefs::ns::ValidateClusterName(cluster); !s.ok()) {
    return Fail(s, json);
  }
  es.ca_file = setting("ca", "etcd_ca");
  es.cert_file = setting("cert", "etcd_cert");
  es.key_file = setting("key", "etcd_key");
  es.username = setting("user", "etcd_user");
  es.password = args.Get("password");
  if (es.password.empty() && config.Has("etcd_password_file")) {
    std::ifstream pw(config.GetString("etcd_password_file"));
    std::getline(pw, es.password);
  }
  if (args.Has("timeout")) {
    double secs;
    if (!absl::SimpleAtod(args.Get("timeout"), &secs) || secs <= 0) {
      return Fail(absl::InvalidArgumentError("--timeout must be seconds > 0"),
                  json);
    }
    es.call_timeout = absl::Seconds(secs);
  } else if (config.Has("etcd_timeout")) {
    auto d = config.GetDuration("etcd_timeout");
    if (!d.ok()) return Fail(d.status(), json);
    es.call_timeout = *d;
  }

  auto client = rangefs::etcd::OpenEtcdClient(es);
  if (!client.ok()) return Fail(client.status(), json);
  auto kv = rangefs::ns::NewEtcdKv(client->get());
  auto store = rangefs::ns::NewKvStore(kv.get(), {.cluster = cluster});
  rangefs::admin::Context ctx;
  ctx.store = store.get();
  ctx.agent_tls.ca_file = setting("agent-ca", "agent_ca");
  ctx.agent_tls.cert_file = setting("agent-cert", "agent_cert");
  ctx.agent_tls.key_file = setting("agent-key", "agent_key");
  ctx.cluster = cluster;
  ctx.etcd = es;
  if (config.Has("mount_root")) ctx.mount_root = config.GetString("mount_root");
  if (isatty(STDERR_FILENO) && !args.GetBool("no-progress")) {
    ctx.progress = [](size_t done, size_t total) {
      if (total > 0) {
        fprintf(stderr, "\r%zu/%zu (%d%%)", done, total,
                static_cast<int>(done * 100 / total));
        if (done == total) fputc('\n', stderr);
      } else {
        fprintf(stderr, "\r%zu", done);
      }
    };
  }
  WarnIfEmptyCluster(*kv, cluster, es.endpoints, command_args);
  absl::StatusOr<rangefs::admin::Table> table;
  if (parsed->doctor) {
    table = rangefs::admin::RunDoctor(ctx, command_args);
  } else {
    table = rangefs::admin::RunCommand(ctx, command_args);
  }
  if (!table.ok()) return Fail(table.status(), json);
  if (table->raw_output) return table->exit_code;
  std::string out = json ? rangefs::admin::FormatJson(*table)
                         : rangefs::admin::FormatHuman(*table);
  fputs(out.c_str(), stdout);
  return table->exit_code;
}
