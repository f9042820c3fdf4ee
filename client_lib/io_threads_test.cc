#include "client_lib/io_threads.h"

#include <atomic>
#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

// Polls `done` up to `timeout`.
template <typename F>
bool Eventually(F done, absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time end = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// What a thread shares with the test; outlives the thread (shared_ptr).
struct Shared {
  absl::Notification release;  // ends the "blocking call"
  std::atomic<bool> call_started{false};
  std::atomic<int> owner_runs{0};  // owner code runs after the call
  std::atomic<bool> told_abandoned{false};
  std::atomic<bool> left{false};
};

TEST(IoThreadsTest, ThreadsThatReturnAreJoined) {
  IoThreads threads;
  auto stop = std::make_shared<absl::Notification>();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(threads.Start([stop] { stop->WaitForNotification(); }));
  }
  EXPECT_EQ(threads.running(), 4);
  stop->Notify();
  const absl::Time t0 = absl::Now();
  EXPECT_EQ(threads.Shutdown(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5));  // not the deadline
  EXPECT_EQ(threads.running(), 0);
  EXPECT_FALSE(threads.Start([] {}));  // after Shutdown
}

TEST(IoThreadsTest, BlockedThreadIsLeftAndNeverRunsOwnerCodeAgain) {
  auto threads = std::make_unique<IoThreads>();
  auto shared = std::make_shared<Shared>();
  IoThreads* group = threads.get();
  // The thread may use `group` only in owner code and around its calls; a
  // real owner keeps it alive through the thread's shared_ptr. Here the
  // test keeps `threads` until the thread has left.
  ASSERT_TRUE(threads->Start([group, shared] {
    for (;;) {
      if (!group->BeginBlocking()) return;
      shared->call_started = true;
      shared->release.WaitForNotification();  // "a read on a hung mount"
      if (!group->EndBlocking()) {
        shared->told_abandoned = true;
        shared->left = true;
        return;
      }
      shared->owner_runs++;
    }
  }));
  ASSERT_TRUE(Eventually([&] { return shared->call_started.load(); }));
  const absl::Time t0 = absl::Now();
  EXPECT_EQ(threads->Shutdown(t0 + absl::Milliseconds(100)), 1);
  const absl::Duration took = absl::Now() - t0;
  EXPECT_GE(took, absl::Milliseconds(100));
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_TRUE(threads->abandoned());
  // The call returns after the teardown: the thread only leaves.
  shared->release.Notify();
  ASSERT_TRUE(Eventually([&] { return shared->left.load(); }));
  EXPECT_TRUE(shared->told_abandoned);
  EXPECT_EQ(shared->owner_runs, 0);
  ASSERT_TRUE(Eventually([&] { return threads->running() == 0; }));
}

TEST(IoThreadsTest, ThreadInOwnerCodeIsWaitedForEvenPastTheDeadline) {
  IoThreads threads;
  auto shared = std::make_shared<Shared>();
  auto in_owner_code = std::make_shared<absl::Notification>();
  auto finish_owner_code = std::make_shared<absl::Notification>();
  IoThreads* group = &threads;
  ASSERT_TRUE(threads.Start([group, shared, in_owner_code, finish_owner_code] {
    if (!group->BeginBlocking()) return;
    if (!group->EndBlocking()) return;
    in_owner_code->Notify();
    finish_owner_code->WaitForNotification();
    shared->owner_runs++;
    // The next call: the group was abandoned meanwhile.
    if (!group->BeginBlocking()) {
      shared->told_abandoned = true;
      return;
    }
    group->EndBlocking();
  }));
  in_owner_code->WaitForNotification();
  std::atomic<bool> shut{false};
  std::thread teardown([&] {
    // The deadline has passed at once; the thread is told at its next
    // bracket, and then may or may not have returned (left: 0 or 1).
    EXPECT_LE(threads.Shutdown(absl::Now()), 1);
    shut = true;
  });
  absl::SleepFor(absl::Milliseconds(50));  // (only to show it still waits)
  EXPECT_FALSE(shut.load());
  finish_owner_code->Notify();
  teardown.join();
  EXPECT_EQ(shared->owner_runs, 1);  // finished before Shutdown returned
  EXPECT_TRUE(shared->told_abandoned);
}

TEST(IoThreadsTest, BracketsNestAndAreNoOpsOutsideTheGroup) {
  IoThreads threads;
  // Not a thread of the group: always true.
  EXPECT_TRUE(threads.BeginBlocking());
  EXPECT_TRUE(threads.EndBlocking());
  auto shared = std::make_shared<Shared>();
  IoThreads* group = &threads;
  ASSERT_TRUE(threads.Start([group, shared] {
    ASSERT_TRUE(group->BeginBlocking());
    ASSERT_TRUE(group->BeginBlocking());  // nested
    EXPECT_TRUE(group->EndBlocking());
    shared->call_started = true;
    shared->release.WaitForNotification();  // still inside the outer one
    if (!group->EndBlocking()) shared->told_abandoned = true;
    shared->left = true;
  }));
  ASSERT_TRUE(Eventually([&] { return shared->call_started.load(); }));
  EXPECT_EQ(threads.Shutdown(absl::Now() + absl::Milliseconds(20)), 1);
  shared->release.Notify();
  ASSERT_TRUE(Eventually([&] { return shared->left.load(); }));
  EXPECT_TRUE(shared->told_abandoned);
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
