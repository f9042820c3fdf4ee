#include "base/testing/temp_dir.h"

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <utility>

#include "base/testing/ports.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace testing {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(ScopedTempDirTest, CreatesAndRemovesTheTree) {
  std::string path;
  {
    auto dir = ScopedTempDir::Make("temp_dir_test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    path = dir->path();
    ASSERT_TRUE(Exists(path));
    ASSERT_EQ(mkdir((path + "/sub").c_str(), 0755), 0);
    std::ofstream(path + "/sub/f") << "x";
    ASSERT_TRUE(Exists(path + "/sub/f"));
  }
  EXPECT_FALSE(Exists(path));
}

TEST(ScopedTempDirTest, MoveTransfersOwnership) {
  auto a = ScopedTempDir::Make("temp_dir_test");
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string path = a->path();
  ScopedTempDir b = *std::move(a);
  EXPECT_EQ(b.path(), path);
  {
    ScopedTempDir c = std::move(b);
    EXPECT_TRUE(b.path().empty());
  }
  EXPECT_FALSE(Exists(path));
}

TEST(PortsTest, PickedPortIsClosedUntilSomeoneListens) {
  auto port = PickUnusedPort();
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  EXPECT_FALSE(TcpPortOpen(*port));
}

}  // namespace
}  // namespace testing
}  // namespace rangefs
