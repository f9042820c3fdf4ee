// File: base/sigbus_guard.h
//
// Reading a memory-mapped file whose pages can vanish: a page past the
// file's end (the file was truncated after it was mapped) raises SIGBUS on
// the thread that touches it, which kills the process. RunCatchingSigbus
// runs a function so that such a fault ends the function instead: it
// returns false, and the process goes on.
//
//   const bool ok = RunCatchingSigbus([&] { sum = Crc32cExtend(0, map, n); });
//   if (!ok) return absl::DataLossError("the object shrank while read");
//
// The function is cut off where it faulted, with no unwinding: it must
// hold nothing that needs releasing (no locks, no allocations, no objects
// with destructors started inside it) where it may touch the mapping, and
// must not throw. Plain computation over buffers (a decode, a checksum, a
// copy) is fine. Only a fault ends it: a SIGBUS sent by kill(2) goes on as
// below.
//
// The first call installs a process-wide SIGBUS handler (SA_NODEFER,
// SA_ONSTACK); a SIGBUS on a thread outside RunCatchingSigbus (or sent,
// not a fault) goes to the handler that was there before (the default: the
// process dies by SIGBUS, as without this unit). A handler installed later by
// someone else replaces this one: then a fault inside RunCatchingSigbus goes to
// theirs. Thread-safe; nests (an inner call catches its own faults).
#ifndef RANGEFS_BASE_SIGBUS_GUARD_H_
#define RANGEFS_BASE_SIGBUS_GUARD_H_

#include "absl/functional/function_ref.h"

namespace rangefs {

// Runs fn; false if a SIGBUS on this thread cut it off.
bool RunCatchingSigbus(absl::FunctionRef<void()> fn);

}  // namespace rangefs

#endif  // RANGEFS_BASE_SIGBUS_GUARD_H_
