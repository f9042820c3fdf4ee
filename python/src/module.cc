// The _rangefs extension module: the rangefs client library (client_lib/
// client.h) for Python. The package rangefs (rangefs/__init__.py) wraps it.
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"

PYBIND11_MODULE(_rangefs, m) {
  m.doc() =
      "rangefs client library binding (use the rangefs package, not this)";
  rangefs::python::BindValues(m);
  rangefs::python::BindFile(m);
  rangefs::python::BindClient(m);
  rangefs::python::BindDataset(m);
}
