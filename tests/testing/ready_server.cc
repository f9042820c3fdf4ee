// A tiny TCP server for the process-harness test: listens on 127.0.0.1 at
// --port (argv[1]), prints "ready on PORT", answers each connection with
// "hello\n", and exits 0 on SIGTERM or 3 on SIGUSR1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {
volatile sig_atomic_t g_exit_code = -1;
void OnTerm(int) { g_exit_code = 0; }
void OnUsr1(int) { g_exit_code = 3; }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ready_server PORT\n");
    return 2;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = OnUsr1;
  sigaction(SIGUSR1, &sa, nullptr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(atoi(argv[1])));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0) {
    perror("bind/listen");
    return 1;
  }
  printf("ready on %s\n", argv[1]);
  fflush(stdout);
  while (g_exit_code < 0) {
    int c = accept(fd, nullptr, nullptr);  // EINTR on a signal.
    if (c >= 0) {
      ssize_t n = write(c, "hello\n", 6);
      (void)n;
      close(c);
    }
  }
  return g_exit_code;
}
