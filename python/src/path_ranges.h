// File: python/src/path_ranges.h
//
// Client.read_ranges' argument, [(path, offset, length), ...], parsed with
// the C API (it is on the path of every small batched read): the distinct
// paths once each, and per range the index of its path.
#ifndef RANGEFS_PYTHON_SRC_PATH_RANGES_H_
#define RANGEFS_PYTHON_SRC_PATH_RANGES_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rangefs {
namespace python {

struct PathRanges {
  std::vector<std::string> paths;  // distinct, in order of first use
  std::vector<size_t> path_of;     // per range: index into paths
  std::vector<uint64_t> offsets, lengths;
};

// TypeError for anything but a sequence of 3-item sequences (str, int,
// int); ValueError for a negative offset or length (GIL held).
PathRanges ParsePathRanges(pybind11::handle ranges);

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_PATH_RANGES_H_
