#include "client_lib/mountd/mount_manager.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "client_lib/mountd/mountinfo.h"

namespace rangefs {
namespace mountd {

namespace {

std::string StripSlash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// Mounts directly under `root` whose name could be a node id.
std::vector<CurrentMount> MountsUnder(const std::vector<MountInfo>& mounts,
                                      const std::string& root) {
  std::set<std::string> seen;
  std::vector<CurrentMount> out;
  std::string prefix = root + "/";
  for (const MountInfo& m : mounts) {
    if (!absl::StartsWith(m.mount_point, prefix)) continue;
    std::string name = m.mount_point.substr(prefix.size());
    if (!IsSafeNodeId(name) || !seen.insert(name).second) continue;
    out.push_back({name, m.mount_point, ""});
  }
  return out;
}

absl::Status MakeDirs(const std::string& path) {
  std::string cur;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      cur = path.substr(0, i);
      if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus(errno, absl::StrCat("mkdir ", cur));
      }
    }
  }
  return absl::OkStatus();
}

// Writes read_ahead_kb of the filesystem mounted at `target`.
absl::StatusOr<std::string> SetReadahead(const std::string& target,
                                         const std::string& sysfs_root,
                                         int64_t kb) {
  struct stat st;
  if (stat(target.c_str(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("stat ", target));
  }
  std::string path = absl::StrCat(sysfs_root, "/class/bdi/", major(st.st_dev),
                                  ":", minor(st.st_dev), "/read_ahead_kb");
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  std::string text = absl::StrCat(kb, "\n");
  ssize_t n = write(fd, text.data(), text.size());
  int err = n == static_cast<ssize_t>(text.size()) ? 0 : errno;
  close(fd);
  if (err != 0) return ErrnoStatus(err, absl::StrCat("write ", path));
  return absl::StrCat(kb);
}

}  // namespace

absl::string_view MountManager::CallName(JobKind kind) {
  switch (kind) {
    case JobKind::kMount:
      return "mount";
    case JobKind::kUnmount:
      return "umount";
    case JobKind::kProbe:
      return "stat";
  }
  return "call";
}

MountManager::MountManager(ns::NamespaceStore* store, Mounter* mounter,
                           MountManagerOptions options)
    : store_(store), mounter_(mounter), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<MountManager>> MountManager::Start(
    ns::NamespaceStore* store, Mounter* mounter,
    const MountManagerOptions& options) {
  if (store == nullptr || mounter == nullptr) {
    return absl::InvalidArgumentError("MountManager: null store or mounter");
  }
  MountManagerOptions o = options;
  o.mount_root = StripSlash(o.mount_root);
  if (o.mount_root.empty() || o.mount_root[0] != '/' || o.mount_root == "/") {
    return absl::InvalidArgumentError(
        absl::StrCat("mount_root must be an absolute directory, got \"",
                     o.mount_root, "\""));
  }
  if (o.stat_timeout <= absl::ZeroDuration() ||
      o.op_timeout <= absl::ZeroDuration() ||
      o.reconcile_interval <= absl::ZeroDuration() || o.readahead_kb < 0) {
    return absl::InvalidArgumentError(
        "MountManager: timeouts and interval must be > 0, readahead >= 0");
  }
  if (o.status_file.empty()) o.status_file = o.mount_root + "/.rangefs-mounts";
  RANGEFS_RETURN_IF_ERROR(MakeDirs(o.mount_root));
  std::unique_ptr<MountManager> m(new MountManager(store, mounter, o));
  {
    absl::MutexLock l(&m->mu_);
    m->kicked_ = true;
    m->status_.mounter = mounter->name();
  }
  m->loop_ = std::thread([p = m.get()] { p->Loop(); });
  return m;
}

