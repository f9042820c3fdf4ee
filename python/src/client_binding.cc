// The _Client class: rangefs::Client for Python. Every call that may wait
// (etcd, nodes) runs with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client_lib/client.h"
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

template <typename T>
T ValueOrThrow(absl::StatusOr<T> v) {
  if (!v.ok()) ThrowStatus(v.status());
  return std::move(*v);
}

Client_ Open(const std::string& etcd, const std::string& cluster,
             const py::dict& options) {
  absl::StatusOr<ClientOptions> o = ParseOptions(etcd, cluster, options);
  if (!o.ok()) ThrowStatus(o.status());
  absl::StatusOr<std::unique_ptr<Client>> c;
  {
    py::gil_scoped_release release;
    c = Client::Open(*o);
  }
  auto h = std::make_shared<ClientHandle>();
  h->client = ValueOrThrow(std::move(c));
  return h;
}

std::shared_ptr<FileHandle> OpenFile(const Client_& self,
                                     const std::string& path,
                                     std::optional<int64_t> revision) {
  absl::StatusOr<std::unique_ptr<File>> f;
  {
    py::gil_scoped_release release;
    f = revision.has_value() ? self->client->OpenFile(path, *revision)
                             : self->client->OpenFile(path);
  }
  return std::make_shared<FileHandle>(self, ValueOrThrow(std::move(f)));
}

FileInfo Stat(const Client_& self, const std::string& path) {
  absl::StatusOr<FileInfo> info;
  {
    py::gil_scoped_release release;
    info = self->client->Stat(path);
  }
  return ValueOrThrow(std::move(info));
}

std::vector<FileInfo> List(const Client_& self, const std::string& dir) {
  absl::StatusOr<std::vector<FileInfo>> files;
  {
    py::gil_scoped_release release;
    files = self->client->List(dir);
  }
  return ValueOrThrow(std::move(files));
}

py::list ReadRanges(const Client_& self, py::handle ranges,
                    std::optional<int64_t> max_in_flight) {
  const ReadOptions options = RangeReadOptions(max_in_flight);
  Client& client = *self->client;
  return ReadPathRanges(
      client, self->files,
      [&client](const std::string& path) { return client.OpenFile(path); },
      ranges, options);
}

std::vector<RangeLocation> Locate(const Client_& self, const std::string& path,
                                  int64_t offset,
                                  std::optional<int64_t> length) {
  const uint64_t at = NonNegative(offset, "offset");
  const uint64_t len =
      length.has_value() ? NonNegative(*length, "length") : UINT64_MAX;
  absl::StatusOr<std::vector<RangeLocation>> where;
  {
    py::gil_scoped_release release;
    where = self->client->Locate(path, at, len);
  }
  return ValueOrThrow(std::move(where));
}

py::dict Stats(const Client_& self) {
  ClientStats s;
  {
    py::gil_scoped_release release;
    s = self->client->Stats();
  }
  return StatsToDict(s);
}

}  // namespace

void BindClient(py::module_& m) {
  py::class_<ClientHandle, Client_>(m, "_Client",
                                    "rangefs::Client (see rangefs.Client).")
      .def(py::init(&Open), py::arg("etcd"), py::arg("cluster"),
           py::arg("options"))
      .def("open", &OpenFile, py::arg("path"), py::arg("revision") = py::none())
      .def("stat", &Stat, py::arg("path"))
      .def("ls", &List, py::arg("dir"))
      .def("read_ranges", &ReadRanges, py::arg("ranges"),
           py::arg("max_in_flight") = py::none())
      .def("locate", &Locate, py::arg("path"), py::arg("offset") = 0,
           py::arg("length") = py::none())
      .def("stats", &Stats)
      .def("prometheus_text", [](const Client_& self) {
        std::string text;
        {
          py::gil_scoped_release release;
          text = self->client->PrometheusText();
        }
        return text;
      });
}

}  // namespace python
}  // namespace rangefs
