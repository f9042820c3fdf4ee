// Unit tests of IngestFile's checks before any agent is called (over the
// MemoryKv fake). Writing through real agents is covered by
// tests/integration/file_put_test.cc.
#include "ingest/ingest_writer.h"

#include <fstream>
#include <memory>
#include <string>

#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"

namespace rangefs {
namespace ingest {
namespace {

using ::testing::HasSubstr;

class IngestWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("ingest_writer_test");
    ASSERT_THAT(dir, IsOk());
    dir_ = *std::move(dir);
    local_ = dir_.path() + "/data";
    std::ofstream(local_) << std::string(3000, 'x');
    store_ = ns::NewKvStore(&kv_, {.cluster = "t"});
  }

  testing::ScopedTempDir dir_;
  std::string local_;
  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
};

TEST_F(IngestWriterTest, RejectsBadOptionsAndPaths) {
  IngestOptions o;
  o.replicas = 0;
  EXPECT_THAT(
      IngestFile(*store_, local_, "/a", o),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--replicas")));
  o = IngestOptions();
  o.stripe_unit = 0;
  EXPECT_THAT(IngestFile(*store_, local_, "/a", o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  o = IngestOptions();
  o.parallel = 0;
  EXPECT_THAT(IngestFile(*store_, local_, "/a", o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(IngestFile(*store_, local_, "no-slash", IngestOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(IngestWriterTest, LocalFileMustBeARegularFile) {
  EXPECT_THAT(IngestFile(*store_, dir_.path() + "/missing", "/a", {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing")));
  EXPECT_THAT(IngestFile(*store_, dir_.path(), "/a", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a regular file")));
}

TEST_F(IngestWriterTest, NoEligibleNodeIsFailedPreconditionAndWritesNothing) {
  EXPECT_THAT(IngestFile(*store_, local_, "/a", {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("0 live active node(s)")));
  EXPECT_THAT(store_->GetFile("/a"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(IngestWriterTest, ExistingPathNeedsOverwrite) {
  v1::FileLayout empty;
  empty.set_state(v1::READY);
  ASSERT_THAT(store_->CreateFile("/a", empty), IsOk());
  EXPECT_THAT(
      IngestFile(*store_, local_, "/a", {}),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("--overwrite")));
}

}  // namespace
}  // namespace ingest
}  // namespace rangefs
