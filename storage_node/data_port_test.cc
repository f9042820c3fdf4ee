// The raw-TCP data port (data_port.h) against an in-process Agent on
// 127.0.0.1 with a real export directory: DataPortClient directly, and
// NodeClient choosing it transparently.
#include "storage_node/data_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/synchronization/notification.h"
#include "base/testing/ports.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "base/thread_priority.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/agent.h"
#include "storage_node/data_port_client.h"
#include "storage_node/data_port_wire.h"
#include "storage_node/node_client.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint32_t kBlock = 4096;

std::string Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// The deadline of a read that must succeed: far beyond what it takes, even
// on a loaded machine.
absl::Time Soon() { return absl::Now() + absl::Seconds(60); }

// A TCP socket connected to 127.0.0.1:port, or -1.
int Dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{10, 0};  // Bounds every recv of the test.
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Reads a reply header and its message from `fd`; returns the status.
absl::Status ReadReply(int fd) {
  char h[kDataPortReplyHeaderBytes];
  if (recv(fd, h, sizeof(h), MSG_WAITALL) != sizeof(h)) {
    return absl::UnknownError("no reply");
  }
  if (GetLe32(h) != kDataPortReplyMagic) return absl::UnknownError("magic");
  std::string msg(GetLe32(h + 8), '\0');
  if (!msg.empty() && recv(fd, &msg[0], msg.size(), MSG_WAITALL) !=
                          static_cast<ssize_t>(msg.size())) {
    return absl::UnknownError("short message");
  }
  return absl::Status(static_cast<absl::StatusCode>(GetLe32(h + 4)), msg);
}

// Accepts connections and never answers. Thread-safe.
class SilentServer {
 public:
  SilentServer() {
    absl::StatusOr<int> fd = testing::ListenLoopback(&port_);
    listen_fd_ = fd.ok() ? *fd : -1;  // port_ 0: reads fail to connect
    thread_ = std::thread([this] {
      for (;;) {
        int fd = accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        absl::MutexLock l(&mu_);
        fds_.push_back(fd);
      }
    });
  }
  ~SilentServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    close(listen_fd_);
    for (int fd : fds_) close(fd);
  }
  int port() const { return port_; }
  // Waits (bounded) until `n` connections were accepted.
  bool AwaitAccepted(size_t n) {
    absl::MutexLock l(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return fds_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(60));
  }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
};

class DataPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("export-");
    ASSERT_THAT(dir, IsOk());
    tmp_ = *std::move(dir);
    dir_ = tmp_.path();
    StartAgent(/*max_concurrent_reads=*/64);
  }
  void StartAgent(int max_concurrent_reads,
                  DataPortSend send = DataPortSend::kAuto) {
    AgentOptions o;
    o.data_port.send = send;
    o.node_id = "n1";
    o.export_root = dir_;
    o.data_listen = "127.0.0.1:0";
    o.service.chunk_size = 1000;
    o.service.default_block_size = kBlock;
    o.service.max_concurrent_reads = max_concurrent_reads;
    o.service.read_started_hook = [this](absl::string_view path) {
      if (path == "slow") {
        slow_started_.Notify();
        release_.WaitForNotification();
      }
      if (path == "nice") {
        absl::MutexLock l(&nice_mu_);
        nices_.push_back(ThreadNice());
      }
    };
    auto agent = Agent::Start(std::move(o));
    ASSERT_THAT(agent, IsOk());
    agent_ = std::move(*agent);
    ASSERT_NE(agent_->data_port(), 0);
    auto c = NodeClient::Connect(agent_->address());
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
    dp_ = std::make_unique<DataPortClient>(agent_->address(), "127.0.0.1",
                                           agent_->data_port());
  }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }
  void TearDown() override {
    Release();
    client_.reset();
    agent_.reset();
  }
  // Ingests `data` (so it has a sidecar with 4 KiB blocks).
  void Write(const std::string& path, const std::string& data) {
    size_t pos = 0;
    auto w = client_->WriteObject(
        path,
        [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
          size_t n = std::min(buf.size(), data.size() - pos);
          memcpy(buf.data(), data.data() + pos, n);
          pos += n;
          return n;
        },
        {.deadline = Soon()});
    ASSERT_THAT(w, IsOk());
  }
  // Writes a file into the export directly (no sidecar).
  void WriteRaw(const std::string& name, const std::string& data) {
    int fd = open((dir_ + "/" + name).c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
    close(fd);
  }
  absl::StatusOr<size_t> DpRead(
      const std::string& path, uint64_t off, std::string* buf,
      DataPortReadOptions o = {.deadline = absl::Now() + absl::Seconds(60)}) {
    return dp_->ReadRange(path, off, absl::MakeSpan(*buf), o);
  }

  testing::ScopedTempDir tmp_;  // Removed when the fixture is destroyed.
  std::string dir_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<NodeClient> client_;
  std::unique_ptr<DataPortClient> dp_;
  absl::Notification slow_started_, release_;
  absl::Mutex nice_mu_;
  std::vector<int> nices_ ABSL_GUARDED_BY(nice_mu_);  // Reads of "nice".
};

