// Storage-node agents secure by default, with real rangefs-node processes,
// a real etcd and certificates made by deploy/etcd/make-certs.sh:
//  - on an mTLS agent, clients without a certificate of the cluster CA
//    cannot write, overwrite or delete; a reader certificate reads but
//    cannot change the export (nor make it copy from a peer: CopyObject,
//    or rebuild a coded column: RebuildEcColumn);
//    a writer certificate (on --writers) can, and CopyObject then reads
//    the peer with the agent's --peer_tls_* certificate;
//  - an agent on a non-loopback address without mTLS or --insecure exits
//    non-zero with a message that says what to do;
//  - with --insecure it starts, warns, publishes INSECURE in its live
//    record, and `rangefs-admin doctor` flags it.
// The whole test runs in a network namespace of its own (created in main,
// with only a loopback interface), so agents bound to 0.0.0.0 are reachable
// from nowhere else.
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/node_client.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using ::rangefs::testing::AgentCluster;
using ::rangefs::testing::AgentProcess;
using ::rangefs::testing::MakeTempDir;
using ::rangefs::testing::RunfilePath;
using ::rangefs::testing::Subprocess;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

// Runs argv to completion (bounded); its exit code, or -1. `log` gets its
// output.
int RunToExit(const std::vector<std::string>& argv, const std::string& log) {
  auto p = Subprocess::Start({.argv = argv, .log_path = log});
  if (!p.ok()) return -1;
  auto st = (*p)->Wait(absl::Seconds(60));
  if (!st.ok() || !WIFEXITED(*st)) return -1;
  return WEXITSTATUS(*st);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

class AgentSecurityTest : public ::testing::Test {
 protected:
  // CA "good": agent server cert "agent", client certs "writer" and
  // "reader". CA "other": a client cert named "writer" too.
  static void SetUpTestSuite() {
    auto c = AgentCluster::Start("agent-security");
    ASSERT_THAT(c, IsOk());
    cluster_ = c->release();
    const std::string script = RunfilePath("deploy/etcd/make-certs.sh");
    ASSERT_EQ(RunToExit({"/bin/bash", script, Certs("good"), "--members=",
                         "--agents=agent", "--clients=writer,reader"},
                        cluster_->dir() + "/mk-good.log"),
              0)
        << ReadFile(cluster_->dir() + "/mk-good.log");
    ASSERT_EQ(RunToExit({"/bin/bash", script, Certs("other"),
                         "--members=", "--clients=writer"},
                        cluster_->dir() + "/mk-other.log"),
              0);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static std::string Certs(const std::string& ca) {
    return cluster_->dir() + "/certs-" + ca;
  }
  static std::string File(const std::string& ca, const std::string& name) {
    return Certs(ca) + "/" + name;
  }
  // TLS options of a client holding certificate `name` of CA `ca` (empty
  // name: TLS without a client certificate).
  static node::NodeClientTlsOptions Client(const std::string& ca,
                                           const std::string& name) {
    node::NodeClientTlsOptions o{.ca_file = File("good", "ca.crt")};
    if (!name.empty()) {
      o.cert_file = File(ca, name + ".crt");
      o.key_file = File(ca, name + ".key");
    }
    return o;
  }
  static std::vector<std::string> MtlsFlags() {
    return {"--tls_cert=" + File("good", "agent.crt"),
            "--tls_key=" + File("good", "agent.key"),
            "--tls_client_ca=" + File("good", "ca.crt")};
  }

  // Waits for `id`'s live record to report `want`.
  static bool WaitSecurity(const std::string& id,
                           v1::LiveRecord::TransportSecurity want) {
    return cluster_->WaitLive(
        id,
        [want](bool found, const ns::LiveEntry& e) {
          return found && e.record.transport_security() == want;
        },
        absl::Seconds(60));
  }

  static AgentCluster* cluster_;
};

AgentCluster* AgentSecurityTest::cluster_ = nullptr;

// Short: a refused handshake costs the whole deadline of a write (and a
// deadline hit under load reads as refused too: see Refused()). Later():
// calls that must succeed, generous for a loaded machine.
absl::Time Soon() { return absl::Now() + absl::Seconds(1); }
absl::Time Later() { return absl::Now() + absl::Seconds(60); }

absl::Status Put(node::NodeClient& c, const std::string& path,
                 const std::string& data, bool overwrite, absl::Time deadline) {
  size_t off = 0;
  auto r = c.WriteObject(path,
                         [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
                           const size_t n =
                               std::min(buf.size(), data.size() - off);
                           memcpy(buf.data(), data.data() + off, n);
                           off += n;
                           return n;
                         },
                         {.deadline = deadline,
                          .overwrite = overwrite,
                          .expected_size = static_cast<int64_t>(data.size())});
  return r.status();
}

// The object's bytes, or "error: <status>".
std::string Get(node::NodeClient& c, const std::string& path, size_t size) {
  std::string got(size + 1, '\0');  // One more: a longer object shows.
  auto n = c.ReadRange(path, 0, absl::MakeSpan(&got[0], got.size()),
                       {.deadline = Later()});
  if (!n.ok()) return absl::StrCat("error: ", n.status().ToString());
  got.resize(*n);
  return got;
}

// A short description of Get's answer, for failure messages.
std::string Summary(const std::string& got) {
  return absl::StrCat(got.size(),
                      " bytes: ", absl::CHexEscape(got.substr(0, 200)));
}

// How a refused TLS handshake shows.
auto Refused() {
  return AnyOf(StatusIs(absl::StatusCode::kUnavailable),
               StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(AgentSecurityTest, MtlsAgentLetsOnlyWritersChangeTheExport) {
  std::vector<std::string> flags = MtlsFlags();
  flags.push_back("--writers=writer");
  auto a = cluster_->AddAgent("sec", true, v1::ACTIVE, flags);
  ASSERT_THAT(a, IsOk());
  const std::string addr = (*a)->address;
  ASSERT_TRUE(WaitSecurity("sec", v1::LiveRecord::MTLS));
  EXPECT_THAT((*a)->process->WaitForLog("(mTLS)", absl::Seconds(60)), IsOk());

  auto writer = node::NodeClient::Connect(addr, Client("good", "writer"));
  auto reader = node::NodeClient::Connect(addr, Client("good", "reader"));
  auto plain = node::NodeClient::Connect(addr, {});
  auto no_cert = node::NodeClient::Connect(addr, Client("good", ""));
  auto foreign = node::NodeClient::Connect(addr, Client("other", "writer"));
  for (auto* c : {&writer, &reader, &plain, &no_cert, &foreign}) {
    ASSERT_THAT(*c, IsOk());
  }
  const std::string v1(100000, 'a'), v2(70000, 'b');
  ASSERT_THAT(Put(**writer, "d/obj", v1, false, Later()), IsOk());

  // No certificate of the cluster CA: the handshake fails, nothing lands.
  EXPECT_THAT(Put(**plain, "d/new", v2, false, Soon()), Refused());
  EXPECT_THAT(Put(**plain, "d/obj", v2, true, Soon()), Refused());
  EXPECT_THAT((*plain)->DeleteObject("d/obj", Soon()), Refused());
  EXPECT_THAT(Put(**no_cert, "d/obj", v2, true, Soon()), Refused());
  EXPECT_THAT((*no_cert)->DeleteObject("d/obj", Soon()), Refused());
  // A "writer" from another CA is nobody here.
  EXPECT_THAT(Put(**foreign, "d/obj", v2, true, Soon()), Refused());

  // The reader reads, and is told why it may not write.
  std::string got = Get(**reader, "d/obj", v1.size());
  EXPECT_TRUE(got == v1) << Summary(got);
  const auto denied =
      StatusIs(absl::StatusCode::kPermissionDenied,
               AllOf(HasSubstr("\"reader\""), HasSubstr("--writers")));
  EXPECT_THAT(Put(**reader, "d/new", v2, false, Later()), denied);
  EXPECT_THAT(Put(**reader, "d/obj", v2, true, Later()), denied);
  EXPECT_THAT((*reader)->DeleteObject("d/obj", Later()), denied);

  // Nothing changed.
  got = Get(**reader, "d/obj", v1.size());
  EXPECT_TRUE(got == v1) << Summary(got);
  EXPECT_THAT((*reader)->StatObject("d/new", Later()),
              StatusIs(absl::StatusCode::kNotFound));

  // The writer overwrites and deletes.
  ASSERT_THAT(Put(**writer, "d/obj", v2, true, Later()), IsOk());
  got = Get(**reader, "d/obj", v2.size());
  EXPECT_TRUE(got == v2) << Summary(got);
  EXPECT_THAT((*writer)->DeleteObject("d/obj", Later()), IsOk());
  EXPECT_THAT((*reader)->StatObject("d/obj", Later()),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT((*a)->process->Log(),
              HasSubstr("WriteObject refused: certificate \"reader\""));
}

TEST_F(AgentSecurityTest, MtlsCopyObjectIsAWriteAndDialsPeersWithMtls) {
  std::vector<std::string> flags = MtlsFlags();
  flags.push_back("--writers=writer");
  auto src = cluster_->AddAgent("csrc", true, v1::ACTIVE, flags);
  ASSERT_THAT(src, IsOk());
  // The destination reads from its peer with a client certificate of the
  // CA (a reader's is enough); a second one has no peer certificate.
  std::vector<std::string> dst_flags = flags;
  dst_flags.push_back("--peer_tls_ca=" + File("good", "ca.crt"));
  dst_flags.push_back("--peer_tls_cert=" + File("good", "reader.crt"));
  dst_flags.push_back("--peer_tls_key=" + File("good", "reader.key"));
  auto dst = cluster_->AddAgent("cdst", true, v1::ACTIVE, dst_flags);
  ASSERT_THAT(dst, IsOk());
  auto bare = cluster_->AddAgent("cbare", true, v1::ACTIVE, flags);
  ASSERT_THAT(bare, IsOk());
  for (const char* id : {"csrc", "cdst", "cbare"}) {
    ASSERT_TRUE(WaitSecurity(id, v1::LiveRecord::MTLS));
  }
  auto to_src =
      node::NodeClient::Connect((*src)->address, Client("good", "writer"));
  auto writer =
      node::NodeClient::Connect((*dst)->address, Client("good", "writer"));
  auto reader =
      node::NodeClient::Connect((*dst)->address, Client("good", "reader"));
  auto to_bare =
      node::NodeClient::Connect((*bare)->address, Client("good", "writer"));
  for (auto* c : {&to_src, &writer, &reader, &to_bare}) ASSERT_THAT(*c, IsOk());
  const std::string v(300000, 'c');
  ASSERT_THAT(Put(**to_src, "k/obj", v, false, Later()), IsOk());
  node::CopyObjectRequest req;
  req.set_path("k/obj");
  req.set_source_address((*src)->address);
  // A reader may not make an agent copy (it writes the export).
  EXPECT_THAT(
      (*reader)->CopyObject(req, Later()),
      StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("CopyObject")));
  // Nor make it rebuild an erasure-coded column (a write too), refused
  // before any field is looked at.
  node::RebuildEcColumnRequest rebuild;
  rebuild.set_path("k/rebuilt");
  EXPECT_THAT((*reader)->RebuildEcColumn(rebuild, Later()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("RebuildEcColumn")));
  // Without a peer certificate the source refuses the handshake.
  EXPECT_THAT((*to_bare)->CopyObject(req, Later()), Refused());
  // The writer's copy goes agent to agent under mTLS, byte-exact.
  ASSERT_THAT((*writer)->CopyObject(req, Later()), IsOk());
  std::string got = Get(**reader, "k/obj", v.size());
  EXPECT_TRUE(got == v) << Summary(got);
}

TEST_F(AgentSecurityTest, MtlsWithoutWritersRefusesEveryWrite) {
  auto a = cluster_->AddAgent("ro", true, v1::ACTIVE, MtlsFlags());
  ASSERT_THAT(a, IsOk());
  auto writer =
      node::NodeClient::Connect((*a)->address, Client("good", "writer"));
  ASSERT_THAT(writer, IsOk());
  EXPECT_THAT(Put(**writer, "x", "data", false, Later()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("this agent has no writers")));
  EXPECT_THAT((*a)->process->Log(), HasSubstr("without --writers"));
}

TEST_F(AgentSecurityTest, NonLoopbackWithoutMtlsOrInsecureExitsNonZero) {
  const std::string node = RunfilePath("storage_node/rangefs-node");
  const std::string exp = cluster_->dir() + "/export-refused";
  ASSERT_EQ(mkdir(exp.c_str(), 0755), 0);
  struct Case {
    std::vector<std::string> flags;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {{"--listen=0.0.0.0:7070"},
       {"0.0.0.0:7070", "without TLS", "--tls_client_ca", "--writers",
        "--insecure", "make-certs.sh --agents"}},
      {{"--listen=[::]:7070"}, {"[::]:7070", "--insecure"}},
      {{"--listen=127.0.0.1:0", "--data_listen=0.0.0.0:0"},
       {"data port", "--data_listen=off", "--insecure"}},
      {{"--listen=0.0.0.0:7070", "--tls_cert=" + File("good", "agent.crt"),
        "--tls_key=" + File("good", "agent.key")},
       {"without --tls_client_ca", "--insecure"}},
      {{"--listen=127.0.0.1:0", "--writers=writer"}, {"--writers needs mTLS"}},
  };
  int i = 0;
  for (const Case& c : cases) {
    std::vector<std::string> argv = {node, "--node_id=bad",
                                     "--export_root=" + exp};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    const std::string log = absl::StrCat(cluster_->dir(), "/bad", ++i, ".log");
    EXPECT_EQ(RunToExit(argv, log), 1) << c.flags[0];
    const std::string out = ReadFile(log);
    EXPECT_THAT(out, HasSubstr("refusing to serve")) << out;
    for (const std::string& s : c.says) EXPECT_THAT(out, HasSubstr(s)) << out;
  }
}

TEST_F(AgentSecurityTest, InsecureAgentStartsWarnsAndIsFlagged) {
  auto a = cluster_->AddAgent("open", true, v1::ACTIVE, {"--insecure"},
                              /*wait=*/true, /*listen_host=*/"0.0.0.0");
  ASSERT_THAT(a, IsOk());
  EXPECT_THAT((*a)->process->Log(), HasSubstr("serving on 0.0.0.0:"));
  ASSERT_THAT((*a)->process->WaitForLog("runs INSECURE", absl::Seconds(60)),
              IsOk());
  EXPECT_THAT((*a)->process->Log(),
              HasSubstr("anyone who can reach it can read, write"));
  ASSERT_TRUE(WaitSecurity("open", v1::LiveRecord::INSECURE));
  // Insecure indeed: a plaintext client writes.
  auto plain = node::NodeClient::Connect((*a)->address, {});
  ASSERT_THAT(plain, IsOk());
  EXPECT_THAT(Put(**plain, "o", "data", false, Later()), IsOk());

  // doctor names the agent and the fix.
  const std::string log = cluster_->dir() + "/doctor.log";
  RunToExit({RunfilePath("admin/rangefs-admin"),
             "--etcd=" + cluster_->etcd()->endpoints(), "--cluster=it",
             "doctor", "--mounts=no"},
            log);
  const std::string out = ReadFile(log);
  EXPECT_THAT(out, HasSubstr("security open")) << out;
  EXPECT_THAT(out, HasSubstr("INSECURE")) << out;
  EXPECT_THAT(out, HasSubstr("--tls_client_ca")) << out;

  // The repeating warning does not hold up a clean stop.
  ASSERT_THAT((*a)->process->Signal(SIGTERM), IsOk());
  auto st = (*a)->process->Wait(absl::Seconds(60));
  ASSERT_THAT(st, IsOk());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << *st;
}

// Moves this process into a new network namespace with only `lo`, up.
// Must run before any thread starts (a namespace is per thread; later
// threads inherit it).
bool EnterPrivateNetwork() {
  if (unshare(CLONE_NEWNET) != 0) {
    perror("agent_security_test: unshare(CLONE_NEWNET) (needs root)");
    return false;
  }
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq ifr{};
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags |= IFF_UP;
  ok = ok && ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  if (!ok) perror("agent_security_test: bringing lo up");
  close(fd);
  return ok;
}

}  // namespace
}  // namespace rangefs

int main(int argc, char** argv) {
  if (!rangefs::EnterPrivateNetwork()) return 1;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
