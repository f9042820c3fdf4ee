// File: internal/node_runtime.h
//
// NodeRuntime: the per-node engine. Each storage node gets a queue of
// attempts and either worker threads (blocking pread through ReadOnlyFs, or
// agent reads) or one io_uring ring thread (node_ring.cc); small reads may
// run on a calling thread's borrowed ring. It schedules reads of the node's
// mount (MountReader: planning, sidecar CRC verification), its NFS export
// (NfsNode: libnfs in userspace, the client's NFS loops; nfs_path.cc)
// or its agent (AgentReader), decides between them, accounts each outcome
// and hands it to the attempt's call through the completion interface
// (AttemptSink, call.h): it never touches a call's state itself.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_NODE_RUNTIME_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_NODE_RUNTIME_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "client_lib/internal/agent_reader.h"
#include "client_lib/internal/call.h"
#include "client_lib/internal/client_core.h"
#include "client_lib/internal/mount_reader.h"
#include "client_lib/internal/nfs_node.h"
#include "client_lib/internal/read_ring.h"
#include "client_lib/io_threads.h"
#include "loadbalancer/latency_tracker.h"

namespace rangefs {
namespace client_internal {

// A buffer owned by one worker thread, aligned for O_DIRECT; grows only.
class WorkerBuffer {
 public:
  ~WorkerBuffer() { free(data_); }
  char* Get(size_t n) {
    if (n > size_) {
      free(data_);
      size_ = std::max(n, size_t{1} << 20);
      data_ = static_cast<char*>(aligned_alloc(
          kDirectIoAlignment, RoundUp(size_, kDirectIoAlignment)));
    }
    return data_;
  }
  static size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

// What the engine attaches to a read on a ReadRing (which knows nothing of
// it): the attempt's task, how to check the bytes, when it started.
// Recycled: a slot's next read reuses it, its path strings' memory too.
struct MountRead : ReadRing::Context {
  bool Recycle() override {
    task = Task{};  // the call's reference
    plan.sums.reset();
    return true;
  }
  Task task{};
  MountPlan plan;
  // The version of the mount directory plan.path.mount holds, for a read
  // on a calling thread's ring (NodeRuntime::MountDirInto).
  uint64_t mount_gen = 0;
  absl::Time t0;
};

inline MountRead& MountReadOf(ReadRing::Slot& s) {
  return static_cast<MountRead&>(*s.context);
}

// A read on a calling thread's ring that ended with every byte, finished
// with the others of its reap (NodeRuntime::FinishAll). `done.out` stays
// valid until the ring's next Start (ReadRing::Reap).
struct CallerSuccess {
  NodeRuntime* node;
  std::shared_ptr<AttemptSink> call;
  AttemptSink::Success done;
  absl::Time t0;
};
using CallerSuccesses = absl::InlinedVector<CallerSuccess, 16>;

// Starts the read planned in `m` (ring.NextContext<MountRead>(), its plan
// filled in) for `t` on `ring`. `into`: the caller's buffer, for an
// in-place read (StartOnCaller).
inline void StartMountRead(ReadRing& ring, MountRead& m, Task t,
                           std::shared_ptr<RingFile> file, absl::Time t0,
                           char* into = nullptr) {
  m.task = std::move(t);
  m.t0 = t0;
  const MountPlan& plan = m.plan;
  ring.Start(std::move(file), plan.start, plan.direct ? plan.alloc : plan.span,
             plan.alloc, plan.direct, nullptr, into);
}

// A node's queue of tasks: urgent ones (retries, hedges, moved pieces)
// first, each kind first in, first out.
class TaskQueue {
 public:
  void Push(Task t) { (t.urgent ? urgent_ : normal_).push_back(std::move(t)); }
  bool empty() const { return urgent_.empty() && normal_.empty(); }
  // Precondition: !empty().
  Task Pop() {
    std::deque<Task>& q = urgent_.empty() ? normal_ : urgent_;
    Task t = std::move(q.front());
    q.pop_front();
    return t;
  }

