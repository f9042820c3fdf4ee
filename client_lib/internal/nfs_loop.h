// File: internal/nfs_loop.h
//
// NfsLoop: the event loop of one NFS connection (NfsConn) to a storage
// node: one thread that polls the connection's socket and an eventfd,
// starts the requests other threads Submit, services libnfs, and fails
// requests at their deadlines. It never blocks except in poll, so Stop()
// ends it promptly even while its server hangs. Requests' `done` callbacks
// run on the loop's thread, never on a submitting thread: after Stop,
// Submit refuses (returns false) instead of answering. Thread-safe (Run on
// one thread).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/internal/nfs_conn.h"
#include "client_lib/internal/nfs_export.h"

namespace rangefs {
namespace client_internal {

class NfsLoop {
 public:
  static absl::StatusOr<std::unique_ptr<NfsLoop>> Create(NfsExport e,
                                                         std::string id);
  ~NfsLoop();

  // Starts `r` (any thread): queued for the loop, which is woken (from the
  // loop's own thread, a `done` starting the next read: queued with no
  // wake-up; sending from the submitting thread while the loop waited in
  // poll was tried and cost 27% of the 4 KiB random rate on a quiet
  // 2-core host, tests/bench/RESULTS.md). NfsRequest::refused: answered on the
  // loop's thread. Returns false once the loop is stopped: `r` is dropped, its
  // `done` never called. Submit never runs a `done` itself, so its caller may
  // hold locks that `done` takes (a read call's batch lock); a request accepted
  // before Stop is answered UNAVAILABLE by the loop's thread as it ends.
  [[nodiscard]] bool Submit(std::unique_ptr<NfsRequest> r);
  // The loop; returns after Stop, every request answered.
  void Run();
  void Stop();
  // Requests submitted and not answered yet.
  int64_t load() const { return load_.load(std::memory_order_relaxed); }
  // Contexts mounted so far (NfsConn::mounts), as of the last loop pass.
  int mounts() const { return mounts_.load(std::memory_order_relaxed); }

 private:
  NfsLoop(NfsExport e, std::string id, int event_fd);
  void Wake();
  std::vector<std::unique_ptr<NfsRequest>> Take(bool* stop);

  const NfsExport export_;
  const std::string id_;
  const int event_fd_;
  std::atomic<int64_t> load_{0};
  std::atomic<int> mounts_{0};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<NfsRequest>> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_H_
