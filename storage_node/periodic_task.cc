#include "storage_node/periodic_task.h"

#include <utility>

namespace rangefs {
namespace node {

PeriodicTask::PeriodicTask(absl::Duration interval, std::function<void()> fn)
    : interval_(interval), fn_(std::move(fn)), thread_([this] { Loop(); }) {}

PeriodicTask::~PeriodicTask() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void PeriodicTask::Loop() {
  while (true) {
    fn_();
    absl::MutexLock l(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stop_), interval_);
    if (stop_) return;
  }
}

}  // namespace node
}  // namespace rangefs
