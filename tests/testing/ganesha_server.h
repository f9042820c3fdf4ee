// File: ganesha_server.h
//
// A real NFS server for integration tests: Debian's nfs-ganesha 4.3
// (`ganesha.nfsd -F`, VFS FSAL) serving one directory read-only on
// 127.0.0.1:PORT, from the config template the deployment uses
// (deploy/node/ganesha.conf.in). One per storage node.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto nfs, GaneshaServer::Start(
//       {.export_dir = node_dir, .version = "3"}));
//   nfs->url();                 // "nfs://127.0.0.1:P/dir?mountport=M": for
//                               // the live record (rangefs-node
//                               // --nfs_export) and ns::ParseNfsUrl
//   nfs->LibnfsUrl("obj/a");    // "nfs://127.0.0.1/dir/obj/a?version=3&
//                               // nfsport=P&mountport=M": for libnfs tools
//   NfsCat(nfs->LibnfsUrl("obj/a"), absl::Seconds(10));   // the bytes
//   nfs->Pause();  nfs->Resume();  nfs->Kill();  nfs->Restart();
//
// Version "4" or "4.1" serves NFSv4.0 and v4.1 (Debian's libnfs 4.0 speaks
// v4.0 only) and needs no rpcbind. Version "3" serves v3 and v4 and needs an
// rpcbind to register with. The launcher deploy/local/ganesha_private.sh
// (the one cluster.sh uses) runs every server as PID 1 of a PID namespace
// of its own with a private /run and, for v3, a private rpcbind (in a
// network namespace of its own, reached through /run/rpcbind.sock): the
// host's rpcbind is neither needed nor touched, tests can run many servers
// at once, the rpcbind dies with its server, and clients skip rpcbind with
// the mountport the URL carries.
//
// Readiness is a real NFS request: WaitReady polls `nfs-ls` (libnfs-utils)
// on the export, each try killed after 2 s (a stopped server hangs libnfs
// forever), until it lists the directory. The server dies with the test
// process (PDEATHSIG through its launcher) and the destructor SIGKILLs it
// and removes its config and state directory, so a failing test leaves
// nothing behind. Needs root (namespaces). Thread-compatible.
#ifndef RANGEFS_TESTS_TESTING_GANESHA_SERVER_H_
#define RANGEFS_TESTS_TESTING_GANESHA_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace testing {

struct GaneshaServerOptions {
  // Required: an absolute path; served read-only, exported under this path.
  std::string export_dir;
  // "4" / "4.1": NFSv4.0 + v4.1; "3": v3 (+ v4) with a private rpcbind.
  std::string version = "4.1";
  // NFSv4 lease in seconds (ganesha's default is 60): a client silent for
  // longer loses its state (the v4 lease-expiry tests set it low).
  int lease_lifetime_s = 60;
  // Root_Squash as in production (deploy/node/export.sh); off by default
  // because test directories are 0700 and the test runs as root.
  bool root_squash = false;
  absl::Duration start_timeout = absl::Seconds(20);
  std::string ganesha_binary = "/usr/bin/ganesha.nfsd";
  // Template path relative to the workspace (RunfilePath); the target needs
  // data = ["//deploy/node:ganesha.conf.in"] (the harness library has it).
  std::string config_template = "deploy/node/ganesha.conf.in";
  // The launcher (private namespaces, rpcbind for v3), also used by
  // deploy/local/cluster.sh up --nfs; relative to the workspace.
  std::string launcher = "deploy/local/ganesha_private.sh";
};

class GaneshaServer {
 public:
  // Picks ports, writes the config, starts the server and waits until it
  // answers (WaitReady). INVALID_ARGUMENT for bad options; the start error
  // with the server's log tail otherwise (retried on new ports 3 times).
  static absl::StatusOr<std::unique_ptr<GaneshaServer>> Start(
      const GaneshaServerOptions& options);
  GaneshaServer(const GaneshaServer&) = delete;
  GaneshaServer& operator=(const GaneshaServer&) = delete;
  // SIGKILLs the server (its rpcbind dies with it) and removes its files.
  ~GaneshaServer();

  int port() const { return port_; }
  // The v3 MOUNT port (configured in every version; used by v3 only).
  int mount_port() const { return mount_port_; }
  const std::string& version() const { return options_.version; }
  const std::string& export_dir() const { return options_.export_dir; }
  // "nfs://127.0.0.1:P/<export_dir>" (+ "?mountport=M" for v3): the form
  // of v1::NfsExport::url (namespace/nfs_export.h).
  std::string url() const;
  // libnfs's URL of `path` under the export (empty: the export itself),
  // with version, nfsport and (v3) mountport, for nfs-cat / nfs-ls /
  // nfs_parse_url_*.
  std::string LibnfsUrl(absl::string_view path = "") const;
  // ganesha.nfsd's pid (as the test sees it); 0 when not running.
  pid_t pid() const { return server_pid_; }
  bool running();

  // Polls nfs-ls on the export until it answers. DEADLINE_EXCEEDED after
  // `timeout`; FAILED_PRECONDITION at once when the server has exited.
  absl::Status WaitReady(absl::Duration timeout);
  // SIGTERM, waits for the exit (ganesha shuts down cleanly); SIGKILL if
  // it still runs after `timeout`. OK when already stopped.
  absl::Status Stop(absl::Duration timeout = absl::Seconds(10));
  // SIGKILL, reaped. OK when already stopped.
  absl::Status Kill();
  // SIGSTOP; returns once every thread of the server is stopped
  // (DEADLINE_EXCEEDED after 5 s). Resume sends SIGCONT.
  absl::Status Pause();
  absl::Status Resume();
  // Stops the server if it runs (SIGKILL), then starts it again on the
  // same ports with the same config and waits until it answers.
  absl::Status Restart();

  // The server's log (ganesha's -L file and the launcher's output).
  std::string LogTail(size_t max_bytes = 4096) const;

 private:
  explicit GaneshaServer(GaneshaServerOptions options)
      : options_(std::move(options)) {}
  absl::Status WriteConfig() const;
  absl::Status Launch();

  GaneshaServerOptions options_;
  std::string dir_;  // config, log, pid file, recovery root
  int port_ = 0;
  int mount_port_ = 0;
  std::unique_ptr<Subprocess> launcher_;  // unshare; its child is ganesha
  pid_t server_pid_ = 0;
};

// Runs `nfs-cat libnfs_url` and returns what it printed. UNAVAILABLE with
// its stderr when it fails; DEADLINE_EXCEEDED (nfs-cat killed) after
// `timeout`: libnfs waits forever on a stopped server.
absl::StatusOr<std::string> NfsCat(const std::string& libnfs_url,
                                   absl::Duration timeout);

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_TESTING_GANESHA_SERVER_H_
