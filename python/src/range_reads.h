// File: python/src/range_reads.h
//
// Reads into new bytes objects with the GIL released: the objects are
// allocated (GIL held) before the read, written by the client library
// while nobody else can see them, and trimmed to the count afterwards.
#ifndef RANGEFS_PYTHON_SRC_RANGE_READS_H_
#define RANGEFS_PYTHON_SRC_RANGE_READS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client_lib/options.h"

namespace rangefs {
namespace python {

// An uninitialized bytes object of `n` bytes and its memory (GIL held).
pybind11::object NewBytes(size_t n, absl::Span<char>* memory);

// result[i]: bufs[i] trimmed to *results[i] bytes, or the exception for
// results[i]'s status (GIL held). Consumes bufs.
pybind11::list RangeResults(std::vector<pybind11::object>& bufs,
                            const std::vector<absl::StatusOr<size_t>>& results);

// An offset or length from Python: ValueError if negative.
uint64_t NonNegative(int64_t v, const char* what);

// ReadOptions from read_ranges' keyword: max_in_flight (None or 0: every
// range at once); ValueError for a negative one.
ReadOptions RangeReadOptions(std::optional<int64_t> max_in_flight);

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_RANGE_READS_H_
