#include "client_lib/io_threads.h"

#include <atomic>
#include <list>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/logging.h"

namespace rangefs {
namespace client_internal {

struct IoThreads::Entry {
  std::thread thread;  // moved out by Shutdown (joined or detached)
  int depth = 0;       // bracket nesting; the thread's own
  // Inside a bracketed call (or leaving after abandonment). Written by the
  // thread, read by Shutdown: seq_cst, paired with State::abandoned.
  std::atomic<bool> blocking{false};
  bool returned = false;  // its function returned; guarded by State::mu
};

struct IoThreads::State {
  absl::Mutex mu;
  std::list<Entry> entries ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;
  // Set once, by Shutdown (or the destructor). A thread stores `blocking`
  // before it loads `abandoned`, Shutdown stores `abandoned` before it
  // loads `blocking` (all seq_cst): a thread that finds the group not
  // abandoned when it leaves a call is seen by Shutdown as in owner code,
  // and waited for.
  std::atomic<bool> abandoned{false};
};

namespace {

// The group and entry of the calling thread (null outside any group).
thread_local const void* t_group = nullptr;
thread_local void* t_entry = nullptr;

}  // namespace

IoThreads::IoThreads() : state_(std::make_shared<State>()) {}

IoThreads::~IoThreads() {
  absl::MutexLock l(&state_->mu);
  state_->stopping = true;
  state_->abandoned.store(true);
  for (Entry& e : state_->entries) {
    if (e.thread.joinable()) e.thread.detach();
  }
}

bool IoThreads::Start(std::function<void()> fn) {
  absl::MutexLock l(&state_->mu);
  if (state_->stopping) return false;
  state_->entries.emplace_back();
  Entry* e = &state_->entries.back();
  std::shared_ptr<State> s = state_;
  e->thread = std::thread([s, e, fn = std::move(fn)]() mutable {
    t_group = s.get();
    t_entry = e;
    fn();
    fn = nullptr;  // drops what the function held before we count as gone
    absl::MutexLock l(&s->mu);
    e->returned = true;
  });
  return true;
}

bool IoThreads::BeginBlocking() {
  if (t_group != state_.get()) return true;
  Entry* e = static_cast<Entry*>(t_entry);
  if (e->depth++ > 0) return true;
  // From here on Shutdown need not wait for us; if the group was abandoned
  // we only leave (and may block doing so: Shutdown must not wait).
  e->blocking.store(true);
  return !state_->abandoned.load();
}

bool IoThreads::EndBlocking() {
  if (t_group != state_.get()) return true;
  Entry* e = static_cast<Entry*>(t_entry);
  if (--e->depth > 0) return true;
  e->blocking.store(false);
  if (state_->abandoned.load()) {
    e->blocking.store(true);  // we only leave: Shutdown need not wait
    return false;
  }
  return true;
}

int IoThreads::Shutdown(absl::Time deadline) {
  State* s = state_.get();
  std::vector<std::thread> join, detach;
  s->mu.Lock();
  s->stopping = true;
  s->mu.AwaitWithDeadline(absl::Condition(
                              +[](State* st) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                for (const Entry& e : st->entries) {
                                  if (!e.returned) return false;
                                }
                                return true;
                              },
                              s),
                          deadline);
  s->abandoned.store(true);
  // Threads in owner code get to a bracketed call or return soon: owner
  // code never blocks. Their `blocking` is not under the mutex: poll.
  // A thread that stays in owner code breaks that rule (a blocking call
  // left out of a bracket): say so once, loudly, rather than hang quietly.
  const absl::Time warn_at = absl::Now() + absl::Seconds(5);
  bool warned = false;
  for (;;) {
    int in_owner_code = 0;
    for (const Entry& e : s->entries) {
      if (!e.returned && !e.blocking.load()) ++in_owner_code;
    }
    if (in_owner_code == 0) break;
    if (!warned && absl::Now() > warn_at) {
      warned = true;
      RANGEFS_LOG(ERROR) << "I/O teardown: " << in_owner_code
                         << " thread(s) still outside a blocking bracket "
                            "after 5 s (an unbracketed call that blocks)";
    }
    s->mu.Unlock();
    absl::SleepFor(absl::Microseconds(200));
    s->mu.Lock();
  }
  for (Entry& e : s->entries) {
    if (!e.thread.joinable()) continue;
    (e.returned ? join : detach).push_back(std::move(e.thread));
  }
  s->mu.Unlock();
  for (std::thread& t : join) t.join();
  for (std::thread& t : detach) t.detach();
  return static_cast<int>(detach.size());
}

int IoThreads::running() {
  absl::MutexLock l(&state_->mu);
  int n = 0;
  for (const Entry& e : state_->entries) n += e.returned ? 0 : 1;
  return n;
}

bool IoThreads::abandoned() { return state_->abandoned.load(); }

}  // namespace client_internal
}  // namespace rangefs