absl::StatusOr<std::vector<Action>> MountManager::PlanOnce(
    ns::NamespaceStore* store, const Mounter& mounter,
    const MountManagerOptions& options, std::vector<std::string>* notes) {
  std::string root = StripSlash(options.mount_root);
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes,
                           store->ListNodes());
  RANGEFS_ASSIGN_OR_RETURN(std::vector<MountInfo> mi,
                           ReadMountInfo(options.mountinfo_path));
  std::vector<v1::NodeRecord> records;
  for (const ns::NodeEntry& n : nodes) {
    if (n.invalid.empty()) {
      records.push_back(n.record);
    } else if (notes != nullptr) {
      notes->push_back(absl::StrCat(n.invalid, " (not mounted)"));
    }
  }
  auto desired = DesiredMounts(
      records, root,
      [&](const v1::NodeRecord& r) { return mounter.SourceFor(r); }, notes);
  return Plan(desired, MountsUnder(mi, root));
}

MountManager::~MountManager() {
  Shutdown(absl::InfiniteDuration());
  std::vector<std::shared_ptr<Job>> all;
  {
    absl::MutexLock l(&mu_);
    for (auto& [t, j] : ops_) all.push_back(j);
    for (auto& [t, j] : probes_) all.push_back(j);
  }
  for (auto& j : all) {
    if (j->thread.joinable()) j->thread.join();
  }
}

size_t MountManager::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (loop_.joinable()) loop_.join();
  watch_.reset();
  absl::MutexLock l(&mu_);
  auto all_done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto* jobs : {&ops_, &probes_}) {
      for (auto& [t, j] : *jobs) {
        if (!j->done.load()) return false;
      }
    }
    return true;
  };
  // Workers Kick() (under mu_) when they finish, which re-evaluates this.
  mu_.AwaitWithTimeout(absl::Condition(&all_done), grace);
  size_t running = 0;
  for (auto* jobs : {&ops_, &probes_}) {
    for (auto& [t, j] : *jobs) {
      if (!j->done.load()) ++running;
    }
  }
  return running;
}

void MountManager::Kick() {
  absl::MutexLock l(&mu_);
  kicked_ = true;
}

MountStatusFile MountManager::Snapshot() const {
  absl::MutexLock l(&mu_);
  return status_;
}

size_t MountManager::running_workers() const {
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (auto* jobs : {&ops_, &probes_}) {
    for (auto& [t, j] : *jobs) {
      if (!j->done.load()) ++n;
    }
  }
  return n;
}

void MountManager::Loop() {
  const absl::Duration tick =
      std::min(options_.reconcile_interval, options_.stat_timeout / 2);
  while (true) {
    {
      absl::MutexLock l(&mu_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return kicked_ || stop_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&woken), tick);
      if (stop_) return;
      kicked_ = false;
    }
    Pass();
  }
}

void MountManager::RestartWatch() {
  watch_.reset();
  const std::string prefix = store_->keys().NodePrefix();
  auto w = store_->kv()->Watch(prefix, ns::PrefixRangeEnd(prefix), 0,
                               [this](const ns::KvWatchUpdate& u) {
                                 absl::MutexLock l(&mu_);
                                 nodes_dirty_ = true;
                                 kicked_ = true;
                                 if (u.compacted) watch_broken_ = true;
                               });
  if (!w.ok()) {
    RANGEFS_LOG(WARNING) << "watch " << prefix << ": " << w.status()
                         << " (polling every " << options_.reconcile_interval
                         << ")";
    return;
  }
  watch_ = *std::move(w);
  absl::MutexLock l(&mu_);
  nodes_dirty_ = true;  // changes before the watch started
  watch_broken_ = false;
}

absl::Duration MountManager::Deadline(JobKind kind) const {
  return kind == JobKind::kProbe ? options_.stat_timeout : options_.op_timeout;
}

