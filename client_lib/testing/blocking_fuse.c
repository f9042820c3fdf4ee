// blocking_fuse: a tiny read-only passthrough FUSE file system for tests of
// the client's mount path. Serves <backing> at <mountpoint>; while the file
// <control> exists every read blocks (like a hung hard NFS mount) and
// resumes when it is removed. Kernel caching is off (direct_io), so every
// read reaches this process.
//
//   blocking_fuse <backing> <control> <mountpoint> -f [fuse options]
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char* g_backing;
static const char* g_control;

static void Full(const char* path, char* out) {
  snprintf(out, PATH_MAX, "%s%s", g_backing, path);
}

static void* Init(struct fuse_conn_info* conn, struct fuse_config* cfg) {
  (void)conn;
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
  (void)path;
  while (access(g_control, F_OK) == 0) usleep(5000);
  ssize_t n = pread((int)fi->fh, buf, size, off);
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
  g_backing = realpath(argv[1], NULL);
  g_control = argv[2];
  if (g_backing == NULL) {
    perror("realpath");
    return 2;
  }
  // fuse_main sees: prog mountpoint opts...
  argv[2] = argv[0];
  return fuse_main(argc - 2, argv + 2, &kOps, NULL);
}
