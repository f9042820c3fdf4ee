#include "python/src/errors.h"

#include <string>

namespace py = pybind11;

namespace rangefs {
namespace python {

py::object ErrorFromStatus(const absl::Status& status) {
  py::module_ errors = py::module_::import("rangefs.errors");
  return errors.attr("from_status")(static_cast<int>(status.code()),
                                    std::string(status.message()));
}

void ThrowStatus(const absl::Status& status) {
  py::object e = ErrorFromStatus(status);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
  throw py::error_already_set();
}

}  // namespace python
}  // namespace rangefs