void MountManager::SetHealth(Entry& e, MountHealth h,
                             const std::string& error) {
  if (e.health != h) {
    e.since = absl::Now();
    if (h == MountHealth::kHealthy) {
      RANGEFS_LOG(INFO) << "mount " << e.target << " is healthy";
    } else if (h != MountHealth::kMounting &&
               e.hung_since == absl::InfinitePast()) {  // MarkHung logs
      RANGEFS_LOG(WARNING) << "mount " << e.target << " is "
                           << MountHealthName(h) << ": " << error;
    }
  }
  e.health = h;
  e.error = error;
}

void MountManager::RunJob(Job* job) {
  switch (job->kind) {
    case JobKind::kMount: {
      job->result = MakeDirs(job->target);
      if (job->result.ok())
        job->result = mounter_->Mount(job->source, job->target);
      if (job->result.ok() && options_.readahead_kb > 0) {
        auto ra = SetReadahead(job->target, options_.sysfs_root,
                               options_.readahead_kb);
        job->readahead = ra.ok() ? *ra : "";
        if (!ra.ok()) {
          RANGEFS_LOG(WARNING)
              << "readahead of " << job->target << ": " << ra.status();
        }
      }
      break;
    }
    case JobKind::kUnmount:
      job->result = mounter_->Unmount(job->target);
      if (job->result.ok()) rmdir(job->target.c_str());  // best effort
      break;
    case JobKind::kProbe: {
      struct stat st;
      if (stat(job->target.c_str(), &st) != 0) {
        job->result = ErrnoStatus(errno, absl::StrCat("stat ", job->target));
      }
      break;
    }
  }
  FinishJob(job);
}

void MountManager::FinishJob(Job* job) {
  // Under mu_ and nothing after it: the loop may join this thread as soon
  // as it sees `done`, and it never joins while holding mu_.
  absl::MutexLock l(&mu_);
  job->finished = absl::Now();
  job->done.store(true);
  kicked_ = true;
}

void MountManager::StartJob(JobKind kind, const std::string& node_id,
                            const std::string& target,
                            const std::string& source, int64_t generation) {
  auto job = std::make_shared<Job>();
  job->kind = kind;
  job->node_id = node_id;
  job->target = target;
  job->source = source;
  job->generation = generation;
  job->started = absl::Now();
  Job* raw = job.get();
  (kind == JobKind::kProbe ? probes_ : ops_)[target] = job;
  job->thread = std::thread([this, raw] { RunJob(raw); });
}

bool MountManager::ApplyResult(const Job& j, Entry& en, absl::Time now) {
  switch (j.kind) {
    case JobKind::kMount:
      if (j.result.ok()) {
        en.mounted = true;
        en.source = j.source;
        en.readahead = j.readahead;
        en.last_probe = now;
        en.generation = next_generation_++;
        SetHealth(en, MountHealth::kHealthy, "");
        RANGEFS_LOG(INFO) << "mounted " << j.source << " at " << j.target;
      } else {
        en.mounted = false;
        SetHealth(en, MountHealth::kFailed, std::string(j.result.message()));
      }
      return false;
    case JobKind::kUnmount:
      if (j.result.ok()) {
        RANGEFS_LOG(INFO) << "unmounted " << j.target;
        return true;
      }
      SetHealth(en, MountHealth::kUnhealthy, std::string(j.result.message()));
      return false;
    case JobKind::kProbe:
      // A probe of an earlier mount at this target says nothing of this one.
      if (en.mounted && j.generation == en.generation) {
        SetHealth(
            en, j.result.ok() ? MountHealth::kHealthy : MountHealth::kUnhealthy,
            std::string(j.result.message()));
      }
      return false;
  }
  return false;
}

