#include "base/testing/http_get.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {
namespace testing {

absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout) {
  const std::string where = absl::StrCat("GET 127.0.0.1:", port, path);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, where);
  timeval tv{static_cast<time_t>(absl::ToInt64Seconds(timeout)), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string req = absl::StrCat("GET ", path, " HTTP/1.0\r\n\r\n");
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      send(fd, req.data(), req.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(req.size())) {
    const int e = errno;
    close(fd);
    return absl::UnavailableError(ErrnoStatus(e, where).message());
  }
  std::string resp;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return absl::UnavailableError(ErrnoStatus(e, where).message());
    }
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return resp;
}

}  // namespace testing
}  // namespace rangefs
