// nfs_async_read: the benchmark's baseline for the `nfs` data path, a plain
// libnfs reader on the asynchronous API (one context, one thread, poll +
// nfs_service), nothing of rangefs.
//
//   nfs_async_read URL PATH... [--depth=D] [--io=BYTES] [--duration=SECONDS]
//                  [--random=SECONDS [--batch]]
//
// URL: the export with libnfs's options ("nfs://127.0.0.1/exp?version=4&
// nfsport=P"); PATHs: files beneath it. Sequential (default): each file
// read whole in --io sized reads, --depth of them in flight; with
// --duration=S, the files again and again until S seconds have passed
// (then the reads in flight end). --random=S: 4 KiB reads at uniformly
// random aligned offsets of random files for S seconds, --depth in flight
// at all times; with --batch, in batches of --depth: the next batch starts
// when the whole last one has ended (as a ReadV of --depth ranges does).
// Files are opened one at a time (libnfs 4.0 sends concurrent NFSv4.0
// OPENs with clashing sequence ids). Prints "bytes=N seconds=S reads=R".
// clang-format off
#include <sys/time.h>  // before libnfs.h, which uses struct timeval
// clang-format on
#include <fcntl.h>
#include <nfsc/libnfs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct nfs_context* nfs;
static struct nfsfh** fhs;
static uint64_t* sizes;
static int nfiles, depth = 16, inflight, failed, mounted;
static uint64_t io = 1 << 20, bytes, reads;
static double random_s, duration_s, t_end;
static int batch;
static int cur_file;
static uint64_t cur_off;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void Die(const char* what) {
  fprintf(stderr, "nfs_async_read: %s: %s\n", what, nfs_get_error(nfs));
  exit(1);
}

static void Issue(void);

static void ReadCb(int err, struct nfs_context* n, void* data, void* priv) {
  (void)n;
  (void)data;
  (void)priv;
  inflight--;
  if (err < 0) {
    fprintf(stderr, "nfs_async_read: read: %s\n", (char*)data);
    failed = 1;
    return;
  }
  bytes += (uint64_t)err;
  reads++;
  Issue();
}

// Starts reads until `depth` are in flight or there is nothing left.
static void Issue(void) {
  if (batch && inflight > 0) return;  // the batch is not over yet
  while (inflight < depth && !failed) {
    int f;
    uint64_t off, len;
    if (random_s > 0) {
      if (Now() >= t_end) return;
      f = rand() % nfiles;
      off = ((uint64_t)rand() % (sizes[f] / 4096)) * 4096;
      len = 4096;
    } else {
      if (duration_s > 0 && Now() >= t_end) return;
      while (cur_file < nfiles && cur_off >= sizes[cur_file]) {
        cur_file++;
        cur_off = 0;
        if (cur_file == nfiles && duration_s > 0 && Now() < t_end) {
          cur_file = 0;  // --duration: once more
        }
      }
      if (cur_file >= nfiles) return;
      f = cur_file;
      off = cur_off;
      len = sizes[f] - off < io ? sizes[f] - off : io;
      cur_off += len;
    }
    if (nfs_pread_async(nfs, fhs[f], off, len, ReadCb, NULL) < 0) Die("pread");
    inflight++;
  }
}

static void Loop(int (*done)(void)) {
  while (!done() && !failed) {
    struct pollfd p = {nfs_get_fd(nfs), (short)nfs_which_events(nfs), 0};
    if (poll(&p, 1, 100) < 0) Die("poll");
    if (nfs_service(nfs, p.revents) < 0) Die("nfs_service");
    if (random_s > 0 && inflight < depth) Issue();
  }
}

static void MountCb(int err, struct nfs_context* n, void* d, void* p) {
  (void)n;
  (void)p;
  if (err) {
    fprintf(stderr, "nfs_async_read: mount: %s\n", (char*)d);
    exit(1);
  }
  mounted = 1;
}
static int Mounted(void) { return mounted; }

static int opened;
static const char** paths;
static void OpenCb(int err, struct nfs_context* n, void* d, void* p);
static void StatCb(int err, struct nfs_context* n, void* d, void* p) {
  (void)n;
  if (err) {
    fprintf(stderr, "nfs_async_read: stat: %s\n", (char*)d);
    exit(1);
  }
  sizes[(intptr_t)p] = ((struct nfs_stat_64*)d)->nfs_size;
  opened++;
  if (opened < nfiles &&  // the next file, once this one is open
      nfs_open_async(nfs, paths[opened], O_RDONLY, OpenCb,
                     (void*)(intptr_t)opened) < 0) {
    Die("open");
  }
}
static void OpenCb(int err, struct nfs_context* n, void* d, void* p) {
  (void)n;
  if (err) {
    fprintf(stderr, "nfs_async_read: open: %s\n", (char*)d);
    exit(1);
  }
  fhs[(intptr_t)p] = d;
  if (nfs_fstat64_async(nfs, d, StatCb, p) < 0) Die("fstat");
}
static int AllOpen(void) { return opened == nfiles; }
static int Drained(void) {
  if (inflight > 0) return 0;
  if (random_s > 0) return Now() >= t_end;
  return cur_file >= nfiles || (duration_s > 0 && Now() >= t_end);
}

int main(int argc, char** argv) {
  const char* url = NULL;
  static const char* args[4096];
  paths = args;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--depth=", 8) == 0) {
      depth = atoi(argv[i] + 8);
    } else if (strncmp(argv[i], "--io=", 5) == 0) {
      io = strtoull(argv[i] + 5, NULL, 10);
    } else if (strncmp(argv[i], "--random=", 9) == 0) {
      random_s = atof(argv[i] + 9);
    } else if (strncmp(argv[i], "--duration=", 11) == 0) {
      duration_s = atof(argv[i] + 11);
    } else if (strcmp(argv[i], "--batch") == 0) {
      batch = 1;
    } else if (url == NULL) {
      url = argv[i];
    } else if (nfiles < 4096) {
      args[nfiles++] = argv[i];
    }
  }
  if (url == NULL || nfiles == 0 || depth < 1 || io < 1) {
    fprintf(stderr,
            "usage: nfs_async_read URL PATH... [--depth=D] [--io=B] "
            "[--duration=S] [--random=S [--batch]]\n");
    return 2;
  }
  nfs = nfs_init_context();
  struct nfs_url* u = nfs_parse_url_dir(nfs, url);
  if (u == NULL) Die("url");
  if (nfs_mount_async(nfs, u->server, u->path, MountCb, NULL) < 0) Die("mount");
  Loop(Mounted);
  fhs = calloc(nfiles, sizeof(*fhs));
  sizes = calloc(nfiles, sizeof(*sizes));
  if (nfs_open_async(nfs, paths[0], O_RDONLY, OpenCb, (void*)(intptr_t)0) < 0)
    Die("open");
  Loop(AllOpen);
  const double t0 = Now();
  t_end = t0 + (random_s > 0 ? random_s : duration_s);
  Issue();
  Loop(Drained);
  const double t = Now() - t0;
  if (failed) return 1;
  printf("bytes=%llu seconds=%.6f reads=%llu\n", (unsigned long long)bytes, t,
         (unsigned long long)reads);
  nfs_destroy_context(nfs);
  nfs_destroy_url(u);
  return 0;
}
