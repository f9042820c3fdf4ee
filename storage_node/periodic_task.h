// File: periodic_task.h
//
// Runs a function now and then every `interval` on a thread of its own,
// until the PeriodicTask is destroyed. The agent uses it to repeat the
// --insecure warning every minute.
//
//   PeriodicTask warn(absl::Minutes(1), [] { RANGEFS_LOG(WARNING) << "..."; });
//   ...                       // ~PeriodicTask stops it at once
//
// The destructor wakes the thread and joins it without waiting out the
// interval (at most one run of `fn` in progress is waited for). `fn` runs
// on the task's thread, never under a lock of the caller. Thread-safe.
#ifndef RANGEFS_STORAGE_NODE_PERIODIC_TASK_H_
#define RANGEFS_STORAGE_NODE_PERIODIC_TASK_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rangefs {
namespace node {

class PeriodicTask {
 public:
  // `interval` must be positive; `fn` must not be empty.
  PeriodicTask(absl::Duration interval, std::function<void()> fn);
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;
  ~PeriodicTask();

 private:
  void Loop();

  const absl::Duration interval_;
  const std::function<void()> fn_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // Last: starts after the fields above exist.
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_PERIODIC_TASK_H_
