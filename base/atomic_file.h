// File: atomic_file.h
//
// Whole-file replacement that a concurrent reader never sees half done:
// status files and Prometheus text files (node_exporter's textfile
// collector reads them at any moment).
//
//   RANGEFS_RETURN_IF_ERROR(WriteFileAtomically("/run/x.prom", text));
#ifndef RANGEFS_BASE_ATOMIC_FILE_H_
#define RANGEFS_BASE_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace rangefs {

// Writes `text` to a temp file beside `path` (same directory, so the rename
// stays on one file system), then renames it over `path`. On any error the
// temp file is removed and `path` is left as it was; the status names the
// step and the file (errno mapped as ErrnoStatus does).
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text);

}  // namespace rangefs

#endif  // RANGEFS_BASE_ATOMIC_FILE_H_
