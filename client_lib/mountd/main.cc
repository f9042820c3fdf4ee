// rangefs-mountd: keeps every storage node's export mounted read-only at
// <mount_root>/<node_id> and writes the mount health file. Configuration
// comes from --config=FILE (base/config.h); any config key can also be
// given as a flag (--mount_root=/mnt/x or --mount-root=/mnt/x), which wins.
//
//   rangefs-mountd --config=/etc/rangefs/rangefs.conf
//   rangefs-mountd --config=/etc/rangefs/rangefs.conf --dry-run
//
// --dry-run lists the nodes once and prints the exact mount/umount commands
// it would run, touching nothing. --once runs one pass and exits after the
// mounts it started have finished (or stat_timeout + op_timeout passed).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "base/config.h"
#include "base/layered_config.h"
#include "base/logging.h"
#include "base/version.h"
#include "client_lib/mountd/mount_manager.h"
#include "client_lib/mountd/mounter.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd/etcd_settings.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"

namespace {

constexpr char kUsage[] =
    "usage: rangefs-mountd [--config=FILE] [--dry-run] [--once] "
    "[--KEY=VALUE ...]\n"
    "  KEY is any config key (deploy/config/rangefs.conf.example), e.g.\n"
    "  --etcd_endpoints=H:P,... --mount_root=DIR --mount_type=nfs|bind\n"
    "  --help prints this; --version the version and git commit.\n";

int Die(const std::string& what, const absl::Status& s, int code = 1) {
  fprintf(stderr, "rangefs-mountd: %s: %s\n", what.c_str(),
          s.ToString().c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using rangefs::Config;
  std::string config_path;
  bool dry_run = false, once = false;
  std::vector<std::pair<std::string, std::string>> overrides;
  if (rangefs::WantsVersion(argc, argv)) {
    puts(rangefs::VersionLine("rangefs-mountd").c_str());
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--dry-run" || a == "--dry_run") {
      dry_run = true;
    } else if (a == "--once") {
      once = true;
    } else if (absl::StartsWith(a, "--config=")) {
      config_path = a.substr(9);
    } else if (absl::StartsWith(a, "--") && a.find('=') != std::string::npos) {
      std::string key =
          absl::StrReplaceAll(a.substr(2, a.find('=') - 2), {{"-", "_"}});
      overrides.emplace_back(key, a.substr(a.find('=') + 1));
    } else {
      fprintf(stderr, "rangefs-mountd: unknown argument %s\n%s", a.c_str(),
              kUsage);
      return 2;
    }
  }
  // Flags > $RANGEFS_ETCD/$RANGEFS_CLUSTER > the config file (--config or
  // $RANGEFS_CONFIG) > defaults (base/layered_config.h).
  auto layered = rangefs::LoadLayeredConfig(config_path);
  if (!layered.ok()) return Die("config", layered.status(), 2);
  Config config = *std::move(layered);
  for (const auto& [k, v] : overrides) {
    absl::Status s = config.Set(k, v);
    if (!s.ok()) return Die("flag --" + k, s, 2);
  }
  rangefs::LogLevel level;
  if (rangefs::ParseLogLevel(config.GetString("log_level"), &level)) {
    rangefs::SetMinLogLevel(level);
  }

  auto etcd_settings = rangefs::etcd::EtcdSettingsFromConfig(config);
  if (!etcd_settings.ok()) return Die("config", etcd_settings.status(), 2);
  auto eo = rangefs::etcd::MakeEtcdClientOptions(*etcd_settings);
  if (!eo.ok()) return Die("etcd_password_file", eo.status(), 2);
  auto stat_timeout = config.GetDuration("mount_stat_timeout");
  auto interval = config.GetDuration("reconcile_interval");
  auto readahead = config.GetInt("readahead_kb");
  for (const absl::Status& s :
       {stat_timeout.status(), interval.status(), readahead.status()}) {
    if (!s.ok()) return Die("config", s, 2);
  }

  std::unique_ptr<rangefs::mountd::Mounter> mounter;
  const std::string type = config.GetString("mount_type");
  if (type == "nfs") {
    mounter = rangefs::mountd::NewNfsMounter(config.GetString("nfs_options"));
  } else if (type == "bind") {
    mounter = rangefs::mountd::NewBindMounter();
  } else {
    return Die("config",
               absl::InvalidArgumentError(absl::StrCat("mount_type = \"", type,
                                                       "\": want nfs or bind")),
               2);
  }

  rangefs::mountd::MountManagerOptions mo;
  mo.mount_root = config.GetString("mount_root");
  mo.status_file = config.GetString("status_file");
  mo.stat_timeout = *stat_timeout;
  mo.reconcile_interval = *interval;
  mo.readahead_kb = *readahead;

  auto client = rangefs::etcd::EtcdClient::Open(*eo);
  if (!client.ok()) return Die("etcd", client.status(), 2);
  auto kv = rangefs::ns::NewEtcdKv(client->get());
  auto store = rangefs::ns::NewKvStore(
      kv.get(), {.cluster = config.GetString("cluster")});

  if (dry_run) {
    std::vector<std::string> notes;
    auto plan = rangefs::mountd::MountManager::PlanOnce(store.get(), *mounter,
                                                        mo, &notes);
    if (!plan.ok()) return Die("plan", plan.status(), 5);
    for (const std::string& n : notes) printf("# skipped: %s\n", n.c_str());
    for (const auto& a : *plan) {
      if (a.kind == rangefs::mountd::ActionKind::kMount) {
        printf("mkdir -p %s\n%s\n", a.target.c_str(),
               mounter->MountCommand(a.source, a.target).c_str());
        if (mo.readahead_kb > 0) {
          printf(
              "echo %lld > /sys/class/bdi/$(mountpoint -d %s)/read_ahead_kb\n",
              static_cast<long long>(mo.readahead_kb), a.target.c_str());
        }
      } else {
        printf("%s\n", mounter->UnmountCommand(a.target).c_str());
      }
    }
    printf("# %zu action(s); dry run, nothing changed\n", plan->size());
    return 0;
  }

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto manager =
      rangefs::mountd::MountManager::Start(store.get(), mounter.get(), mo);
  if (!manager.ok()) return Die("start", manager.status(), 1);
  RANGEFS_LOG(INFO) << "rangefs-mountd: " << mounter->name() << " mounts of "
                    << eo->endpoints << " under " << mo.mount_root;
  if (once) {
    const absl::Time deadline = absl::Now() + mo.stat_timeout + mo.op_timeout;
    while ((*manager)->passes() < 2 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    (*manager)->Kick();
  } else {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    RANGEFS_LOG(INFO) << "signal " << sig << ": stopping (mounts stay)";
  }
  size_t hung = (*manager)->Shutdown(absl::Seconds(5));
  if (hung > 0) {
    // Threads stuck in the kernel on a hung mount cannot be joined; the
    // process exit reclaims them.
    RANGEFS_LOG(WARNING) << hung << " worker(s) stuck on hung mounts; exiting";
    fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}
