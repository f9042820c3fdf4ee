// _read_config(path): the shared config file (base/config.h) for Python's
// Client(config=...). Parsed and validated by the same code as every
// binary's (unknown keys, repeated keys and unreadable files are errors
// naming the file and line).
#include <pybind11/pybind11.h>

#include <string>

#include "absl/status/statusor.h"
#include "base/config.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"

namespace py = pybind11;

namespace rangefs {
namespace python {

void BindConfig(py::module_& m) {
  m.def(
      "_read_config",
      [](const std::string& path) {
        absl::StatusOr<Config> c = LoadConfig(path);
        if (!c.ok()) ThrowStatus(c.status());
        py::dict out;
        for (const ConfigKey& k : KnownConfigKeys()) {
          if (c->Has(k.name)) out[k.name] = c->GetString(k.name);
        }
        return out;
      },
      py::arg("path"),
      "The keys the config file at `path` sets, as strings (base/config.h).");
}

}  // namespace python
}  // namespace rangefs
