// File: tests/bench/kept_error.h
//
// rangefs-bench's end of a timed scan: a Reader::Read that ran into an
// error after copying some bytes returns those bytes (a short Read) and
// keeps the error for the next Read (client_lib/file.h). A run that stops
// right after such a Read would drop the error with the Reader, and count
// a read that waited to its deadline as a success; KeptError makes that
// next Read so the benchmark counts and prints it.
#ifndef RANGEFS_TESTS_BENCH_KEPT_ERROR_H_
#define RANGEFS_TESTS_BENCH_KEPT_ERROR_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "client_lib/file.h"

namespace rangefs {
namespace bench {

// The error `reader` kept for its next call, if its last one returned
// fewer bytes than asked (`short_read`); OK otherwise (no Read made). With
// `zero_copy` the next call is Next(buf.size()) (a Reader read by views).
inline absl::Status KeptError(Reader& reader, bool short_read, bool zero_copy,
                              absl::Span<char> buf) {
  if (!short_read) return absl::OkStatus();
  return zero_copy ? reader.Next(buf.size()).status()
                   : reader.Read(buf).status();
}

}  // namespace bench
}  // namespace rangefs

#endif  // RANGEFS_TESTS_BENCH_KEPT_ERROR_H_
