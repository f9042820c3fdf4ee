#include "admin/bulk_put.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"
#include "base/status_macros.h"
#include "ingest/agents.h"
#include "namespace/layout.h"

namespace rangefs {
namespace admin {
namespace {

// `p` without trailing slashes ("/" stays "/").
std::string StripSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// The last component of local path `p` ("data" for "/x/data/", the
// directory's own name for "." or "..").
absl::StatusOr<std::string> BaseName(const std::string& p) {
  std::string s = StripSlashes(p);
  std::string base = s.substr(s.rfind('/') + 1);
  if (base.empty() || base == "." || base == "..") {
    char real[PATH_MAX];
    if (realpath(s.c_str(), real) == nullptr) {
      return ErrnoStatus(errno, absl::StrCat("realpath ", p));
    }
    s = real;
    base = s.substr(s.rfind('/') + 1);
  }
  if (base.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(p, " has no base name to put under a directory"));
  }
  return base;
}

// Appends the regular files below local directory `dir` (namespace
// directory `ns_dir`) to `plan`, in name order.
absl::Status Walk(const std::string& dir, const std::string& ns_dir,
                  PutPlan& plan) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, absl::StrCat("opendir ", dir));
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  const int read_errno = errno;
  closedir(d);
  if (read_errno != 0) {
    return ErrnoStatus(read_errno, absl::StrCat("readdir ", dir));
  }
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string local = absl::StrCat(dir == "/" ? "" : dir, "/", n);
    const std::string path = absl::StrCat(ns_dir, "/", n);
    struct stat st;
    if (lstat(local.c_str(), &st) != 0) {
      plan.skipped.push_back(
          absl::StrCat(local, " (lstat: ", strerror(errno), ")"));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      RANGEFS_RETURN_IF_ERROR(Walk(local, path, plan));
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      if (stat(local.c_str(), &st) != 0) {
        plan.skipped.push_back(absl::StrCat(local, " (dangling link)"));
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        plan.skipped.push_back(absl::StrCat(local, " (link to a directory)"));
        continue;
      }
    }
    if (!S_ISREG(st.st_mode)) {
      plan.skipped.push_back(absl::StrCat(local, " (not a regular file)"));
      continue;
    }
    plan.items.push_back({local, path, static_cast<uint64_t>(st.st_size)});
    plan.bytes += static_cast<uint64_t>(st.st_size);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PutPlan> PlanPut(const std::string& local,
                                const std::string& dest) {
  if (dest.empty() || dest[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "destination \"", dest, "\" is not absolute (must start with /)"));
  }
  struct stat st;
  if (stat(local.c_str(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("local path ", local));
  }
  const bool into = absl::EndsWith(dest, "/");
  std::string target = StripSlashes(dest);
  if (target == "/") target.clear();
  if (into) {
    RANGEFS_ASSIGN_OR_RETURN(std::string base, BaseName(local));
    absl::StrAppend(&target, "/", base);
  }
  PutPlan plan;
  if (S_ISREG(st.st_mode)) {
    plan.items.push_back({local, target, static_cast<uint64_t>(st.st_size)});
    plan.bytes = static_cast<uint64_t>(st.st_size);
    return plan;
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local path ", local, " is neither a regular file nor a directory"));
  }
  plan.directory = true;
  plan.root = target.empty() ? "/" : target;
  RANGEFS_RETURN_IF_ERROR(Walk(StripSlashes(local), target, plan));
  return plan;
}

absl::StatusOr<std::optional<std::set<std::string>>> ListExisting(
    ns::NamespaceStore& store, const PutPlan& plan) {
  if (!plan.directory || !ns::ValidateDir(plan.root).ok()) {
    return std::nullopt;
  }
  std::set<std::string> existing;
  ns::ListFilesOptions o{
      .dir = plan.root, .page_size = 1000, .keys_only = true};
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult r, store.ListFiles(o));
    for (const ns::FileEntry& f : r.files) existing.insert(f.path);
    if (existing.size() > 2 * plan.items.size()) return std::nullopt;
    if (r.next_page_token.empty()) return existing;
    o.page_token = r.next_page_token;
    o.revision = r.revision;
  }
}

BulkPutResult PutAll(ingest::IngestSession& session, const PutPlan& plan,
                     int jobs, ProgressMeter& meter,
                     const std::set<std::string>* existing,
                     size_t max_failures) {
  const absl::Time start = absl::Now();
  const size_t n = plan.items.size();
  std::vector<absl::StatusOr<ingest::IngestResult>> results(
      n, absl::CancelledError("not started"));
  std::atomic<size_t> failures{0};
  ingest::ParallelFor(n, jobs, [&](size_t i) {
    if (failures.load() >= max_failures) return;
    const PutItem& item = plan.items[i];
    // Logical bytes of this file reported so far (the writer reports bytes
    // of all replicas).
    int64_t reported = 0;
    auto progress = [&](size_t written, size_t total) {
      if (total == 0) return;
      const int64_t logical = static_cast<int64_t>(
          static_cast<double>(written) / static_cast<double>(total) *
          static_cast<double>(item.size));
      meter.Add(0, logical - reported);
      reported = logical;
    };
    const bool absent = existing != nullptr && existing->count(item.path) == 0;
    results[i] = session.Put(item.local, item.path, progress, absent);
    if (results[i].ok()) {
      meter.Add(1, static_cast<int64_t>(results[i]->size) - reported);
    } else {
      meter.Add(0, -reported);
      failures.fetch_add(1);
    }
  });
  meter.Finish();
  BulkPutResult r;
  r.results.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (results[i].ok()) {
      ++r.files;
      r.bytes += results[i]->size;
      r.results[i] = *std::move(results[i]);
    } else if (absl::IsCancelled(results[i].status()) &&
               results[i].status().message() == "not started") {
      ++r.not_started;
    } else {
      r.failures.push_back({plan.items[i], results[i].status()});
    }
  }
  r.elapsed = absl::Now() - start;
  return r;
}

absl::StatusOr<std::string> SpoolToTempFile(int fd) {
  const char* tmpdir = getenv("TMPDIR");
  std::string name =
      absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp",
                   "/rangefs-put-stdin-XXXXXX");
  const int out = mkstemp(name.data());
  if (out < 0) return ErrnoStatus(errno, absl::StrCat("mkstemp ", name));
  std::vector<char> buf(1 << 20);
  absl::Status s;
  while (s.ok()) {
    const ssize_t got = read(fd, buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      s = ErrnoStatus(errno, "read stdin");
      break;
    }
    if (got == 0) break;
    for (ssize_t off = 0; off < got;) {
      const ssize_t w = write(out, buf.data() + off, got - off);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        s = ErrnoStatus(errno, absl::StrCat("write ", name));
        break;
      }
      off += w;
    }
  }
  close(out);
  if (!s.ok()) {
    unlink(name.c_str());
    return s;
  }
  return name;
}

}  // namespace admin
}  // namespace rangefs
