#include "mount/mount_check.h"

#include <errno.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace rangefs {
namespace mount {

namespace {

bool PidAlive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

int64_t ReadAheadKb(const std::string& sysfs_root, const std::string& dev) {
  std::ifstream in(
      absl::StrCat(sysfs_root, "/class/bdi/", dev, "/read_ahead_kb"));
  std::stringstream ss;
  ss << in.rdbuf();
  int64_t kb;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ss.str()), &kb)) return -1;
  return kb;
}

std::string Ago(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Seconds(1)));
}

MountFinding CheckOne(const mountd::MountInfo& m, const MountStatus* s,
                      const MountCheckOptions& o) {
  MountFinding f;
  f.check = "fuse " + m.mount_point;
  const std::string unmount =
      absl::StrCat("fusermount3 -u -z ", m.mount_point, " (or umount -l)");
  if (s == nullptr) {
    f.status = "WARN";
    f.finding = absl::StrCat(m.source, " mounted, but no status file in ",
                             o.status_dir, ": cannot tell if it is healthy");
    f.fix =
        "start rangefs-mount with the default --status_dir, or run "
        "doctor with --fuse-status=DIR";
    return f;
  }
  auto alive = o.pid_alive ? o.pid_alive : PidAlive;
  if (!alive(static_cast<pid_t>(s->pid))) {
    f.status = "FAIL";
    f.finding = absl::StrCat("rangefs-mount (pid ", s->pid,
                             ") is gone: every call on the mount fails "
                             "with ENOTCONN (transport endpoint not "
                             "connected)");
    f.fix = absl::StrCat(unmount,
                         ", then mount again (systemctl restart "
                         "the rangefs-mount unit)");
    return f;
  }
  const absl::Duration age = o.now - absl::FromUnixMillis(s->updated_unix_ms);
  const absl::Duration limit =
      std::max(absl::Seconds(10), 3 * absl::Milliseconds(s->interval_ms));
  if (age > limit) {
    f.status = "FAIL";
    f.finding = absl::StrCat("status not updated for ", Ago(age), " (pid ",
                             s->pid, " is stuck?)");
    f.fix = absl::StrCat("check its log; kill -TERM ", s->pid,
                         "; if that does not end it: ", unmount);
    return f;
  }
  std::vector<std::string> problems, fixes;
  if (s->revision == 0 && !s->watch_connected) {
    problems.push_back(absl::StrCat(
        "namespace watch disconnected: serving the tree as of revision ",
        s->index_revision));
    fixes.push_back("check etcd (the etcd rows); it reconnects by itself");
  }
  if (!o.cluster.empty() && s->cluster != o.cluster) {
    problems.push_back(
        absl::StrCat("cluster ", s->cluster, ", not ", o.cluster));
    fixes.push_back("intended? doctor checks --cluster=" + o.cluster);
  }
  const int64_t ra = ReadAheadKb(o.sysfs_root, m.dev());
  if (ra >= 0 && ra < o.min_readahead_kb) {
    problems.push_back(absl::StrCat("readahead ", ra, " KiB"));
    fixes.push_back(
        absl::StrCat("mount with -o readahead_kb=16384, or echo "
                     "16384 > /sys/class/bdi/",
                     m.dev(), "/read_ahead_kb"));
  }
  const std::string base = absl::StrCat(
      s->cluster, ":", s->dir,
      s->revision > 0 ? absl::StrCat(" at revision ", s->revision) : "", ", ",
      s->files, " files (revision ", s->index_revision, "), pid ", s->pid, ", ",
      s->reads, " reads, ", s->read_errors, " read errors, ", s->estale,
      " stale",
      ra >= 0 ? absl::StrCat(", readahead ", ra, " KiB") : std::string());
  if (problems.empty()) {
    f.status = "OK";
    f.finding = base;
  } else {
    f.status = "WARN";
    f.finding = absl::StrCat(base, ": ", absl::StrJoin(problems, "; "));
    f.fix = absl::StrJoin(fixes, "; ");
  }
  return f;
}

}  // namespace

std::vector<MountFinding> CheckRangefsMounts(
    const std::vector<mountd::MountInfo>& mounts,
    const std::vector<MountStatus>& statuses, const MountCheckOptions& o) {
  std::vector<MountFinding> out;
  std::set<std::string> mounted;
  for (const mountd::MountInfo& m : mounts) {
    if (m.fs_type != "fuse.rangefs") continue;
    mounted.insert(m.mount_point);
    const MountStatus* s = nullptr;
    for (const MountStatus& st : statuses) {
      if (st.mountpoint == m.mount_point) s = &st;
    }
    out.push_back(CheckOne(m, s, o));
  }
  for (const MountStatus& s : statuses) {
    if (mounted.count(s.mountpoint) != 0) continue;
    out.push_back(
        {"fuse " + s.mountpoint, "WARN",
         absl::StrCat("a status file (pid ", s.pid,
                      ") but nothing is "
                      "mounted there: the daemon died uncleanly"),
         absl::StrCat("remove ", StatusFilePath(o.status_dir, s.mountpoint),
                      " and remount")});
  }
  return out;
}

}  // namespace mount
}  // namespace rangefs
