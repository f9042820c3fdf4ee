#include "tests/testing/ganesha_server.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"
#include "base/status_macros.h"

namespace rangefs {
namespace testing {
namespace {

constexpr char kHost[] = "127.0.0.1";

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, absl::StrCat("read ", path));
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return ErrnoStatus(errno, absl::StrCat("write ", path));
  return absl::OkStatus();
}

// The pid of `parent`'s only child (the launcher's fork), or 0.
pid_t ChildOf(pid_t parent) {
  std::ifstream in(
      absl::StrCat("/proc/", parent, "/task/", parent, "/children"));
  std::string first;
  in >> first;
  int pid = 0;
  return absl::SimpleAtoi(first, &pid) ? pid : 0;
}

// Runs argv (stdout into `out_path` when not empty) and waits up to
// `timeout`; the child is killed on timeout. Returns the wait status.
absl::StatusOr<int> RunBounded(const std::vector<std::string>& argv,
                               const std::string& log_path,
                               absl::Duration timeout) {
  RANGEFS_ASSIGN_OR_RETURN(
      std::unique_ptr<Subprocess> p,
      Subprocess::Start({.argv = argv, .log_path = log_path}));
  absl::StatusOr<int> status = p->Wait(timeout);
  if (!status.ok()) (void)p->Kill();
  return status;
}

bool IsBadPathChar(char c) {
  return static_cast<unsigned char>(c) < 0x21 || c == '"' || c == '\\' ||
         c == '?' || c == '#' || c == '%' || c == '@';
}

}  // namespace

absl::StatusOr<std::unique_ptr<GaneshaServer>> GaneshaServer::Start(
    const GaneshaServerOptions& options) {
  const std::string& dir = options.export_dir;
  if (dir.empty() || dir[0] != '/' || (dir.size() > 1 && dir.back() == '/')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GaneshaServer: export_dir \"", dir, "\" is not an absolute path"));
  }
  for (char c : dir) {
    if (IsBadPathChar(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat("GaneshaServer: export_dir \"", dir,
                       "\" has a space, control character or one of \"\\?#%@"));
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GaneshaServer: export_dir ", dir, " is not a directory"));
  }
  if (options.version != "3" && options.version != "4" &&
      options.version != "4.1") {
    return absl::InvalidArgumentError(absl::StrCat(
        "GaneshaServer: version \"", options.version, "\" is not 3, 4 or 4.1"));
  }
  if (options.lease_lifetime_s < 1 || options.lease_lifetime_s > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("GaneshaServer: lease_lifetime_s ",
                     options.lease_lifetime_s, " is not 1..3600"));
  }
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::unique_ptr<GaneshaServer> s(new GaneshaServer(options));
    RANGEFS_ASSIGN_OR_RETURN(s->dir_, MakeTempDir("ganesha-"));
    RANGEFS_ASSIGN_OR_RETURN(s->port_, PickUnusedPort());
    do {
      RANGEFS_ASSIGN_OR_RETURN(s->mount_port_, PickUnusedPort());
    } while (s->mount_port_ == s->port_);
    RANGEFS_RETURN_IF_ERROR(s->WriteConfig());
    last = s->Launch();
    if (last.ok()) last = s->WaitReady(options.start_timeout);
    if (last.ok()) return s;
  }
  return last;
}

GaneshaServer::~GaneshaServer() {
  (void)Kill();
  launcher_.reset();
  if (!dir_.empty()) RemoveTree(dir_);
}

absl::Status GaneshaServer::WriteConfig() const {
  RANGEFS_ASSIGN_OR_RETURN(std::string conf,
                           ReadFile(RunfilePath(options_.config_template)));
  const bool v3 = options_.version == "3";
  const std::string recovery = absl::StrCat(dir_, "/recovery");
  if (mkdir(recovery.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("mkdir ", recovery));
  }
  conf = absl::StrReplaceAll(
      conf,
      {{"@BIND_ADDR@", kHost},
       {"@NFS_PORT@", absl::StrCat(port_)},
       {"@MNT_PORT@", absl::StrCat(mount_port_)},
       {"@PROTOCOLS@", v3 ? "3, 4" : "4"},
       {"@LEASE_LIFETIME@", absl::StrCat(options_.lease_lifetime_s)},
       {"@RECOVERY_ROOT@", recovery},
       {"@EXPORT@", options_.export_dir},
       {"@CLIENTS@", kHost},
       {"@SQUASH@", options_.root_squash ? "Root_Squash" : "No_Root_Squash"}});
  if (conf.find('@') != std::string::npos) {
    return absl::InternalError(
        absl::StrCat("GaneshaServer: ", options_.config_template,
                     " has a placeholder the harness does not fill: ",
                     conf.substr(conf.find('@'), 40)));
  }
  return WriteFile(absl::StrCat(dir_, "/ganesha.conf"), conf);
}

absl::Status GaneshaServer::Launch() {
  SubprocessOptions o;
  o.argv = {"/bin/sh", RunfilePath(options_.launcher)};
  if (options_.version == "3") o.argv.push_back("--v3");
  o.argv.push_back(absl::StrCat(dir_, "/ganesha.conf"));
  o.argv.push_back(absl::StrCat(dir_, "/ganesha.log"));
  o.argv.push_back(options_.ganesha_binary);
  o.log_path = absl::StrCat(dir_, "/launcher.log");
  RANGEFS_ASSIGN_OR_RETURN(launcher_, Subprocess::Start(o));
  server_pid_ = 0;
  return launcher_->WaitUntil(
      [this] {
        server_pid_ = ChildOf(launcher_->pid());
        return server_pid_ != 0;
      },
      absl::Seconds(10), "ganesha launcher forked");
}

