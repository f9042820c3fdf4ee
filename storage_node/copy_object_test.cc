// CopyObject between two in-process agents over loopback gRPC: the copy is
// byte-exact with the source's sidecar, corrupt or unverifiable sources
// leave nothing behind, writes rules apply, and the node-wide cap holds.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "base/thread_priority.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage_node/agent_service.h"
#include "storage_node/export_root.h"
#include "storage_node/node_client.h"
#include "storage_node/object_copier.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// One in-process agent: export dir, service, server, client.
struct TestAgent {
  std::string dir;
  std::unique_ptr<ExportRoot> root;
  std::unique_ptr<AgentService> service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
  std::unique_ptr<NodeClient> client;

  ~TestAgent() {
    if (server) server->Shutdown(std::chrono::system_clock::now());
  }
};

class CopyObjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto base = testing::ScopedTempDir::Make("copy_object_test");
    ASSERT_THAT(base, IsOk());
    base_ = *std::move(base);
  }

  std::unique_ptr<TestAgent> Start(const std::string& name,
                                   AgentServiceOptions opts = {}) {
    auto a = std::make_unique<TestAgent>();
    a->dir = absl::StrCat(base_.path(), "/", name);
    EXPECT_EQ(mkdir(a->dir.c_str(), 0755), 0);
    auto r = ExportRoot::Open(a->dir, {.writable = !opts.read_only});
    EXPECT_THAT(r, IsOk());
    a->root = *std::move(r);
    a->service = std::make_unique<AgentService>(a->root.get(), opts);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(a->service.get());
    a->server = b.BuildAndStart();
    EXPECT_GT(port, 0);
    a->address = absl::StrCat("127.0.0.1:", port);
    auto c = NodeClient::Connect(a->address);
    EXPECT_THAT(c, IsOk());
    a->client = *std::move(c);
    return a;
  }

  static void Put(TestAgent& a, const std::string& path,
                  const std::string& data, uint32_t block_size = 4096) {
    size_t off = 0;
    auto r = a.client->WriteObject(
        path,
        [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
          const size_t n = std::min(buf.size(), data.size() - off);
          memcpy(buf.data(), data.data() + off, n);
          off += n;
          return n;
        },
        {.deadline = absl::Now() + absl::Seconds(30),
         .block_size = block_size,
         .chunk_bytes = 1 << 20});
    ASSERT_THAT(r, IsOk());
  }

  static std::string Slurp(const std::string& file) {
    std::ifstream f(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  static absl::StatusOr<CopyObjectResponse> Copy(TestAgent& dst,
                                                 const TestAgent& src,
                                                 const std::string& path,
                                                 bool overwrite = false,
                                                 uint64_t rate = 0) {
    CopyObjectRequest req;
    req.set_path(path);
    req.set_source_address(src.address);
    req.set_overwrite(overwrite);
    req.set_max_bytes_per_sec(rate);
    return dst.client->CopyObject(req, absl::Now() + absl::Seconds(30));
  }

  static void FlipByte(const std::string& file, off_t off) {
    int fd = open(file.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(pread(fd, &c, 1, off), 1);
    c ^= 0x01;
    ASSERT_EQ(pwrite(fd, &c, 1, off), 1);
    close(fd);
  }

  testing::ScopedTempDir base_;
};

TEST_F(CopyObjectTest, CopiesBytesAndSidecar) {
  auto src = Start("src");
  auto dst = Start("dst");
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{4096}, size_t{(5 << 20) + 7}}) {
    SCOPED_TRACE(size);
    const std::string path = absl::StrCat("f/1/obj-", size);
    const std::string data = RandomBytes(size, static_cast<uint32_t>(size));
    Put(*src, path, data);
    auto r = Copy(*dst, *src, path);
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->size(), size);
    EXPECT_TRUE(Slurp(dst->dir + "/" + path) == data);
    auto want = src->client->ChecksumObject(path, false,
                                            absl::Now() + absl::Seconds(60));
    auto got = dst->client->ChecksumObject(path, false,
                                           absl::Now() + absl::Seconds(60));
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(got->block_size(), 4096u);  // the source's block size
    EXPECT_EQ(got->SerializeAsString(), want->SerializeAsString());
  }
  EXPECT_GT(dst->service->Stats().bytes_written(), 5u << 20);
}

