// ScopedPipeMaxSize: raises the machine's fs.pipe-max-size to what a
// splicing mount needs for as long as any holder lives, and puts the old
// value back when the last one ends.
//
// The sysctl is global (no namespace isolates it), so test processes that
// run at once (--runs_per_test, or several tests in one `bazel test`) share
// it: one that put the value back while another still mounted would turn
// the other's splicing off. Holders share a flock(2) on a file under /tmp
// that also keeps the value to put back and the value raised to; the
// holder that finds no other (an exclusive lock granted at once) restores
// it if the value is still the one raised to.
#ifndef RANGEFS_TESTS_INTEGRATION_PIPE_MAX_SIZE_H_
#define RANGEFS_TESTS_INTEGRATION_PIPE_MAX_SIZE_H_

#include <cstdint>

#include "absl/status/status.h"

namespace rangefs::testing {

class ScopedPipeMaxSize {
 public:
  ScopedPipeMaxSize() = default;
  ScopedPipeMaxSize(const ScopedPipeMaxSize&) = delete;
  ScopedPipeMaxSize& operator=(const ScopedPipeMaxSize&) = delete;
  ~ScopedPipeMaxSize();

  // Makes a pipe of `bytes` possible for this process (root raises the
  // sysctl; a value already high enough is left alone). Call once.
  absl::Status Raise(uint64_t bytes);

 private:
  absl::Status RaiseLocked(uint64_t bytes);
  void Forget();  // empties the record

  int lock_fd_ = -1;
};

}  // namespace rangefs::testing

#endif  // RANGEFS_TESTS_INTEGRATION_PIPE_MAX_SIZE_H_
