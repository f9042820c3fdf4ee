#include "tests/testing/etcd_cluster.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <regex>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"
#include "base/status_macros.h"

namespace rangefs {
namespace testing {

namespace {

// Returns the string value of "field":"value" (or "field":number) in `json`.
std::string JsonField(const std::string& json, const std::string& field) {
  std::regex re("\"" + field + "\"\\s*:\\s*\"?([^\",}]*)\"?");
  std::smatch m;
  if (std::regex_search(json, m, re)) return m[1].str();
  return "";
}

}  // namespace

absl::StatusOr<std::string> HttpRequest(int port, const std::string& method,
                                        const std::string& path,
                                        const std::string& body,
                                        absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string where = absl::StrCat(method, " 127.0.0.1:", port, path);
  auto wait_for = [&](short events) -> absl::Status {
    while (true) {
      int ms =
          static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      if (ms <= 0) return absl::DeadlineExceededError(where);
      pollfd p{fd, events, 0};
      int r = poll(&p, 1, ms);
      if (r > 0) return absl::OkStatus();
      if (r < 0 && errno != EINTR) return ErrnoStatus(errno, where);
    }
  };
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) return ErrnoStatus(errno, where);
    RANGEFS_RETURN_IF_ERROR(wait_for(POLLOUT));
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return ErrnoStatus(err, where);
  }
  std::string req = absl::StrCat(method, " ", path,
                                 " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 "Connection: close\r\n"
                                 "Content-Type: application/json\r\n"
                                 "Content-Length: ",
                                 body.size(), "\r\n\r\n", body);
  size_t sent = 0;
  while (sent < req.size()) {
    RANGEFS_RETURN_IF_ERROR(wait_for(POLLOUT));
    ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return ErrnoStatus(errno, where);
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string resp;
  char buf[8192];
  while (true) {
    RANGEFS_RETURN_IF_ERROR(wait_for(POLLIN));
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return ErrnoStatus(errno, where);
    }
    resp.append(buf, static_cast<size_t>(n));
  }
  size_t hdr_end = resp.find("\r\n\r\n");
  if (hdr_end == std::string::npos) {
    return absl::UnavailableError(absl::StrCat(where, ": malformed response"));
  }
  if (!absl::StartsWith(resp, "HTTP/1.1 200")) {
    return absl::UnavailableError(
        absl::StrCat(where, ": ", resp.substr(0, resp.find("\r\n")), " ",
                     resp.substr(hdr_end + 4, 200)));
  }
  std::string payload = resp.substr(hdr_end + 4);
  if (absl::StrContains(resp.substr(0, hdr_end), "chunked")) {
    // De-chunk.
    std::string out;
    size_t pos = 0;
    while (pos < payload.size()) {
      size_t eol = payload.find("\r\n", pos);
      if (eol == std::string::npos) break;
      size_t len = std::stoul(payload.substr(pos, eol - pos), nullptr, 16);
      if (len == 0) break;
      out += payload.substr(eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    payload = out;
  }
  return payload;
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Start(
    const EtcdClusterOptions& options) {
  if (options.members < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "EtcdCluster: members must be >= 1, got ", options.members));
  }
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::unique_ptr<EtcdCluster> c(new EtcdCluster());
    c->options_ = options;
    RANGEFS_ASSIGN_OR_RETURN(c->dir_, MakeTempDir("etcd-"));
    c->members_.resize(options.members);
    for (int i = 0; i < options.members; ++i) {
      Member& m = c->members_[i];
      m.name = absl::StrCat("m", i);
      RANGEFS_ASSIGN_OR_RETURN(m.client_port, PickUnusedPort());
      RANGEFS_ASSIGN_OR_RETURN(m.peer_port, PickUnusedPort());
      if (!options.tls_dir.empty()) {
        RANGEFS_ASSIGN_OR_RETURN(m.metrics_port, PickUnusedPort());
      }
      m.data_dir = absl::StrCat(c->dir_, "/", m.name);
      m.log_path = absl::StrCat(c->dir_, "/", m.name, ".log");
    }
    last = absl::OkStatus();
    for (int i = 0; i < options.members && last.ok(); ++i) {
      last = c->StartMember(i, /*fresh=*/true);
    }
    for (int i = 0; i < options.members && last.ok(); ++i) {
      last = c->WaitHealthy(i, options.start_timeout);
    }
    if (last.ok()) return c;
  }
  return last;
}

