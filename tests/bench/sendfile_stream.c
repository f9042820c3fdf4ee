// sendfile_stream: the agent path's ceiling, a plain TCP stream of object
// files sent with sendfile(2): no framing, no checksums, no RPC.
//
//   sendfile_stream serve|serve-pread ADDR PORT FILE...
//     Listens on ADDR:PORT; connection k gets FILE[k % n] and is sent that
//     file from offset 0, again and again, until the peer closes
//     (TCP_NODELAY, as the agent's data port): with sendfile(2), or with
//     serve-pread as pread of 1 MiB into one buffer + write (the data
//     port's copy path; on this VM's loopback it can beat sendfile).
//   sendfile_stream fetch ADDR PORT STREAMS WARMUP_S SECONDS
//     STREAMS connections read into a 1 MiB buffer each (recv MSG_WAITALL,
//     as the client's data-port reader does: one wake-up per MiB) for
//     WARMUP_S + SECONDS; prints one JSON object: the bytes received in the
//     last SECONDS, the exact window, MB/s and this process's CPU s per GB.
// Any failure (connect, a short file, a closed stream) exits 1 with a
// message, so a failed ceiling is reported as failed, never as 0.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int parse_addr(const char* host, const char* port,
                      struct sockaddr_in* a) {
  memset(a, 0, sizeof(*a));
  a->sin_family = AF_INET;
  a->sin_port = htons((uint16_t)atoi(port));
  return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

struct conn {
  int sock;
  int use_pread;
  const char* file;
};

// pread + write of [0, size) once; returns 0 when the peer went away.
static int send_by_pread(int sock, int fd, off_t size, char* buf) {
  for (off_t pos = 0; pos < size;) {
    size_t want =
        (size_t)(size - pos) < (1u << 20) ? (size_t)(size - pos) : (1u << 20);
    ssize_t n = pread(fd, buf, want, pos);
    if (n <= 0) return 0;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(sock, buf + done, (size_t)(n - done));
      if (w <= 0) return 0;
      done += w;
    }
    pos += n;
  }
  return 1;
}

// Sends the file over and over until the peer goes away.
static void* serve_one(void* arg) {
  struct conn* c = arg;
  int one = 1;
  setsockopt(c->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int fd = open(c->file, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    fprintf(stderr, "sendfile_stream: %s: %s\n", c->file, strerror(errno));
  } else if (c->use_pread) {
    char* buf = malloc(1 << 20);
    while (send_by_pread(c->sock, fd, st.st_size, buf)) {
    }
    free(buf);
  } else {
    for (int live = 1; live;) {
      off_t pos = 0;
      while (pos < st.st_size) {
        ssize_t n = sendfile(c->sock, fd, &pos, (size_t)(st.st_size - pos));
        if (n <= 0) {
          live = 0;
          break;
        }
      }
    }
  }
  if (fd >= 0) close(fd);
  close(c->sock);
  free(c);
  return NULL;
}

static int serve(int argc, char** argv) {
  struct sockaddr_in a;
  if (argc < 5 || parse_addr(argv[2], argv[3], &a) != 0) return 2;
  signal(SIGPIPE, SIG_IGN);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(ls, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(ls, 64) != 0) {
    fprintf(stderr, "sendfile_stream: listen %s:%s: %s\n", argv[2], argv[3],
            strerror(errno));
    return 1;
  }
  for (unsigned k = 0;; ++k) {
    int s = accept(ls, NULL, NULL);
    if (s < 0) continue;
    struct conn* c = malloc(sizeof(*c));
    c->sock = s;
    c->use_pread = strcmp(argv[1], "serve-pread") == 0;
    c->file = argv[4 + k % (unsigned)(argc - 4)];
    pthread_t t;
    if (pthread_create(&t, NULL, serve_one, c) != 0) {
      close(s);
      free(c);
      continue;
    }
    pthread_detach(t);
  }
}

static struct sockaddr_in g_addr;
static int64_t g_measure_ns, g_end_ns;
static atomic_uint_fast64_t g_counted;
static atomic_int g_failed;

static void* fetch_one(void* arg) {
  (void)arg;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, (struct sockaddr*)&g_addr, sizeof(g_addr)) != 0) {
    fprintf(stderr, "sendfile_stream: connect: %s\n", strerror(errno));
    atomic_store(&g_failed, 1);
    close(s);
    return NULL;
  }
  char* buf = malloc(1 << 20);
  uint64_t counted = 0;
  for (;;) {
    ssize_t n = recv(s, buf, 1 << 20, MSG_WAITALL);
    int64_t now = mono_ns();
    if (n <= 0) {
      fprintf(stderr, "sendfile_stream: stream closed early\n");
      atomic_store(&g_failed, 1);
      break;
    }
    if (now >= g_end_ns) break;
    if (now >= g_measure_ns) counted += (uint64_t)n;
  }
  atomic_fetch_add(&g_counted, counted);
  free(buf);
  close(s);
  return NULL;
}

static int fetch(int argc, char** argv) {
  if (argc != 7 || parse_addr(argv[2], argv[3], &g_addr) != 0) return 2;
  int streams = atoi(argv[4]);
  double warmup = atof(argv[5]), seconds = atof(argv[6]);
  if (streams < 1 || streams > 1024 || seconds <= 0 || warmup < 0) return 2;
  int64_t start = mono_ns();
  g_measure_ns = start + (int64_t)(warmup * 1e9);
  g_end_ns = g_measure_ns + (int64_t)(seconds * 1e9);
  pthread_t* t = calloc((size_t)streams, sizeof(*t));
  for (int i = 0; i < streams; ++i) pthread_create(&t[i], NULL, fetch_one, 0);
  // The CPU of the measured window only (the warm-up's is subtracted).
  struct timespec w = {(time_t)warmup, (long)((warmup - (time_t)warmup) * 1e9)};
  nanosleep(&w, NULL);
  double cpu0 = cpu_s();
  for (int i = 0; i < streams; ++i) pthread_join(t[i], NULL);
  double cpu = cpu_s() - cpu0;
  free(t);
  if (atomic_load(&g_failed)) return 1;
  uint64_t b = atomic_load(&g_counted);
  printf(
      "{\"streams\": %d, \"seconds\": %.3f, \"bytes\": %llu, \"mbps\": %.1f, "
      "\"cpu_s_per_gb\": %.3f}\n",
      streams, seconds, (unsigned long long)b, b / 1e6 / seconds,
      b ? cpu / (b / 1e9) : 0.0);
  return 0;
}

int main(int argc, char** argv) {
  int rc = 2;
  if (argc > 1 &&
      (strcmp(argv[1], "serve") == 0 || strcmp(argv[1], "serve-pread") == 0)) {
    rc = serve(argc, argv);
  }
  if (argc > 1 && strcmp(argv[1], "fetch") == 0) rc = fetch(argc, argv);
  if (rc == 2) {
    fprintf(stderr,
            "usage: sendfile_stream serve|serve-pread ADDR PORT FILE...\n"
            "       sendfile_stream fetch ADDR PORT STREAMS WARMUP_S "
            "SECONDS\n");
  }
  return rc;
}
