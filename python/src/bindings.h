// File: python/src/bindings.h
//
// The parts of the _rangefs extension module, one per file; module.cc
// calls them in order (values first: the others return them).
#ifndef RANGEFS_PYTHON_SRC_BINDINGS_H_
#define RANGEFS_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <string>

#include "absl/status/statusor.h"
#include "client_lib/options.h"
#include "client_lib/stats.h"

namespace rangefs {
namespace python {

// FileInfo, RangeLocation, ReplicaLocation (values_binding.cc).
void BindValues(pybind11::module_& m);
// ClientStats as nested dicts and lists (values_binding.cc).
pybind11::dict StatsToDict(const ClientStats& s);
// The _File class (file_binding.cc).
void BindFile(pybind11::module_& m);
// The _Client class (client_binding.cc).
void BindClient(pybind11::module_& m);
// The _Dataset class, and _Client.open_dataset (dataset_binding.cc; after
// BindClient).
void BindDataset(pybind11::module_& m);

// _read_config: the shared config file's keys (config_binding.cc).
void BindConfig(pybind11::module_& m);

// ClientOptions from Python keyword options (options.cc): etcd endpoints,
// cluster, then the names of ClientOptions fields (durations in seconds,
// enums as lower-case names). INVALID_ARGUMENT names an unknown key or a
// bad value.
absl::StatusOr<ClientOptions> ParseOptions(const std::string& etcd,
                                           const std::string& cluster,
                                           const pybind11::dict& options);

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_BINDINGS_H_
