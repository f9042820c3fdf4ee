// The _rangefs extension module: the rangefs client library (client_lib/
// client.h) for Python. The package rangefs (rangefs/__init__.py) wraps it.
#include <pybind11/pybind11.h>

#include <cstdlib>
#include <cstring>

#include "absl/synchronization/mutex.h"
#include "python/src/bindings.h"
#include "python/src/log_forwarder.h"

PYBIND11_MODULE(_rangefs, m) {
  m.doc() =
      "rangefs client library binding (use the rangefs package, not this)";
  // Debian's Abseil is a debug build: every absl::Mutex lock runs deadlock
  // detection, ~20% of the CPU of small batched reads (client.h). A Python
  // process has no C++ main() to turn it off, as rangefs-bench's does, and
  // this module is the only user of that shared Abseil there (wheels such
  // as pyarrow's bring their own): off on import, unless
  // RANGEFS_ABSL_DEADLOCK_DETECTION=1 (to debug lock order).
  const char* keep = std::getenv("RANGEFS_ABSL_DEADLOCK_DETECTION");
  if (keep == nullptr || std::strcmp(keep, "1") != 0) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  rangefs::python::BindValues(m);
  rangefs::python::BindFile(m);
  rangefs::python::BindClient(m);
  rangefs::python::BindDataset(m);
  rangefs::python::BindConfig(m);
  rangefs::python::BindLogForwarding(m);
}
