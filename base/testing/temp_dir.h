// File: temp_dir.h
//
// Temporary directories for tests: one place for the mkdtemp + teardown
// that fixtures share.
//
//   class MyTest : public ::testing::Test {
//    protected:
//     void SetUp() override {
//       auto d = testing::ScopedTempDir::Make("my_test");
//       ASSERT_TRUE(d.ok()) << d.status();
//       dir_ = *std::move(d);
//     }
//     testing::ScopedTempDir dir_;  // removed with the fixture
//   };
#ifndef RANGEFS_BASE_TESTING_TEMP_DIR_H_
#define RANGEFS_BASE_TESTING_TEMP_DIR_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace testing {

// Returns the directory for a test's temporary files: $TEST_TMPDIR under
// Bazel, else a new directory from mkdtemp under /tmp.
std::string TestTempDir();

// Creates a fresh unique directory under TestTempDir() named
// "<prefix>XXXXXX".
absl::StatusOr<std::string> MakeTempDir(absl::string_view prefix);

// Removes a directory tree (best effort, for teardown).
void RemoveTree(const std::string& path);

// A fresh directory from MakeTempDir, removed (RemoveTree) on destruction.
// Movable, not copyable. Thread-compatible.
class ScopedTempDir {
 public:
  ScopedTempDir() = default;
  static absl::StatusOr<ScopedTempDir> Make(absl::string_view prefix);
  ScopedTempDir(ScopedTempDir&& other) noexcept
      : path_(std::exchange(other.path_, "")) {}
  ScopedTempDir& operator=(ScopedTempDir&& other) noexcept;
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  ~ScopedTempDir();

  // Empty for a default-constructed or moved-from object.
  const std::string& path() const { return path_; }

 private:
  explicit ScopedTempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_BASE_TESTING_TEMP_DIR_H_
