// File: python/src/log_forwarder.h
//
// Forwards the client library's log lines (base/logging.h) to Python's
// `logging` (rangefs/_logging.py installs it on import). The sink only
// queues a line: it runs on library threads, maybe under their locks, so it
// never waits for the GIL there. One forwarding thread takes the GIL and
// calls the Python callable with (level, file, line, message, unix_time)
// per line; it holds no other lock meanwhile. At most kMaxQueued lines
// wait; beyond that lines are dropped and counted, and the next forwarded
// line says so.
#ifndef RANGEFS_PYTHON_SRC_LOG_FORWARDER_H_
#define RANGEFS_PYTHON_SRC_LOG_FORWARDER_H_

#include <pybind11/pybind11.h>

namespace rangefs {
namespace python {

// _start_log_forwarding(emit) and _stop_log_forwarding() (the package
// calls the second at exit: the thread must end before the interpreter).
void BindLogForwarding(pybind11::module_& m);

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_LOG_FORWARDER_H_
