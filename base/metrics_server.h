// File: metrics_server.h
//
// A minimal HTTP/1.0 server for Prometheus scrapes, on 127.0.0.1 unless
// the caller names another address (metrics stay on the host unless an
// operator asks otherwise):
//
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> server,
//       MetricsServer::Start(9464, [&] { return MyPrometheusText(); }));
//
// GET /metrics (and GET /) answer `render()` as text/plain; version=0.0.4;
// anything else gets 404. One request at a time on one thread, each bounded
// by a 2 s I/O timeout, so a stuck scraper cannot pile up threads.
// Thread-safe; `render` runs on the server's thread. The destructor stops
// and joins it.
#ifndef RANGEFS_BASE_METRICS_SERVER_H_
#define RANGEFS_BASE_METRICS_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace rangefs {

class MetricsServer {
 public:
  // Listens on 127.0.0.1:`port` (0: a free port, see port()).
  // INVALID_ARGUMENT outside 0-65535; the errno status of
  // socket/bind/listen, naming the address, if it cannot.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      int port, std::function<std::string()> render);
  // Listens on IPv4 `address`:`port` instead (an operator's explicit
  // choice, e.g. 0.0.0.0); INVALID_ARGUMENT for anything but an IPv4
  // literal.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& address, int port,
      std::function<std::string()> render);
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  ~MetricsServer();
  int port() const { return port_; }

 private:
  MetricsServer(int fd, int port, std::function<std::string()> render);
  void Loop();
  void Serve(int conn);

  const int fd_;
  const int port_;
  const std::function<std::string()> render_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace rangefs

#endif  // RANGEFS_BASE_METRICS_SERVER_H_