 private:
  std::deque<Task> urgent_;
  std::deque<Task> normal_;
};

struct NodeCounters {
  std::atomic<uint64_t> bytes{0}, requests{0}, errors{0}, timeouts{0},
      stalls{0}, moved{0}, checksum_failures{0}, mount_reads{0}, agent_reads{0},
      uring_reads{0}, nfs_reads{0}, caller_reads{0}, in_place_reads{0},
      cached_reads{0}, ec_helper_reads{0};
  std::atomic<int64_t> inflight{0}, outstanding_bytes{0};
  // Of `inflight`: attempts in the node's queue (handed to it by Submit),
  // not yet taken by one of its threads.
  std::atomic<int64_t> queued{0};
};

constexpr size_t kMaxRingFds = 1024;

// The key of a file the ring threads keep open: its mount, its object and
// whether it was opened O_DIRECT. Looked up per read by RingFdRef, without
// building a string.
struct RingFdKey {
  bool direct = false;
  std::string mount;
  std::string object;
};
struct RingFdRef {
  bool direct = false;
  absl::string_view mount;
  absl::string_view object;
};
struct RingFdHash {
  using is_transparent = void;
  template <typename K>
  size_t operator()(const K& k) const {
    return absl::HashOf(k.direct, absl::string_view(k.mount),
                        absl::string_view(k.object));
  }
};
struct RingFdEq {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return a.direct == b.direct &&
           absl::string_view(a.mount) == absl::string_view(b.mount) &&
           absl::string_view(a.object) == absl::string_view(b.object);
  }
};
// The largest read a calling thread submits itself: lookups and other small
// reads skip two thread hand-offs. Larger pieces go to their node's ring
// thread, which overlaps their copies with the next reads, and a borrowed
// ring's buffers stay small (depth x 64 KiB).
constexpr size_t kCallerReadMax = size_t{64} << 10;

// Everything the client keeps per storage node. Thread-safe. Owned through
// shared_ptrs by the client and by each of the node's I/O threads: a thread
// that the client's teardown left blocked in a call (a hung mount) keeps
// the node (its buffers, ring and files) and the ClientCore alive until
// that call returns, then drops them (see IoThreads).
class NodeRuntime : public std::enable_shared_from_this<NodeRuntime> {
 public:
  NodeRuntime(std::shared_ptr<ClientCore> client, std::string id)
      : client_(std::move(client)),
        id_(std::move(id)),
        latency_(client_->latency().Handle(id_)),
        mount_reader_(client_->fs(), client_->options().o_direct),
        agent_reader_(id_, client_->options().agent_tls) {}
  ~NodeRuntime();

  const std::string& id() const { return id_; }
  // This node's entry in the client's latency tracker.
  lb::LatencyTracker::NodeHandle latency_handle() const { return latency_; }
  NodeCounters& counters() { return counters_; }
  // MonotonicNow (ns) when an attempt on this node last finished, with any
  // outcome: the node still answers. 0 = never.
  int64_t last_answer_ns() const {
    return last_answer_ns_.load(std::memory_order_relaxed);
  }
  // MonotonicNow (ns) when one of its threads (or a caller's ring) last
  // started an attempt of this node. 0 = never.
  int64_t last_start_ns() const {
    return last_start_ns_.load(std::memory_order_relaxed);
  }
  // Attempt `a` starts at t0 (MonotonicNow): its started_ns, and the
  // node's last_start_ns.
  void MarkStarted(Attempt* a, absl::Time t0) {
    const int64_t ns = std::max<int64_t>(1, absl::ToUnixNanos(t0));
    a->started_ns.store(ns, std::memory_order_release);
    last_start_ns_.store(ns, std::memory_order_relaxed);
  }
  // Whether some attempt of this node is out of its queue and not ended:
  // being read (or between its dispatch and its queue, a moment). False
  // while every attempt in flight waits in the queue: the node's threads
  // are idle, or not yet run by a loaded machine.
  bool Reading() const {
    return counters_.inflight.load(std::memory_order_relaxed) >
           counters_.queued.load(std::memory_order_relaxed);
  }
  // An attempt was dispatched here at `now_ns` (MonotonicNow), `before` in
  // flight until then.
  void Dispatched(int64_t now_ns, int64_t before) {
    if (before == 0) busy_since_ns_.store(now_ns, std::memory_order_relaxed);
  }
  // When (MonotonicNow) the node will have answered none of its attempts
  // in flight (queued or reading) for `d`, if it stays silent: from then on
  // it looks hung, even if no call waits for those attempts any more
  // (hedges answered their pieces). InfiniteFuture with none in flight.
  absl::Time SilentFor(absl::Duration d) const {
    if (counters_.inflight.load() <= 0) return absl::InfiniteFuture();
    const int64_t since = std::max(busy_since_ns_.load(), last_answer_ns());
    return absl::FromUnixNanos(since) + d;
  }

