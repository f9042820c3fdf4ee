// GaneshaServer against the real nfs-ganesha and libnfs-utils: files come
// back byte-exact over v4 and v3, a paused server hangs a client (and is
// only paused), a stopped or killed one is really gone (process, port,
// private rpcbind), and a restarted one serves again.
#include "tests/testing/ganesha_server.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace testing {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::testing::HasSubstr;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
}

// The inode of `pid`'s PID namespace ("" if gone).
std::string PidNs(pid_t pid) {
  char buf[64] = {};
  const std::string link = absl::StrCat("/proc/", pid, "/ns/pid");
  ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// How many live processes are in PID namespace `ns`.
int ProcessesInNs(const std::string& ns) {
  int count = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    if (PidNs(pid) != ns) continue;
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    std::string all((std::istreambuf_iterator<char>(stat)), {});
    const size_t paren = all.rfind(')');
    if (paren != std::string::npos && paren + 2 < all.size() &&
        all[paren + 2] == 'Z') {
      continue;  // a zombie holds no resources
    }
    ++count;
  }
  if (d != nullptr) closedir(d);
  return count;
}

class GaneshaServerTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir("export-");
    ASSERT_THAT(dir, IsOk());
    dir_ = *dir;
    ASSERT_EQ(mkdir((dir_ + "/sub").c_str(), 0755), 0);
    data_ = RandomBytes((1 << 20) + 4097, 7);
    WriteFile(dir_ + "/sub/object", data_);
    WriteFile(dir_ + "/empty", "");
  }
  void TearDown() override { RemoveTree(dir_); }

  std::string dir_;
  std::string data_;
};

TEST_P(GaneshaServerTest, ServesFilesByteExactAndReallyStops) {
  auto server =
      GaneshaServer::Start({.export_dir = dir_, .version = GetParam()});
  ASSERT_THAT(server, IsOk());
  GaneshaServer& s = **server;
  EXPECT_TRUE(s.running());
  EXPECT_GT(s.pid(), 0);
  EXPECT_THAT(s.url(),
              HasSubstr(absl::StrCat("nfs://127.0.0.1:", s.port(), dir_)));

  auto got = NfsCat(s.LibnfsUrl("sub/object"), absl::Seconds(30));
  ASSERT_THAT(got, IsOk()) << s.LogTail();
  EXPECT_EQ(got->size(), data_.size());
  EXPECT_TRUE(*got == data_) << "bytes differ";
  got = NfsCat(s.LibnfsUrl("empty"), absl::Seconds(30));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, "");
  // Read-only and confined to the export.
  EXPECT_THAT(NfsCat(s.LibnfsUrl("missing"), absl::Seconds(30)),
              StatusIs(absl::StatusCode::kUnavailable));

  const pid_t pid = s.pid();
  const std::string ns = PidNs(pid);
  ASSERT_FALSE(ns.empty());
  // v3: ganesha and its private rpcbind; v4: ganesha alone.
  EXPECT_EQ(ProcessesInNs(ns), std::string(GetParam()) == "3" ? 2 : 1);

  ASSERT_THAT(s.Stop(), IsOk()) << s.LogTail();
  EXPECT_FALSE(s.running());
  EXPECT_EQ(s.pid(), 0);
  EXPECT_NE(::kill(pid, 0), 0) << "ganesha " << pid << " still exists";
  EXPECT_EQ(ProcessesInNs(ns), 0) << "rpcbind outlived ganesha";
  EXPECT_FALSE(TcpPortOpen(s.port()));
  // A stopped server refuses at once (no hang): the client gets an error.
  EXPECT_THAT(NfsCat(s.LibnfsUrl("sub/object"), absl::Seconds(30)),
              StatusIs(absl::StatusCode::kUnavailable));

  ASSERT_THAT(s.Restart(), IsOk()) << s.LogTail();
  got = NfsCat(s.LibnfsUrl("sub/object"), absl::Seconds(30));
  ASSERT_THAT(got, IsOk()) << s.LogTail();
  EXPECT_TRUE(*got == data_);
}

TEST_P(GaneshaServerTest, PausedServerHangsClientsUntilResumed) {
  auto server =
      GaneshaServer::Start({.export_dir = dir_, .version = GetParam()});
  ASSERT_THAT(server, IsOk());
  GaneshaServer& s = **server;
  ASSERT_THAT(s.Pause(), IsOk());
  EXPECT_TRUE(s.running());
  EXPECT_THAT(NfsCat(s.LibnfsUrl("sub/object"), absl::Seconds(1)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_THAT(s.Resume(), IsOk());
  auto got = NfsCat(s.LibnfsUrl("sub/object"), absl::Seconds(30));
  ASSERT_THAT(got, IsOk()) << s.LogTail();
  EXPECT_TRUE(*got == data_);
}

TEST_P(GaneshaServerTest, KillAndDestructorLeaveNothing) {
  auto server =
      GaneshaServer::Start({.export_dir = dir_, .version = GetParam()});
  ASSERT_THAT(server, IsOk());
  pid_t pid = (*server)->pid();
  std::string ns = PidNs(pid);
  const int port = (*server)->port();
  ASSERT_THAT((*server)->Pause(), IsOk());  // a stopped server dies too
  ASSERT_THAT((*server)->Kill(), IsOk());
  EXPECT_NE(::kill(pid, 0), 0);
  EXPECT_EQ(ProcessesInNs(ns), 0);
  EXPECT_FALSE(TcpPortOpen(port));

  ASSERT_THAT((*server)->Restart(), IsOk());
  pid = (*server)->pid();
  ns = PidNs(pid);
  server->reset();  // the destructor, with the server running
  EXPECT_NE(::kill(pid, 0), 0);
  EXPECT_EQ(ProcessesInNs(ns), 0);
  EXPECT_FALSE(TcpPortOpen(port));
}

INSTANTIATE_TEST_SUITE_P(Versions, GaneshaServerTest,
                         ::testing::Values("4.1", "3"), [](const auto& info) {
                           return std::string(info.param) == "3" ? "v3" : "v4";
                         });

TEST(GaneshaServerOptionsTest, RefusesBadOptions) {
  EXPECT_THAT(
      GaneshaServer::Start({.export_dir = "relative"}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute")));
  EXPECT_THAT(
      GaneshaServer::Start({.export_dir = "/nonexistent-rangefs"}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("not a directory")));
  EXPECT_THAT(
      GaneshaServer::Start({.export_dir = "/tmp", .version = "2"}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version")));
}

}  // namespace
}  // namespace testing
}  // namespace rangefs
