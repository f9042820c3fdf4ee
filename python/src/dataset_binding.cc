// The _Dataset class: a rangefs::Dataset (client_lib/dataset.h) for
// Python, made by _Client.open_dataset. Listing, stating and opening work
// from memory (no etcd); reads wait on storage nodes with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client_lib/dataset.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/handles.h"
#include "python/src/path_reads.h"
#include "python/src/range_reads.h"

namespace py = pybind11;

namespace rangefs {
namespace python {
namespace {

using Client_ = std::shared_ptr<ClientHandle>;
using Dataset_ = std::shared_ptr<DatasetHandle>;

template <typename T>
T ValueOrThrow(absl::StatusOr<T> v) {
  if (!v.ok()) ThrowStatus(v.status());
  return std::move(*v);
}

// Blocks on etcd (paged reads at one revision): GIL released.
Dataset_ OpenDataset(const Client_& self, const std::string& dir,
                     std::optional<int64_t> revision) {
  const int64_t at =
      revision.has_value()
          ? static_cast<int64_t>(NonNegative(*revision, "revision"))
          : 0;
  absl::StatusOr<std::unique_ptr<Dataset>> d;
  {
    py::gil_scoped_release release;
    d = self->client->OpenDataset(dir, at);
  }
  return std::make_shared<DatasetHandle>(self, ValueOrThrow(std::move(d)));
}

// From memory, but a large dataset's listing takes a while: GIL released.
std::vector<FileInfo> List(const Dataset_& self, const std::string& dir) {
  absl::StatusOr<std::vector<FileInfo>> files;
  {
    py::gil_scoped_release release;
    files = self->dataset->List(dir);
  }
  return ValueOrThrow(std::move(files));
}

FileInfo Stat(const Dataset_& self, const std::string& path) {
  return ValueOrThrow(self->dataset->Stat(path));
}

std::shared_ptr<FileHandle> OpenFile(const Dataset_& self,
                                     const std::string& path) {
  absl::StatusOr<std::unique_ptr<File>> f = self->dataset->OpenFile(path);
  return std::make_shared<FileHandle>(self->owner, ValueOrThrow(std::move(f)));
}

py::list ReadRanges(const Dataset_& self, py::handle ranges,
                    std::optional<int64_t> max_in_flight) {
  const ReadOptions options = RangeReadOptions(max_in_flight);
  const Dataset& d = *self->dataset;
  return ReadPathRanges(
      *self->owner->client, self->files,
      [&d](const std::string& path) { return d.OpenFile(path); }, ranges,
      options);
}

}  // namespace

void BindDataset(py::module_& m) {
  py::class_<DatasetHandle, Dataset_>(m, "_Dataset",
                                      "rangefs::Dataset (see rangefs.Dataset).")
      .def_property_readonly(
          "dir", [](const DatasetHandle& d) { return d.dataset->dir(); })
      .def_property_readonly(
          "revision",
          [](const DatasetHandle& d) { return d.dataset->revision(); })
      .def_property_readonly(
          "file_count",
          [](const DatasetHandle& d) { return d.dataset->file_count(); })
      .def_property_readonly(
          "bytes",
          [](const DatasetHandle& d) { return d.dataset->total_bytes(); })
      .def_property_readonly(
          "invalid_count",
          [](const DatasetHandle& d) { return d.dataset->invalid_count(); })
      .def("ls", &List, py::arg("dir"))
      .def("stat", &Stat, py::arg("path"))
      .def("open", &OpenFile, py::arg("path"))
      .def("read_ranges", &ReadRanges, py::arg("ranges"),
           py::arg("max_in_flight") = py::none());
  // A method of _Client (client_binding.cc), defined here with its type.
  py::class_<ClientHandle, Client_> client = m.attr("_Client");
  client.def("open_dataset", &OpenDataset, py::arg("dir"),
             py::arg("revision") = py::none());
}

}  // namespace python
}  // namespace rangefs
