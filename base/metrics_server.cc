#include "base/metrics_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {

MetricsServer::MetricsServer(int fd, int port,
                             std::function<std::string()> render)
    : fd_(fd), port_(port), render_(std::move(render)) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    int port, std::function<std::string()> render) {
  return Start("127.0.0.1", port, std::move(render));
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, int port, std::function<std::string()> render) {
  in_addr ip{};
  if (inet_pton(AF_INET, address.c_str(), &ip) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address '", absl::CEscape(address),
        "' is not an IPv4 address (such as 127.0.0.1 or 0.0.0.0)"));
  }
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", port, " outside 0-65535"));
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, "metrics socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr = ip;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus(e,
                       absl::StrCat("metrics listen on ", address, ":", port));
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

}  // namespace rangefs
