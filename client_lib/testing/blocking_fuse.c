// blocking_fuse: a tiny read-only passthrough FUSE file system for tests of
// the client's mount path. Serves <backing> at <mountpoint>; while the file
// <control> exists, reads block (like a hung hard NFS mount) and resume when
// it is removed. Kernel caching is off (direct_io), so every read reaches
// this process.
//
//   blocking_fuse <backing> <control> <mountpoint> [--max_background=N]
//                 -f [fuse options]
//
// --max_background=N: the kernel connection admits N asynchronous requests
// (readahead, async direct I/O) at once; the next one waits, in the thread
// that submits it, until one ends (the kernel's default is 12).
//
// <control> empty (or not a number): every read blocks. <control> holding a
// number N: N more reads of data pass (of files whose name does not start
// with '.': rangefs checksum sidecars are not counted), counted from when
// this process first sees that file (a new inode or mtime: write it
// elsewhere and rename it into place), then every read blocks (a mount that
// hangs in the middle of a scan).
//
// Like a hard NFS mount, a blocked read is killable and nothing else: a
// reader that gets SIGKILL (its process exits or is killed) has its read
// end with EINTR, while any other signal or an io_uring cancellation leaves
// it blocked. (The kernel waits for a FUSE request that reached this
// process even after SIGKILL; it sends FUSE_INTERRUPT, and the read returns
// EINTR once /proc shows SIGKILL pending for the reading thread.) A read
// whose reading thread is gone (an asynchronous io_uring read of a process
// that exited: no one waits for it, no interrupt comes) ends the same way,
// within 50 ms, so that it does not hold one of this process's threads;
// and so does one released (the control file changed) after its reader
// went: it is not served, and takes none of the reads a new count lets
// through.
//
// With BLOCKING_FUSE_DELAY_MS=N in the environment, every data read (not
// blocked) first sleeps N ms: a slow mount whose reads wait without using
// CPU (tests/python: threads reading in parallel).
//
// Each read that blocks logs "blocked read <path>" to stderr, each
// read that a kill ended "killed read <path>", so that tests can wait for
// them.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char* g_backing;
static const char* g_control;
static atomic_long g_served;  // data reads answered so far
static long g_delay_us;       // BLOCKING_FUSE_DELAY_MS, in microseconds
// The control file last seen holding a number, and g_served then.
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static ino_t g_ino;
static struct timespec g_mtime;
static long g_base;

static void Full(const char* path, char* out) {
  snprintf(out, PATH_MAX, "%s%s", g_backing, path);
}

// Whether reads block now: the control file exists and, if it holds a
// number, that many reads were served since it appeared.
static int Blocked(void) {
  int fd = open(g_control, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  char buf[32];
  ssize_t n = fstat(fd, &st) == 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
  close(fd);
  if (n <= 0) return 1;
  buf[n] = '\0';
  char* end = NULL;
  long after = strtol(buf, &end, 10);
  if (end == buf) return 1;
  const long served = atomic_load(&g_served);
  pthread_mutex_lock(&g_mu);
  if (st.st_ino != g_ino || st.st_mtim.tv_sec != g_mtime.tv_sec ||
      st.st_mtim.tv_nsec != g_mtime.tv_nsec) {
    g_ino = st.st_ino;
    g_mtime = st.st_mtim;
    g_base = served;
  }
  const long base = g_base;
  pthread_mutex_unlock(&g_mu);
  return served - base >= after;
}

// Whether thread `tid` has SIGKILL pending (it is being killed) or is gone.
static int Killed(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
  FILE* f = fopen(path, "re");
  if (f == NULL) return 1;
  char line[256];
  int killed = 0;
  const unsigned long long kill_bit = 1ULL << (SIGKILL - 1);
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long long mask = 0;
    if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
         sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
        (mask & kill_bit) != 0) {
      killed = 1;
    }
  }
  fclose(f);
  return killed;
}

static int g_max_background = 0;  // 0: the kernel's default

static void* Init(struct fuse_conn_info* conn, struct fuse_config* cfg) {
  if (g_max_background > 0) conn->max_background = g_max_background;
  cfg->direct_io = 1;
  cfg->kernel_cache = 0;
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  return NULL;
}

static int GetAttr(const char* path, struct stat* st,
                   struct fuse_file_info* fi) {
  (void)fi;
  char p[PATH_MAX];
  Full(path, p);
  return lstat(p, st) == 0 ? 0 : -errno;
}

static int ReadDir(const char* path, void* buf, fuse_fill_dir_t fill, off_t off,
                   struct fuse_file_info* fi, enum fuse_readdir_flags flags) {
  (void)off;
  (void)fi;
  (void)flags;
  char p[PATH_MAX];
  Full(path, p);
  DIR* d = opendir(p);
  if (d == NULL) return -errno;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) fill(buf, e->d_name, NULL, 0, 0);
  closedir(d);
  return 0;
}

static int Open(const char* path, struct fuse_file_info* fi) {
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EROFS;
  char p[PATH_MAX];
  Full(path, p);
  int fd = open(p, O_RDONLY);
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  fi->direct_io = 1;
  return 0;
}

static int Read(const char* path, char* buf, size_t size, off_t off,
                struct fuse_file_info* fi) {
  if (Blocked()) {
    fprintf(stderr, "blocked read %s\n", path);
    const pid_t reader = fuse_get_context()->pid;
    int round = 0;
    do {
      if ((fuse_interrupted() || round++ % 10 == 0) && Killed(reader)) {
        fprintf(stderr, "killed read %s\n", path);
        return -EINTR;
      }
      usleep(5000);
    } while (Blocked());
    // Released: serve it only if its reader is still there. The read of a
    // process that exited meanwhile (a test's previous run) must not
    // take one of the reads a new control file lets through.
    if (Killed(reader)) {
      fprintf(stderr, "killed read %s\n", path);
      return -EINTR;
    }
  }
  const char* base = strrchr(path, '/');
  if (g_delay_us > 0 && base[1] != '.') usleep((useconds_t)g_delay_us);
  ssize_t n = pread((int)fi->fh, buf, size, off);
  if (base[1] != '.') {
    atomic_fetch_add(&g_served, 1);
    fprintf(stderr, "served read %s\n", path);
  }
  return n < 0 ? -errno : (int)n;
}

static int Release(const char* path, struct fuse_file_info* fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static const struct fuse_operations kOps = {
    .getattr = GetAttr,
    .open = Open,
    .read = Read,
    .release = Release,
    .readdir = ReadDir,
    .init = Init,
};

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s <backing> <control> <mountpoint> [opts]\n",
            argv[0]);
    return 2;
  }
  setvbuf(stderr, NULL, _IOLBF, 0);
  g_backing = realpath(argv[1], NULL);
  g_control = argv[2];
  const char* delay = getenv("BLOCKING_FUSE_DELAY_MS");
  if (delay != NULL) g_delay_us = strtol(delay, NULL, 10) * 1000;
  if (g_backing == NULL) {
    perror("realpath");
    return 2;
  }
  // Our own options leave argv; fuse_main sees: prog mountpoint opts...
  int kept = 4;
  for (int i = 4; i < argc; ++i) {
    if (strncmp(argv[i], "--max_background=", 17) == 0) {
      g_max_background = atoi(argv[i] + 17);
      if (g_max_background <= 0 || g_max_background > 65535) {
        fprintf(stderr, "bad %s\n", argv[i]);
        return 2;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argv[2] = argv[0];
  return fuse_main(kept - 2, argv + 2, &kOps, NULL);
}
