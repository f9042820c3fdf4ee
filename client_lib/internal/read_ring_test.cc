// ReadRing on a real io_uring over a temp file: reads land byte-exact, each
// read's opaque context comes back with it and is released after the reap.
#include "client_lib/internal/read_ring.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

struct TestContext : ReadRing::Context {
  TestContext(int id, bool* released) : id(id), released(released) {}
  ~TestContext() override { *released = true; }
  int id;
  bool* released;
};

class ReadRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    path_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/ring-XXXXXX";
    int fd = mkstemp(path_.data());
    ASSERT_GE(fd, 0);
    data_.resize(300000);
    for (size_t i = 0; i < data_.size(); ++i) {
      data_[i] = static_cast<char>(i * 7 + i / 251);
    }
    ASSERT_EQ(write(fd, data_.data(), data_.size()),
              static_cast<ssize_t>(data_.size()));
    close(fd);
  }
  void TearDown() override { unlink(path_.c_str()); }

  std::string path_;
  std::string data_;
};

TEST_F(ReadRingTest, ReadsComeBackWithTheirContexts) {
  std::string error;
  std::unique_ptr<ReadRing> ring = ReadRing::Create(4, false, &error);
  if (ring == nullptr) GTEST_SKIP() << "no io_uring here: " << error;
  auto file = std::make_shared<RingFile>(open(path_.c_str(), O_RDONLY));
  ASSERT_GE(file->fd(), 0);
  struct Want {
    uint64_t offset;
    size_t length;
  };
  const std::map<int, Want> reads = {
      {1, {0, 4096}}, {2, {12345, 100000}}, {3, {290000, 10000}}};
  std::map<int, bool> released;
  for (const auto& [id, w] : reads) {
    released[id] = false;
    ring->Start(file, w.offset, w.length, w.length, false,
                std::make_unique<TestContext>(id, &released[id]));
  }
  EXPECT_EQ(ring->inflight(), 3);
  EXPECT_EQ(ring->free_slots(), 1u);
  std::map<int, std::string> got;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (ring->inflight() > 0 && absl::Now() < deadline) {
    ring->SubmitAndWait(absl::Milliseconds(100));
    ring->Reap([&](ReadRing::Slot& s, int res) {
      auto& c = static_cast<TestContext&>(*s.context);
      EXPECT_GE(res, 0) << "read " << c.id;
      EXPECT_FALSE(*c.released);
      got[c.id] = std::string(s.buf, s.done);
    });
  }
  ASSERT_EQ(ring->inflight(), 0);
  EXPECT_EQ(ring->free_slots(), 4u);
  for (const auto& [id, w] : reads) {
    EXPECT_EQ(got[id], data_.substr(w.offset, w.length)) << "read " << id;
    EXPECT_TRUE(released[id]) << "context of read " << id << " kept";
  }
}

// Reap(done, max) hands out at most `max` ended reads; the rest wait in
// the kernel's queue for the next Reap, none lost or handed out twice.
TEST_F(ReadRingTest, ReapTakesAtMostMax) {
  std::string error;
  std::unique_ptr<ReadRing> ring = ReadRing::Create(4, false, &error);
  if (ring == nullptr) GTEST_SKIP() << "no io_uring here: " << error;
  auto file = std::make_shared<RingFile>(open(path_.c_str(), O_RDONLY));
  ASSERT_GE(file->fd(), 0);
  std::map<int, bool> released;
  for (int id = 0; id < 4; ++id) {
    released[id] = false;
    ring->Start(file, id * 4096, 4096, 4096, false,
                std::make_unique<TestContext>(id, &released[id]));
  }
  std::map<int, int> seen;
  int this_reap = 0;
  auto count = [&](ReadRing::Slot& s, int res) {
    EXPECT_EQ(res, 4096);
    seen[static_cast<TestContext&>(*s.context).id]++;
    ++this_reap;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  // Submits, then waits until the kernel has ended all four.
  ring->SubmitAndWait(absl::ZeroDuration());
  while (absl::Now() < deadline && ring->inflight() == 4 && seen.empty()) {
    ring->SubmitAndWait(absl::Milliseconds(100));
    ring->Reap(count, 1);
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(ring->inflight(), 3);
  while (ring->inflight() > 0 && absl::Now() < deadline) {
    ring->SubmitAndWait(absl::Milliseconds(100));
    this_reap = 0;
    ring->Reap(count, 2);
    EXPECT_LE(this_reap, 2);
  }
  ASSERT_EQ(ring->inflight(), 0);
  for (int id = 0; id < 4; ++id) {
    EXPECT_EQ(seen[id], 1) << "read " << id;
    EXPECT_TRUE(released[id]) << "read " << id;
  }
}

// A context that recycles stays with its slot: the next read there gets it
// back from NextContext (the same object, what it kept included); one
// that does not is destroyed at the reap.
TEST_F(ReadRingTest, RecycledContextsStayWithTheirSlots) {
  struct Recycling : ReadRing::Context {
    bool Recycle() override {
      ++recycled;
      return true;
    }
    int recycled = 0;
    std::string kept;
  };
  std::string error;
  std::unique_ptr<ReadRing> ring = ReadRing::Create(1, false, &error);
  if (ring == nullptr) GTEST_SKIP() << "no io_uring here: " << error;
  auto file = std::make_shared<RingFile>(open(path_.c_str(), O_RDONLY));
  ASSERT_GE(file->fd(), 0);
  auto read_one = [&](uint64_t offset) {
    ring->Start(file, offset, 4096, 4096, false, nullptr);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    std::string got;
    while (ring->inflight() > 0 && absl::Now() < deadline) {
      ring->SubmitAndWait(absl::Milliseconds(100));
      ring->Reap([&](ReadRing::Slot& s, int res) {
        EXPECT_EQ(res, 4096);
        got.assign(s.buf, s.done);
      });
    }
    EXPECT_EQ(ring->inflight(), 0);
    return got;
  };
  Recycling* first = ring->NextContext<Recycling>();
  first->kept = "memory worth keeping";
  EXPECT_EQ(read_one(0), data_.substr(0, 4096));
  EXPECT_EQ(first->recycled, 1);
  Recycling* second = ring->NextContext<Recycling>();
  EXPECT_EQ(second, first);
  EXPECT_EQ(second->kept, "memory worth keeping");
  EXPECT_EQ(read_one(8192), data_.substr(8192, 4096));
  EXPECT_EQ(second->recycled, 2);
  // A context of another kind replaces it; one that does not recycle goes.
  bool released = false;
  ring->Start(file, 0, 4096, 4096, false,
              std::make_unique<TestContext>(7, &released));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (ring->inflight() > 0 && absl::Now() < deadline) {
    ring->SubmitAndWait(absl::Milliseconds(100));
    ring->Reap([](ReadRing::Slot&, int) {});
  }
  EXPECT_TRUE(released);
  EXPECT_NE(ring->NextContext<Recycling>(), nullptr);
}

TEST_F(ReadRingTest, WakeEndsAWait) {
  std::string error;
  std::unique_ptr<ReadRing> ring = ReadRing::Create(2, false, &error);
  if (ring == nullptr) GTEST_SKIP() << "no io_uring here: " << error;
  ring->Wake();
  const absl::Time t0 = absl::Now();
  ring->SubmitAndWait(absl::Seconds(30));  // returns at once: woken
  EXPECT_LT(absl::Now() - t0, absl::Seconds(10));
  ring->Reap([](ReadRing::Slot&, int) { ADD_FAILURE() << "no read started"; });
  EXPECT_FALSE(ring->wake_armed());
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
