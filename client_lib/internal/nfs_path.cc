// NodeRuntime's `nfs` data path: the node's NFS export (NfsNode), chosen
// by Submit (kNfs), Execute and RingStart (kAuto without a usable mount).
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "client_lib/internal/nfs_export.h"
#include "client_lib/internal/node_runtime.h"

namespace rangefs {
namespace client_internal {

void NodeRuntime::SetNfsExport(const v1::NfsExport& e) {
  std::shared_ptr<NfsNode> old;
  {
    absl::MutexLock l(&nfs_mu_);
    if (e.url() == nfs_url_ && e.version() == nfs_version_ &&
        e.refused() == nfs_refused_) {
      return;
    }
    nfs_url_ = e.url();
    nfs_version_ = e.version();
    nfs_refused_ = e.refused();
    old = std::move(nfs_);
    absl::Status why;
    if (!e.refused().empty()) {
      why = absl::InvalidArgumentError(e.refused());
    } else if (!e.url().empty()) {
      absl::StatusOr<NfsExport> x = ParseNfsExport(id_, e.url(), e.version());
      absl::StatusOr<std::shared_ptr<NfsNode>> n =
          x.ok() ? NfsNode::Create(id_, *x,
                                   client_->options().nfs_connections_per_node,
                                   client_->nfs_loops())
                 : x.status();
      if (n.ok()) {
        nfs_ = std::move(*n);
      } else {
        why = n.status();
      }
    }
    if (!why.ok()) {
      RANGEFS_LOG(WARNING) << "node " << id_ << ": NFS export refused: " << why
                           << "; the node is read through its agent";
    }
  }
  if (old != nullptr) old->Stop();
}

std::shared_ptr<NfsNode> NodeRuntime::nfs() {
  const DataPath mode = client_->options().data_path;
  if (mode != DataPath::kNfs && mode != DataPath::kAuto) return nullptr;
  absl::MutexLock l(&nfs_mu_);
  // A stopped node is never handed out: StartNfs re-dispatches a read it
  // refuses, which must not come back to it.
  if (nfs_ == nullptr || nfs_stopped_ || nfs_->stopped()) return nullptr;
  return nfs_;
}

void NodeRuntime::StartNfs(const std::shared_ptr<NfsNode>& nfs, Task t,
                           absl::Time t0) {
  Attempt* a = t.attempt;
  AttemptSink* b = t.call.get();
  if (b->Ended()) {
    CancelQueued(a, b);
    return;
  }
  const absl::Time now = client_->clock()->MonotonicNow();
  if (t0 == absl::InfinitePast()) {
    t0 = now;
    MarkStarted(a, t0);
  }
  counters_.nfs_reads.fetch_add(1);
  // The call's deadline (the client's monotonic clock) as wall time, and
  // never more than attempt_timeout: libnfs itself waits forever.
  const absl::Duration left =
      std::min(b->Deadline() - now, client_->options().attempt_timeout);
  NfsPiece piece{*a->object, a->object_offset, a->length, a->verify,
                 absl::Now() + left};
  // Shared with the read's `done`, so that a refused read keeps its task.
  auto held = std::make_shared<Task>(std::move(t));
  const bool started =
      nfs->Read(std::move(piece), [self = shared_from_this(), held, t0](
                                      const absl::StatusOr<size_t>& r,
                                      const char* out, bool checksum_failure) {
        // On the connection's thread, which may start the call's next
        // pieces (handing them to NFS connections only queues or sends
        // them).
        self->Finish(held->attempt, held->call.get(), r, out, checksum_failure,
                     t0, /*refill=*/true);
      });
  if (started) return;
  // The node was stopped since nfs() gave it out (its export replaced, the
  // client closing): its `done` never runs. Not answered here (this thread
  // may hold the call's lock, which Finish takes): dispatched again, to the
  // node's new export or (nfs() now null) its queue and agent.
  counters_.nfs_reads.fetch_sub(1);
  Submit(absl::MakeSpan(held.get(), 1));
}

}  // namespace client_internal
}  // namespace rangefs
