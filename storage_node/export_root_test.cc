#include "storage_node/export_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

std::set<std::string> ListDir(const std::string& dir) {
  std::set<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.insert(n);
  }
  closedir(d);
  return out;
}

class ExportRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto base = testing::ScopedTempDir::Make("export_root_test");
    ASSERT_THAT(base, IsOk());
    tmp_ = *std::move(base);
    base_ = tmp_.path();
    root_dir_ = base_ + "/root";
    outside_ = base_ + "/outside";
    ASSERT_EQ(mkdir(root_dir_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0755), 0);
    WriteFile(outside_ + "/secret", "SECRET");
    ASSERT_EQ(stat((outside_ + "/secret").c_str(), &sentinel_), 0);
    ASSERT_EQ(mkdir((root_dir_ + "/a").c_str(), 0755), 0);
    ASSERT_EQ(mkdir((root_dir_ + "/a/b").c_str(), 0755), 0);
    WriteFile(root_dir_ + "/a/b/file", "inside");
    // Symlinks planted in the export, escaping and not.
    Symlink(outside_ + "/secret", "esc_abs");
    Symlink("../outside/secret", "esc_rel");
    Symlink("../../../outside/secret", "a/b/esc_deep");
    Symlink("../outside", "dirlink");
    Symlink(outside_, "dirabs");
    Symlink("/proc/self/root" + outside_ + "/secret", "esc_magic");
    Symlink("a/b/file", "inlink");
    Symlink("../b", "a/b/up");  // Stays inside.
    auto r = ExportRoot::Open(root_dir_);
    ASSERT_THAT(r, IsOk());
    root_ = std::move(*r);
  }

  void Symlink(const std::string& target, const std::string& rel) {
    ASSERT_EQ(symlink(target.c_str(), (root_dir_ + "/" + rel).c_str()), 0)
        << rel;
  }
  bool IsSentinel(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return false;
    return st.st_dev == sentinel_.st_dev && st.st_ino == sentinel_.st_ino;
  }

  testing::ScopedTempDir tmp_;  // Removed when the fixture is destroyed.
  std::string base_, root_dir_, outside_;
  struct stat sentinel_ {};
  std::unique_ptr<ExportRoot> root_;
};

TEST_F(ExportRootTest, ValidateRejectsBadPaths) {
  using C = absl::StatusCode;
  const std::vector<std::pair<std::string, C>> cases = {
      {"", C::kInvalidArgument},
      {"/etc/passwd", C::kInvalidArgument},
      {"..", C::kInvalidArgument},
      {"a/../../x", C::kInvalidArgument},
      {"a/./b", C::kInvalidArgument},
      {"a//b", C::kInvalidArgument},
      {"a/", C::kInvalidArgument},
      {std::string("a\0b", 3), C::kInvalidArgument},
      {std::string(256, 'x'), C::kInvalidArgument},
      {std::string(4097, 'a'), C::kInvalidArgument},
      {".rangefs-tmp/abc", C::kPermissionDenied},
      {"a/.file.rangefs-crc", C::kPermissionDenied},
  };
  for (const auto& [path, code] : cases) {
    EXPECT_THAT(ExportRoot::ValidateObjectPath(path), StatusIs(code))
        << absl::CHexEscape(path.substr(0, 40));
    EXPECT_THAT(root_->OpenForRead(path), StatusIs(code));
  }
  EXPECT_THAT(ExportRoot::ValidateObjectPath(std::string(255, 'x')), IsOk());
  std::string deep;
  for (int i = 0; i < 2048; ++i) absl::StrAppend(&deep, i ? "/" : "", "d");
  EXPECT_THAT(ExportRoot::ValidateObjectPath(deep), IsOk());  // 4095 bytes.
  EXPECT_THAT(
      ExportRoot::ValidateObjectPath("/abs"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"/abs\"")));
}

TEST_F(ExportRootTest, SidecarPathScheme) {
  EXPECT_EQ(SidecarPathFor("obj"), ".obj.rangefs-crc");
  EXPECT_EQ(SidecarPathFor("a/b/obj"), "a/b/.obj.rangefs-crc");
}

