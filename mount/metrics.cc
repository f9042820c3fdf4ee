#include "mount/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {
namespace mount {

namespace {

void Counter(std::string& out, const char* name, const char* help, uint64_t v) {
  absl::StrAppend(&out, "# HELP rangefs_mount_", name, " ", help,
                  "\n# TYPE rangefs_mount_", name, " counter\nrangefs_mount_",
                  name, " ", v, "\n");
}

void Gauge(std::string& out, const char* name, const char* help, int64_t v) {
  absl::StrAppend(&out, "# HELP rangefs_mount_", name, " ", help,
                  "\n# TYPE rangefs_mount_", name, " gauge\nrangefs_mount_",
                  name, " ", v, "\n");
}

uint64_t Get(const std::atomic<uint64_t>& a) {
  return a.load(std::memory_order_relaxed);
}

}  // namespace

std::string MountPrometheusText(const MountCounters& c, const IndexGauges& g) {
  std::string out;
  Counter(out, "lookups_total", "FUSE lookups", Get(c.lookups));
  Counter(out, "getattrs_total", "FUSE getattrs", Get(c.getattrs));
  Counter(out, "readdirs_total", "FUSE readdir(plus) calls", Get(c.readdirs));
  Counter(out, "opens_total", "files opened", Get(c.opens));
  Counter(out, "reads_total", "FUSE reads", Get(c.reads));
  Counter(out, "read_bytes_total", "bytes returned by reads",
          Get(c.read_bytes));
  Counter(out, "reader_reads_total",
          "reads served by a handle's sequential prefetching Reader",
          Get(c.reader_reads));
  Counter(out, "getxattrs_total", "getxattr calls", Get(c.getxattrs));
  Counter(out, "errors_total", "calls answered with an errno", Get(c.errors));
  Counter(out, "read_errors_total", "reads answered with an errno",
          Get(c.read_errors));
  Counter(out, "estale_total", "reads refused: the file changed since open",
          Get(c.estale));
  Counter(out, "erofs_total", "write-ish calls refused (read-only)",
          Get(c.erofs));
  Counter(out, "invalidations_total", "kernel cache invalidations sent",
          Get(c.invalidations));
  Gauge(out, "open_files", "open file handles",
        c.open_files.load(std::memory_order_relaxed));
  Gauge(out, "files", "files in the mounted namespace",
        static_cast<int64_t>(g.files));
  Gauge(out, "bytes", "bytes in the mounted namespace",
        static_cast<int64_t>(g.total_bytes));
  Gauge(out, "revision", "etcd revision the tree reflects", g.revision);
  Gauge(out, "watch_connected", "1 while the namespace watch is connected",
        g.watch_connected ? 1 : 0);
  Gauge(out, "pinned", "1 for a --revision snapshot", g.pinned ? 1 : 0);
  return out;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("create ", tmp));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoStatus(e, absl::StrCat("write ", tmp));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(e, absl::StrCat("rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

MetricsServer::MetricsServer(int fd, int port,
                             std::function<std::string()> render)
    : fd_(fd), port_(port), render_(std::move(render)) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    int port, std::function<std::string()> render) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, "metrics socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus(e, absl::StrCat("metrics listen on 127.0.0.1:", port));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::unique_ptr<MetricsServer> s(
      new MetricsServer(fd, ntohs(addr.sin_port), std::move(render)));
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  return s;
}

MetricsServer::~MetricsServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  close(fd_);
}

void MetricsServer::Loop() {
  while (!stop_.load()) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    Serve(conn);
    close(conn);
  }
}

void MetricsServer::Serve(int conn) {
  timeval tv{2, 0};
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::string req;
  char buf[1024];
  while (req.find("\r\n\r\n") == std::string::npos &&
         req.find("\n\n") == std::string::npos && req.size() < 8192) {
    ssize_t n = read(conn, buf, sizeof(buf));
    if (n <= 0) break;
    req.append(buf, static_cast<size_t>(n));
  }
  std::string body, status = "200 OK";
  if (absl::StartsWith(req, "GET /metrics ") ||
      absl::StartsWith(req, "GET / ")) {
    body = render_();
  } else {
    status = "404 Not Found";
    body = "try GET /metrics\n";
  }
  const std::string out = absl::StrCat(
      "HTTP/1.0 ", status,
      "\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: ",
      body.size(), "\r\nConnection: close\r\n\r\n", body);
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = write(conn, out.data() + done, out.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

}  // namespace mount
}  // namespace rangefs
