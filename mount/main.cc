// rangefs-mount: the rangefs namespace as a read-only FUSE file system.
//
//   rangefs-mount --etcd=10.0.0.1:2379 --cluster=prod --dir=/crawl /mnt/crawl
//   umount /mnt/crawl            # or fusermount3 -u, or SIGTERM
//
// Without -f it forks: the parent exits 0 once the file system is mounted
// and serving (1 with the reason if it could not be), so `mount -t rangefs`
// and systemd (Type=forking) see the real outcome. Options: mount_options.h.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/metrics_server.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "client_lib/client.h"
#include "client_lib/embedding.h"
#include "mount/fuse_bridge.h"
#include "mount/metrics.h"
#include "mount/mount_fs.h"
#include "mount/mount_options.h"
#include "mount/mount_status.h"
#include "mount/namespace_index.h"
#include "mount/reporter.h"
#include "namespace/clusters.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd/etcd_settings.h"
#include "namespace/etcd_kv.h"
#include "namespace/layout_cache.h"

namespace rangefs {
namespace mount {
namespace {

// Blocks the stop signals in this (the only) thread, so every thread
// started from now on has them blocked; FuseMount::Run unblocks them on the
// loop's thread.
void BlockStopSignals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&s, sig);
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

// Forks; the parent waits for the child's verdict on a pipe and exits with
// it. Returns the child's end of the pipe.
int Daemonize() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    perror("rangefs-mount: pipe");
    exit(1);
  }
  const pid_t pid = fork();
  if (pid < 0) {
    perror("rangefs-mount: fork");
    exit(1);
  }
  if (pid > 0) {
    close(p[1]);
    std::string msg;
    char buf[512];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof(buf))) > 0 ||
           (n < 0 && errno == EINTR)) {
      if (n > 0) msg.append(buf, static_cast<size_t>(n));
    }
    if (msg == "OK") _exit(0);
    if (msg.empty()) {
      int status = 0;
      waitpid(pid, &status, 0);
      msg = absl::StrCat("the daemon exited before mounting (wait status ",
                         status, ")");
    }
    fprintf(stderr, "rangefs-mount: %s\n", msg.c_str());
    _exit(1);
  }
  close(p[0]);
  setsid();
  if (chdir("/") != 0) perror("rangefs-mount: chdir /");
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    close(null);
  }
  return p[1];
}

// Detaches stdio (to `log_file`, else /dev/null), then reports the outcome
// to the waiting parent (once): in this order, so that no line a thread
// logs reaches the terminal after the parent returned.
void SignalParent(int* fd, const std::string& msg,
                  const std::string& log_file) {
  if (*fd < 0) return;
  int out = log_file.empty()
                ? open("/dev/null", O_WRONLY)
                : open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out >= 0) {
    fflush(stdout);
    fflush(stderr);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    close(out);
  }
  ssize_t ignored = write(*fd, msg.data(), msg.size());
  (void)ignored;
  close(*fd);
  *fd = -1;
}

