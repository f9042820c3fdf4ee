// File: python/src/path_reads.h
//
// read_ranges over paths, [(path, offset, length), ...], for Client and
// Dataset alike: the files opened through a FileCache (so kept between
// calls), then one Client::ReadV over all ranges with the GIL released.
#ifndef RANGEFS_PYTHON_SRC_PATH_READS_H_
#define RANGEFS_PYTHON_SRC_PATH_READS_H_

#include <pybind11/pybind11.h>

#include "client_lib/client.h"
#include "python/src/file_cache.h"

namespace rangefs {
namespace python {

// Per range its bytes (short only at the end of the file) or the exception
// for it; a range whose file cannot be opened gets that error. Ranges of a
// kept File that was replaced meanwhile (ABORTED) are read once more from
// the file reopened. `open` runs with the GIL released. GIL held.
// `options` goes to each Client::ReadV (max_in_flight).
pybind11::list ReadPathRanges(Client& client, FileCache& cache,
                              FileCache::Opener open, pybind11::handle ranges,
                              const ReadOptions& options);

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_PATH_READS_H_
