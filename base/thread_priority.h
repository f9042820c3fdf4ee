// File: thread_priority.h
//
// CPU priority of the calling thread, for background work (copies between
// agents) that must leave the CPU to readers when both want it:
//
//   std::thread([] {
//     if (absl::Status s = LowerThreadPriority(10); !s.ok()) LOG(...) << s;
//     CopyTheObject();  // Threads started from here inherit nice 10.
//   });
//
// On Linux the nice value belongs to the thread, not the process, and a
// thread started later inherits its creator's. Lowering needs no privilege;
// raising it back would (CAP_SYS_NICE), so a lowered thread stays lowered:
// lower only threads that do nothing but background work until they exit.
// Thread-safe.
#ifndef RANGEFS_BASE_THREAD_PRIORITY_H_
#define RANGEFS_BASE_THREAD_PRIORITY_H_

#include "absl/status/status.h"

namespace rangefs {

// The nice values a thread may take (POSIX: lower runs first).
inline constexpr int kMinNice = -20;
inline constexpr int kMaxNice = 19;

// Sets the calling thread's nice value to `nice` unless it is already at
// `nice` or above (lower priority). INVALID_ARGUMENT outside [0, kMaxNice];
// the setpriority(2) error otherwise.
absl::Status LowerThreadPriority(int nice);

// The calling thread's nice value.
int ThreadNice();

}  // namespace rangefs

#endif  // RANGEFS_BASE_THREAD_PRIORITY_H_