TEST_F(DataPortTest, ByteExactAcrossBlocksWithAndWithoutSidecar) {
  const std::string data = Pattern(10 * kBlock + 123, 1);
  Write("a/obj", data);
  WriteRaw("raw", data);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const uint64_t off = rng() % (data.size() + 1);
    const size_t len = rng() % (3 * kBlock + 5000);
    const bool verify = i % 3 == 0;
    for (const std::string path : {"a/obj", "raw"}) {
      if (verify && path == "raw") continue;
      std::string buf(len, 'x');
      auto n = client_->ReadRange(path, off, absl::MakeSpan(buf),
                                  {.deadline = Soon(),
                                   .verify_on_server = verify,
                                   .check_chunk_crc = i % 2 == 0});
      ASSERT_THAT(n, IsOk()) << path << " " << off << "+" << len;
      const size_t want = std::min<size_t>(len, data.size() - off);
      ASSERT_EQ(*n, want) << path << " " << off << "+" << len;
      ASSERT_EQ(buf.substr(0, want), data.substr(off, want))
          << path << " " << off << "+" << len;
      ASSERT_EQ(buf.substr(want), std::string(len - want, 'x'));
    }
  }
  // Went over the data port, on one pooled connection, and was counted.
  EXPECT_EQ(client_->data_port(), agent_->data_port());
  EXPECT_EQ(agent_->data_port_server()->accepted_connections(), 1u);
  GetStatsResponse stats = agent_->service().Stats();
  EXPECT_GE(stats.reads(), 200u);
  EXPECT_GT(stats.bytes_read(), 0u);
  EXPECT_EQ(stats.data_port(), static_cast<uint32_t>(agent_->data_port()));
}

// Whole blocks, a partial block and a verified read come back byte-exact
// in each send mode; auto copies to a client on this host (loopback).
TEST_F(DataPortTest, EachSendModeIsByteExact) {
  const std::string data = Pattern(6 * kBlock + 77, 11);
  Write("o", data);
  for (DataPortSend send :
       {DataPortSend::kAuto, DataPortSend::kSendfile, DataPortSend::kCopy}) {
    client_.reset();
    agent_.reset();
    StartAgent(64, send);
    for (auto [off, len, verify] :
         {std::tuple<uint64_t, size_t, bool>{0, data.size(), false},
          {kBlock, 3 * kBlock, false},
          {kBlock + 5, 2 * kBlock, true}}) {
      std::string buf(len, 'x');
      ASSERT_THAT(DpRead("o", off, &buf,
                         {.deadline = Soon(), .verify_on_server = verify}),
                  IsOk());
      EXPECT_EQ(buf, data.substr(off, len)) << static_cast<int>(send);
    }
    EXPECT_EQ(agent_->data_port_server()->sendfile_connections(),
              send == DataPortSend::kSendfile ? 1u : 0u)
        << static_cast<int>(send);
  }
}

TEST(DataPortSendTest, ParsesTheThreeModesAndNamesABadOne) {
  EXPECT_EQ(*ParseDataPortSend("auto"), DataPortSend::kAuto);
  EXPECT_EQ(*ParseDataPortSend("sendfile"), DataPortSend::kSendfile);
  EXPECT_EQ(*ParseDataPortSend("copy"), DataPortSend::kCopy);
  EXPECT_THAT(
      ParseDataPortSend("splice"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("splice")));
}

