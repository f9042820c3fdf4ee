// Integration test of the real rangefs-node binary: start it as a child
// process, talk gRPC to it, stop it with SIGTERM (exit 0) and SIGKILL it in
// the middle of a write (no half-written object becomes visible).
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <random>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/testing/http_get.h"
#include "base/testing/ports.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/node_agent.grpc.pb.h"
#include "storage_node/export_root.h"
#include "storage_node/grpc_status.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace node {
namespace {

using testing::Subprocess;

class NodeIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("node_integration_test");
    ASSERT_THAT(dir, IsOk());
    tmp_ = *std::move(dir);
    dir_ = tmp_.path();
    export_ = dir_ + "/export";
    ASSERT_EQ(mkdir(export_.c_str(), 0755), 0);
  }

  // Starts the node and waits for its "serving on" line; sets stub_.
  void StartNode(const std::string& log_name,
                 const std::vector<std::string>& extra_flags = {}) {
    std::vector<std::string> argv = {
        testing::RunfilePath("storage_node/rangefs-node"), "--node_id=it1",
        "--export_root=" + export_, "--listen=127.0.0.1:0",
        "--chunk_size=65536"};
    argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
    auto p =
        Subprocess::Start({.argv = argv, .log_path = dir_ + "/" + log_name});
    ASSERT_THAT(p, IsOk());
    node_ = std::move(*p);
    ASSERT_THAT(node_->WaitForLog("rangefs-node it1 serving on 127.0.0.1:",
                                  absl::Seconds(60)),
                IsOk());
    const std::string log = node_->Log();
    const std::string marker = "serving on 127.0.0.1:";
    size_t at = log.find(marker) + marker.size();
    size_t end = log.find('\n', at);
    int port = 0;
    ASSERT_TRUE(absl::SimpleAtoi(log.substr(at, end - at), &port)) << log;
    EXPECT_NE(log.find("etcd registration not configured"), std::string::npos);
    stub_ = NodeAgent::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  testing::ScopedTempDir tmp_;  // First: removed after the node exits.
  std::string dir_, export_;
  std::unique_ptr<Subprocess> node_;
  std::unique_ptr<NodeAgent::Stub> stub_;
};