TEST_F(ExportRootTest, OpensInsideIncludingInnerSymlinks) {
  for (const char* p : {"a/b/file", "inlink", "a/b/up/file"}) {
    auto fd = root_->OpenForRead(p);
    ASSERT_THAT(fd, IsOk()) << p;
    char buf[16] = {};
    EXPECT_EQ(pread(fd->get(), buf, sizeof(buf), 0), 6);
    EXPECT_STREQ(buf, "inside");
  }
  EXPECT_THAT(root_->OpenForRead("a/b"),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(root_->OpenForRead("missing"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing")));
}

TEST_F(ExportRootTest, EscapingSymlinksAreDenied) {
  for (const char* p : {"esc_abs", "esc_rel", "a/b/esc_deep", "dirlink/secret",
                        "dirabs/secret", "esc_magic"}) {
    EXPECT_THAT(root_->OpenForRead(p),
                StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr(p)))
        << p;
    EXPECT_THAT(root_->Stat(p), StatusIs(absl::StatusCode::kPermissionDenied))
        << p;
  }
}

TEST_F(ExportRootTest, CommitCreatesParentsAndRefusesOverwrite) {
  auto t = root_->CreateTemp();
  ASSERT_THAT(t, IsOk());
  ASSERT_EQ(write(t->fd.get(), "xyz", 3), 3);
  ASSERT_THAT(root_->CommitTemp(t->name, "new/dir/obj", false), IsOk());
  EXPECT_THAT(root_->Stat("new/dir/obj"), IsOk());
  EXPECT_THAT(*root_->ListTemp(), ::testing::IsEmpty());

  auto t2 = root_->CreateTemp();
  ASSERT_THAT(t2, IsOk());
  EXPECT_THAT(root_->CommitTemp(t2->name, "new/dir/obj", false),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(root_->CommitTemp(t2->name, "new/dir/obj", true), IsOk());
  EXPECT_EQ(root_->Stat("new/dir/obj")->st_size, 0);
}

TEST_F(ExportRootTest, CommitThroughEscapingDirSymlinkIsDenied) {
  const std::set<std::string> before = ListDir(outside_);
  for (const char* p : {"dirlink/planted", "dirabs/planted", "dirlink/x/y"}) {
    auto t = root_->CreateTemp();
    ASSERT_THAT(t, IsOk());
    EXPECT_THAT(root_->CommitTemp(t->name, p, true),
                StatusIs(absl::StatusCode::kPermissionDenied))
        << p;
    EXPECT_THAT(root_->RemoveTemp(t->name), IsOk());
  }
  EXPECT_EQ(ListDir(outside_), before);
}

TEST_F(ExportRootTest, ForEachObjectSkipsInternalsAndSymlinks) {
  WriteFile(root_dir_ + "/a/.file.rangefs-crc", "x");
  auto t = root_->CreateTemp();
  ASSERT_THAT(t, IsOk());
  std::vector<std::string> seen;
  ASSERT_THAT(root_->ForEachObject([&](const std::string& p) {
    seen.push_back(p);
    return true;
  }),
              IsOk());
  EXPECT_THAT(seen, UnorderedElementsAre("a/b/file"));
  EXPECT_THAT(root_->ClearTemp(), IsOk());
  EXPECT_THAT(*root_->ListTemp(), ::testing::IsEmpty());
}

TEST_F(ExportRootTest, ReadOnlyExportHasNoTemp) {
  auto ro = ExportRoot::Open(root_dir_, {.writable = false});
  ASSERT_THAT(ro, IsOk());
  EXPECT_THAT((*ro)->CreateTemp(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT((*ro)->OpenForRead("a/b/file"), IsOk());
}

TEST_F(ExportRootTest, OpenRejectsBadRoot) {
  EXPECT_THAT(ExportRoot::Open(base_ + "/nope"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(ExportRoot::Open(""),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// Randomized: hammer the resolver with path strings built from hostile
// pieces; no open may ever yield the sentinel outside the root, and no
// commit may create anything outside it.
TEST_F(ExportRootTest, FuzzNeverEscapes) {
  const std::vector<std::string> pieces = {"..",
                                           ".",
                                           "/",
                                           "//",
                                           "a",
                                           "b",
                                           "file",
                                           "esc_abs",
                                           "esc_rel",
                                           "esc_deep",
                                           "dirlink",
                                           "dirabs",
                                           "esc_magic",
                                           "inlink",
                                           "up",
                                           "secret",
                                           "outside",
                                           ".rangefs-tmp",
                                           std::string(1, '\0'),
                                           std::string(256, 'L'),
                                           std::string(100, 'm'),
                                           "x.rangefs-crc",
                                           "/proc/self/root",
                                           outside_,
                                           "../outside"};
  std::mt19937 rng(20240611);
  const std::set<std::string> outside_before = ListDir(outside_);
  int opened = 0, denied = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string path;
    int n = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < n; ++k) {
      path += pieces[rng() % pieces.size()];
      if (rng() % 2) path += "/";
    }
    if (rng() % 50 == 0) path = std::string(4000 + rng() % 200, 'a');
    auto fd = root_->OpenForRead(path);
    if (fd.ok()) {
      ++opened;
      ASSERT_FALSE(IsSentinel(fd->get()))
          << "escaped via " << absl::CHexEscape(path);
    } else {
      ++denied;
    }
    auto st = root_->Stat(path);
    if (st.ok()) {
      ASSERT_FALSE(st->st_dev == sentinel_.st_dev &&
                   st->st_ino == sentinel_.st_ino)
          << "stat escaped via " << absl::CHexEscape(path);
    }
    if (i % 10 == 0) {
      auto t = root_->CreateTemp();
      ASSERT_THAT(t, IsOk());
      (void)root_->CommitTemp(t->name, path, /*overwrite=*/false);
      ASSERT_THAT(root_->RemoveTemp(t->name), IsOk());
    }
  }
  EXPECT_GT(opened, 0);  // The fuzzer does reach real files...
  EXPECT_GT(denied, 0);  // ...and hostile ones.
  EXPECT_EQ(ListDir(outside_), outside_before);
  struct stat st;
  ASSERT_EQ(stat((outside_ + "/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 6);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