TEST_F(CopyObjectTest, OtherSourcePathAndOverwrite) {
  auto src = Start("src");
  auto dst = Start("dst");
  Put(*src, "a/x", "new bytes");
  Put(*dst, "b/y", "old");
  CopyObjectRequest req;
  req.set_path("b/y");
  req.set_source_path("a/x");
  req.set_source_address(src->address);
  EXPECT_THAT(dst->client->CopyObject(req, absl::Now() + absl::Seconds(60)),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(Slurp(dst->dir + "/b/y"), "old");
  req.set_overwrite(true);
  ASSERT_THAT(dst->client->CopyObject(req, absl::Now() + absl::Seconds(60)),
              IsOk());
  EXPECT_EQ(Slurp(dst->dir + "/b/y"), "new bytes");
}

TEST_F(CopyObjectTest, CorruptSourceLeavesNothing) {
  auto src = Start("src");
  auto dst = Start("dst");
  Put(*src, "c/obj", RandomBytes(3 * 4096 + 10, 7));
  FlipByte(src->dir + "/c/obj", 2 * 4096 + 3);
  EXPECT_THAT(Copy(*dst, *src, "c/obj"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("block 2")));
  struct stat st;
  EXPECT_NE(stat((dst->dir + "/c/obj").c_str(), &st), 0);
  // In the second 4 MiB piece (read while the first is written).
  Put(*src, "c/big", RandomBytes((5 << 20) + 3, 9));
  FlipByte(src->dir + "/c/big", (4 << 20) + (1 << 19));
  EXPECT_THAT(Copy(*dst, *src, "c/big"), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_NE(stat((dst->dir + "/c/big").c_str(), &st), 0);
  auto temps = dst->root->ListTemp();
  ASSERT_THAT(temps, IsOk());
  EXPECT_TRUE(temps->empty());
}

TEST_F(CopyObjectTest, BytesAlteredInFlightAreCaught) {
  // The source flips a bit after computing each chunk's CRC (a bad NIC or
  // memory): the chunk check refuses it.
  auto src = Start("src", {.chunk_hook = [](uint64_t, absl::Span<char> d) {
                     if (!d.empty()) d[0] ^= 0x10;
                   }});
  auto dst = Start("dst");
  Put(*src, "c/obj", RandomBytes(10000, 8));
  EXPECT_THAT(Copy(*dst, *src, "c/obj"), StatusIs(absl::StatusCode::kDataLoss));
  struct stat st;
  EXPECT_NE(stat((dst->dir + "/c/obj").c_str(), &st), 0);
}

TEST_F(CopyObjectTest, SourceWithoutChecksumsIsRefused) {
  auto src = Start("src");
  auto dst = Start("dst");
  std::ofstream(src->dir + "/plain") << "no sidecar";
  EXPECT_THAT(Copy(*dst, *src, "plain"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no checksums")));
  EXPECT_THAT(Copy(*dst, *src, "missing"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(CopyObjectTest, WriteRulesApply) {
  auto src = Start("src");
  Put(*src, "o", "x");
  auto ro = Start("ro", {.read_only = true});
  EXPECT_THAT(
      Copy(*ro, *src, "o"),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("read-only")));
  auto nobody = Start("nobody", {.write_access = {.check_identity = true}});
  EXPECT_THAT(
      Copy(*nobody, *src, "o"),
      StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("CopyObject")));
  auto dst = Start("dst");
  for (const char* bad : {"../x", "/abs"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(Copy(*dst, *src, bad),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  for (const char* reserved : {".rangefs-tmp/x", "a/b.rangefs-crc"}) {
    SCOPED_TRACE(reserved);
    EXPECT_THAT(Copy(*dst, *src, reserved),
                StatusIs(absl::StatusCode::kPermissionDenied));
  }
  CopyObjectRequest req;
  req.set_path("o");
  req.set_source_address("not an address");
  EXPECT_THAT(dst->client->CopyObject(req, absl::Now() + absl::Seconds(60)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(CopyObjectTest, ListObjectsStreamsObjectsOnly) {
  auto a = Start("a");
  Put(*a, "x/1", "one");
  Put(*a, "y", "three");
  auto list = a->client->ListObjects(absl::Now() + absl::Seconds(60));
  ASSERT_THAT(list, IsOk());
  std::map<std::string, uint64_t> got;
  for (const ObjectInfo& o : *list) {
    got[o.path()] = o.size();
    EXPECT_GT(o.mtime_ns(), 0);
  }
  EXPECT_EQ(got, (std::map<std::string, uint64_t>{{"x/1", 3}, {"y", 5}}));
}

TEST_F(CopyObjectTest, NodeCapThrottles) {
  FakeClock clock;  // The cap sleeps on it: time passes only there.
  auto src = Start("src");
  auto dst = Start("dst", {.clock = &clock, .copy_max_bytes_per_sec = 1 << 20});
  Put(*src, "big", RandomBytes(5 << 20, 9));
  const absl::Time t0 = clock.MonotonicNow();
  ASSERT_THAT(Copy(*dst, *src, "big"), IsOk());
  // 5 MiB at 1 MiB/s.
  EXPECT_EQ(clock.MonotonicNow() - t0, absl::Seconds(5));
  // The request's own cap applies too: each piece waits for both.
  ASSERT_THAT(Copy(*dst, *src, "big", /*overwrite=*/true, 1 << 20), IsOk());
  EXPECT_GE(clock.MonotonicNow() - t0, absl::Seconds(10));
}

// Each piece is written on the copy's own thread (on_bytes runs there after
// the write); with a nice value it runs lowered, and the caller's thread,
// an RPC server's in the agent, keeps its priority.
TEST_F(CopyObjectTest, CopiesRunAtTheirOwnPriority) {
  auto src = Start("src");
  auto dst = Start("dst");
  const std::string data = RandomBytes(3 << 20, 11);
  Put(*src, "o", data);
  const int caller = ThreadNice();
  for (int nice : {0, 12}) {
    std::vector<int> seen;
    ObjectCopier copier(
        dst->root.get(),
        {.read_bytes = 1 << 20,
         .on_bytes = [&](uint64_t) { seen.push_back(ThreadNice()); },
         .nice = nice});
    CopyObjectRequest req;
    req.set_path("o");
    req.set_source_address(src->address);
    req.set_overwrite(true);
    ASSERT_THAT(copier.Copy(req, absl::Now() + absl::Seconds(30), nullptr),
                IsOk());
    EXPECT_THAT(seen,
                ElementsAre(std::max(caller, nice), std::max(caller, nice),
                            std::max(caller, nice)))
        << "nice " << nice;
    EXPECT_EQ(ThreadNice(), caller);
  }
  EXPECT_EQ(Slurp(dst->dir + "/o"), data);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