absl::Status Serve(const MountOptions& o, int* ready_fd) {
  RANGEFS_ASSIGN_OR_RETURN(
      etcd::EtcdClientOptions eo,
      etcd::MakeEtcdClientOptions({.endpoints = o.etcd_endpoints,
                                   .ca_file = o.etcd_ca,
                                   .cert_file = o.etcd_cert,
                                   .key_file = o.etcd_key,
                                   .username = o.etcd_user,
                                   .password_file = o.etcd_password_file,
                                   .call_timeout = o.etcd_timeout}));
  eo.max_attempts = 2;
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<etcd::EtcdClient> etcd,
                           etcd::EtcdClient::Open(eo));
  std::unique_ptr<ns::KvBackend> kv = ns::NewEtcdKv(etcd.get());
  // A wrong or missing cluster name is an error, not an empty tree.
  RANGEFS_ASSIGN_OR_RETURN(
      std::string empty,
      ns::EmptyClusterMessage(*kv, o.cluster, o.etcd_endpoints));
  if (!empty.empty()) return absl::NotFoundError(empty);

  ns::LayoutCacheOptions lo;
  lo.cluster = o.cluster;
  lo.max_staleness = o.max_staleness;
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<ns::LayoutCache> cache,
                           ns::LayoutCache::Open(kv.get(), lo));

  // Index changes reach the MountFs once it exists (and not after).
  absl::Mutex router_mu;
  MountFs* router_target = nullptr;
  NamespaceIndexOptions io;
  io.cluster = o.cluster;
  io.dir = o.dir;
  io.revision = o.revision;
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<NamespaceIndex> index,
                           NamespaceIndex::Open(
                               kv.get(), cache.get(), io,
                               [&](absl::Span<const IndexChange> changes) {
                                 absl::MutexLock l(&router_mu);
                                 if (router_target != nullptr) {
                                   router_target->OnIndexChanges(changes);
                                 }
                               },
                               /*keep_listed=*/o.preload));
  if (o.dir != "/" && index->stats().files == 0) {
    return absl::NotFoundError(absl::StrCat(
        "directory ", o.dir, " does not exist in cluster \"", o.cluster,
        "\" at ", o.etcd_endpoints, " (no file under it)"));
  }

  ClientOptions co;
  co.cluster = o.cluster;
  co.max_layout_staleness = o.max_staleness;
  co.mount_root = o.mount_root;
  co.data_path = o.data_path;
  co.agent_tls.ca_file = o.agent_ca;
  co.agent_tls.cert_file = o.agent_cert;
  co.agent_tls.key_file = o.agent_key;
  co.verify = o.verify;
  co.o_direct = o.o_direct;
  co.io_uring = o.io_uring;
  co.hedging = o.hedging;
  co.default_deadline = o.read_deadline;
  RANGEFS_ASSIGN_OR_RETURN(
      std::unique_ptr<Client> client,
      OpenClientSharingNamespace(co, kv.get(), cache.get()));

  MountCounters counters;
  MountFsOptions fo;
  fo.dir = o.dir;
  fo.revision = o.revision;
  fo.uid = o.uid >= 0 ? static_cast<uid_t>(o.uid) : getuid();
  fo.gid = o.gid >= 0 ? static_cast<gid_t>(o.gid) : getgid();
  fo.prefetch = o.prefetch;
  fo.splice = o.splice;
  fo.direct_io = o.direct_io;
  fo.read.deadline = o.read_deadline;
  fo.load_policies = [kv = kv.get(),
                      keys = ns::Keys(o.cluster)](int64_t revision) {
    return ns::LoadPolicies(*kv, keys, revision);
  };
  std::atomic<FuseMount*> notify_target{nullptr};
  auto fs = std::make_unique<MountFs>(client.get(), index.get(), cache.get(),
                                      &counters, fo,
                                      [&notify_target](std::vector<Notice> n) {
                                        if (FuseMount* m = notify_target.load())
                                          m->Notify(std::move(n));
                                      });

  FuseMountOptions fmo;
  fmo.attr_timeout = o.attr_timeout;
  fmo.entry_timeout = o.entry_timeout;
  fmo.max_threads = o.max_threads;
  fmo.max_idle_threads = o.max_idle_threads;
  fmo.max_background = o.max_background;
  fmo.readahead_kb = o.readahead_kb;
  fmo.direct_io = o.direct_io;
  fmo.splice = o.splice;
  fmo.fsname = absl::StrCat("rangefs:", o.cluster, ":", o.dir);
  if (o.revision > 0) absl::StrAppend(&fmo.fsname, "@", o.revision);
  fmo.fuse_options = o.fuse_options;
  RANGEFS_ASSIGN_OR_RETURN(
      std::unique_ptr<FuseMount> fm,
      FuseMount::Mount(fs.get(), &counters, o.mountpoint, fmo));
  notify_target.store(fm.get());
  {
    absl::MutexLock l(&router_mu);
    router_target = fs.get();
  }

  auto render = [&]() {
    NamespaceIndexStats s = index->stats();
    IndexGauges g{s.files, s.total_bytes, s.revision, s.watch_connected,
                  s.pinned};
    return MountPrometheusText(counters, g) + client->PrometheusText();
  };
  std::unique_ptr<MetricsServer> metrics;
  if (o.metrics_port > 0) {
    RANGEFS_ASSIGN_OR_RETURN(metrics,
                             MetricsServer::Start(o.metrics_port, render));
  }
  const int64_t started = absl::ToUnixMillis(absl::Now());
  ReporterOptions ro;
  if (!o.status_dir.empty()) {
    mkdir(o.status_dir.c_str(), 0755);
    ro.status_file = StatusFilePath(o.status_dir, o.mountpoint);
  }
  ro.metrics_file = o.metrics_file;
  ro.metrics_interval = o.metrics_interval;
  auto reporter = std::make_unique<Reporter>(
      ro,
      [&]() {
        NamespaceIndexStats s = index->stats();
        MountStatus m;
        m.mountpoint = o.mountpoint;
        m.pid = getpid();
        m.cluster = o.cluster;
        m.dir = o.dir;
        m.revision = o.revision;
        m.index_revision = s.revision;
        m.watch_connected = s.watch_connected;
        m.files = s.files;
        m.open_files = counters.open_files.load();
        m.reads = counters.reads.load();
        m.read_errors = counters.read_errors.load();
        m.estale = counters.estale.load();
        m.started_unix_ms = started;
        return m;
      },
      render);

  RANGEFS_LOG(INFO) << "rangefs-mount: serving " << o.cluster << ":" << o.dir
                    << (o.revision > 0
                            ? absl::StrCat(" at revision ", o.revision)
                            : std::string())
                    << " at " << o.mountpoint << " (" << index->stats().files
                    << " files, bdi " << fm->bdi() << ")";
  SignalParent(ready_fd, "OK", o.log_file);
  absl::Status run = fm->Run();
  RANGEFS_LOG(INFO) << "rangefs-mount: unmounting " << o.mountpoint;

  reporter.reset();
  metrics.reset();
  {
    absl::MutexLock l(&router_mu);
    router_target = nullptr;
  }
  notify_target.store(nullptr);
  fm.reset();  // unmounts; no request runs after this
  fs.reset();  // closes the handles the kernel still had
  client.reset();
  index.reset();
  cache.reset();
  kv.reset();
  etcd.reset();
  return run;
}

}  // namespace
}  // namespace mount
}  // namespace rangefs