TEST_F(DataPortTest, ShortReadAtEofOutOfRangeNotFound) {
  const std::string data = Pattern(kBlock + 10, 2);
  Write("o", data);
  std::string buf(100, '\0');
  auto n = DpRead("o", kBlock, &buf);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, 10u);
  EXPECT_EQ(buf.substr(0, 10), data.substr(kBlock));
  n = DpRead("o", data.size(), &buf);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, 0u);
  EXPECT_THAT(DpRead("o", data.size() + 1, &buf),
              StatusIs(absl::StatusCode::kOutOfRange,
                       AllOf(HasSubstr("o on node 127.0.0.1:"),
                             HasSubstr("past its end"))));
  EXPECT_THAT(DpRead("missing", 0, &buf),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("missing on node 127.0.0.1:")));
  // Verify needs a sidecar.
  WriteRaw("raw", data);
  EXPECT_THAT(
      DpRead("raw", 0, &buf, {.deadline = Soon(), .verify_on_server = true}),
      StatusIs(absl::StatusCode::kFailedPrecondition));
  // Errors keep the connection.
  EXPECT_EQ(agent_->data_port_server()->accepted_connections(), 1u);
}

TEST_F(DataPortTest, ConfinementRefused) {
  Write("in", "inside");
  ASSERT_EQ(symlink("/etc", (dir_ + "/out").c_str()), 0);
  std::string buf(10, '\0');
  EXPECT_THAT(DpRead("../x", 0, &buf),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(DpRead("/etc/passwd", 0, &buf),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(DpRead("out/passwd", 0, &buf),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(DpRead(".in.rangefs-crc", 0, &buf),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(DpRead("in", 0, &buf), IsOk());
}

TEST_F(DataPortTest, MalformedRequestsGetAnErrorAndServerKeepsServing) {
  Write("o", "hello");
  {
    int fd = Dial(agent_->data_port());
    ASSERT_GE(fd, 0);
    const std::string garbage(kDataPortRequestHeaderBytes, 'G');
    ASSERT_EQ(send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(garbage.size()));
    EXPECT_THAT(ReadReply(fd), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("magic")));
    char c;
    EXPECT_EQ(recv(fd, &c, 1, 0), 0);  // Closed.
    close(fd);
  }
  {
    int fd = Dial(agent_->data_port());
    ASSERT_GE(fd, 0);
    std::string req = EncodeDataPortRequest("o", 0, 5, 0);
    PutLe16(&req[6], 60000);  // path_len far over the cap.
    req.resize(kDataPortRequestHeaderBytes);
    ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(req.size()));
    EXPECT_THAT(ReadReply(fd), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("path_len")));
    close(fd);
  }
  {
    int fd = Dial(agent_->data_port());
    ASSERT_GE(fd, 0);
    std::string req = EncodeDataPortRequest("o", 0, 5, 0);
    req[4] = 9;  // Version.
    ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(req.size()));
    EXPECT_THAT(ReadReply(fd), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("version")));
    close(fd);
  }
  {
    // A client that hangs up mid-request.
    int fd = Dial(agent_->data_port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, "RFDP", 4, MSG_NOSIGNAL), 4);
    close(fd);
  }
  std::string buf(5, '\0');
  auto n = DpRead("o", 0, &buf);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(buf, "hello");
}

TEST_F(DataPortTest, FlippedByteOnDiskIsDataLoss) {
  const std::string data = Pattern(4 * kBlock, 3);
  Write("c", data);
  int fd = open((dir_ + "/c").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const char flipped = static_cast<char>(data[kBlock + 5] ^ 1);
  ASSERT_EQ(pwrite(fd, &flipped, 1, kBlock + 5), 1);
  close(fd);
  std::string buf(data.size(), '\0');
  // Whole block 1 carries its stored CRC: the client catches it.
  EXPECT_THAT(
      client_->ReadRange("c", 0, absl::MakeSpan(buf), {.deadline = Soon()}),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr("c on node 127.0.0.1:"),
                     HasSubstr("frame at 4096"))));
  // A partial block with verify: the agent catches it.
  std::string part(100, '\0');
  EXPECT_THAT(DpRead("c", kBlock + 1, &part,
                     {.deadline = Soon(), .verify_on_server = true}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("sidecar")));
  // Verify forces the client check even with check_crc off.
  EXPECT_THAT(
      DpRead(
          "c", 0, &buf,
          {.deadline = Soon(), .verify_on_server = true, .check_crc = false}),
      StatusIs(absl::StatusCode::kDataLoss));
  // Untouched blocks still read fine, on a healthy connection.
  std::string b0(kBlock, '\0');
  ASSERT_THAT(DpRead("c", 0, &b0), IsOk());
  EXPECT_EQ(b0, data.substr(0, kBlock));
}

