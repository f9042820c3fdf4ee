// NodeClient against an in-process Agent on 127.0.0.1 with a real export
// directory.
#include "storage_node/node_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

#include "absl/synchronization/notification.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/agent.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

class NodeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("export-");
    ASSERT_THAT(dir, IsOk());
    tmp_ = *std::move(dir);
    dir_ = tmp_.path();
    AgentOptions o;
    o.node_id = "n1";
    o.export_root = dir_;
    o.service.chunk_size = 1000;  // Chunks do not align with anything.
    o.service.default_block_size = 4096;
    o.service.read_started_hook = [this](absl::string_view path) {
      if (path == "slow")
        slow_started_.Notify(), release_.WaitForNotification();
    };
    o.service.chunk_hook = [this](uint64_t offset, absl::Span<char> data) {
      // Corrupts the chunk at byte 2000 after the agent computed its CRC.
      if (corrupt_in_flight_ && offset == 2000) data[10] ^= 1;
    };
    auto agent = Agent::Start(std::move(o));
    ASSERT_THAT(agent, IsOk());
    agent_ = std::move(*agent);
    auto c = NodeClient::Connect(agent_->address());
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
  }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }
  void TearDown() override {
    Release();
    agent_.reset();
  }
  absl::StatusOr<WriteObjectResponse> Write(const std::string& path,
                                            const std::string& data) {
    size_t pos = 0;
    return client_->WriteObject(
        path,
        [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
          size_t n = std::min(buf.size(), data.size() - pos);
          memcpy(buf.data(), data.data() + pos, n);
          pos += n;
          return n;
        },
        {.deadline = absl::Now() + absl::Seconds(60), .chunk_bytes = 777});
  }
  testing::ScopedTempDir tmp_;  // Removed when the fixture is destroyed.
  std::string dir_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<NodeClient> client_;
  absl::Notification slow_started_, release_;
  std::atomic<bool> corrupt_in_flight_{false};
};

TEST_F(NodeClientTest, WriteThenReadByteExact) {
  const std::string data = Pattern(3 * 4096 + 17, 1);
  auto w = Write("a/b/obj", data);
  ASSERT_THAT(w, IsOk());
  EXPECT_EQ(w->size(), data.size());
  for (uint64_t off : {uint64_t{0}, uint64_t{1}, uint64_t{999}, uint64_t{4095},
                       uint64_t{4096}, uint64_t{12000}}) {
    for (size_t len : {size_t{1}, size_t{1000}, size_t{5000}, data.size()}) {
      std::string buf(len, 'x');
      auto n = client_->ReadRange("a/b/obj", off, absl::MakeSpan(buf),
                                  {.verify_on_server = true});
      ASSERT_THAT(n, IsOk());
      size_t want = std::min<size_t>(len, data.size() - off);
      ASSERT_EQ(*n, want) << off << "+" << len;
      EXPECT_EQ(buf.substr(0, want), data.substr(off, want));
    }
  }
  auto st = client_->StatObject("a/b/obj", absl::Now() + absl::Seconds(60));
  ASSERT_THAT(st, IsOk());
  EXPECT_EQ(st->size(), data.size());
  EXPECT_TRUE(st->has_checksums());
}

TEST_F(NodeClientTest, ErrorsNameTheNodeAndPath) {
  std::string buf(10, '\0');
  EXPECT_THAT(client_->ReadRange("missing", 0, absl::MakeSpan(buf)),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("missing on node 127.0.0.1:")));
  ASSERT_THAT(Write("o", "hello"), IsOk());
  EXPECT_THAT(client_->ReadRange("o", 6, absl::MakeSpan(buf)),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(Write("o", "again"), StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(client_->ReadRange("../etc/passwd", 0, absl::MakeSpan(buf)),
              ::testing::Not(IsOk()));
  EXPECT_THAT(NodeClient::Connect("nohostport"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(NodeClientTest, ServerVerifyCatchesFlippedByte) {
  const std::string data = Pattern(8192, 2);
  ASSERT_THAT(Write("c", data), IsOk());
  int fd = open((dir_ + "/c").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  char flipped = static_cast<char>(data[5000] ^ 1);
  ASSERT_EQ(pwrite(fd, &flipped, 1, 5000), 1);
  close(fd);
  std::string buf(8192, '\0');
  EXPECT_THAT(client_->ReadRange("c", 0, absl::MakeSpan(buf),
                                 {.verify_on_server = true}),
              StatusIs(absl::StatusCode::kDataLoss));
}

TEST_F(NodeClientTest, ChunkCorruptedInFlightIsDataLoss) {
  const std::string data = Pattern(5000, 5);
  ASSERT_THAT(Write("d", data), IsOk());
  corrupt_in_flight_ = true;
  std::string buf(5000, '\0');
  EXPECT_THAT(client_->ReadRange("d", 0, absl::MakeSpan(buf)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("CRC32C mismatch in chunk at 2000"),
                             HasSubstr("d on node 127.0.0.1:"))));
  // Without the client-side check the (corrupt) bytes come through.
  auto n = client_->ReadRange("d", 0, absl::MakeSpan(buf),
                              {.check_chunk_crc = false});
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, data.size());
  EXPECT_EQ(buf[2010], static_cast<char>(data[2010] ^ 1));
  EXPECT_EQ(buf.substr(0, 2000), data.substr(0, 2000));
  corrupt_in_flight_ = false;
  ASSERT_THAT(client_->ReadRange("d", 0, absl::MakeSpan(buf)), IsOk());
  EXPECT_EQ(buf, data);
}

TEST_F(NodeClientTest, CancellerAbortsAHeldRead) {
  ASSERT_THAT(Write("slow", Pattern(100, 3)), IsOk());
  CallCanceller canceller;
  absl::StatusOr<size_t> result;
  std::string buf(100, '\0');
  std::thread reader([&] {
    result = client_->ReadRange("slow", 0, absl::MakeSpan(buf),
                                {.canceller = &canceller});
  });
  slow_started_.WaitForNotification();
  canceller.Cancel();
  reader.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
  // Cancelled before the call: returns at once.
  EXPECT_THAT(client_->ReadRange("o", 0, absl::MakeSpan(buf),
                                 {.canceller = &canceller}),
              StatusIs(absl::StatusCode::kCancelled));
  Release();
}

TEST_F(NodeClientTest, DeadlineOnAHeldRead) {
  ASSERT_THAT(Write("slow", Pattern(100, 4)), IsOk());
  std::string buf(100, '\0');
  absl::Time start = absl::Now();
  EXPECT_THAT(client_->ReadRange("slow", 0, absl::MakeSpan(buf),
                                 {.deadline = start + absl::Milliseconds(200)}),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  // The agent holds the read until Release: only the 200 ms deadline ends
  // it (idle: at once; the bound leaves room for a loaded machine).
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(10)) << absl::FormatDuration(took);
  Release();
}

}  // namespace
}  // namespace node
}  // namespace rangefs
