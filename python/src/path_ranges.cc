#include "python/src/path_ranges.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "python/src/range_reads.h"

namespace py = pybind11;

namespace rangefs {
namespace python {
namespace {

int64_t IntItem(PyObject* o) {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<int64_t>(v);
}

}  // namespace

PathRanges ParsePathRanges(py::handle ranges) {
  py::object seq = py::reinterpret_steal<py::object>(PySequence_Fast(
      ranges.ptr(), "read_ranges needs a sequence of (path, offset, length)"));
  if (!seq) throw py::error_already_set();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  PathRanges out;
  out.path_of.resize(n);
  out.offsets.resize(n);
  out.lengths.resize(n);
  // Keeps every range (and so its path str, which the keys below point
  // into) alive while parsing, even ranges made on the fly.
  std::vector<py::object> keep;
  keep.reserve(n);
  absl::flat_hash_map<absl::string_view, size_t> index;
  PyObject* last = nullptr;  // consecutive ranges often share a str object
  size_t last_index = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    py::object item = py::reinterpret_steal<py::object>(
        PySequence_Fast(items[i], "a range is (path, offset, length)"));
    if (!item) throw py::error_already_set();
    keep.push_back(item);
    if (PySequence_Fast_GET_SIZE(item.ptr()) != 3) {
      throw py::type_error("a range is (path, offset, length)");
    }
    PyObject** f = PySequence_Fast_ITEMS(item.ptr());
    if (f[0] == last) {
      out.path_of[i] = last_index;
    } else {
      Py_ssize_t len = 0;
      const char* s = PyUnicode_AsUTF8AndSize(f[0], &len);
      if (s == nullptr) throw py::error_already_set();  // not a str
      const absl::string_view path(s, static_cast<size_t>(len));
      auto it = index.find(path);
      if (it == index.end()) {
        out.paths.emplace_back(path);
        it = index.emplace(path, out.paths.size() - 1).first;
      }
      last = f[0];
      last_index = it->second;
      out.path_of[i] = last_index;
    }
    out.offsets[i] = NonNegative(IntItem(f[1]), "offset");
    out.lengths[i] = NonNegative(IntItem(f[2]), "length");
  }
  return out;
}

}  // namespace python
}  // namespace rangefs
