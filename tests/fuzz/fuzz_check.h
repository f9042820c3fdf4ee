// File: fuzz_check.h
//
// FUZZ_CHECK(cond) << "context": aborts with the condition, place and
// context when an invariant a fuzz target checks does not hold, so that
// libFuzzer saves the input as a crash and the corpus replay test fails.
// Independent of NDEBUG (unlike assert).
#ifndef RANGEFS_TESTS_FUZZ_FUZZ_CHECK_H_
#define RANGEFS_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace rangefs {
namespace fuzz {

// Collects the message; its destructor prints it and aborts.
class CheckFailure {
 public:
  CheckFailure(const char* cond, const char* file, int line) {
    out_ << file << ":" << line << ": FUZZ_CHECK(" << cond << ") failed: ";
  }
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  ~CheckFailure() {
    const std::string s = out_.str();
    std::fprintf(stderr, "%s\n", s.c_str());
    std::fflush(stderr);
    std::abort();
  }
  std::ostream& stream() { return out_; }

 private:
  std::ostringstream out_;
};

}  // namespace fuzz
}  // namespace rangefs

#define FUZZ_CHECK(cond) \
  if (cond) {            \
  } else /* NOLINT */    \
    ::rangefs::fuzz::CheckFailure(#cond, __FILE__, __LINE__).stream()

#endif  // RANGEFS_TESTS_FUZZ_FUZZ_CHECK_H_
