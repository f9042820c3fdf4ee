#include "storage_node/agent_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/crc32c.h"
#include "base/status_macros.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage_node/agent.h"
#include "storage_node/export_root.h"
#include "storage_node/grpc_status.h"
#include "storage_node/sidecar.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint32_t kBlock = kMinBlockSize;  // 4 KiB: many blocks, small data.

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

struct WriteArgs {
  bool overwrite = false;
  uint32_t block_size = kBlock;
  size_t piece = 3000;  // Bytes per data message.
  int64_t expected_size = -1;
};

absl::StatusOr<WriteObjectResponse> Write(NodeAgent::Stub& stub,
                                          const std::string& path,
                                          const std::string& data,
                                          const WriteArgs& args = {}) {
  grpc::ClientContext ctx;
  WriteObjectResponse resp;
  auto w = stub.WriteObject(&ctx, &resp);
  WriteObjectRequest req;
  req.mutable_header()->set_path(path);
  req.mutable_header()->set_overwrite(args.overwrite);
  req.mutable_header()->set_block_size(args.block_size);
  if (args.expected_size >= 0) {
    req.mutable_header()->set_expected_size(args.expected_size);
  }
  bool ok = w->Write(req);
  for (size_t off = 0; ok && off < data.size(); off += args.piece) {
    req.set_data(data.substr(off, args.piece));
    ok = w->Write(req);
  }
  w->WritesDone();
  RANGEFS_RETURN_IF_ERROR(FromGrpcStatus(w->Finish()));
  return resp;
}

// Reads a range and checks each chunk's offset continuity and crc32c.
absl::StatusOr<std::string> Read(NodeAgent::Stub& stub, const std::string& path,
                                 uint64_t offset, uint64_t length,
                                 bool verify = false,
                                 size_t* chunks = nullptr) {
  grpc::ClientContext ctx;
  ReadRangeRequest req;
  req.set_path(path);
  req.set_offset(offset);
  req.set_length(length);
  req.set_verify(verify);
  auto r = stub.ReadRange(&ctx, req);
  std::string out;
  ReadRangeChunk c;
  size_t n = 0;
  while (r->Read(&c)) {
    ++n;
    if (c.offset() != offset + out.size()) {
      return absl::InternalError(absl::StrCat(
          "chunk at ", c.offset(), ", expected ", offset + out.size()));
    }
    if (c.crc32c() != Crc32c(c.data())) {
      return absl::InternalError("chunk crc mismatch");
    }
    out += c.data();
  }
  RANGEFS_RETURN_IF_ERROR(FromGrpcStatus(r->Finish()));
  if (chunks != nullptr) *chunks = n;
  return out;
}

class AgentServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto base = testing::ScopedTempDir::Make("agent_service_test");
    ASSERT_THAT(base, IsOk());
    dir_ = *std::move(base);
    base_ = dir_.path();
    root_dir_ = base_ + "/export";
    outside_ = base_ + "/outside";
    ASSERT_EQ(mkdir(root_dir_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0755), 0);
    std::ofstream(outside_ + "/secret") << "SECRET";
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    service_.reset();
    root_.reset();
  }

  void StartServer(AgentServiceOptions opts = {}) {
    if (opts.chunk_size == AgentServiceOptions().chunk_size) {
      opts.chunk_size = 1000;  // Misaligned with 4 KiB blocks on purpose.
    }
    auto r = ExportRoot::Open(root_dir_, {.writable = !opts.read_only});
    ASSERT_THAT(r, IsOk());
    root_ = std::move(*r);
    service_ = std::make_unique<AgentService>(root_.get(), opts);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = NodeAgent::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void FlipByte(const std::string& rel, off_t off) {
    int fd = open((root_dir_ + "/" + rel).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(pread(fd, &c, 1, off), 1);
    c ^= 0x01;
    ASSERT_EQ(pwrite(fd, &c, 1, off), 1);
    close(fd);
  }

  // Polls `cond`; the bound only ends a wait that would never end, so it
  // holds on a loaded machine.
  bool WaitFor(const std::function<bool()>& cond,
               absl::Duration timeout = absl::Seconds(60)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (cond()) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return cond();
  }

  testing::ScopedTempDir dir_;  // removed with the fixture
  std::string base_, root_dir_, outside_;
  std::unique_ptr<ExportRoot> root_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<NodeAgent::Stub> stub_;
};

TEST_F(AgentServiceTest, WriteReadRoundTripAcrossBoundaries) {
  StartServer();
  const std::vector<size_t> sizes = {0,      1,          kBlock - 1,
                                     kBlock, kBlock + 1, (3 << 20) + 123};
  for (size_t size : sizes) {
    SCOPED_TRACE(size);
    const std::string path = absl::StrCat("dir/sub/obj-", size);
    const std::string data = RandomBytes(size, static_cast<uint32_t>(size));
    auto resp = Write(*stub_, path, data);
    ASSERT_THAT(resp, IsOk());
    EXPECT_EQ(resp->size(), size);
    EXPECT_EQ(resp->crc32c(), Crc32c(data));
    EXPECT_EQ(resp->block_count(), BlockCount(size, kBlock));
    for (bool verify : {false, true}) {
      size_t chunks = 0;
      auto got = Read(*stub_, path, 0, UINT64_MAX, verify, &chunks);
      ASSERT_THAT(got, IsOk());
      EXPECT_TRUE(*got == data) << "verify " << verify;
      if (verify) {
        // Chunks are also cut at checksum-block boundaries.
        EXPECT_LE(chunks, (size + 999) / 1000 + BlockCount(size, kBlock));
      } else {
        EXPECT_EQ(chunks, (size + 999) / 1000);
      }
      // Sub-ranges straddling block and chunk boundaries.
      for (uint64_t off : {uint64_t{0}, uint64_t{kBlock - 1}, uint64_t{999},
                           uint64_t{size / 2}}) {
        if (off > size) continue;
        auto part = Read(*stub_, path, off, 2 * kBlock + 3, verify);
        ASSERT_THAT(part, IsOk());
        EXPECT_TRUE(*part == data.substr(off, 2 * kBlock + 3)) << off;
      }
    }
  }
  EXPECT_THAT(*root_->ListTemp(), IsEmpty());
  struct stat st;
  EXPECT_EQ(stat((root_dir_ + "/dir/sub/.obj-1.rangefs-crc").c_str(), &st), 0);
}

TEST_F(AgentServiceTest, DefaultBlockSizeAndExpectedSize) {
  StartServer();
  const std::string data = RandomBytes(100, 1);
  auto resp =
      Write(*stub_, "exp", data, {.block_size = 0, .expected_size = 100});
  ASSERT_THAT(resp, IsOk());
  EXPECT_EQ(resp->block_count(), 1u);
  EXPECT_THAT(Write(*stub_, "short", data, {.expected_size = 101}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("101")));
  EXPECT_THAT(Write(*stub_, "long", data, {.piece = 10, .expected_size = 50}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Write(*stub_, "badblock", data, {.block_size = 100}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(root_->Stat("short"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(root_->Stat("long"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(WaitFor([&] { return root_->ListTemp()->empty(); }));
}

TEST_F(AgentServiceTest, OverwriteRefusedUnlessAsked) {
  StartServer();
  ASSERT_THAT(Write(*stub_, "o", "first"), IsOk());
  EXPECT_THAT(Write(*stub_, "o", "second"),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("o")));
  EXPECT_EQ(*Read(*stub_, "o", 0, 100), "first");
  ASSERT_THAT(Write(*stub_, "o", "second!", {.overwrite = true}), IsOk());
  EXPECT_EQ(*Read(*stub_, "o", 0, 100, /*verify=*/true), "second!");
  EXPECT_TRUE(WaitFor([&] { return root_->ListTemp()->empty(); }));
}

TEST_F(AgentServiceTest, ReadOnlyRefusesWrites) {
  std::ofstream(root_dir_ + "/existing") << "data";
  StartServer({.read_only = true});
  EXPECT_THAT(
      Write(*stub_, "x", "data"),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("read-only")));
  EXPECT_THAT(Write(*stub_, "x", "data", {.overwrite = true}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(*Read(*stub_, "existing", 0, 10), "data");
  struct stat st;
  EXPECT_NE(stat((root_dir_ + "/x").c_str(), &st), 0);
}

TEST_F(AgentServiceTest, ClientCancelMidwayLeavesNothing) {
  StartServer();
  grpc::ClientContext ctx;
  WriteObjectResponse resp;
  auto w = stub_->WriteObject(&ctx, &resp);
  WriteObjectRequest req;
  req.mutable_header()->set_path("cancelled/obj");
  ASSERT_TRUE(w->Write(req));
  req.set_data(RandomBytes(64 << 10, 5));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(w->Write(req));
  // The server is streaming into its temp file...
  ASSERT_TRUE(WaitFor([&] {
    auto t = root_->ListTemp();
    return t.ok() && !t->empty() && service_->Stats().bytes_written() > 0;
  }));
  ctx.TryCancel();
  EXPECT_EQ(w->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // ...and after the cancel neither the temp file nor the object remain.
  EXPECT_TRUE(WaitFor([&] {
    return service_->Stats().inflight() == 0 && root_->ListTemp()->empty();
  }));
  EXPECT_THAT(root_->Stat("cancelled/obj"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(service_->Stats().writes(), 0u);
}

TEST_F(AgentServiceTest, ResourceExhaustedPastReadCap) {
  absl::Notification held, release;
  StartServer({.max_concurrent_reads = 1,
               .read_started_hook = [&](absl::string_view path) {
                 if (path == "held") {
                   held.Notify();
                   release.WaitForNotification();
                 }
               }});
  ASSERT_THAT(Write(*stub_, "held", "held data"), IsOk());
  ASSERT_THAT(Write(*stub_, "other", "other data"), IsOk());
  absl::StatusOr<std::string> first;
  std::thread t([&] { first = Read(*stub_, "held", 0, 100); });
  held.WaitForNotification();
  EXPECT_THAT(
      Read(*stub_, "other", 0, 100),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max 1")));
  release.Notify();
  t.join();
  EXPECT_THAT(first, IsOk());
  EXPECT_EQ(*first, "held data");
  EXPECT_EQ(*Read(*stub_, "other", 0, 100), "other data");  // Slot is free.
  EXPECT_EQ(service_->Stats().reads_rejected(), 1u);
}

TEST_F(AgentServiceTest, VerifyDetectsFlippedByte) {
  StartServer();
  const std::string data = RandomBytes(3 * kBlock, 11);
  ASSERT_THAT(Write(*stub_, "v/obj", data), IsOk());
  FlipByte("v/obj", kBlock + 10);  // In block 1.
  EXPECT_THAT(Read(*stub_, "v/obj", 0, 3 * kBlock, true),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("block 1")));
  EXPECT_THAT(Read(*stub_, "v/obj", kBlock + 20, 1, true),
              StatusIs(absl::StatusCode::kDataLoss));
  // Blocks 0 and 2 are fine.
  EXPECT_THAT(Read(*stub_, "v/obj", 0, kBlock, true), IsOk());
  EXPECT_THAT(Read(*stub_, "v/obj", 2 * kBlock, kBlock, true), IsOk());
  // Without verify the (bad) bytes are served, each chunk's crc matching them.
  auto raw = Read(*stub_, "v/obj", 0, 3 * kBlock, false);
  ASSERT_THAT(raw, IsOk());
  EXPECT_NE(*raw, data);
}

TEST_F(AgentServiceTest, VerifyWithoutChecksumsIsFailedPrecondition) {
  std::ofstream(root_dir_ + "/plain") << "no sidecar";
  StartServer();
  EXPECT_THAT(Read(*stub_, "plain", 0, 5, true),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(*Read(*stub_, "plain", 0, 5, false), "no si");
}

TEST_F(AgentServiceTest, ScrubFindsFlippedByte) {
  StartServer();
  ASSERT_THAT(Write(*stub_, "s/good", RandomBytes(5 * kBlock, 1)), IsOk());
  ASSERT_THAT(Write(*stub_, "s/bad", RandomBytes(5 * kBlock, 2)), IsOk());
  std::ofstream(root_dir_ + "/s/plain") << "unchecked";
  grpc::ClientContext ctx;
  ScrubResponse resp;
  ASSERT_TRUE(stub_->Scrub(&ctx, ScrubRequest(), &resp).ok());
  EXPECT_EQ(resp.objects_checked(), 2u);
  EXPECT_EQ(resp.bytes_checked(), 10u * kBlock);
  EXPECT_EQ(resp.objects_without_checksums(), 1u);
  EXPECT_THAT(resp.corrupt_paths(), IsEmpty());

  FlipByte("s/bad", 4 * kBlock + 1);
  grpc::ClientContext ctx2;
  ScrubResponse resp2;
  ASSERT_TRUE(stub_->Scrub(&ctx2, ScrubRequest(), &resp2).ok());
  EXPECT_THAT(resp2.corrupt_paths(), ElementsAre("s/bad"));
}

TEST_F(AgentServiceTest, StatAndChecksumValues) {
  StartServer();
  const std::string data = RandomBytes(2 * kBlock + 7, 3);
  ASSERT_THAT(Write(*stub_, "c/obj", data), IsOk());
  std::ofstream(root_dir_ + "/c/plain") << "abc";

  grpc::ClientContext c1;
  StatObjectRequest sreq;
  sreq.set_path("c/obj");
  StatObjectResponse st;
  ASSERT_TRUE(stub_->StatObject(&c1, sreq, &st).ok());
  EXPECT_EQ(st.size(), data.size());
  EXPECT_EQ(st.block_size(), kBlock);
  EXPECT_EQ(st.block_count(), 3u);
  EXPECT_TRUE(st.has_checksums());
  EXPECT_GT(st.mtime_ns(), int64_t{1600000000} * 1000000000);

  grpc::ClientContext c2;
  sreq.set_path("c/plain");
  ASSERT_TRUE(stub_->StatObject(&c2, sreq, &st).ok());
  EXPECT_EQ(st.size(), 3u);
  EXPECT_FALSE(st.has_checksums());

  for (bool recompute : {false, true}) {
    grpc::ClientContext c3;
    ChecksumObjectRequest creq;
    creq.set_path("c/obj");
    creq.set_recompute(recompute);
    ChecksumObjectResponse cs;
    ASSERT_TRUE(stub_->ChecksumObject(&c3, creq, &cs).ok());
    EXPECT_EQ(cs.size(), data.size());
    EXPECT_EQ(cs.block_size(), kBlock);
    EXPECT_EQ(cs.crc32c(), Crc32c(data));
    ASSERT_EQ(cs.block_crc32c_size(), 3);
    for (int b = 0; b < 3; ++b) {
      EXPECT_EQ(cs.block_crc32c(b),
                Crc32c(absl::string_view(data).substr(b * kBlock, kBlock)));
    }
  }
  // After damage, the sidecar still has the old values; recompute differs.
  FlipByte("c/obj", 2 * kBlock);
  grpc::ClientContext c4;
  ChecksumObjectRequest creq;
  creq.set_path("c/obj");
  creq.set_recompute(true);
  ChecksumObjectResponse cs;
  ASSERT_TRUE(stub_->ChecksumObject(&c4, creq, &cs).ok());
  EXPECT_NE(cs.block_crc32c(2),
            Crc32c(absl::string_view(data).substr(2 * kBlock)));
  EXPECT_NE(cs.crc32c(), Crc32c(data));

  grpc::ClientContext c5;
  creq.set_path("c/plain");
  creq.set_recompute(false);
  EXPECT_EQ(stub_->ChecksumObject(&c5, creq, &cs).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  grpc::ClientContext c6;
  creq.set_recompute(true);
  ASSERT_TRUE(stub_->ChecksumObject(&c6, creq, &cs).ok());
  EXPECT_EQ(cs.crc32c(), Crc32c("abc"));
  EXPECT_EQ(cs.block_size(), kDefaultBlockSize);

  grpc::ClientContext c7;
  sreq.set_path("c/missing");
  EXPECT_EQ(stub_->StatObject(&c7, sreq, &st).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(AgentServiceTest, OutOfRangeAndClipping) {
  StartServer();
  ASSERT_THAT(Write(*stub_, "r", "0123456789"), IsOk());
  EXPECT_THAT(Read(*stub_, "r", 11, 1),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("size 10")));
  EXPECT_THAT(Read(*stub_, "r", 11, 1, true),
              StatusIs(absl::StatusCode::kOutOfRange));
  size_t chunks = 7;
  EXPECT_EQ(*Read(*stub_, "r", 10, 5, false, &chunks), "");
  EXPECT_EQ(chunks, 0u);
  EXPECT_EQ(*Read(*stub_, "r", 7, 100), "789");
  EXPECT_EQ(*Read(*stub_, "r", 7, 100, true), "789");
  EXPECT_EQ(*Read(*stub_, "r", 3, 0), "");
  EXPECT_THAT(Read(*stub_, "missing", 0, 1),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(AgentServiceTest, ConfinementAttacksRefusedOverGrpc) {
  ASSERT_EQ(
      symlink((outside_ + "/secret").c_str(), (root_dir_ + "/esc_abs").c_str()),
      0);
  ASSERT_EQ(symlink("../outside/secret", (root_dir_ + "/esc_rel").c_str()), 0);
  ASSERT_EQ(symlink("../outside", (root_dir_ + "/dirlink").c_str()), 0);
  StartServer();
  using C = absl::StatusCode;
  const std::vector<std::pair<std::string, C>> attacks = {
      {outside_ + "/secret", C::kInvalidArgument},
      {"/etc/passwd", C::kInvalidArgument},
      {"../outside/secret", C::kInvalidArgument},
      {"a/../../outside/secret", C::kInvalidArgument},
      {"esc_abs", C::kPermissionDenied},
      {"esc_rel", C::kPermissionDenied},
      {"dirlink/secret", C::kPermissionDenied},
      {std::string(300, 'n'), C::kInvalidArgument},
      {std::string(5000, 'p'), C::kInvalidArgument},
      {std::string("esc\0_abs", 8), C::kInvalidArgument},
      {".rangefs-tmp/x", C::kPermissionDenied},
      {"." + std::string("x") + ".rangefs-crc", C::kPermissionDenied},
  };
  for (const auto& [path, code] : attacks) {
    SCOPED_TRACE(path.substr(0, 60));
    EXPECT_THAT(Read(*stub_, path, 0, 100), StatusIs(code));
    EXPECT_THAT(Read(*stub_, path, 0, 100, true), StatusIs(code));
    grpc::ClientContext ctx;
    StatObjectRequest sreq;
    sreq.set_path(path);
    StatObjectResponse st;
    EXPECT_EQ(stub_->StatObject(&ctx, sreq, &st).error_code(),
              static_cast<grpc::StatusCode>(code));
    grpc::ClientContext ctx2;
    ChecksumObjectRequest creq;
    creq.set_path(path);
    creq.set_recompute(true);
    ChecksumObjectResponse cs;
    EXPECT_EQ(stub_->ChecksumObject(&ctx2, creq, &cs).error_code(),
              static_cast<grpc::StatusCode>(code));
    // Writes too (esc_* exist inside as symlinks: overwrite replaces the
    // link itself, never the target, so test those without overwrite).
    EXPECT_FALSE(Write(*stub_, path, "pwned").ok());
  }
  EXPECT_THAT(Write(*stub_, "dirlink/planted", "pwned"),
              StatusIs(C::kPermissionDenied));
  std::ifstream f(outside_ + "/secret");
  std::string secret((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(secret, "SECRET");
  struct stat st;
  EXPECT_NE(stat((outside_ + "/planted").c_str(), &st), 0);
  EXPECT_TRUE(WaitFor([&] { return root_->ListTemp()->empty(); }));
}

TEST_F(AgentServiceTest, GetStatsCounts) {
  StartServer();
  ASSERT_THAT(Write(*stub_, "g", RandomBytes(5000, 1)), IsOk());
  ASSERT_THAT(Read(*stub_, "g", 0, 5000), IsOk());
  ASSERT_THAT(Read(*stub_, "g", 100, 10), IsOk());
  grpc::ClientContext ctx;
  GetStatsResponse s;
  ASSERT_TRUE(stub_->GetStats(&ctx, GetStatsRequest(), &s).ok());
  EXPECT_EQ(s.writes(), 1u);
  EXPECT_EQ(s.bytes_written(), 5000u);
  EXPECT_EQ(s.reads(), 2u);
  EXPECT_EQ(s.bytes_read(), 5010u);
  EXPECT_EQ(s.inflight(), 0u);
  EXPECT_GT(s.read_latency_p99_us() + 1, s.read_latency_p50_us());
  EXPECT_GT(s.free_bytes(), 0u);
  EXPECT_TRUE(s.export_healthy());
}

class CountingRegistrar : public Registrar {
 public:
  absl::Status OnStart(const Agent& agent) override {
    ++starts;
    port = agent.port();
    return start_status;
  }
  void OnDrain() override { ++drains; }
  void OnStop() override { ++stops; }
  absl::Status start_status;
  int starts = 0, drains = 0, stops = 0, port = 0;
};

TEST_F(AgentServiceTest, AgentLifecycleCallsRegistrar) {
  CountingRegistrar reg;
  auto agent = Agent::Start({.node_id = "n1",
                             .export_root = root_dir_,
                             .listen = "127.0.0.1:0",
                             .registrar = &reg});
  ASSERT_THAT(agent, IsOk());
  EXPECT_EQ(reg.starts, 1);
  EXPECT_GT((*agent)->port(), 0);
  EXPECT_EQ(reg.port, (*agent)->port());
  EXPECT_EQ((*agent)->address(), absl::StrCat("127.0.0.1:", reg.port));
  EXPECT_EQ((*agent)->scrub_report(), std::nullopt);  // Off by default.
  auto stub = NodeAgent::NewStub(grpc::CreateChannel(
      (*agent)->address(), grpc::InsecureChannelCredentials()));
  ASSERT_THAT(Write(*stub, "lc", "x"), IsOk());
  (*agent)->Shutdown(absl::Now() + absl::Seconds(5));
  EXPECT_EQ(reg.drains, 1);
  EXPECT_EQ(reg.stops, 1);
  (*agent)->Shutdown(absl::Now());  // Idempotent.
  agent->reset();
  EXPECT_EQ(reg.stops, 1);

  CountingRegistrar failing;
  failing.start_status = absl::UnavailableError("etcd down");
  EXPECT_THAT(
      Agent::Start(
          {.node_id = "n2", .export_root = root_dir_, .registrar = &failing}),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("etcd")));
  EXPECT_EQ(failing.stops, 1);
  EXPECT_THAT(Agent::Start({.node_id = "n3", .export_root = base_ + "/none"}),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(
      Agent::Start(
          {.node_id = "n4", .export_root = root_dir_, .listen = "nonsense"}),
      StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(AgentServiceTest, AgentBackgroundScrubReports) {
  {
    StartServer();
    ASSERT_THAT(Write(*stub_, "bg/a", RandomBytes(3 * kBlock, 1)), IsOk());
    ASSERT_THAT(Write(*stub_, "bg/b", RandomBytes(3 * kBlock, 2)), IsOk());
    FlipByte("bg/b", 5);
  }
  auto agent = Agent::Start({.node_id = "n1",
                             .export_root = root_dir_,
                             .scrub_interval = absl::Hours(1),
                             .scrub_max_bytes_per_sec = 0});
  ASSERT_THAT(agent, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*agent)->scrub_report().has_value(); }));
  auto report = (*agent)->scrub_report();
  EXPECT_EQ(report->objects_checked, 2u);
  EXPECT_THAT(report->corrupt_paths, ElementsAre("bg/b"));
}

TEST_F(AgentServiceTest, AgentClearsStaleTempFilesAtStart) {
  ASSERT_EQ(mkdir((root_dir_ + "/" + kTempDirName).c_str(), 0700), 0);
  std::ofstream(root_dir_ + "/" + kTempDirName + "/stale") << "half";
  auto agent = Agent::Start({.node_id = "n1", .export_root = root_dir_});
  ASSERT_THAT(agent, IsOk());
  EXPECT_THAT(*(*agent)->export_root().ListTemp(), IsEmpty());
}

}  // namespace
}  // namespace node
}  // namespace rangefs