TEST_F(DataPortTest, ConcurrencyCapIsResourceExhausted) {
  agent_.reset();
  StartAgent(/*max_concurrent_reads=*/1);
  Write("slow", "s");
  Write("o", "o");
  absl::StatusOr<size_t> held;
  std::thread reader([&] {
    std::string buf(1, '\0');
    held = DpRead("slow", 0, &buf);
  });
  slow_started_.WaitForNotification();
  std::string buf(1, '\0');
  const uint64_t rejected = agent_->service().Stats().reads_rejected();
  EXPECT_THAT(DpRead("o", 0, &buf),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(agent_->service().Stats().reads_rejected(), rejected + 1);
  Release();
  reader.join();
  EXPECT_THAT(held, IsOk());
  EXPECT_THAT(DpRead("o", 0, &buf), IsOk());
}

TEST_F(DataPortTest, CancelUnblocksReadAgainstSilentServer) {
  SilentServer silent;
  ASSERT_NE(silent.port(), 0);
  DataPortClient dp("silent:1", "127.0.0.1", silent.port());
  CallCanceller canceller;
  absl::StatusOr<size_t> result;
  std::string buf(100, '\0');
  std::thread reader([&] {
    result =
        dp.ReadRange("x", 0, absl::MakeSpan(buf), {.canceller = &canceller});
  });
  ASSERT_TRUE(silent.AwaitAccepted(1));
  const absl::Time start = absl::Now();
  canceller.Cancel();
  reader.join();
  // The server never answers: only the cancel ends the read (idle: at
  // once). The bound tells "promptly" from "never" on a loaded machine.
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(10))
      << "the read ended " << absl::FormatDuration(took) << " after Cancel";
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled,
                               HasSubstr("x on node silent:1")));
  EXPECT_EQ(dp.idle_connections(), 0u);  // Never pooled.
}

TEST_F(DataPortTest, ReadsPastMaxActiveWaitTheirTurnInArrivalOrder) {
  SilentServer silent;
  ASSERT_NE(silent.port(), 0);
  DataPortClient dp("silent:1", "127.0.0.1", silent.port(), /*max_idle=*/4,
                    /*max_active=*/1);
  auto await_waiting = [&](size_t n) {  // polled, for up to 60 s
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (dp.waiting() != n && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    return dp.waiting() == n;
  };
  std::string b1(100, '\0'), b2(100, '\0'), b3(100, '\0'), b4(100, '\0');
  CallCanceller c1, c2, c3;
  absl::StatusOr<size_t> r1, r2, r3;
  std::thread first([&] {
    r1 = dp.ReadRange("a", 0, absl::MakeSpan(b1), {.canceller = &c1});
  });
  ASSERT_TRUE(silent.AwaitAccepted(1));
  // Queued reads wait for a turn, not for the server, within their deadline
  // and canceller; no connection is opened for them.
  const absl::Time start = absl::Now();
  EXPECT_THAT(
      dp.ReadRange("q", 0, absl::MakeSpan(b4),
                   {.deadline = start + absl::Milliseconds(200)}),
      StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("while queued")));
  // Ended by its 200 ms deadline, not by the held read (which never ends).
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(10))
      << "a queued read with a 200 ms deadline took "
      << absl::FormatDuration(took);
  CallCanceller gone;
  gone.Cancel();
  EXPECT_THAT(dp.ReadRange("q", 0, absl::MakeSpan(b4), {.canceller = &gone}),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("queued")));
  EXPECT_EQ(dp.connections_opened(), 1u);
  // Two queued reads: the first to come gets the turn the held one ends.
  std::thread second([&] {
    r2 = dp.ReadRange("b", 0, absl::MakeSpan(b2), {.canceller = &c2});
  });
  ASSERT_TRUE(await_waiting(1));
  std::thread third([&] {
    r3 = dp.ReadRange("c", 0, absl::MakeSpan(b3), {.canceller = &c3});
  });
  ASSERT_TRUE(await_waiting(2));
  c1.Cancel();
  first.join();
  EXPECT_THAT(r1, StatusIs(absl::StatusCode::kCancelled));
  ASSERT_TRUE(silent.AwaitAccepted(2));  // the second read's connection
  ASSERT_TRUE(await_waiting(1));
  c3.Cancel();  // the third is still queued
  third.join();
  EXPECT_THAT(r3, StatusIs(absl::StatusCode::kCancelled, HasSubstr("queued")));
  c2.Cancel();
  second.join();
  EXPECT_THAT(r2, StatusIs(absl::StatusCode::kCancelled,
                           ::testing::Not(HasSubstr("queued"))));
  EXPECT_EQ(dp.waiting(), 0u);
}

