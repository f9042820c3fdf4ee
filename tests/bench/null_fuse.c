// null_fuse: the cost of the kernel's FUSE round trip alone, as a ceiling
// for rangefs-mount in tests/bench (part M). A libfuse3 low-level file
// system with the same loop settings as rangefs-mount (multi-threaded,
// max_read 1 MiB, max_background, readahead) whose files answer every read
// with zeros at once: no lookup work, no data source.
//
//   null_fuse MOUNTPOINT FILES SIZE_MIB [-o max_background=256,...]
//
// Shows files f1..fFILES of SIZE_MIB MiB each; runs in the foreground until
// unmounted or SIGTERM.
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int g_files;
static off_t g_size;
static char g_zeros[1 << 20];

static int FileIndex(const char* name) {
  if (name[0] != 'f') return 0;
  int i = atoi(name + 1);
  return i >= 1 && i <= g_files ? i : 0;
}

static void Attr(fuse_ino_t ino, struct stat* st) {
  memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = g_size;
  }
}

static void Init(void* data, struct fuse_conn_info* conn) {
  (void)data;
  conn->max_read = 1 << 20;
  conn->max_readahead = 16 << 20;
  conn->max_background = 256;
  conn->congestion_threshold = 192;
}

static void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  int i = parent == FUSE_ROOT_ID ? FileIndex(name) : 0;
  if (i == 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct fuse_entry_param e;
  memset(&e, 0, sizeof(e));
  e.ino = (fuse_ino_t)(i + 1);
  e.attr_timeout = 3600;
  e.entry_timeout = 3600;
  Attr(e.ino, &e.attr);
  fuse_reply_entry(req, &e);
}

static void Getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  (void)fi;
  struct stat st;
  Attr(ino, &st);
  fuse_reply_attr(req, &st, 3600);
}

static void Open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  (void)ino;
  fi->keep_cache = 0;
  fuse_reply_open(req, fi);
}

static void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 struct fuse_file_info* fi) {
  (void)ino;
  (void)fi;
  if (off >= g_size) size = 0;
  if (off + (off_t)size > g_size) size = (size_t)(g_size - off);
  if (size > sizeof(g_zeros)) size = sizeof(g_zeros);
  fuse_reply_buf(req, g_zeros, size);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: null_fuse MOUNTPOINT FILES SIZE_MIB [-o ...]\n");
    return 2;
  }
  const char* mountpoint = argv[1];
  g_files = atoi(argv[2]);
  g_size = (off_t)atoll(argv[3]) << 20;
  struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
  fuse_opt_add_arg(&args, argv[0]);
  fuse_opt_add_arg(&args, "-o");
  fuse_opt_add_arg(&args, "ro,subtype=null,max_read=1048576");
  for (int i = 4; i < argc; ++i) fuse_opt_add_arg(&args, argv[i]);
  struct fuse_lowlevel_ops ops;
  memset(&ops, 0, sizeof(ops));
  ops.init = Init;
  ops.lookup = Lookup;
  ops.getattr = Getattr;
  ops.open = Open;
  ops.read = Read;
  struct fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
  fuse_opt_free_args(&args);
  if (se == NULL) return 1;
  if (fuse_set_signal_handlers(se) != 0 ||
      fuse_session_mount(se, mountpoint) != 0) {
    fuse_session_destroy(se);
    return 1;
  }
  struct fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, 64);
  fuse_loop_cfg_set_idle_threads(cfg, 64);
  int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return rc < 0 ? 1 : 0;
}
