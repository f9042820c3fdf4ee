// DataPortClient's handling of the reply stream and of its sockets'
// timeouts, against scripted servers on 127.0.0.1 (a reply cut into
// pieces, bytes past the end frame) and a real in-process Agent (a pooled
// connection whose last read set a timeout longer, or shorter, than the
// next read's deadline).
#include "storage_node/data_port_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "base/crc32c.h"
#include "base/testing/ports.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/agent.h"
#include "storage_node/data_port_wire.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::HasSubstr;

// An OK reply carrying `data` in one frame, then the end frame.
std::string Reply(const std::string& data) {
  std::string r(kDataPortReplyHeaderBytes + kDataPortFrameHeaderBytes, '\0');
  PutLe32(&r[0], kDataPortReplyMagic);  // code 0, no message
  PutLe32(&r[kDataPortReplyHeaderBytes], static_cast<uint32_t>(data.size()));
  PutLe32(&r[kDataPortReplyHeaderBytes + 4],
          Crc32cExtend(0, data.data(), data.size()));
  r += data;
  r.append(kDataPortFrameHeaderBytes, '\0');
  return r;
}

// Serves one connection: reads one request (header and path), then sends
// `reply` in sends of `chunk` bytes, then waits for the client to close.
class ScriptedServer {
 public:
  ScriptedServer(std::string reply, size_t chunk)
      : reply_(std::move(reply)), chunk_(chunk) {
    absl::StatusOr<int> fd = testing::ListenLoopback(&port_);
    listen_fd_ = fd.ok() ? *fd : -1;  // port_ 0: reads fail to connect
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    close(listen_fd_);
  }
  int port() const { return port_; }

 private:
  void Serve() {
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    timeval tv{30, 0};  // bounds the test's waits
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char h[kDataPortRequestHeaderBytes];
    if (recv(fd, h, sizeof(h), MSG_WAITALL) == sizeof(h)) {
      std::string path(GetLe16(h + 6), '\0');
      if (path.empty() || recv(fd, &path[0], path.size(), MSG_WAITALL) ==
                              static_cast<ssize_t>(path.size())) {
        for (size_t at = 0; at < reply_.size(); at += chunk_) {
          const size_t n = std::min(chunk_, reply_.size() - at);
          if (send(fd, reply_.data() + at, n, MSG_NOSIGNAL) !=
              static_cast<ssize_t>(n)) {
            break;
          }
        }
        char c;
        (void)recv(fd, &c, 1, 0);  // until the client closes (or 30 s)
      }
    }
    close(fd);
  }

  const std::string reply_;
  const size_t chunk_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

absl::Time Soon() { return absl::Now() + absl::Seconds(60); }

// Reads `data` from a server that sends its reply in sends of `chunk`
// bytes, and checks the bytes.
void ExpectByteExact(const std::string& data, size_t chunk) {
  ScriptedServer server(Reply(data), chunk);
  DataPortClient dp("scripted:1", "127.0.0.1", server.port());
  std::string buf(data.size(), '\0');
  absl::StatusOr<size_t> n =
      dp.ReadRange("o", 0, absl::MakeSpan(buf), {.deadline = Soon()});
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, data.size());
  EXPECT_TRUE(buf == data);
  EXPECT_EQ(dp.idle_connections(), 1u);
}

TEST(DataPortReplyStreamTest, AReplyInOneByteSendsIsByteExact) {
  ExpectByteExact("the bytes of a small read, sent one at a time", 1);
}

TEST(DataPortReplyStreamTest, AFrameLargerThanTheBufferIsByteExact) {
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<char>(i * 2654435761u >> 13);
  }
  ExpectByteExact(data, 3000);  // pieces of no block size
}

