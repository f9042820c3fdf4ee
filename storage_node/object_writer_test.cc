#include "storage_node/object_writer.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "storage_node/export_root.h"

namespace rangefs {
namespace node {
namespace {

using testing::ScopedTempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Aligned {
  char* p = nullptr;
  explicit Aligned(size_t n) {
    void* v = nullptr;
    if (posix_memalign(&v, ObjectWriter::kDirectAlign, n) == 0) {
      p = static_cast<char*>(v);
    }
  }
  ~Aligned() { free(p); }
};

class ObjectWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = ScopedTempDir::Make("object_writer_test");
    ASSERT_THAT(d.status(), IsOk());
    dir_ = std::move(*d);
    auto r = ExportRoot::Open(dir_.path(), {.writable = true});
    ASSERT_THAT(r.status(), IsOk());
    root_ = std::move(*r);
  }
  ScopedTempDir dir_;
  std::unique_ptr<ExportRoot> root_;
};

// Aligned appends go O_DIRECT, an unaligned tail ends it; the object and
// its checksums are the bytes appended, whichever way they went.
TEST_F(ObjectWriterTest, DirectAppendsThenBufferedTail) {
  constexpr size_t kPiece = 64 << 10;
  Aligned a(kPiece);
  ASSERT_NE(a.p, nullptr);
  std::string want;
  auto w = ObjectWriter::Begin(root_.get(), "d/obj", 4096, /*direct=*/true);
  ASSERT_THAT(w.status(), IsOk());
  const bool direct_at_start = (*w)->direct();
  struct statfs fs {};
  ASSERT_EQ(statfs(dir_.path().c_str(), &fs), 0);
  if (fs.f_type == EXT4_SUPER_MAGIC || fs.f_type == XFS_SUPER_MAGIC) {
    EXPECT_TRUE(direct_at_start);  // these take O_DIRECT
  }
  for (int i = 0; i < 3; ++i) {
    for (size_t j = 0; j < kPiece; ++j) a.p[j] = static_cast<char>(i * 7 + j);
    ASSERT_THAT((*w)->Append(a.p, kPiece), IsOk());
    want.append(a.p, kPiece);
  }
  // Where the file system takes O_DIRECT (not every tmpfs does), aligned
  // appends keep it.
  EXPECT_EQ((*w)->direct(), direct_at_start);
  const std::string tail = "tail of 17 bytes.";
  ASSERT_THAT((*w)->Append(tail.data(), tail.size()), IsOk());
  want += tail;
  EXPECT_FALSE((*w)->direct());
  auto c = (*w)->Commit(/*overwrite=*/false);
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_EQ(c->object_size, want.size());
  EXPECT_EQ(c->crc32c, Crc32c(want));
  EXPECT_EQ(Slurp(dir_.path() + "/d/obj"), want);
}

// An unaligned buffer is written buffered from the start.
TEST_F(ObjectWriterTest, UnalignedBufferIsWrittenBuffered) {
  Aligned a(8192 + 1);
  ASSERT_NE(a.p, nullptr);
  for (size_t j = 0; j < 8193; ++j) a.p[j] = static_cast<char>(j * 31);
  auto w = ObjectWriter::Begin(root_.get(), "u", 4096, /*direct=*/true);
  ASSERT_THAT(w.status(), IsOk());
  ASSERT_THAT((*w)->Append(a.p + 1, 8192), IsOk());  // misaligned address
  EXPECT_FALSE((*w)->direct());
  ASSERT_THAT((*w)->Commit(false).status(), IsOk());
  EXPECT_EQ(Slurp(dir_.path() + "/u"), std::string(a.p + 1, 8192));
}

// Without `direct` nothing changes: buffered from the start.
TEST_F(ObjectWriterTest, BufferedByDefault) {
  auto w = ObjectWriter::Begin(root_.get(), "b", 4096);
  ASSERT_THAT(w.status(), IsOk());
  EXPECT_FALSE((*w)->direct());
  ASSERT_THAT((*w)->Append("abc", 3), IsOk());
  ASSERT_THAT((*w)->Commit(false).status(), IsOk());
  EXPECT_EQ(Slurp(dir_.path() + "/b"), "abc");
}

}  // namespace
}  // namespace node
}  // namespace rangefs
