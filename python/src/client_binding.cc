// The _Client class: rangefs::Client for Python. Every call that may wait
// (etcd, nodes) runs with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "client_lib/client.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/handles.h"
#include "python/src/path_ranges.h"
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

// One Client::ReadV over the files of `ranges`, kept open between calls
// (FileCache); a range whose file cannot be opened gets that error. Ranges
// of a kept File that was replaced meanwhile (ABORTED) are read once more
// from the file reopened.
py::list ReadRanges(const Client_& self, py::handle ranges) {
  const PathRanges r = ParsePathRanges(ranges);
  const size_t n = r.path_of.size();
  std::vector<size_t> pending(n);
  for (size_t i = 0; i < n; ++i) pending[i] = i;
  std::vector<py::object> bufs(n);
  std::vector<absl::StatusOr<size_t>> results(n);
  // Per path: its File now, and the File that said ABORTED.
  std::vector<absl::StatusOr<std::shared_ptr<File>>> files(r.paths.size());
  std::vector<const File*> stale(r.paths.size(), nullptr);
  for (int attempt = 0; attempt < 2 && !pending.empty(); ++attempt) {
    {
      py::gil_scoped_release release;
      for (size_t p = 0; p < r.paths.size(); ++p) {
        if (attempt == 0) {
          files[p] = self->files.Get(*self->client, r.paths[p]);
        } else if (stale[p] != nullptr) {
          files[p] = self->files.Refresh(*self->client, r.paths[p], stale[p]);
        }
      }
    }
    std::vector<FileReadRange> reqs;
    std::vector<size_t> index;  // reqs[k] is for range index[k]
    reqs.reserve(pending.size());
    index.reserve(pending.size());
    for (size_t i : pending) {
      const auto& f = files[r.path_of[i]];
      if (!f.ok()) {
        results[i] = f.status();
        continue;
      }
      const uint64_t size = (*f)->size();
      const uint64_t off = r.offsets[i];
      const uint64_t len = off > size ? 0 : std::min(r.lengths[i], size - off);
      FileReadRange q{.file = f->get(), .offset = off};
      bufs[i] = NewBytes(len, &q.dst);
      reqs.push_back(q);
      index.push_back(i);
    }
    std::vector<absl::StatusOr<size_t>> got;
    {
      py::gil_scoped_release release;
      got = self->client->ReadV(reqs);
    }
    pending.clear();
    std::fill(stale.begin(), stale.end(), nullptr);
    for (size_t k = 0; k < got.size(); ++k) {
      results[index[k]] = got[k];
      if (attempt == 0 && !got[k].ok() &&
          got[k].status().code() == absl::StatusCode::kAborted) {
        pending.push_back(index[k]);
        stale[r.path_of[index[k]]] = reqs[k].file;
      }
    }
  }
  {
    py::gil_scoped_release release;
    files.clear();  // shared with the cache: usually not the last owner
  }
  return RangeResults(bufs, results);
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
      .def("read_ranges", &ReadRanges, py::arg("ranges"))
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
