// The _File class: an open rangefs file, read at offsets with the GIL
// released (rangefs.RangefsFile adds the io.RawIOBase position on top).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "client_lib/file.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/handles.h"
#include "python/src/range_reads.h"
#include "python/src/writable_buffer.h"

namespace py = pybind11;

namespace rangefs {
namespace python {
namespace {

// Reads at `offset` straight into the caller's buffer; the count.
size_t PreadInto(FileHandle& f, int64_t offset, py::handle buffer) {
  const uint64_t at = NonNegative(offset, "offset");
  WritableBuffer dst(buffer);
  absl::StatusOr<size_t> n;
  {
    py::gil_scoped_release release;
    n = f.file->Read(at, dst.span());
  }
  if (!n.ok()) ThrowStatus(n.status());
  return *n;
}

py::object Pread(FileHandle& f, int64_t offset, int64_t length) {
  const uint64_t at = NonNegative(offset, "offset");
  uint64_t len = NonNegative(length, "length");
  // Never allocate past the end (a huge length reads to the end).
  len = at > f.file->size() ? 0 : std::min(len, f.file->size() - at);
  std::vector<py::object> bufs(1);
  absl::Span<char> memory;
  bufs[0] = NewBytes(len, &memory);
  std::vector<absl::StatusOr<size_t>> n(1);
  {
    py::gil_scoped_release release;
    n[0] = f.file->Read(at, memory);
  }
  if (!n[0].ok()) ThrowStatus(n[0].status());
  return RangeResults(bufs, n)[0];
}

// One File::ReadV; per range bytes or an exception instance.
py::list ReadRanges(FileHandle& f,
                    const std::vector<std::pair<int64_t, int64_t>>& ranges,
                    std::optional<int64_t> max_in_flight) {
  const ReadOptions options = RangeReadOptions(max_in_flight);
  std::vector<py::object> bufs(ranges.size());
  std::vector<ReadRange> reqs(ranges.size());
  const uint64_t size = f.file->size();
  for (size_t i = 0; i < ranges.size(); ++i) {
    const uint64_t at = NonNegative(ranges[i].first, "offset");
    uint64_t len = NonNegative(ranges[i].second, "length");
    len = at > size ? 0 : std::min(len, size - at);
    reqs[i].offset = at;
    bufs[i] = NewBytes(len, &reqs[i].dst);
  }
  std::vector<absl::StatusOr<size_t>> results;
  {
    py::gil_scoped_release release;
    results = f.file->ReadV(reqs, options);
  }
  return RangeResults(bufs, results);
}

}  // namespace

void BindFile(py::module_& m) {
  py::class_<FileHandle, std::shared_ptr<FileHandle>>(
      m, "_File", "An open rangefs file (see rangefs.RangefsFile).")
      .def_property_readonly("path",
                             [](const FileHandle& f) { return f.file->path(); })
      .def_property_readonly("size",
                             [](const FileHandle& f) { return f.file->size(); })
      .def_property_readonly(
          "generation",
          [](const FileHandle& f) { return f.file->generation(); })
      .def("pread_into", &PreadInto, py::arg("offset"), py::arg("buffer"),
           "Reads len(buffer) bytes at offset into the writable, contiguous "
           "buffer (no copy); returns the count (short only at the end).")
      .def("pread", &Pread, py::arg("offset"), py::arg("length"),
           "Reads up to length bytes at offset.")
      .def("read_ranges", &ReadRanges, py::arg("ranges"),
           py::arg("max_in_flight") = py::none(),
           "Reads [(offset, length), ...] in one parallel batch (at most "
           "max_in_flight pieces at once, when given); per range bytes or "
           "an exception instance.");
}

}  // namespace python
}  // namespace rangefs