  void SetRecord(const v1::NodeRecord& r, const std::string& mount_root) {
    agent_reader_.SetAddress(r.addresses_size() > 0 ? r.addresses(0) : "");
    absl::MutexLock l(&mu_);
    addresses_.assign(r.addresses().begin(), r.addresses().end());
    mount_dir_ = r.mount_path().empty() ? absl::StrCat(mount_root, "/", id_)
                                        : r.mount_path();
    mount_gen_.store(NewMountGen(), std::memory_order_release);
  }
  // The node's NFS export from its live record, for the `nfs` data path
  // (nfs_path.cc), after the record gate: an invalid one arrives with url
  // and version empty and the reason in `refused` (logged once). Empty
  // url: the node publishes none (its agent is read).
  void SetNfsExport(const v1::NfsExport& e);
  // The node's NFS export, if it has a usable one and the data path may
  // use it (kNfs, or kAuto without a usable mount); else null.
  std::shared_ptr<NfsNode> nfs();
  void SetDefaultMount(const std::string& mount_root) {
    absl::MutexLock l(&mu_);
    if (mount_dir_.empty()) {
      mount_dir_ = absl::StrCat(mount_root, "/", id_);
      mount_gen_.store(NewMountGen(), std::memory_order_release);
    }
  }
  // Every agent address of the node's record (Client::Locate).
  std::vector<std::string> addresses() {
    absl::MutexLock l(&mu_);
    return addresses_;
  }
  std::string mount_dir() {
    absl::MutexLock l(&mu_);
    return mount_dir_;
  }
  // mount_dir() into `*out`, reusing its memory; `*gen`: the version
  // `*out` holds (versions are unique in the process): nothing to do, and
  // no lock, if it is this node's current one.
  void MountDirInto(std::string* out, uint64_t* gen) {
    if (*gen == mount_gen_.load(std::memory_order_acquire)) return;
    absl::MutexLock l(&mu_);
    out->assign(mount_dir_);
    *gen = mount_gen_.load(std::memory_order_relaxed);
  }
  // rangefs-mountd reports this node's mount as not usable.
  // Never this host's own node: it is read from its export directory, not
  // a mount that rangefs-mountd manages.
  bool mount_down() const {
    return !local() && mount_down_.load(std::memory_order_relaxed);
  }
  void set_mount_down(bool down) { mount_down_.store(down); }
  // This host's own node (ClientOptions::local_node): preferred by Dispatch.
  bool local() const { return local_.load(std::memory_order_relaxed); }
  void set_local(bool local) { local_.store(local); }

