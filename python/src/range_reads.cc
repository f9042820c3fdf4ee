#include "python/src/range_reads.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "python/src/errors.h"

namespace py = pybind11;

namespace rangefs {
namespace python {

py::object NewBytes(size_t n, absl::Span<char>* memory) {
  PyObject* b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n));
  if (b == nullptr) throw py::error_already_set();
  *memory = absl::MakeSpan(PyBytes_AS_STRING(b), n);
  return py::reinterpret_steal<py::object>(b);
}

py::list RangeResults(std::vector<py::object>& bufs,
                      const std::vector<absl::StatusOr<size_t>>& results) {
  py::list out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      out[i] = ErrorFromStatus(results[i].status());
      continue;
    }
    py::object b = std::move(bufs[i]);
    const Py_ssize_t n = static_cast<Py_ssize_t>(*results[i]);
    if (n != PyBytes_GET_SIZE(b.ptr())) {
      // Short at end of file. Only we hold b: resizing in place is allowed.
      PyObject* raw = b.release().ptr();
      if (_PyBytes_Resize(&raw, n) != 0) throw py::error_already_set();
      b = py::reinterpret_steal<py::object>(raw);
    }
    out[i] = std::move(b);
  }
  return out;
}

uint64_t NonNegative(int64_t v, const char* what) {
  if (v < 0) {
    throw py::value_error(absl::StrCat(what, " must be >= 0, got ", v));
  }
  return static_cast<uint64_t>(v);
}

ReadOptions RangeReadOptions(std::optional<int64_t> max_in_flight) {
  ReadOptions o;
  if (max_in_flight.has_value()) {
    const uint64_t n = NonNegative(*max_in_flight, "max_in_flight");
    if (n > static_cast<uint64_t>(INT32_MAX)) {
      throw py::value_error(
          absl::StrCat("max_in_flight must be at most ", INT32_MAX));
    }
    o.max_in_flight = static_cast<int>(n);
  }
  return o;
}

}  // namespace python
}  // namespace rangefs
