// File: internal/nfs_loop.h
//
// NfsLoop: one event loop thread driving the NFS connections (NfsConn) of
// one or more storage nodes: it polls their sockets and an eventfd, starts
// the requests other threads Submit through a connection's NfsLink,
// services libnfs, and fails requests at their deadlines. libnfs's
// asynchronous calls (mount, open, read, teardown) never block, so a
// server that hangs holds up none of the loop's other connections: its
// requests fail at their deadlines and its context is torn down. The loop
// never blocks except in poll, so Stop() ends it promptly. Requests'
// `done` callbacks run on the loop's thread, never on a submitting thread;
// a `done` that submits to any connection of the same loop (a completion
// starting a call's next pieces, on any node) queues with no wake-up and
// no hand-off. Thread-safe (Run on one thread).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/internal/nfs_conn.h"
#include "client_lib/internal/nfs_export.h"

namespace rangefs {
namespace client_internal {

class NfsLoop;

// One connection (one libnfs context to one node's export) on an NfsLoop.
// Thread-safe.
class NfsLink {
 public:
  // Starts `r` (any thread): queued for the loop, which is woken through
  // its eventfd only while it waits in poll (a running loop takes its
  // queue before it polls again: a `done` on the loop's own thread
  // starting the next read, or a push while the loop services its
  // connections, costs no wake-up; sending from the submitting thread while the
  // loop waited in poll was tried and cost 27% of the 4 KiB random rate on a
  // quiet 2-core host, tests/bench/RESULTS.md). NfsRequest::refused: answered
  // on the loop's thread. Returns false once the link or its loop is stopped:
  // `r` is dropped, its `done` never called. Submit never runs a `done`
  // itself, so its caller may hold locks that `done` takes (a read call's
  // batch lock); a request accepted before Stop is answered UNAVAILABLE by
  // the loop's thread.
  [[nodiscard]] bool Submit(std::unique_ptr<NfsRequest> r);
  // Ends this connection (the loop goes on with its others): what it holds
  // fails UNAVAILABLE on the loop's thread; later Submits return false.
  void Stop();
  // Requests submitted and not answered yet.
  int64_t load() const { return load_.load(std::memory_order_relaxed); }
  // Contexts mounted so far (NfsConn::mounts), as of the last loop pass.
  int mounts() const { return mounts_.load(std::memory_order_relaxed); }

 private:
  friend class NfsLoop;
  NfsLink(std::shared_ptr<NfsLoop> loop, NfsExport e, std::string id)
      : loop_(std::move(loop)), export_(std::move(e)), id_(std::move(id)) {}

  const std::shared_ptr<NfsLoop> loop_;
  const NfsExport export_;
  const std::string id_;
  std::atomic<int64_t> load_{0};
  std::atomic<int> mounts_{0};
  bool stopped_ = false;  // guarded by loop_->mu_
};

class NfsLoop : public std::enable_shared_from_this<NfsLoop> {
 public:
  // Runs `loop->Run()` on a thread of its own; false if it cannot (the
  // client closing).
  using Starter = std::function<bool(std::shared_ptr<NfsLoop> loop)>;
  // `single`: serves one connection only, and Run returns once it stopped.
  // `start`: called once, by the first Submit to one of its links (a client
  // that never reads over NFS starts no thread); without it (tests), the
  // caller runs Run itself.
  static absl::StatusOr<std::shared_ptr<NfsLoop>> Create(bool single = false,
                                                         Starter start = {});
  ~NfsLoop();

  // A new connection to `e` on this loop (`id`: unique in the process, the
  // NFSv4 client name); mounted by its first request. Null once stopped.
  std::shared_ptr<NfsLink> Attach(NfsExport e, std::string id);
  // The loop; returns after Stop, every request answered.
  void Run();
  // Ends the loop and every connection on it.
  void Stop();
  // Connections attached and not stopped.
  int links() const { return links_.load(std::memory_order_relaxed); }

 private:
  friend class NfsLink;
  // In queue order: a link's attach, its requests, its stop.
  struct Item {
    NfsLink* link;
    std::unique_ptr<NfsRequest> req;  // null: attach (`attach` set) or stop
    std::shared_ptr<NfsLink> attach;
  };
  struct Conn {
    std::shared_ptr<NfsLink> link;
    std::unique_ptr<NfsConn> conn;
  };

  NfsLoop(int event_fd, bool single, Starter start)
      : event_fd_(event_fd), single_(single), start_(std::move(start)) {}
  bool Push(NfsLink* link, std::unique_ptr<NfsRequest> r);
  void StopLink(NfsLink* link);
  void Wake();
  // Under mu_, by a pusher: whether the loop must be woken (it waits in
  // poll and no one woke it yet).
  bool TakeSleeper() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // On the loop's thread, before poll: false if something is queued (or
  // the loop stopped): poll must not wait. True: marked sleeping, so that
  // the next push wakes it; Awake after poll.
  bool Sleep();
  void Awake();
  // The queue into `*out` (empty), and whether the loop stopped.
  void Take(std::vector<Item>* out, bool* stop);
  // A single loop whose link stopped: refuses everything from now on.
  bool Retire();
  // On the loop's thread: one item taken from the queue.
  void Handle(Item& item, absl::Time now);
  Conn* Find(NfsLink* link);

  const int event_fd_;
  const bool single_;
  const Starter start_;
  std::atomic<int> links_{0};
  absl::Mutex mu_;
  std::vector<Item> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool attached_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool sleeping_ ABSL_GUARDED_BY(mu_) = false;  // in (or before) poll
  // The loop thread's only.
  std::vector<Conn> conns_;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_H_
