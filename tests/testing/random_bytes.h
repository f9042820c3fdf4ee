// File: random_bytes.h
//
// Test data: `size` pseudo-random bytes, the same for the same seed.
#ifndef RANGEFS_TESTS_TESTING_RANDOM_BYTES_H_
#define RANGEFS_TESTS_TESTING_RANDOM_BYTES_H_

#include <cstdint>
#include <random>
#include <string>

namespace rangefs {
namespace testing {

inline std::string RandomBytes(uint64_t size, unsigned seed) {
  std::string s(size, '\0');
  std::mt19937_64 gen(seed);
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_TESTING_RANDOM_BYTES_H_
