#include "storage_node/object_reader.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>

#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/export_root.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kBlock = kMinBlockSize;

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

// 2.5 blocks of bytes that differ from block to block.
std::string Data() {
  std::string d(kBlock * 5 / 2, '\0');
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<char>(i * 7 + 3);
  return d;
}

Checksums ChecksumsOf(const std::string& data) {
  BlockChecksummer sum(kBlock);
  sum.Update(data.data(), data.size());
  return sum.Finish();
}

class ObjectReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("object_reader_test");
    ASSERT_THAT(dir, IsOk());
    tmp_ = *std::move(dir);
    ASSERT_EQ(mkdir((tmp_.path() + "/a").c_str(), 0755), 0);
    Put("a/obj", Data(), ChecksumsOf(Data()));
    auto root = ExportRoot::Open(tmp_.path(), {.writable = false});
    ASSERT_THAT(root, IsOk());
    root_ = *std::move(root);
  }

  // Writes object `path` and, unless `sums` is empty, its sidecar.
  void Put(const std::string& path, const std::string& data,
           const Checksums& sums) {
    WriteFile(tmp_.path() + "/" + path, data);
    if (!sums.block_crc32c.empty()) {
      WriteFile(tmp_.path() + "/" + SidecarPathFor(path), EncodeSidecar(sums));
    }
  }

  testing::ScopedTempDir tmp_;
  std::unique_ptr<ExportRoot> root_;
};

TEST_F(ObjectReaderTest, ClipsTheRangeToTheObject) {
  const uint64_t size = Data().size();
  auto r = ObjectReader::Open(*root_, "a/obj", 100, 50);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->path(), "a/obj");
  EXPECT_EQ(r->size(), size);
  EXPECT_EQ(r->begin(), 100u);
  EXPECT_EQ(r->end(), 150u);

  r = ObjectReader::Open(*root_, "a/obj", size - 10, 1 << 30);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->end(), size);

  r = ObjectReader::Open(*root_, "a/obj", size, 10);  // At EOF: empty.
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->begin(), r->end());
}

TEST_F(ObjectReaderTest, OffsetPastTheEndIsOutOfRange) {
  EXPECT_THAT(ObjectReader::Open(*root_, "a/obj", Data().size() + 1, 1),
              StatusIs(absl::StatusCode::kOutOfRange,
                       HasSubstr("a/obj at offset 10241 past its end")));
}

TEST_F(ObjectReaderTest, PathsResolveOnlyThroughTheExportRoot) {
  EXPECT_THAT(ObjectReader::Open(*root_, "a/missing", 0, 1),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(ObjectReader::Open(*root_, "../a/obj", 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ObjectReader::Open(*root_, SidecarPathFor("a/obj"), 0, 1),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ObjectReader::Open(*root_, "a", 0, 1),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(ObjectReaderTest, PreadReadsTheObject) {
  auto r = ObjectReader::Open(*root_, "a/obj", 0, 1 << 20);
  ASSERT_THAT(r, IsOk());
  std::string got(100, '\0');
  ASSERT_THAT(r->Pread(&got[0], got.size(), 5000), IsOk());
  EXPECT_EQ(got, Data().substr(5000, 100));
  EXPECT_THAT(r->Pread(&got[0], got.size(), r->size() - 50),
              StatusIs(absl::StatusCode::kDataLoss));
}

TEST_F(ObjectReaderTest, LoadsAndChecksTheSidecar) {
  auto r = ObjectReader::Open(*root_, "a/obj", 0, 1);
  ASSERT_THAT(r, IsOk());
  auto c = r->LoadChecksums();
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->object_size, Data().size());
  EXPECT_EQ(c->block_crc32c.size(), 3u);
  EXPECT_THAT(r->LoadChecksumsForVerify(), IsOk());
}

TEST_F(ObjectReaderTest, NoSidecarIsNotFoundOrFailedPreconditionForVerify) {
  Put("a/bare", "bytes", Checksums{});
  auto r = ObjectReader::Open(*root_, "a/bare", 0, 5);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->LoadChecksums(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(r->LoadChecksumsForVerify(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("a/bare has no checksums")));
}

TEST_F(ObjectReaderTest, SidecarOfAnotherSizeIsDataLoss) {
  Put("a/grown", Data() + "more", ChecksumsOf(Data()));
  auto r = ObjectReader::Open(*root_, "a/grown", 0, 5);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->LoadChecksums(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("is 10244 bytes, its sidecar says 10240")));
  EXPECT_THAT(r->LoadChecksumsForVerify(),
              StatusIs(absl::StatusCode::kDataLoss));
}

TEST_F(ObjectReaderTest, ReadVerifiedBlockReturnsWholeBlocks) {
  auto r = ObjectReader::Open(*root_, "a/obj", 0, 1 << 20);
  ASSERT_THAT(r, IsOk());
  auto c = r->LoadChecksums();
  ASSERT_THAT(c, IsOk());
  std::string buf;
  auto block = r->ReadVerifiedBlock(*c, 1, &buf);
  ASSERT_THAT(block, IsOk());
  EXPECT_EQ(*block, Data().substr(kBlock, kBlock));
  block = r->ReadVerifiedBlock(*c, 2, &buf);  // The short last block.
  ASSERT_THAT(block, IsOk());
  EXPECT_EQ(*block, Data().substr(2 * kBlock));
  EXPECT_EQ(buf.size(), kBlock);  // Grown once, never shrunk.
}

TEST_F(ObjectReaderTest, ReadVerifiedBlockCatchesCorruption) {
  std::string bad = Data();
  bad[kBlock + 10] ^= 1;
  Put("a/obj", bad, ChecksumsOf(Data()));  // Same size, flipped bit.
  auto r = ObjectReader::Open(*root_, "a/obj", 0, 1 << 20);
  ASSERT_THAT(r, IsOk());
  auto c = r->LoadChecksums();
  ASSERT_THAT(c, IsOk());
  std::string buf;
  EXPECT_THAT(r->ReadVerifiedBlock(*c, 0, &buf), IsOk());
  EXPECT_THAT(r->ReadVerifiedBlock(*c, 1, &buf),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("a/obj block 1 (bytes 4096..8192)")));
  EXPECT_THAT(r->ReadVerifiedBlock(*c, 2, &buf), IsOk());
}

}  // namespace
}  // namespace node
}  // namespace rangefs