TEST_F(DataPortTest, CancelUnblocksNodeClientReadOnHeldAgent) {
  Write("slow", Pattern(100, 4));
  Write("o", "o");
  std::string warm(1, '\0');
  ASSERT_THAT(client_->ReadRange("o", 0, absl::MakeSpan(warm)), IsOk());
  ASSERT_NE(client_->data_port(), 0);
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
  EXPECT_THAT(client_->ReadRange("o", 0, absl::MakeSpan(buf),
                                 {.canceller = &canceller}),
              StatusIs(absl::StatusCode::kCancelled));
  Release();
}

TEST_F(DataPortTest, DeadlineHonoured) {
  SilentServer silent;
  DataPortClient dp("silent:1", "127.0.0.1", silent.port());
  std::string buf(100, '\0');
  const absl::Time start = absl::Now();
  EXPECT_THAT(dp.ReadRange("x", 0, absl::MakeSpan(buf),
                           {.deadline = start + absl::Milliseconds(200)}),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  // Not before the deadline; after it, promptly (idle: at once; the upper
  // bound leaves room for a loaded machine, the server never answers).
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(190)) << absl::FormatDuration(took);
  EXPECT_LT(took, absl::Seconds(10)) << absl::FormatDuration(took);
  // Through NodeClient against the held agent.
  Write("slow", "s");
  std::string one(1, '\0');
  EXPECT_THAT(
      client_->ReadRange("slow", 0, absl::MakeSpan(one),
                         {.deadline = absl::Now() + absl::Milliseconds(300)}),
      StatusIs(absl::StatusCode::kDeadlineExceeded));
  Release();
}

// A background request lowers the thread of its own connection only (the
// read hook runs on the serving thread), and the bytes are the same.
TEST_F(DataPortTest, BackgroundRequestsLowerOnlyTheirConnection) {
  const std::string data = Pattern(3 * kBlock + 7, 9);
  Write("nice", data);
  DataPortClient bg(agent_->address(), "127.0.0.1", agent_->data_port());
  std::string buf(data.size(), '\0');
  ASSERT_THAT(DpRead("nice", 0, &buf), IsOk());
  for (int i = 0; i < 2; ++i) {
    std::fill(buf.begin(), buf.end(), 'x');
    ASSERT_THAT(
        bg.ReadRange(
            "nice", 0, absl::MakeSpan(buf),
            {.deadline = Soon(), .verify_on_server = true, .background = true}),
        IsOk());
    EXPECT_EQ(buf, data);
  }
  ASSERT_THAT(DpRead("nice", 0, &buf), IsOk());
  EXPECT_EQ(buf, data);
  EXPECT_EQ(agent_->data_port_server()->background_connections(), 1u);
  const int normal = ThreadNice();
  const int low = std::max(normal, DataPortOptions().background_nice);
  absl::MutexLock l(&nice_mu_);
  EXPECT_THAT(nices_, ElementsAre(normal, low, low, normal));
}

TEST_F(DataPortTest, PooledConnectionsAreReused) {
  Write("o", Pattern(3 * kBlock, 5));
  std::string buf(kBlock, '\0');
  for (int i = 0; i < 20; ++i) {
    ASSERT_THAT(DpRead("o", static_cast<uint64_t>(i) * 100, &buf), IsOk());
  }
  EXPECT_EQ(dp_->connections_opened(), 1u);
  EXPECT_EQ(dp_->idle_connections(), 1u);
  // Two concurrent readers need two connections; both are pooled after.
  Write("slow", "s");
  std::thread held([&] {
    std::string one(1, '\0');
    EXPECT_THAT(DpRead("slow", 0, &one), IsOk());
  });
  slow_started_.WaitForNotification();
  ASSERT_THAT(DpRead("o", 0, &buf), IsOk());
  Release();
  held.join();
  EXPECT_EQ(dp_->connections_opened(), 2u);
  EXPECT_EQ(dp_->idle_connections(), 2u);
  EXPECT_EQ(agent_->data_port_server()->accepted_connections(), 2u);
}