std::vector<std::shared_ptr<MountManager::Job>> MountManager::Harvest(
    absl::Time now) {
  std::vector<std::shared_ptr<Job>> finished;
  for (auto* jobs : {&ops_, &probes_}) {
    for (auto it = jobs->begin(); it != jobs->end();) {
      if (!it->second->done.load()) {
        ++it;
        continue;
      }
      const Job& j = *it->second;
      const absl::Duration took = j.finished - j.started;
      if (took > Deadline(j.kind)) {
        RANGEFS_LOG(WARNING)
            << "mount " << j.target << ": the hung " << CallName(j.kind)
            << " returned after " << absl::Trunc(took, absl::Milliseconds(1))
            << ": " << (j.result.ok() ? "OK" : std::string(j.result.message()));
      }
      auto e = entries_.find(j.node_id);
      if (e != entries_.end() && e->second.target == j.target &&
          ApplyResult(j, e->second, now)) {
        entries_.erase(e);
      }
      finished.push_back(std::move(it->second));
      it = jobs->erase(it);
    }
  }
  MarkHung(now);
  return finished;
}

void MountManager::MarkHung(absl::Time now) {
  // The oldest call past its deadline, per node.
  std::map<std::string, const Job*> late;
  for (auto* jobs : {&ops_, &probes_}) {
    for (const auto& [target, j] : *jobs) {
      if (j->done.load() || now - j->started <= Deadline(j->kind)) continue;
      auto e = entries_.find(j->node_id);
      if (e == entries_.end() || e->second.target != j->target) continue;
      const Job*& oldest = late[j->node_id];
      if (oldest == nullptr || j->started < oldest->started) oldest = j.get();
    }
  }
  for (auto& [id, en] : entries_) {
    auto l = late.find(id);
    if (l == late.end()) {
      en.hung_since = absl::InfinitePast();
      continue;
    }
    const Job& j = *l->second;
    const bool was_hung = en.hung_since != absl::InfinitePast();
    en.hung_since = j.started;
    std::string error = absl::StrCat(
        CallName(j.kind), " of ", en.target, " did not return within ",
        absl::FormatDuration(Deadline(j.kind)), " (hung for ",
        absl::FormatDuration(
            absl::Trunc(now - j.started, absl::Milliseconds(1))),
        ")");
    if (!was_hung) {
      RANGEFS_LOG(WARNING) << "node " << id << ": mount " << en.target
                           << " is hung: " << error << ", since "
                           << absl::FormatTime(j.started)
                           << "; clients treat it as down";
    }
    SetHealth(en,
              j.kind == JobKind::kMount ? MountHealth::kFailed
                                        : MountHealth::kUnhealthy,
              error);
  }
}