EtcdCluster::~EtcdCluster() {
  for (Member& m : members_) m.process.reset();
  if (!dir_.empty()) RemoveTree(dir_);
}

std::string EtcdCluster::endpoint(int i) const {
  return absl::StrCat("127.0.0.1:", members_[i].client_port);
}

std::string EtcdCluster::endpoints() const {
  std::vector<std::string> eps;
  for (int i = 0; i < size(); ++i) eps.push_back(endpoint(i));
  return absl::StrJoin(eps, ",");
}

std::string EtcdCluster::InitialCluster() const {
  std::vector<std::string> parts;
  for (const Member& m : members_) {
    parts.push_back(absl::StrCat(m.name, tls() ? "=https" : "=http",
                                 "://127.0.0.1:", m.peer_port));
  }
  return absl::StrJoin(parts, ",");
}

absl::Status EtcdCluster::StartMember(int i, bool fresh) {
  Member& m = members_[i];
  const char* scheme = tls() ? "https" : "http";
  std::string client = absl::StrCat(scheme, "://127.0.0.1:", m.client_port);
  std::string peer = absl::StrCat(scheme, "://127.0.0.1:", m.peer_port);
  SubprocessOptions o;
  o.argv = {
      options_.etcd_binary, "--name=" + m.name, "--data-dir=" + m.data_dir,
      "--listen-client-urls=" + client, "--advertise-client-urls=" + client,
      "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
      "--initial-cluster=" + InitialCluster(),
      std::string("--initial-cluster-state=") + (fresh ? "new" : "existing"),
      "--initial-cluster-token=rangefs-test", "--logger=zap",
      "--log-level=warn",
      // A leader starved for 1.5 s (a loaded 2-core machine) keeps its
      // term: 3-member tests see elections only where they kill or pause.
      "--heartbeat-interval=100", "--election-timeout=1500"};
  if (tls()) {
    const std::string& d = options_.tls_dir;
    std::string cert = absl::StrCat(d, "/", m.name, ".crt");
    std::string key = absl::StrCat(d, "/", m.name, ".key");
    if (access(cert.c_str(), R_OK) != 0 || access(key.c_str(), R_OK) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("EtcdCluster: no TLS cert/key for member ", m.name,
                       " in ", d, " (run deploy/etcd/make-certs.sh)"));
    }
    std::vector<std::string> tls_flags = {
        "--cert-file=" + cert,
        "--key-file=" + key,
        "--trusted-ca-file=" + d + "/ca.crt",
        "--client-cert-auth",
        "--peer-cert-file=" + cert,
        "--peer-key-file=" + key,
        "--peer-trusted-ca-file=" + d + "/ca.crt",
        "--peer-client-cert-auth",
        absl::StrCat("--listen-metrics-urls=http://127.0.0.1:",
                     m.metrics_port)};
    o.argv.insert(o.argv.end(), tls_flags.begin(), tls_flags.end());
  }
  for (const std::string& f : options_.extra_flags) o.argv.push_back(f);
  o.log_path = m.log_path;
  // etcd reads ETCD_* variables too; keep the parent's out of it.
  o.env = {"ETCD_UNSUPPORTED_ARCH="};
  RANGEFS_ASSIGN_OR_RETURN(m.process, Subprocess::Start(o));
  return absl::OkStatus();
}

absl::Status EtcdCluster::WaitHealthy(int i, absl::Duration timeout) {
  Member& m = members_[i];
  if (m.process == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd member ", i, " is not running"));
  }
  int port = tls() ? m.metrics_port : m.client_port;
  return m.process->WaitUntil(
      [port] {
        auto body =
            HttpRequest(port, "GET", "/health", "", absl::Milliseconds(500));
        return body.ok() && absl::StrContains(*body, "\"health\":\"true\"");
      },
      timeout, absl::StrCat("etcd member ", i, " healthy"));
}

absl::Status EtcdCluster::KillMember(int i) {
  if (members_[i].process == nullptr) return absl::OkStatus();
  absl::Status s = members_[i].process->Kill();
  members_[i].process.reset();
  return s;
}