  // Queues `tasks` (moved from) with one lock and at most one wake-up.
  void Submit(absl::Span<Task> tasks);
  // Starts `t`'s read on the calling thread's ring when that needs no
  // blocking call here (a mount known good, its file already open, no
  // sidecar to load, at most kCallerReadMax bytes); false, with `t` left
  // as it was, otherwise. `into` (null: none) is the caller's buffer for
  // the piece, which the read may land in itself when it reads exactly
  // the piece's bytes (no sidecar blocks around it; for O_DIRECT, `into`
  // aligned): then *landed is set, and the caller must claim the piece
  // for the attempt and not return before the read is reaped.
  bool StartOnCaller(Task& t, ReadRing& ring, char* into, bool* landed);
  // A read started by StartOnCaller ended (ReadRing::Reap). One with
  // every byte goes to `ok`, for FinishAll once the reap is over; any
  // other is finished (or handed on) now.
  void CallerDone(ReadRing::Slot& s, int res, CallerSuccesses& ok);
  // Finish's accounting and hand-over for each of `ok` (all of one
  // client), with one clock read for all (each latency ends when the
  // reap's checks do), one lock a node in the health and latency tables,
  // and one CompletedAll a run of one call's reads.
  static void FinishAll(absl::Span<const CallerSuccess> ok);
  // Whether ReadCached may serve `a`: a mount known good, on a local file
  // system, its file already open, its sidecar loaded when verifying.
  // Cheap, never blocks.
  bool MayReadCached(const Attempt* a);
  // Copies `a`'s bytes into `dst` (a->length bytes, the caller's buffer,
  // claimed for it) on the calling thread, only from the page cache
  // (RWF_NOWAIT), checked against the sidecar when verifying. False if not
  // served (not wholly cached, a checksum mismatch, an error): `dst` may
  // then hold anything, and the attempt goes its usual way. Served ones
  // are counted by CountCached. `files`: the objects looked up so far by
  // the caller's run of CopyCached calls (empty at first; objects by
  // address, so only while their layouts live: one call's), so that ranges
  // of one object look its file up once (null: not open).
  struct CachedFile {
    const std::string* object = nullptr;
    std::shared_ptr<RingFile> file;
  };
  using CachedFiles = absl::InlinedVector<CachedFile, 16>;
  // The open file of a's object (at `path`), looked up in `files` first,
  // then among the files the node's threads opened (null: not open).
  const std::shared_ptr<RingFile>& CachedFileOf(const Attempt* a,
                                                const MountPath& path,
                                                CachedFiles& files);
  bool CopyCached(Attempt* a, char* dst, CachedFiles& files);
  // As CopyCached, for a piece whose bytes can be used where they lie (an
  // erasure-coded rebuild's helper, PieceState::mappable): where they are
  // in the object's mapping (RingFile::Mapped: in the page cache), with
  // the file that holds the mapping in `hold`; null if not so (then
  // CopyCached). Unverified pieces only.
  const char* MapCached(const Attempt* a, CachedFiles& files,
                        std::shared_ptr<RingFile>* hold);
  // The node-side accounting of `count` attempts of this node (`bytes` in
  // all) that CopyCached served, the last at `now`, as Finish counts a
  // success, but without a latency: a copy out of memory says nothing of
  // how fast the node's storage answers.
  void CountCached(int64_t count, int64_t bytes, absl::Time now);
  // Starts the kernel's own readahead of `length` bytes of `object` at
  // `offset` (KernelReadahead, hint_ahead.cc), when ReadCached could serve
  // them later: a mount known good on a local file system, its file
  // already open. Never waits for the bytes nor blocks on a mount. True
  // if asked.
  bool ReadAhead(const std::string& object, uint64_t offset, uint64_t length);
  // The open file of `object` when a caller may read it itself, with no
  // check of ours (File::LocalSpans, local_spans.cc): a mount known good on
  // a local file system, the file already open (never blocks); null
  // otherwise.
  std::shared_ptr<RingFile> LocalObject(const std::string& object,
                                        uint64_t offset, uint64_t length);
  // Tells the threads to stop: queued attempts (of calls that returned) end
  // as not needed; the ring thread leaves once its reads have ended. No new
  // thread starts.
  void BeginStop();
  // After BeginStop: waits until the threads have returned, up to
  // `deadline`, then leaves those blocked in a call (IoThreads::Shutdown).
  // Returns how many were left.
  int Shutdown(absl::Time deadline);

