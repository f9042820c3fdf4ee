#include "admin/file_get.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin/progress_meter.h"
#include "base/errno_status.h"
#include "base/status_macros.h"
#include "client_lib/internal/client_hooks.h"
#include "ingest/agents.h"
#include "namespace/layout.h"
#include "namespace/store.h"

namespace rangefs {
namespace admin {
namespace {

constexpr size_t kFailuresListed = 20;

struct GetItem {
  std::string path;   // namespace path
  std::string local;  // destination
  uint64_t size = 0;
};

std::string StripSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return absl::StrCat(dir, dir.back() == '/' ? "" : "/", name);
}

bool IsLocalDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A namespace name below the copied directory, used as a local relative
// path: every component must be a plain name (the record is from etcd:
// untrusted).
absl::Status CheckRelative(const std::string& path, const std::string& rel) {
  for (absl::string_view c : absl::StrSplit(rel, '/')) {
    if (c.empty() || c == "." || c == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "namespace path ", path, " cannot be copied to a local name"));
    }
  }
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty() || IsLocalDir(dir)) return absl::OkStatus();
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    RANGEFS_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash)));
  }
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("mkdir ", dir));
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, const char* p, size_t n, const std::string& to) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return ErrnoStatus(errno, absl::StrCat("write ", to));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

// Copies all of `f` to `fd` through a prefetching Reader (windows read in
// parallel across nodes, verified by the client); `on_bytes` sees each
// chunk's size.
absl::Status Stream(File& f, int fd, const std::string& to,
                    const std::function<void(size_t)>& on_bytes) {
  ReaderOptions ro;
  ro.initial_readahead = 4 << 20;
  ro.max_readahead = 16 << 20;
  std::unique_ptr<Reader> reader = f.NewReader(ro);
  uint64_t done = 0;
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(absl::Span<const char> chunk, reader->Next());
    if (chunk.empty()) break;
    RANGEFS_RETURN_IF_ERROR(WriteAll(fd, chunk.data(), chunk.size(), to));
    done += chunk.size();
    if (on_bytes) on_bytes(chunk.size());
  }
  if (done != f.size()) {
    return absl::DataLossError(absl::StrCat("read ", done, " bytes of ",
                                            f.path(), ", expected ", f.size()));
  }
  return absl::OkStatus();
}

mode_t FileMode() {
  static const mode_t mode = [] {
    const mode_t mask = umask(0);
    umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

// Writes item.path to a temp file beside item.local, then renames it
// into place (without replacing an existing file unless `overwrite`).
absl::Status GetOne(Client& client, const GetItem& item, bool overwrite,
                    const std::function<void(size_t)>& on_bytes) {
  const size_t slash = item.local.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : item.local.substr(0, slash + 1);
  const std::string base =
      slash == std::string::npos ? item.local : item.local.substr(slash + 1);
  RANGEFS_RETURN_IF_ERROR(MakeDirs(StripSlashes(dir)));
  struct stat st;
  if (!overwrite && lstat(item.local.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(absl::StrCat(
        "local file ", item.local, " exists (use --overwrite to replace it)"));
  }
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<File> f, client.OpenFile(item.path));
  std::string tmp = Join(dir, absl::StrCat(".", base, ".rangefs-get-XXXXXX"));
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("mkstemp ", tmp));
  absl::Status s = Stream(*f, fd, tmp, on_bytes);
  if (s.ok() && fchmod(fd, FileMode()) != 0) {
    s = ErrnoStatus(errno, absl::StrCat("chmod ", tmp));
  }
  if (close(fd) != 0 && s.ok()) {
    s = ErrnoStatus(errno, absl::StrCat("close ", tmp));
  }
  if (s.ok()) {
    int rc = overwrite ? rename(tmp.c_str(), item.local.c_str())
                       : renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD,
                                   item.local.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && !overwrite && errno == EINVAL) {
      // No RENAME_NOREPLACE on this file system: link does not replace.
      rc = link(tmp.c_str(), item.local.c_str());
    }
    if (rc != 0) {
      s = errno == EEXIST
              ? absl::AlreadyExistsError(
                    absl::StrCat("local file ", item.local,
                                 " exists (use --overwrite to replace it)"))
              : ErrnoStatus(errno,
                            absl::StrCat("rename ", tmp, " to ", item.local));
    }
  }
  unlink(tmp.c_str());  // after a rename: ENOENT, harmless
  return s;
}