TEST_F(DataPortTest, PooledConnectionClosedByAgentIsReplaced) {
  Write("o", "hello");
  std::string buf(5, '\0');
  ASSERT_THAT(client_->ReadRange("o", 0, absl::MakeSpan(buf)), IsOk());
  const int old_port = agent_->data_port();
  // Restart the agent on the same data port: the pooled connection dies.
  const std::string address = agent_->address();
  agent_.reset();
  AgentOptions o;
  o.node_id = "n1";
  o.export_root = dir_;
  o.listen = address;
  o.data_listen = absl::StrCat("127.0.0.1:", old_port);
  auto agent = Agent::Start(std::move(o));
  ASSERT_THAT(agent, IsOk());
  agent_ = std::move(*agent);
  auto n =
      client_->ReadRange("o", 0, absl::MakeSpan(buf), {.deadline = Soon()});
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(buf, "hello");
  EXPECT_EQ(agent_->data_port_server()->accepted_connections(), 1u);
}

TEST_F(DataPortTest, AllPooledConnectionsClosedByAgentStillOneRetry) {
  // Two pooled connections, both closed by an agent restart: the retry
  // must go to a new connection, not to the second stale one.
  Write("o", "hello");
  Write("slow", "s");
  std::string buf(5, '\0');
  std::thread held([&] {
    std::string one(1, '\0');
    EXPECT_THAT(DpRead("slow", 0, &one), IsOk());
  });
  slow_started_.WaitForNotification();
  ASSERT_THAT(DpRead("o", 0, &buf), IsOk());
  Release();
  held.join();
  ASSERT_EQ(dp_->idle_connections(), 2u);
  const int old_port = agent_->data_port();
  const std::string address = agent_->address();
  agent_.reset();
  AgentOptions o;
  o.node_id = "n1";
  o.export_root = dir_;
  o.listen = address;
  o.data_listen = absl::StrCat("127.0.0.1:", old_port);
  auto agent = Agent::Start(std::move(o));
  ASSERT_THAT(agent, IsOk());
  agent_ = std::move(*agent);
  ASSERT_THAT(DpRead("o", 0, &buf), IsOk());
  EXPECT_EQ(buf, "hello");
  EXPECT_EQ(dp_->idle_connections(), 1u);
}

TEST_F(DataPortTest, FallsBackToGrpc) {
  Write("o", "hello");
  std::string buf(5, '\0');
  // Told not to use it.
  auto off =
      NodeClient::Connect(agent_->address(), {}, {.use_data_port = false});
  ASSERT_THAT(off, IsOk());
  ASSERT_THAT((*off)->ReadRange("o", 0, absl::MakeSpan(buf)), IsOk());
  EXPECT_EQ(buf, "hello");
  EXPECT_EQ((*off)->data_port(), 0);
  EXPECT_EQ(agent_->data_port_server()->accepted_connections(), 0u);
  // An agent without a data port.
  const std::string address = agent_->address();
  client_.reset();
  agent_.reset();
  AgentOptions o;
  o.node_id = "n1";
  o.export_root = dir_;
  o.listen = address;
  auto agent = Agent::Start(std::move(o));
  ASSERT_THAT(agent, IsOk());
  agent_ = std::move(*agent);
  EXPECT_EQ(agent_->data_port(), 0);
  EXPECT_EQ(agent_->data_port_server(), nullptr);
  auto c = NodeClient::Connect(agent_->address());
  ASSERT_THAT(c, IsOk());
  buf.assign(5, '\0');
  ASSERT_THAT(
      (*c)->ReadRange("o", 0, absl::MakeSpan(buf), {.deadline = Soon()}),
      IsOk());
  EXPECT_EQ(buf, "hello");
  EXPECT_EQ((*c)->data_port(), 0);
  EXPECT_EQ(agent_->service().Stats().data_port(), 0u);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
