// File: io_threads.h
//
// IoThreads: a group of I/O threads whose file-system calls may never
// return (a read on a hung hard mount blocks until the server answers), and
// a teardown that does not wait for such calls.
//
// Thread code brackets each call that may block forever; between those
// calls it runs "owner code" that may use the owner's state:
//
//   if (!threads.BeginBlocking()) return;      // abandoned already
//   absl::StatusOr<size_t> r = fs->PRead(...);  // only what outlives us
//   if (!threads.EndBlocking()) return;         // abandoned: owner is gone
//   ... owner code: Finish(r), counters ...
//
// Shutdown(deadline), after the owner told its threads to stop, waits until
// every thread has returned or `deadline`; then it abandons the group:
// threads inside a bracketed call are detached (when the call returns,
// EndBlocking() returns false and the thread must drop what it holds and
// return without touching the owner), threads in owner code are waited for
// (owner code never blocks), and threads that returned are joined. So after
// Shutdown no thread of the group runs owner code again, and whatever a
// bracketed call uses (its buffers, its file system object, the state of
// this group) must outlive the group's threads: they keep it through the
// shared_ptrs that the function given to Start holds.
//
// A thread told that the group was abandoned (BeginBlocking or EndBlocking
// returned false) is leaving: Shutdown does not wait for it, so it may still
// block on its way out (e.g. wait for io_uring reads it started, whose
// buffers it must not free before they end), touching nothing of the owner.
// Brackets nest (only the outermost counts). Called from a thread outside
// the group they do nothing (BeginBlocking and EndBlocking return true).
// Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_IO_THREADS_H_
#define RANGEFS_CLIENT_LIB_IO_THREADS_H_

#include <functional>
#include <memory>

#include "absl/time/time.h"

namespace rangefs {
namespace client_internal {

class IoThreads {
 public:
  IoThreads();
  // Detaches any thread still running (a group is meant to be Shutdown
  // first; this may run on one of its own threads, which cannot be joined).
  ~IoThreads();
  IoThreads(const IoThreads&) = delete;
  IoThreads& operator=(const IoThreads&) = delete;

  // Starts a thread running `fn`. Returns false (and starts nothing) once
  // Shutdown has begun.
  bool Start(std::function<void()> fn);

  // In a thread of this group: before a call that may block forever.
  // Returns false if the group was abandoned (do not make the call).
  bool BeginBlocking();
  // After it. Returns false if the group was abandoned meanwhile: return
  // at once, touching nothing of the owner.
  bool EndBlocking();

  // Waits until every thread has returned, up to `deadline`; then abandons
  // the group (see above). Returns how many threads were left running
  // (detached). Call once, after telling the threads to stop.
  int Shutdown(absl::Time deadline);

  // Threads started and not yet returned.
  int running();
  bool abandoned();

 private:
  struct Entry;
  struct State;

  std::shared_ptr<State> state_;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_IO_THREADS_H_