 private:
  // Runs `call`, which may block forever (a file system call on a hung
  // mount, an agent read), as a bracketed call of this node's threads
  // (IoThreads): it may use only what outlives the client (this node, the
  // ClientCore, the attempt's batch, the thread's own buffers), never the
  // caller's clock. nullopt if the client was torn down meanwhile: the
  // thread must then return at once, dropping what it holds. From a thread
  // outside the node (a caller's), just the call.
  template <typename F>
  auto Blocking(F&& call) -> std::optional<decltype(call())>;
  void WorkerLoop();
  // Runs one attempt (or hands it to the node's NFS connections); false if
  // the client was torn down meanwhile.
  bool Execute(Task& t, WorkerBuffer& buf);
  // Hands `t` to the node's NFS export `nfs` (nfs_path.cc): the read
  // runs on an NFS connection's thread, which finishes the attempt. `t0`:
  // when the attempt started (InfinitePast: now).
  void StartNfs(const std::shared_ptr<NfsNode>& nfs, Task t,
                absl::Time t0 = absl::InfinitePast());
  // Ends an attempt whose batch closed before it started.
  void CancelQueued(Attempt* a, AttemptSink* b);
  // The counting of `count` ended attempts of this node (any outcome;
  // `bytes`: their length) that ended at `now_ns`, and of `count` that
  // succeeded (the last with `last_latency`). Finish and FinishAll.
  void CountEnded(int64_t count, int64_t bytes, int64_t now_ns);
  void CountSucceeded(int64_t count, int64_t bytes,
                      absl::Duration last_latency);
  // Accounts an attempt's outcome and hands its bytes (`out`, valid until
  // this returns) to the batch; `refill`: through CompletedAndRefill (the
  // thread may start the call's next pieces).
  void Finish(Attempt* a, AttemptSink* b, const absl::StatusOr<size_t>& r,
              const char* out, bool checksum_failure, absl::Time t0,
              bool refill = false);
  static MountPiece PieceOf(const Attempt* a) {
    return {*a->object, a->object_offset, a->length, a->verify};
  }
  // nullopt: the client was torn down meanwhile (see Blocking), here and
  // below.
  std::optional<absl::StatusOr<size_t>> ReadMount(Attempt* a, WorkerBuffer& buf,
                                                  const char** data,
                                                  bool* checksum_failure);
  void SubmitPoolLocked(Task t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(qmu_);
  // Hands a task the ring thread took off the queue (and off the queued
  // count) to the workers: queued again, counted again.
  void RequeueForWorkersLocked(Task t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(qmu_);
  bool StartRingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(qmu_);
  void Wake();
  void RingLoop();
  // After the client's teardown left the ring thread: waits for the ring's
  // reads to end (they write into its buffers until then) and drops them.
  void RingDrain();
  // Starts `t` on the ring. False: the client was torn down meanwhile.
  bool RingStart(Task t);
  // A read of the node's ring ended. False: as RingStart.
  bool RingDone(ReadRing::Slot& s, int res);
  // A mount read failed: falls back to the agent (kAuto, mount gone) or
  // finishes the attempt with `error`. False: as RingStart.
  bool RingFailed(Task t, const absl::Status& error, absl::Time t0,
                  bool checksum_failure);
  // The ring reads' file of `path`, opened (which blocks on a hung mount:
  // ring thread only) and kept when not yet open.
  absl::StatusOr<std::shared_ptr<RingFile>> RingFd(const MountPath& path,
                                                   bool direct);
  // The same if already open, else null. Never blocks on the mount.
  std::shared_ptr<RingFile> OpenRingFd(const MountPath& path, bool direct);
  void RingDropFd(const MountPath& path, bool direct);
  std::optional<absl::StatusOr<size_t>> ReadAgent(Attempt* a, AttemptSink* b,
                                                  char* out);
  // Whether to read `dir` (the mount) rather than the agent.
  std::optional<bool> UseMount(const std::string& dir);

  const std::shared_ptr<ClientCore> client_;
  const std::string id_;
  NodeCounters counters_;
  const lb::LatencyTracker::NodeHandle latency_;  // this node's entry

  MountReader mount_reader_;  // the node's mount, with its sidecars
  AgentReader agent_reader_;  // the node's agent
  absl::Mutex mu_;
  std::vector<std::string> addresses_ ABSL_GUARDED_BY(mu_);
  std::string mount_dir_ ABSL_GUARDED_BY(mu_);
  // Its version, changed (under mu_) with it; 0: never set (then it is
  // empty, as every node's that was never set).
  std::atomic<uint64_t> mount_gen_{0};
  // A new version, unique in the process: a copy of one node's directory
  // never passes for another's.
  static uint64_t NewMountGen() {
    static std::atomic<uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  std::atomic<int64_t> last_answer_ns_{0};
  std::atomic<int64_t> last_start_ns_{0};
  // When the attempts in flight went from none to some.
  std::atomic<int64_t> busy_since_ns_{0};
  std::atomic<int> mount_state_{0};  // 0 unknown, 1 ok, -1 bad
  std::atomic<int64_t> mount_checked_ns_{0};
  std::atomic<bool> mount_down_{false};
  std::atomic<bool> local_{false};
  // Callers may read this node on their rings (no RWF_NOWAIT refusal yet).
  std::atomic<bool> caller_ok_{true};

  // The NFS export (nfs_path.cc); its loops' threads start with its first
  // read.
  absl::Mutex nfs_mu_;
  std::string nfs_url_ ABSL_GUARDED_BY(nfs_mu_);
  std::string nfs_version_ ABSL_GUARDED_BY(nfs_mu_);
  std::string nfs_refused_ ABSL_GUARDED_BY(nfs_mu_);
  std::shared_ptr<NfsNode> nfs_ ABSL_GUARDED_BY(nfs_mu_);
  bool nfs_stopped_ ABSL_GUARDED_BY(nfs_mu_) = false;

  // The worker threads and the ring thread.
  IoThreads threads_;
  absl::Mutex qmu_;
  TaskQueue queue_ ABSL_GUARDED_BY(qmu_);  // worker threads' queue
  bool stop_ ABSL_GUARDED_BY(qmu_) = false;
  bool workers_started_ ABSL_GUARDED_BY(qmu_) = false;
  bool started_ ABSL_GUARDED_BY(qmu_) = false;
  bool use_ring_ ABSL_GUARDED_BY(qmu_) = false;
  TaskQueue ring_queue_ ABSL_GUARDED_BY(qmu_);
  bool ring_sleeping_ ABSL_GUARDED_BY(qmu_) = false;
  // Set before the ring thread starts, then used by it only (Wake aside).
  std::unique_ptr<ReadRing> ring_;
  // The ring thread's: a bracketed call reported the client torn down.
  bool ring_abandoned_ = false;
  // Files the ring thread opened, shared with callers' rings.
  absl::Mutex fd_mu_;
  absl::flat_hash_map<RingFdKey, std::shared_ptr<RingFile>, RingFdHash,
                      RingFdEq>
      ring_fds_ ABSL_GUARDED_BY(fd_mu_);
};

template <typename F>
auto NodeRuntime::Blocking(F&& call) -> std::optional<decltype(call())> {
  if (!threads_.BeginBlocking()) return std::nullopt;
  auto r = call();
  if (!threads_.EndBlocking()) return std::nullopt;
  return r;
}

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_NODE_RUNTIME_H_
