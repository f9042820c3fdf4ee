// File: read_batcher.h
//
// Group commit for small reads: concurrent requests from many FUSE worker
// threads become one Client::ReadV batch, so the library's per-call costs
// (a ring submission and a wake-up per call) are paid once per batch, as
// a job calling ReadV with 32 ranges pays them. Without concurrency a read
// is a batch of one, run at once on the calling thread: no added latency.
//
//   ReadBatcher b(client, {.max_batch = 32});
//   b.Submit({file, offset, size, [](absl::StatusOr<size_t> n,
//                                    const char* bytes) { /* reply */ }});
//
// Submit enqueues the request; if fewer than `max_leaders` threads are
// running batches, the caller becomes one and runs batches (its own request
// among them) until the queue is empty; otherwise it returns at once and a
// running leader completes the request. `done` is called exactly once, on
// some submitting thread, with the count read (or the error) and the bytes
// (valid only during the call). Thread-safe. `client` is not owned; every
// File must outlive its requests' completion.
#ifndef RANGEFS_MOUNT_READ_BATCHER_H_
#define RANGEFS_MOUNT_READ_BATCHER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/client.h"

namespace rangefs {
namespace mount {

struct ReadBatcherOptions {
  size_t max_batch = 32;  // requests per ReadV
  int max_leaders = 4;    // threads running batches at once
  ReadOptions read;
};

struct BatchedRead {
  File* file = nullptr;  // not owned
  uint64_t offset = 0;
  size_t size = 0;
  std::function<void(absl::StatusOr<size_t>, const char*)> done;
};

class ReadBatcher {
 public:
  ReadBatcher(Client* client, ReadBatcherOptions options);
  ReadBatcher(const ReadBatcher&) = delete;
  ReadBatcher& operator=(const ReadBatcher&) = delete;

  void Submit(BatchedRead read);

  uint64_t batches() const;
  uint64_t requests() const;

 private:
  void RunBatch(std::deque<BatchedRead>& batch);

  Client* const client_;
  const ReadBatcherOptions options_;
  mutable absl::Mutex mu_;
  std::deque<BatchedRead> queue_ ABSL_GUARDED_BY(mu_);
  int leaders_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_READ_BATCHER_H_