// True if the node's temp dir holds a non-empty file (a write in progress).
bool TempHasData(const std::string& tmp_dir) {
  DIR* d = opendir(tmp_dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (struct dirent* e = readdir(d)) {
    struct stat st;
    const std::string p = tmp_dir + "/" + e->d_name;
    if (e->d_name[0] != '.' && stat(p.c_str(), &st) == 0 && st.st_size > 0) {
      found = true;
    }
  }
  closedir(d);
  return found;
}

std::string RandomBytes(size_t n) {
  std::mt19937 rng(99);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST_F(NodeIntegrationTest, WriteReadThenSigtermExitsZero) {
  StartNode("node1.log");
  const std::string data = RandomBytes((2 << 20) + 77);
  {
    grpc::ClientContext ctx;
    WriteObjectResponse resp;
    auto w = stub_->WriteObject(&ctx, &resp);
    WriteObjectRequest req;
    req.mutable_header()->set_path("jobs/part-00000");
    ASSERT_TRUE(w->Write(req));
    for (size_t off = 0; off < data.size(); off += 100000) {
      req.set_data(data.substr(off, 100000));
      ASSERT_TRUE(w->Write(req));
    }
    w->WritesDone();
    ASSERT_THAT(FromGrpcStatus(w->Finish()), IsOk());
    EXPECT_EQ(resp.size(), data.size());
  }
  {
    grpc::ClientContext ctx;
    ReadRangeRequest req;
    req.set_path("jobs/part-00000");
    req.set_offset(0);
    req.set_length(data.size());
    req.set_verify(true);
    auto r = stub_->ReadRange(&ctx, req);
    std::string got;
    ReadRangeChunk c;
    while (r->Read(&c)) {
      EXPECT_LE(c.data().size(), 65536u);
      got += c.data();
    }
    ASSERT_THAT(FromGrpcStatus(r->Finish()), IsOk());
    EXPECT_TRUE(got == data);
  }
  // The client's channel stays connected, as in production: gRPC then
  // takes a few seconds to drain it, within the node's 10 s grace.
  ASSERT_THAT(node_->Signal(SIGTERM), IsOk());
  auto ws = node_->Wait(absl::Seconds(60));  // room for a loaded machine
  ASSERT_THAT(ws, IsOk()) << node_->LogTail();
  ASSERT_TRUE(WIFEXITED(*ws)) << node_->LogTail();
  EXPECT_EQ(WEXITSTATUS(*ws), 0) << node_->LogTail();
  EXPECT_NE(node_->Log().find("stopped"), std::string::npos);
}

// --metrics_port: Prometheus text of the agent's counters, on 127.0.0.1.
TEST_F(NodeIntegrationTest, ServesMetricsOnMetricsPort) {
  auto port = testing::PickUnusedPort();
  ASSERT_THAT(port, IsOk());
  StartNode("metrics.log", {absl::StrCat("--metrics_port=", *port)});
  ASSERT_THAT(node_->WaitForLog(absl::StrCat("rangefs-node it1 metrics on "
                                             "http://127.0.0.1:",
                                             *port, "/metrics"),
                                absl::Seconds(10)),
              IsOk());
  const std::string data = RandomBytes(100000);
  {
    grpc::ClientContext ctx;
    WriteObjectResponse resp;
    auto w = stub_->WriteObject(&ctx, &resp);
    WriteObjectRequest req;
    req.mutable_header()->set_path("m/obj");
    ASSERT_TRUE(w->Write(req));
    req.set_data(data);
    ASSERT_TRUE(w->Write(req));
    w->WritesDone();
    ASSERT_THAT(FromGrpcStatus(w->Finish()), IsOk());
  }
  {
    grpc::ClientContext ctx;
    ReadRangeRequest req;
    req.set_path("m/obj");
    req.set_length(data.size());
    auto r = stub_->ReadRange(&ctx, req);
    ReadRangeChunk c;
    while (r->Read(&c)) {
    }
    ASSERT_THAT(FromGrpcStatus(r->Finish()), IsOk());
  }
  auto scraped = testing::HttpGet(*port, "/metrics");
  ASSERT_THAT(scraped, IsOk());
  const std::string& t = *scraped;
  EXPECT_THAT(t, ::testing::HasSubstr("200 OK"));
  EXPECT_THAT(t, ::testing::HasSubstr("rangefs_node_info{node=\"it1\"} 1\n"));
  EXPECT_THAT(t, ::testing::HasSubstr("rangefs_node_reads_total 1\n"));
  EXPECT_THAT(t,
              ::testing::HasSubstr("rangefs_node_read_bytes_total 100000\n"));
  EXPECT_THAT(t, ::testing::HasSubstr("rangefs_node_writes_total 1\n"));
  EXPECT_THAT(t, ::testing::HasSubstr("rangefs_node_inflight 0\n"));
  EXPECT_THAT(t, ::testing::HasSubstr("rangefs_node_export_healthy 1\n"));
  EXPECT_THAT(t,
              ::testing::HasSubstr("rangefs_node_scrub_corrupt_objects 0\n"));
  EXPECT_THAT(t, ::testing::ContainsRegex("rangefs_node_total_bytes [1-9]"));
  EXPECT_THAT(t, ::testing::ContainsRegex("rangefs_node_free_bytes [1-9]"));
}

// A --metrics_address that is not an IPv4 address: exit 2 naming it.
TEST_F(NodeIntegrationTest, BadMetricsAddressIsRefused) {
  auto p = Subprocess::Start(
      {.argv = {testing::RunfilePath("storage_node/rangefs-node"),
                "--node_id=it1", "--export_root=" + export_,
                "--listen=127.0.0.1:0", "--metrics_port=1",
                "--metrics_address=my-host"},
       .log_path = dir_ + "/badaddr.log"});
  ASSERT_THAT(p, IsOk());
  auto ws = (*p)->Wait(absl::Seconds(60));
  ASSERT_THAT(ws, IsOk());
  ASSERT_TRUE(WIFEXITED(*ws)) << (*p)->LogTail();
  EXPECT_EQ(WEXITSTATUS(*ws), 2) << (*p)->LogTail();
  EXPECT_THAT((*p)->Log(), ::testing::HasSubstr("'my-host' is not an IPv4"));
}

TEST_F(NodeIntegrationTest, SigkillMidWriteLeavesNoVisibleObject) {
  StartNode("node2.log");
  {
    grpc::ClientContext ctx;
    WriteObjectResponse resp;
    auto w = stub_->WriteObject(&ctx, &resp);
    WriteObjectRequest req;
    req.mutable_header()->set_path("half/obj");
    ASSERT_TRUE(w->Write(req));
    req.set_data(RandomBytes(256 << 10));
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(w->Write(req));
    // Wait until the node has streamed bytes into its temp file.
    const std::string tmp_dir = export_ + "/" + kTempDirName;
    ASSERT_THAT(node_->WaitUntil([&] { return TempHasData(tmp_dir); },
                                 absl::Seconds(60), "temp file with data"),
                IsOk());
    ASSERT_THAT(node_->Kill(), IsOk());
    ctx.TryCancel();
  }
  struct stat st;
  EXPECT_NE(stat((export_ + "/half/obj").c_str(), &st), 0);
  EXPECT_NE(stat((export_ + "/half/.obj.rangefs-crc").c_str(), &st), 0);

  // A restarted node cleans the temp dir and does not know the object.
  StartNode("node3.log");
  grpc::ClientContext ctx;
  StatObjectRequest sreq;
  sreq.set_path("half/obj");
  StatObjectResponse sresp;
  EXPECT_EQ(stub_->StatObject(&ctx, sreq, &sresp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  auto root = ExportRoot::Open(export_);
  ASSERT_THAT(root, IsOk());
  EXPECT_THAT(*(*root)->ListTemp(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace node
}  // namespace rangefs
