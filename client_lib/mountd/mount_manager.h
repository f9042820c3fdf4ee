// File: mount_manager.h
//
// The reconciliation loop of rangefs-mountd. It keeps each ACTIVE or
// DRAINING node's export mounted read-only at <mount_root>/<node_id> (see
// planner.h), unmounts disabled and removed nodes, probes every mount with
// a stat and writes the mount health file (mount_status.h).
//
//   auto mounter = NewNfsMounter(options);
//   RANGEFS_ASSIGN_OR_RETURN(auto manager, MountManager::Start(
//       store.get(), mounter.get(), {.mount_root = "/mnt/rangefs"}));
//   ...
//   if (manager->Shutdown(absl::Seconds(5)) > 0) _exit(0);  // hung mounts
//
// Never blocking on a hung mount: the loop thread only reads etcd (with
// its call deadline) and /proc/self/mountinfo (which touches no mount).
// Every mount, unmount, stat and readahead write runs in a worker thread of
// its own; the loop checks its age on every tick. A call that has not
// returned within its deadline (stat_timeout for a stat, op_timeout for a
// mount or unmount) makes the mount `hung` in the status file, with the
// time the call started (MountStatusEntry::hung_since_unix_ms), and
// unhealthy (stat, unmount) or failed (mount); mountd logs when a mount
// becomes hung and when the hung call returns. A hung worker is left
// running (not joined on the loop), and its target gets no new work of that
// kind until it returns: at most one mount/unmount worker and one probe
// worker per target. A lazy unmount (MNT_DETACH) may run while a probe of
// the same target hangs. A worker's last act is to mark itself done under
// the manager's lock; the loop joins finished workers only after releasing
// that lock.
//
// The node list is read when the watch on the nodes prefix reports a
// change and at least every reconcile_interval; if etcd cannot be reached,
// the mounts are left as they are (an etcd outage unmounts nothing).
// Mounts outlive the manager: they stay in place across a mountd restart,
// which finds them again in mountinfo.
//
// Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_MOUNTD_MOUNT_MANAGER_H_
#define RANGEFS_CLIENT_LIB_MOUNTD_MOUNT_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client_lib/mountd/mount_status.h"
#include "client_lib/mountd/mounter.h"
#include "client_lib/mountd/planner.h"
#include "namespace/kv.h"
#include "namespace/store.h"

namespace rangefs {
namespace mountd {

struct MountManagerOptions {
  std::string mount_root = "/mnt/rangefs";
  // "" = <mount_root>/.rangefs-mounts
  std::string status_file;
  // A stat that does not return within this marks the mount unhealthy.
  absl::Duration stat_timeout = absl::Seconds(5);
  // A mount or unmount that does not return within this marks it failed.
  absl::Duration op_timeout = absl::Seconds(60);
  // Full re-list of node records and health probe period.
  absl::Duration reconcile_interval = absl::Seconds(10);
  // Per-mount readahead written to <sysfs_root>/class/bdi/<dev>/
  // read_ahead_kb after each mount; 0 = leave the kernel's default.
  int64_t readahead_kb = 0;
  std::string sysfs_root = "/sys";
  std::string mountinfo_path = "/proc/self/mountinfo";
};

class MountManager {
 public:
  // Creates mount_root if missing, starts the watch (best effort) and the
  // loop thread. `store` and `mounter` are not owned and must outlive the
  // manager. INVALID_ARGUMENT for bad options.
  static absl::StatusOr<std::unique_ptr<MountManager>> Start(
      ns::NamespaceStore* store, Mounter* mounter,
      const MountManagerOptions& options);

  // One plan without doing anything (dry-run): lists nodes and mountinfo.
  // `notes` (may be null) gets skipped nodes. UNAVAILABLE if etcd is down.
  static absl::StatusOr<std::vector<Action>> PlanOnce(
      ns::NamespaceStore* store, const Mounter& mounter,
      const MountManagerOptions& options, std::vector<std::string>* notes);

  MountManager(const MountManager&) = delete;
  MountManager& operator=(const MountManager&) = delete;
  // Shutdown(infinite), then joins every worker: blocks while a worker is
  // stuck in the kernel. Call Shutdown with a grace first.
  ~MountManager();

  // Stops the loop and the watch, then waits up to `grace` for workers.
  // Returns how many are still running (stuck on a hung mount); the
  // process should then exit without destroying the manager.
  size_t Shutdown(absl::Duration grace);

  // Runs a pass now (also called by the watch).
  void Kick();
  // What the status file says now.
  MountStatusFile Snapshot() const;
  // Completed passes (the loop's heartbeat).
  int64_t passes() const { return passes_.load(); }
  // Workers currently running (hung ones included).
  size_t running_workers() const;

 private:
  enum class JobKind { kMount, kUnmount, kProbe };
  struct Job {
    JobKind kind;
    std::string node_id, target, source;
    int64_t generation = 0;  // of the entry's mount (kProbe)
    absl::Time started;
    // Set under mu_, as the worker's last act; the fields below are
    // written before it and read only once it is true.
    std::atomic<bool> done{false};
    absl::Time finished;
    absl::Status result;
    std::string readahead;  // kMount
    std::thread thread;
  };
  struct Entry {
    std::string node_id, target, source;
    bool mounted = false;
    MountHealth health = MountHealth::kMounting;
    absl::Time since;
    absl::Time last_probe = absl::InfinitePast();
    // Changes with every mount made or adopted: a probe's result counts
    // only for the mount it stat'ed.
    int64_t generation = 0;
    // Start of the oldest call on this mount that is past its deadline;
    // InfinitePast: none.
    absl::Time hung_since = absl::InfinitePast();
    std::string readahead;
    std::string error;
  };

  MountManager(ns::NamespaceStore* store, Mounter* mounter,
               MountManagerOptions options);
  void Loop();
  void Pass();
  // Applies finished jobs to their entries and returns them (to be joined
  // once mu_ is released), then marks the mounts whose calls are late.
  std::vector<std::shared_ptr<Job>> Harvest(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns true if the entry is to be forgotten (unmounted).
  bool ApplyResult(const Job& job, Entry& e, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkHung(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration Deadline(JobKind kind) const;
  static absl::string_view CallName(JobKind kind);
  void StartJob(JobKind kind, const std::string& node_id,
                const std::string& target, const std::string& source,
                int64_t generation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunJob(Job* job);
  void FinishJob(Job* job);
  void SetHealth(Entry& e, MountHealth h, const std::string& error);
  void RestartWatch();

  ns::NamespaceStore* const store_;
  Mounter* const mounter_;
  const MountManagerOptions options_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool kicked_ ABSL_GUARDED_BY(mu_) = false;
  bool nodes_dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool watch_broken_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by node
  // Mount/unmount jobs and probe jobs, by target.
  std::map<std::string, std::shared_ptr<Job>> ops_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Job>> probes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> skipped_ ABSL_GUARDED_BY(mu_);
  MountStatusFile status_ ABSL_GUARDED_BY(mu_);
  int64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;

  // Loop thread only.
  std::unique_ptr<ns::KvWatch> watch_;
  absl::Time last_list_ = absl::InfinitePast();
  std::vector<v1::NodeRecord> nodes_;

  std::atomic<int64_t> passes_{0};
  std::thread loop_;
};

}  // namespace mountd
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_MOUNTD_MOUNT_MANAGER_H_