// The files `file get PATH LOCAL` copies (names: file_get.h).
absl::StatusOr<std::vector<GetItem>> PlanGet(Client& client, const Context& ctx,
                                             const std::string& arg,
                                             const std::string& local,
                                             bool* directory) {
  const std::string path = StripSlashes(arg);
  RANGEFS_RETURN_IF_ERROR(ns::ValidateDir(path));
  const std::string base = path.substr(path.rfind('/') + 1);
  const bool into = absl::EndsWith(local, "/");
  *directory = false;
  if (path != "/") {
    absl::StatusOr<FileInfo> st = client.Stat(path);
    if (st.ok()) {
      const std::string target =
          into || IsLocalDir(local) ? Join(local, base) : local;
      return std::vector<GetItem>{{path, target, st->size}};
    }
    if (!absl::IsNotFound(st.status())) return st.status();
  }
  absl::StatusOr<std::vector<FileInfo>> listed = client.List(path);
  if (!listed.ok() && !absl::IsNotFound(listed.status())) {
    return listed.status();
  }
  if (!listed.ok() || listed->empty()) {
    return absl::NotFoundError(absl::StrCat("no file or directory ", path,
                                            " in cluster ", ctx.cluster));
  }
  *directory = true;
  const std::string root =
      into && path != "/" ? Join(local, base) : StripSlashes(local);
  const std::string prefix = path == "/" ? "/" : path + "/";
  std::vector<GetItem> items;
  for (const FileInfo& info : *listed) {
    if (!absl::StartsWith(info.path, prefix)) continue;
    const std::string rel = info.path.substr(prefix.size());
    RANGEFS_RETURN_IF_ERROR(CheckRelative(info.path, rel));
    items.push_back({info.path, Join(root, rel), info.size});
  }
  return items;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> OpenCopyOutClient(Context& ctx) {
  ClientOptions o;
  o.cluster = ctx.cluster;
  o.verify = VerifyMode::kFull;
  o.agent_tls.ca_file = ctx.agent_tls.ca_file;
  o.agent_tls.cert_file = ctx.agent_tls.cert_file;
  o.agent_tls.key_file = ctx.agent_tls.key_file;
  o.agent_tls.server_name_override = ctx.agent_tls.server_name_override;
  client_internal::ClientHooks hooks;
  hooks.kv = ctx.store->kv();
  return client_internal::OpenClient(o, hooks);
}

absl::StatusOr<Table> RunFileGet(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"overwrite", "jobs", "recursive"}));
  if (a.positional().size() != 2) {
    return absl::InvalidArgumentError(
        "usage: file get PATH|DIR LOCAL|LOCALDIR/ [--overwrite] [--jobs=8]");
  }
  const std::string path = a.positional()[0];
  const std::string local = a.positional()[1];
  RANGEFS_ASSIGN_OR_RETURN(int64_t jobs, a.GetInt("jobs", kDefaultGetJobs));
  if (jobs < 1 || jobs > 1024) {
    return absl::InvalidArgumentError("--jobs must be in [1, 1024]");
  }
  const bool overwrite = a.GetBool("overwrite");
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                           OpenCopyOutClient(ctx));
  bool directory = false;
  RANGEFS_ASSIGN_OR_RETURN(std::vector<GetItem> items,
                           PlanGet(*client, ctx, path, local, &directory));
  uint64_t total = 0;
  for (const GetItem& i : items) total += i.size;
  ProgressMeter meter("get", items.size(), total,
                      ctx.progress ? TerminalProgressSink() : nullptr);
  const absl::Time start = absl::Now();
  std::vector<absl::Status> status(items.size());
  ingest::ParallelFor(items.size(), static_cast<int>(jobs), [&](size_t i) {
    int64_t got = 0;
    status[i] = GetOne(*client, items[i], overwrite, [&](size_t n) {
      got += static_cast<int64_t>(n);
      meter.Add(0, static_cast<int64_t>(n));
    });
    meter.Add(status[i].ok() ? 1 : 0, status[i].ok() ? 0 : -got);
  });
  meter.Finish();
  const double secs =
      std::max(1e-3, absl::ToDoubleSeconds(absl::Now() - start));
  size_t ok = 0;
  uint64_t bytes = 0;
  std::vector<size_t> failed;
  for (size_t i = 0; i < items.size(); ++i) {
    if (status[i].ok()) {
      ++ok;
      bytes += items[i].size;
    } else {
      failed.push_back(i);
    }
  }
  if (!directory) {
    if (!failed.empty()) return status[0];
    Table t;
    t.message = absl::StrCat("got ", items[0].path, " as ", items[0].local,
                             ": ", bytes, " bytes, verified");
    return t;
  }
  const std::string summary = absl::StrCat(
      "got ", path, " as ", local, ": ", ok, " file(s), ", HumanBytes(bytes),
      " in ", absl::StrFormat("%.1f", secs), " s (",
      absl::StrFormat("%.0f", static_cast<double>(ok) / secs), " files/s, ",
      HumanBytes(static_cast<uint64_t>(bytes / secs)), "/s), verified");
  if (failed.empty()) {
    Table t;
    t.message = summary;
    return t;
  }
  std::string msg =
      absl::StrCat(failed.size(), " of ", items.size(),
                   " file(s) failed (the others were copied: ", summary, "):");
  for (size_t k = 0; k < failed.size() && k < kFailuresListed; ++k) {
    const GetItem& it = items[failed[k]];
    absl::StrAppend(&msg, "\n  ", it.path, " -> ", it.local, ": ",
                    status[failed[k]].message());
  }
  if (failed.size() > kFailuresListed) {
    absl::StrAppend(&msg, "\n  ... and ", failed.size() - kFailuresListed,
                    " more");
  }
  return absl::Status(status[failed[0]].code(), msg);
}

absl::StatusOr<Table> CatFiles(Context& ctx, Args& a, int out_fd) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  if (a.positional().empty()) {
    return absl::InvalidArgumentError("usage: file cat PATH...");
  }
  for (const std::string& p : a.positional()) {
    RANGEFS_RETURN_IF_ERROR(ns::ValidatePath(p));
  }
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                           OpenCopyOutClient(ctx));
  for (const std::string& p : a.positional()) {
    RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<File> f, client->OpenFile(p));
    RANGEFS_RETURN_IF_ERROR(Stream(*f, out_fd, "stdout", nullptr));
  }
  Table t;
  t.raw_output = true;
  return t;
}

absl::StatusOr<Table> RunFileCat(Context& ctx, Args& a) {
  return CatFiles(ctx, a, STDOUT_FILENO);
}

}  // namespace admin
}  // namespace rangefs
