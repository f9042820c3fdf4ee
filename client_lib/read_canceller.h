// File: read_canceller.h
//
// ReadCanceller: cuts reads short from another thread. A call given one in
// ReadOptions::canceller returns soon after Cancel() (within milliseconds,
// whatever its reads are blocked in), with CANCELLED for each range it had
// not completed; its reads still in flight are abandoned as on a deadline:
// they never write the caller's buffers after the call returns.
//
//   ReadCanceller stop;
//   std::thread t([&] {
//     auto n = file->Read(0, absl::MakeSpan(buf), {.canceller = &stop});
//   });
//   stop.Cancel();  // t's Read returns CANCELLED soon, if still running
//   t.join();
//
// Cancelling is final: a cancelled ReadCanceller cancels every later call
// at once. Thread-safe. Must outlive the calls it is given to.
#ifndef RANGEFS_CLIENT_LIB_READ_CANCELLER_H_
#define RANGEFS_CLIENT_LIB_READ_CANCELLER_H_

#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace rangefs {

namespace client_internal {
class CancelHook;
}  // namespace client_internal

class ReadCanceller {
 public:
  ReadCanceller() = default;
  ReadCanceller(const ReadCanceller&) = delete;
  ReadCanceller& operator=(const ReadCanceller&) = delete;

  void Cancel();
  bool cancelled() const;

 private:
  friend class client_internal::CancelHook;
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<client_internal::CancelHook*> hooks_ ABSL_GUARDED_BY(mu_);
};

namespace client_internal {

// For the client's engine: runs `on_cancel` once when `canceller` (may be
// null) is cancelled while this object lives, or at once from the
// constructor if it already is. `on_cancel` runs under the canceller's lock:
// it must not block. The destructor waits for a run in progress.
class CancelHook {
 public:
  CancelHook(ReadCanceller* canceller, std::function<void()> on_cancel);
  ~CancelHook();
  CancelHook(const CancelHook&) = delete;
  CancelHook& operator=(const CancelHook&) = delete;

 private:
  friend class ::rangefs::ReadCanceller;
  ReadCanceller* const canceller_;
  const std::function<void()> on_cancel_;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_READ_CANCELLER_H_
