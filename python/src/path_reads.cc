#include "python/src/path_reads.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "python/src/path_ranges.h"
#include "python/src/range_reads.h"

namespace py = pybind11;

namespace rangefs {
namespace python {

py::list ReadPathRanges(Client& client, FileCache& cache,
                        FileCache::Opener open, py::handle ranges,
                        const ReadOptions& options) {
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
          files[p] = cache.Get(open, r.paths[p]);
        } else if (stale[p] != nullptr) {
          files[p] = cache.Refresh(open, r.paths[p], stale[p]);
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
      got = client.ReadV(reqs, options);
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

}  // namespace python
}  // namespace rangefs