absl::Status EtcdCluster::RestartMember(int i) {
  RANGEFS_RETURN_IF_ERROR(KillMember(i));
  RANGEFS_RETURN_IF_ERROR(StartMember(i, /*fresh=*/false));
  return WaitHealthy(i, options_.start_timeout);
}

absl::Status EtcdCluster::RestartAll() {
  for (int i = 0; i < size(); ++i) {
    if (members_[i].process == nullptr) {
      RANGEFS_RETURN_IF_ERROR(StartMember(i, /*fresh=*/false));
    }
  }
  for (int i = 0; i < size(); ++i) {
    RANGEFS_RETURN_IF_ERROR(WaitHealthy(i, options_.start_timeout));
  }
  return absl::OkStatus();
}

absl::Status EtcdCluster::PauseMember(int i) {
  if (members_[i].process == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("member ", i, " down"));
  }
  RANGEFS_RETURN_IF_ERROR(members_[i].process->Signal(SIGSTOP));
  const absl::Time end = absl::Now() + absl::Seconds(5);
  while (!AllThreadsStopped(members_[i].process->pid())) {
    if (absl::Now() > end) {
      return absl::DeadlineExceededError(
          absl::StrCat("etcd member ", i, " not stopped 5 s after SIGSTOP"));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return absl::OkStatus();
}

absl::Status EtcdCluster::ResumeMember(int i) {
  if (members_[i].process == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("member ", i, " down"));
  }
  return members_[i].process->Signal(SIGCONT);
}

absl::StatusOr<int> EtcdCluster::LeaderIndex() {
  if (tls()) {
    return absl::FailedPreconditionError(
        "EtcdCluster::LeaderIndex needs a plaintext cluster");
  }
  absl::Status last = absl::UnavailableError("no etcd member is running");
  std::string leader;
  std::vector<std::string> ids(members_.size());
  for (int i = 0; i < size(); ++i) {
    if (members_[i].process == nullptr) continue;
    auto body = HttpRequest(members_[i].client_port, "POST",
                            "/v3/maintenance/status", "{}", absl::Seconds(2));
    if (!body.ok()) {
      last = body.status();
      continue;
    }
    ids[i] = JsonField(*body, "member_id");
    std::string l = JsonField(*body, "leader");
    if (!l.empty() && l != "0") leader = l;
  }
  if (leader.empty()) return last;
  for (int i = 0; i < size(); ++i) {
    if (ids[i] == leader) return i;
  }
  return absl::UnavailableError(
      absl::StrCat("leader ", leader, " is not a running member"));
}

absl::Status EtcdCluster::GatewayPut(int member, const std::string& key,
                                     const std::string& value) {
  if (tls()) {
    return absl::FailedPreconditionError(
        "EtcdCluster::GatewayPut needs a plaintext cluster");
  }
  std::string body =
      absl::StrCat("{\"key\":\"", absl::Base64Escape(key), "\",\"value\":\"",
                   absl::Base64Escape(value), "\"}");
  return HttpRequest(members_[member].client_port, "POST", "/v3/kv/put", body,
                     absl::Seconds(5))
      .status();
}

absl::StatusOr<std::string> EtcdCluster::GatewayGet(int member,
                                                    const std::string& key) {
  if (tls()) {
    return absl::FailedPreconditionError(
        "EtcdCluster::GatewayGet needs a plaintext cluster");
  }
  std::string body =
      absl::StrCat("{\"key\":\"", absl::Base64Escape(key), "\"}");
  RANGEFS_ASSIGN_OR_RETURN(std::string resp,
                           HttpRequest(members_[member].client_port, "POST",
                                       "/v3/kv/range", body, absl::Seconds(5)));
  std::string value64 = JsonField(resp, "value");
  if (!absl::StrContains(resp, "\"kvs\"")) {
    return absl::NotFoundError(absl::StrCat("etcd key ", key));
  }
  std::string value;
  if (!absl::Base64Unescape(value64, &value)) {
    return absl::InternalError(absl::StrCat("bad base64 in ", resp));
  }
  return value;
}

std::string EtcdCluster::LogTail(int i) const {
  if (members_[i].process == nullptr) return "(member not running)";
  return members_[i].process->LogTail();
}

}  // namespace testing
}  // namespace rangefs