int main(int argc, char** argv) {
  using namespace rangefs::mount;  // NOLINT: main only wires
  if (rangefs::WantsVersion(argc, argv)) {
    puts(rangefs::VersionLine("rangefs-mount").c_str());
    return 0;
  }
  // Debian's Abseil is a debug build: skip its per-lock deadlock detection
  // (as release builds do); it cost ~1% of the daemon's CPU on 1 MiB
  // spliced reads (GraphCycles::GetId), more on small ones.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::vector<std::string> args(argv, argv + argc);
  absl::StatusOr<MountOptions> o = ParseMountOptions(args);
  if (!o.ok()) {
    if (absl::IsFailedPrecondition(o.status())) {
      fputs(MountUsage(), stdout);
      return 0;
    }
    fprintf(stderr, "rangefs-mount: %s\n(try --help)\n",
            std::string(o.status().message()).c_str());
    return 2;
  }
  rangefs::LogLevel level;
  if (rangefs::ParseLogLevel(o->log_level, &level)) {
    rangefs::SetMinLogLevel(level);
  }
  char* real = realpath(o->mountpoint.c_str(), nullptr);
  struct stat st;
  if (real == nullptr || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "rangefs-mount: mountpoint %s: %s\n", o->mountpoint.c_str(),
            real == nullptr ? strerror(errno) : "not a directory");
    free(real);
    return 2;
  }
  o->mountpoint = real;
  free(real);

  BlockStopSignals();
  int ready_fd = -1;
  if (!o->foreground) ready_fd = Daemonize();
  absl::Status s = Serve(*o, &ready_fd);
  if (!s.ok()) {
    const std::string msg =
        absl::StrCat("mount ", o->mountpoint, ": ", s.ToString());
    RANGEFS_LOG(ERROR) << msg;
    if (ready_fd >= 0) {
      ssize_t ignored = write(ready_fd, msg.data(), msg.size());
      (void)ignored;
    }
    return 1;
  }
  return 0;
}
