#include "base/open_beneath.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;

using OpenFn = std::function<absl::StatusOr<int>(const std::string&,
                                                 absl::string_view, int)>;

class OpenBeneathTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/beneathXXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    top_ = tmpl;
    root_ = top_ + "/mount";
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir((root_ + "/d").c_str(), 0755), 0);
    Write(root_ + "/d/obj", "inside");
    Write(top_ + "/secret", "outside");
    ASSERT_EQ(symlink((top_ + "/secret").c_str(), (root_ + "/abs").c_str()), 0);
    ASSERT_EQ(symlink("../secret", (root_ + "/rel").c_str()), 0);
    ASSERT_EQ(symlink("d/obj", (root_ + "/inner").c_str()), 0);
    ASSERT_EQ(symlink(top_.c_str(), (root_ + "/dirlink").c_str()), 0);
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + top_ + "'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  static void Write(const std::string& path, const std::string& data) {
    std::ofstream(path) << data;
  }
  absl::StatusOr<int> Open(absl::string_view rel) {
    return GetParam() ? OpenBeneathByWalk(root_, rel, O_RDONLY)
                      : OpenBeneath(root_, rel, O_RDONLY);
  }
  static std::string ReadAll(int fd) {
    char buf[64];
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    close(fd);
    return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
  }

  std::string top_, root_;
};

TEST_P(OpenBeneathTest, OpensFilesInside) {
  absl::StatusOr<int> fd = Open("d/obj");
  ASSERT_THAT(fd, IsOk());
  EXPECT_EQ(ReadAll(*fd), "inside");
  EXPECT_THAT(Open("d/missing"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(OpenBeneathTest, RefusesEverySymlink) {
  for (const char* rel : {"abs", "rel", "inner", "dirlink/secret"}) {
    EXPECT_THAT(Open(rel), StatusIs(absl::StatusCode::kPermissionDenied,
                                    HasSubstr("refused")))
        << rel;
  }
}

TEST_P(OpenBeneathTest, RefusesEscapingPathsBeforeAnySyscall) {
  for (const char* rel : {"../secret", "d/../../secret", "/etc/passwd", "",
                          "d//obj", "./d/obj"}) {
    EXPECT_THAT(Open(rel), StatusIs(absl::StatusCode::kInvalidArgument)) << rel;
  }
}

INSTANTIATE_TEST_SUITE_P(Openat2AndWalk, OpenBeneathTest,
                         ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Walk" : "Openat2";
                         });

}  // namespace
}  // namespace rangefs