bool GaneshaServer::running() {
  return launcher_ != nullptr && launcher_->Running();
}

std::string GaneshaServer::url() const {
  return absl::StrCat(
      "nfs://", kHost, ":", port_, options_.export_dir,
      options_.version == "3" ? absl::StrCat("?mountport=", mount_port_) : "");
}

std::string GaneshaServer::LibnfsUrl(absl::string_view path) const {
  std::string full = options_.export_dir;
  absl::string_view rel = absl::StripPrefix(path, "/");
  if (!rel.empty()) {
    absl::StrAppend(&full, full == "/" ? "" : "/", rel);
  }
  // libnfs 4.0 takes "version=4" for v4.0 (it has no v4.1).
  const char* version = options_.version == "3" ? "3" : "4";
  return absl::StrCat("nfs://", kHost, full, "?version=", version,
                      "&nfsport=", port_, "&mountport=", mount_port_);
}

absl::Status GaneshaServer::WaitReady(absl::Duration timeout) {
  if (!running()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ganesha on port ", port_, " is not running: ", LogTail()));
  }
  const std::string probe_log = absl::StrCat(dir_, "/nfs-ls.log");
  return launcher_->WaitUntil(
      [&] {
        absl::StatusOr<int> st = RunBounded({"/usr/bin/nfs-ls", LibnfsUrl()},
                                            probe_log, absl::Seconds(2));
        return st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0;
      },
      timeout,
      absl::StrCat("ganesha on port ", port_, " answers nfs-ls ", LibnfsUrl()));
}

absl::Status GaneshaServer::Stop(absl::Duration timeout) {
  if (!running()) return Kill();
  ::kill(server_pid_, SIGCONT);
  ::kill(server_pid_, SIGTERM);
  if (launcher_->Wait(timeout).ok()) {
    server_pid_ = 0;
    return absl::OkStatus();
  }
  return Kill();
}

absl::Status GaneshaServer::Kill() {
  if (launcher_ == nullptr) return absl::OkStatus();
  if (server_pid_ != 0 && launcher_->Running()) ::kill(server_pid_, SIGKILL);
  // The launcher exits when its child does; SIGKILL it too if it does not.
  if (!launcher_->Wait(absl::Seconds(5)).ok()) {
    RANGEFS_RETURN_IF_ERROR(launcher_->Kill());
  }
  server_pid_ = 0;
  return absl::OkStatus();
}

absl::Status GaneshaServer::Pause() {
  if (!running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("ganesha on port ", port_, " is not running"));
  }
  if (::kill(server_pid_, SIGSTOP) != 0) {
    return ErrnoStatus(errno, absl::StrCat("SIGSTOP ganesha ", server_pid_));
  }
  const absl::Time end = absl::Now() + absl::Seconds(5);
  while (!AllThreadsStopped(server_pid_)) {
    if (absl::Now() > end) {
      return absl::DeadlineExceededError(absl::StrCat(
          "ganesha ", server_pid_, " not stopped 5 s after SIGSTOP"));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return absl::OkStatus();
}

absl::Status GaneshaServer::Resume() {
  if (!running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("ganesha on port ", port_, " is not running"));
  }
  if (::kill(server_pid_, SIGCONT) != 0) {
    return ErrnoStatus(errno, absl::StrCat("SIGCONT ganesha ", server_pid_));
  }
  return absl::OkStatus();
}

absl::Status GaneshaServer::Restart() {
  RANGEFS_RETURN_IF_ERROR(Kill());
  RANGEFS_RETURN_IF_ERROR(Launch());
  return WaitReady(options_.start_timeout);
}

std::string GaneshaServer::LogTail(size_t max_bytes) const {
  std::string out;
  for (const char* name : {"/launcher.log", "/ganesha.log"}) {
    absl::StatusOr<std::string> text = ReadFile(absl::StrCat(dir_, name));
    if (!text.ok()) continue;
    const size_t from = text->size() > max_bytes ? text->size() - max_bytes : 0;
    absl::StrAppend(&out, "--- ", name + 1, " ---\n", text->substr(from));
  }
  return out;
}

absl::StatusOr<std::string> NfsCat(const std::string& libnfs_url,
                                   absl::Duration timeout) {
  RANGEFS_ASSIGN_OR_RETURN(std::string dir, MakeTempDir("nfs-cat-"));
  struct Remover {
    std::string dir;
    ~Remover() { RemoveTree(dir); }
  } remover{dir};
  const std::string out = absl::StrCat(dir, "/out");
  const std::string err = absl::StrCat(dir, "/err");
  absl::StatusOr<int> st =
      RunBounded({"/bin/sh", "-c", "exec /usr/bin/nfs-cat \"$1\" >\"$2\"",
                  "nfs-cat", libnfs_url, out},
                 err, timeout);
  if (absl::IsDeadlineExceeded(st.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat("nfs-cat ", libnfs_url, " still running after ",
                     absl::FormatDuration(timeout), " (killed)"));
  }
  if (!st.ok()) return st.status();
  if (!WIFEXITED(*st) || WEXITSTATUS(*st) != 0) {
    absl::StatusOr<std::string> e = ReadFile(err);
    return absl::UnavailableError(absl::StrCat("nfs-cat ", libnfs_url,
                                               " failed (wait status ", *st,
                                               "): ", e.ok() ? *e : ""));
  }
  return ReadFile(out);
}

}  // namespace testing
}  // namespace rangefs