TEST(DataPortReplyStreamTest, BytesAfterTheEndFrameAreAnErrorNotReused) {
  // One send: the reply and a stray byte arrive together.
  ScriptedServer server(Reply("hello") + "x", 1 << 20);
  DataPortClient dp("scripted:1", "127.0.0.1", server.port());
  std::string buf(5, '\0');
  EXPECT_THAT(dp.ReadRange("o", 0, absl::MakeSpan(buf), {.deadline = Soon()}),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("1 bytes after the end frame")));
  EXPECT_EQ(dp.idle_connections(), 0u);
}

// A real agent whose reads of "slow" wait until Release().
class DataPortTimeoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("export-");
    ASSERT_THAT(dir, IsOk());
    tmp_ = *std::move(dir);
    AgentOptions o;
    o.node_id = "n1";
    o.export_root = tmp_.path();
    o.data_listen = "127.0.0.1:0";
    o.service.read_started_hook = [this](absl::string_view path) {
      if (path == "slow") {
        slow_started_.Notify();
        release_.WaitForNotification();
      }
    };
    auto agent = Agent::Start(std::move(o));
    ASSERT_THAT(agent, IsOk());
    agent_ = std::move(*agent);
    auto c = NodeClient::Connect(agent_->address());
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
    for (const char* name : {"fast", "slow"}) {
      const std::string data = name;
      bool done = false;
      auto w = client_->WriteObject(
          name,
          [&](absl::Span<char> b) -> absl::StatusOr<size_t> {
            if (done) return 0;
            done = true;
            memcpy(b.data(), data.data(), data.size());
            return data.size();
          },
          {.deadline = Soon()});
      ASSERT_THAT(w, IsOk());
    }
    dp_ = std::make_unique<DataPortClient>(agent_->address(), "127.0.0.1",
                                           agent_->data_port(), 1, 1);
  }
  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    dp_.reset();
    client_.reset();
    agent_.reset();
  }

  testing::ScopedTempDir tmp_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<NodeClient> client_;
  std::unique_ptr<DataPortClient> dp_;
  absl::Notification slow_started_, release_;
};

TEST_F(DataPortTimeoutTest, APooledConnectionKeepsAShorterDeadline) {
  // The first read leaves its connection pooled with a minute's timeout;
  // the next, on that connection, must still end at its own 300 ms.
  std::string buf(4, '\0');
  ASSERT_THAT(
      dp_->ReadRange("fast", 0, absl::MakeSpan(buf), {.deadline = Soon()}),
      IsOk());
  ASSERT_EQ(dp_->idle_connections(), 1u);
  const absl::Time start = absl::Now();
  EXPECT_THAT(dp_->ReadRange("slow", 0, absl::MakeSpan(buf),
                             {.deadline = start + absl::Milliseconds(300)}),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(290)) << absl::FormatDuration(took);
  EXPECT_LT(took, absl::Seconds(10)) << absl::FormatDuration(took);
  EXPECT_EQ(dp_->connections_opened(), 1u);
}

TEST_F(DataPortTimeoutTest, AReplyLaterThanTheLastReadsTimeoutStillArrives) {
  // The first read sets a timeout of at most 3 s and leaves the
  // connection pooled; the next read's reply comes after that timeout
  // (the agent holds it) but well within its own deadline.
  std::string buf(4, '\0');
  ASSERT_THAT(dp_->ReadRange("fast", 0, absl::MakeSpan(buf),
                             {.deadline = absl::Now() + absl::Seconds(3)}),
              IsOk());
  ASSERT_EQ(dp_->idle_connections(), 1u);
  std::thread releaser([this] {
    slow_started_.WaitForNotification();
    // The scenario, not a synchronization: the agent answers only after
    // the timeout the first read armed has run out.
    absl::SleepFor(absl::Milliseconds(3500));
    release_.Notify();
  });
  absl::StatusOr<size_t> n =
      dp_->ReadRange("slow", 0, absl::MakeSpan(buf), {.deadline = Soon()});
  releaser.join();
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(buf, "slow");
  EXPECT_EQ(dp_->connections_opened(), 1u);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