void MountManager::Pass() {
  const absl::Time now = absl::Now();
  bool list = false;
  bool restart_watch = watch_ == nullptr;
  std::vector<std::shared_ptr<Job>> finished;
  {
    absl::MutexLock l(&mu_);
    finished = Harvest(now);
    list = nodes_dirty_ || now - last_list_ >= options_.reconcile_interval;
    nodes_dirty_ = false;
    restart_watch = restart_watch || watch_broken_;
  }
  // Outside mu_: each of these has marked itself done and is returning.
  for (const std::shared_ptr<Job>& j : finished) j->thread.join();
  finished.clear();
  if (restart_watch) RestartWatch();
  if (list) {
    auto nodes = store_->ListNodes();
    last_list_ = now;
    if (nodes.ok()) {
      nodes_.clear();
      for (const ns::NodeEntry& n : *nodes) {
        if (n.invalid.empty()) {
          nodes_.push_back(n.record);
        } else {
          RANGEFS_LOG(WARNING) << n.invalid << " (node not mounted)";
        }
      }
    } else {
      // Keep the mounts as they are: an etcd outage unmounts nothing.
      RANGEFS_LOG(WARNING) << "list nodes: " << nodes.status()
                           << " (mounts left as they are)";
      list = false;
    }
  }
  auto mi = ReadMountInfo(options_.mountinfo_path);
  if (!mi.ok()) RANGEFS_LOG(WARNING) << mi.status();

  MountStatusFile status;
  {
    absl::MutexLock l(&mu_);
    if (mi.ok()) {
      std::vector<CurrentMount> current = MountsUnder(*mi, options_.mount_root);
      std::set<std::string> present;
      for (CurrentMount& c : current) {
        present.insert(c.node_id);
        auto e = entries_.find(c.node_id);
        if (e == entries_.end()) {
          // Found at startup (or mounted by hand): adopt it, probe it.
          Entry en;
          en.node_id = c.node_id;
          en.target = c.target;
          en.mounted = true;
          en.since = now;
          en.generation = next_generation_++;
          entries_[c.node_id] = en;
        } else {
          c.source = e->second.source;
          e->second.mounted = true;
        }
      }
      for (auto& [id, en] : entries_) {
        if (en.mounted && present.count(id) == 0 &&
            ops_.count(en.target) == 0) {
          en.mounted = false;  // gone from under us (umount by hand)
        }
      }
      std::vector<std::string> skipped;
      auto desired = DesiredMounts(
          nodes_, options_.mount_root,
          [this](const v1::NodeRecord& r) { return mounter_->SourceFor(r); },
          &skipped);
      if (skipped != skipped_) {
        for (const std::string& s : skipped) RANGEFS_LOG(WARNING) << s;
        skipped_ = skipped;
      }
      std::set<std::string> wanted;
      for (const DesiredMount& d : desired) wanted.insert(d.node_id);
      for (const Action& a : Plan(desired, current)) {
        if (ops_.count(a.target) != 0) continue;  // one op at a time
        if (a.kind == ActionKind::kMount) {
          auto e = entries_.find(a.node_id);
          if (e != entries_.end() && e->second.health == MountHealth::kFailed &&
              now - e->second.since < options_.reconcile_interval) {
            continue;  // retry a failed mount once per interval
          }
          Entry& en = entries_[a.node_id];
          if (en.health != MountHealth::kFailed) {
            en.node_id = a.node_id;
            en.health = MountHealth::kMounting;
            en.since = now;
          }
          en.target = a.target;
          RANGEFS_LOG(INFO) << "mount " << a.node_id << ": "
                            << mounter_->MountCommand(a.source, a.target)
                            << " (" << a.reason << ")";
          StartJob(JobKind::kMount, a.node_id, a.target, a.source, 0);
        } else {
          RANGEFS_LOG(INFO)
              << "unmount " << a.node_id << ": "
              << mounter_->UnmountCommand(a.target) << " (" << a.reason << ")";
          StartJob(JobKind::kUnmount, a.node_id, a.target, "", 0);
        }
      }
      // Forget entries of nodes that are neither mounted nor wanted.
      for (auto it = entries_.begin(); it != entries_.end();) {
        if (!it->second.mounted && wanted.count(it->first) == 0 &&
            ops_.count(it->second.target) == 0) {
          it = entries_.erase(it);
        } else {
          ++it;
        }
      }
    }
    // Health probes.
    for (auto& [id, en] : entries_) {
      if (!en.mounted || ops_.count(en.target) != 0 ||
          probes_.count(en.target) != 0 ||
          now - en.last_probe < options_.reconcile_interval) {
        continue;
      }
      en.last_probe = now;
      StartJob(JobKind::kProbe, id, en.target, "", en.generation);
    }
    status_.updated_unix_ms = absl::ToUnixMillis(now);
    status_.pass = passes_.load() + 1;
    status_.mounts.clear();
    for (const auto& [id, en] : entries_) {
      MountStatusEntry s;
      s.node_id = id;
      s.health = en.health;
      s.path = en.target;
      s.since_unix_ms = absl::ToUnixMillis(en.since);
      s.readahead_kb = en.readahead;
      s.error = en.error;
      if (en.hung_since != absl::InfinitePast()) {
        s.hung_since_unix_ms = absl::ToUnixMillis(en.hung_since);
      }
      status_.mounts.push_back(std::move(s));
    }
    status = status_;
  }
  absl::Status w = WriteMountStatus(options_.status_file, status);
  if (!w.ok()) RANGEFS_LOG(WARNING) << w;
  passes_.fetch_add(1);
}

}  // namespace mountd
}  // namespace rangefs
