#include "client_lib/internal/nfs_loop_pool.h"

#include <arpa/inet.h>

#include <algorithm>
#include <thread>
#include <utility>

namespace rangefs {
namespace client_internal {
namespace {

bool NumericHost(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

absl::Status Closing() {
  return absl::UnavailableError("NFS loops stopped (client closing)");
}

}  // namespace

int NfsEventLoops(int option) {
  if (option > 0) return option;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

NfsLoopPool::~NfsLoopPool() {
  absl::MutexLock l(&mu_);
  for (const auto& loop : loops_) loop->Stop();
  for (const auto& own : own_) {
    if (auto loop = own.lock()) loop->Stop();
  }
}

absl::StatusOr<std::shared_ptr<NfsLoop>> NfsLoopPool::StartLoop(bool single) {
  // Its thread starts with its first request, in this pool's group.
  return NfsLoop::Create(single, [this](std::shared_ptr<NfsLoop> loop) {
    return threads_.Start([loop = std::move(loop)] { loop->Run(); });
  });
}

absl::StatusOr<std::shared_ptr<NfsLink>> NfsLoopPool::Attach(NfsExport e,
                                                             std::string id) {
  absl::MutexLock l(&mu_);
  if (shut_) return Closing();
  std::shared_ptr<NfsLoop> best;
  if (!NumericHost(e.host)) {
    // Ends with its link (its thread returns): none piles up as exports
    // are replaced.
    own_.erase(std::remove_if(
                   own_.begin(), own_.end(),
                   [](const std::weak_ptr<NfsLoop>& w) { return w.expired(); }),
               own_.end());
    absl::StatusOr<std::shared_ptr<NfsLoop>> loop = StartLoop(/*single=*/true);
    if (!loop.ok()) return loop.status();
    best = *loop;
    own_.push_back(best);
  } else {
    for (const auto& loop : loops_) {
      if (best == nullptr || loop->links() < best->links()) best = loop;
    }
    if (best == nullptr || (best->links() >= kLinksPerLoop &&
                            static_cast<int>(loops_.size()) < max_loops_)) {
      absl::StatusOr<std::shared_ptr<NfsLoop>> loop = StartLoop(false);
      if (!loop.ok()) return loop.status();
      best = *loop;
      loops_.push_back(best);
    }
  }
  std::shared_ptr<NfsLink> link = best->Attach(std::move(e), std::move(id));
  if (link == nullptr) return Closing();
  return link;
}

void NfsLoopPool::Shutdown(absl::Time deadline) {
  {
    absl::MutexLock l(&mu_);
    if (shut_) return;
    shut_ = true;
    for (const auto& loop : loops_) loop->Stop();
    for (const auto& own : own_) {
      if (auto loop = own.lock()) loop->Stop();
    }
  }
  threads_.Shutdown(deadline);
}

int NfsLoopPool::loops() {
  absl::MutexLock l(&mu_);
  return static_cast<int>(loops_.size() + own_.size());
}

}  // namespace client_internal
}  // namespace rangefs
