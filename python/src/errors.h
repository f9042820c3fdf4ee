// File: python/src/errors.h
//
// absl::Status -> Python exceptions, in one place. The exception classes
// and the code -> class table live in Python (rangefs/errors.py); C++ asks
// its from_status(code, message) for the instance.
#ifndef RANGEFS_PYTHON_SRC_ERRORS_H_
#define RANGEFS_PYTHON_SRC_ERRORS_H_

#include <pybind11/pybind11.h>

#include "absl/status/status.h"

namespace rangefs {
namespace python {

// The exception instance for a non-OK `status` (GIL held).
pybind11::object ErrorFromStatus(const absl::Status& status);

// Raises ErrorFromStatus(status) in Python (GIL held).
[[noreturn]] void ThrowStatus(const absl::Status& status);

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_ERRORS_H_
