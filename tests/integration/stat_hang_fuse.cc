// stat_hang_fuse: a tiny FUSE filesystem that stands in for a hung NFS
// server. It serves a root directory with a file, "hello", and an empty
// directory, "dir", until it gets SIGUSR1; from then on every getattr
// blocks until SIGUSR2 (a server that comes back) or until the process is
// killed (which aborts the FUSE connection and fails the blocked calls
// with ENOTCONN). Attributes and
// names are never cached, so every stat and every path lookup below the
// root (a lookup is a getattr here) reaches it and hangs.
// (client_lib/testing/blocking_fuse.c is another fault layer: its reads
// block while a control file exists.)
//
//   stat_hang_fuse MOUNTPOINT       (runs in the foreground; prints "ready")
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

volatile sig_atomic_t g_blocking = 0;
constexpr char kHello[] = "hello from stat_hang_fuse\n";

void OnUsr1(int) { g_blocking = 1; }
void OnUsr2(int) { g_blocking = 0; }

void* Init(struct fuse_conn_info*, struct fuse_config* cfg) {
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  printf("ready\n");
  fflush(stdout);
  return nullptr;
}

int GetAttr(const char* path, struct stat* st, struct fuse_file_info*) {
  // A hung server. A signal wakes only one thread's pause(), so each
  // blocked call looks at the flag every 10 ms instead.
  while (g_blocking) usleep(10000);
  memset(st, 0, sizeof(*st));
  if (strcmp(path, "/") == 0 || strcmp(path, "/dir") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (strcmp(path, "/hello") == 0) {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = sizeof(kHello) - 1;
    return 0;
  }
  return -ENOENT;
}

int ReadDir(const char* path, void* buf, fuse_fill_dir_t fill, off_t,
            struct fuse_file_info*, enum fuse_readdir_flags) {
  const bool root = strcmp(path, "/") == 0;
  if (!root && strcmp(path, "/dir") != 0) return -ENOENT;
  fill(buf, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  if (root) {
    fill(buf, "hello", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
    fill(buf, "dir", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  }
  return 0;
}

int Open(const char* path, struct fuse_file_info* fi) {
  if (strcmp(path, "/hello") != 0) return -ENOENT;
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EACCES;
  return 0;
}

int Read(const char* path, char* buf, size_t size, off_t off,
         struct fuse_file_info*) {
  if (strcmp(path, "/hello") != 0) return -ENOENT;
  const size_t len = sizeof(kHello) - 1;
  if (static_cast<size_t>(off) >= len) return 0;
  size_t n = len - static_cast<size_t>(off);
  if (n > size) n = size;
  memcpy(buf, kHello + off, n);
  return static_cast<int>(n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]);
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnUsr1;
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_handler = OnUsr2;
  sigaction(SIGUSR2, &sa, nullptr);
  struct fuse_operations ops;
  memset(&ops, 0, sizeof(ops));
  ops.init = Init;
  ops.getattr = GetAttr;
  ops.readdir = ReadDir;
  ops.open = Open;
  ops.read = Read;
  char* fargv[] = {argv[0], const_cast<char*>("-f"), argv[1], nullptr};
  return fuse_main(3, fargv, &ops, nullptr);
}
