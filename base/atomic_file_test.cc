#include "base/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

TEST(AtomicFileTest, ReplacesTheWholeFileAndLeavesNoTempFile) {
  auto dir = testing::ScopedTempDir::Make("atomic-file-");
  ASSERT_THAT(dir, IsOk());
  const std::string path = dir->path() + "/m.prom";
  ASSERT_THAT(WriteFileAtomically(path, "a 1\nb 2\n"), IsOk());
  ASSERT_THAT(WriteFileAtomically(path, "c 3\n"), IsOk());
  EXPECT_EQ(Slurp(path), "c 3\n");
  ASSERT_THAT(WriteFileAtomically(path, ""), IsOk());
  EXPECT_EQ(Slurp(path), "");
  EXPECT_THAT(Names(dir->path()), ElementsAre("m.prom"));
}

TEST(AtomicFileTest, ErrorsNameTheStepAndTheFile) {
  auto dir = testing::ScopedTempDir::Make("atomic-file-");
  ASSERT_THAT(dir, IsOk());
  EXPECT_THAT(WriteFileAtomically(dir->path() + "/no/such/dir/x", "x"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("create " + dir->path() + "/no/such/dir/x")));
  // A directory in the way: the rename fails, the temp file goes away.
  const std::string sub = dir->path() + "/taken";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((sub + "/x").c_str(), 0755), 0);
  EXPECT_THAT(
      WriteFileAtomically(sub, "x"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rename ")));
  EXPECT_THAT(Names(dir->path()), ElementsAre("taken"));
}

}  // namespace
}  // namespace rangefs
