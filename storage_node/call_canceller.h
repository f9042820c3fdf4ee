// File: call_canceller.h
//
// Lets another thread abort an in-flight NodeClient call (a hedge that
// lost, a deadline enforced by the caller), whichever transport it uses: a
// gRPC call (its ClientContext is cancelled) or a data-port read (its socket
// is shut down with shutdown(2), so blocked I/O on it returns at once).
//
//   CallCanceller c;
//   std::thread t([&] { nc->ReadRange(path, 0, buf, {.canceller = &c}); });
//   c.Cancel();  // The read returns CANCELLED promptly.
//
// Thread-safe. Cancel() before the call starts makes the call return
// CANCELLED at once. One call at a time may be attached.
#ifndef RANGEFS_STORAGE_NODE_CALL_CANCELLER_H_
#define RANGEFS_STORAGE_NODE_CALL_CANCELLER_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/client_context.h"

namespace rangefs {
namespace node {

class CallCanceller {
 public:
  void Cancel();
  bool cancelled();

  // Used by the calls: register `ctx` (gRPC) or socket `fd` (data port)
  // while the call runs; return false if already cancelled. The caller
  // must Detach before destroying `ctx` or closing `fd`.
  bool Attach(grpc::ClientContext* ctx);
  bool AttachFd(int fd);
  void Detach();

 private:
  absl::Mutex mu_;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_CALL_CANCELLER_H_
