// A data-column node of erasure-coded files killed and restarted, as
// benchmark part E does it (tests/bench/part_e.sh), against a real etcd and
// nine real rangefs-node processes, read through the mount path (each
// node's export directory stands in for its mount, <mount_root>/<node>):
// a scan of the files with the node dead (its agent SIGKILLed and its
// mount entry renamed) reads every byte; then the entry is restored and
// the agent restarted, and a healthy scan right after it reads every byte
// too, well within its deadline. Several rounds, each with fresh clients.
// Issue 35: such healthy scans failed with "not done by its deadline" and
// no attempt failure: a parity hedge's rebuild, ended by the cell's own
// read, counted a helper done that an I/O thread was copying in, which
// counted it again, and the call returned with a piece still in flight.
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "admin/commands.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "tests/testing/agent_cluster.h"
#include "tests/testing/linked_agent_suite.h"
#include "tests/testing/random_bytes.h"

namespace rangefs {
namespace {

constexpr int kAgents = 9;  // every RS(6,3) file has a cell on each
constexpr uint64_t kCell = 256 << 10;
constexpr uint64_t kRow = 6 * kCell;
constexpr int kFiles = 6;
constexpr int kThreads = 6;
constexpr size_t kReadSize = 4 * kCell;  // part E: 4 MiB reads, 1 MiB cells
constexpr int kRounds = 10;
constexpr absl::Duration kWait = absl::Seconds(60);
// A read call's deadline: a scan here takes well under a second; a piece
// that is never answered fails its call at this.
constexpr absl::Duration kDeadline = absl::Seconds(10);

using testing::RandomBytes;

class EcRestartTest : public testing::LinkedAgentSuite<EcRestartTest> {
 public:
  static constexpr char kSuiteName[] = "ec_restart_test";
  static constexpr int kSuiteAgents = kAgents;

 protected:
  // Puts `data` at `path` with --ec=6+3; returns the agent index of each
  // of its 9 columns (data then parity).
  std::vector<int> PutEc(const std::string& path, const std::string& data) {
    const v1::FileLayout l = PutEcFile(path, data);
    if (!ns::IsErasureCoded(l)) return {};
    std::vector<int> columns;
    for (const auto& t : l.striped().targets()) {
      for (size_t i = 0; i < cluster_->agents(); ++i) {
        if (cluster_->agent(i).id == t.replicas(0).node_id()) {
          columns.push_back(static_cast<int>(i));
        }
      }
    }
    return columns;
  }

  // A client as rangefs-bench opens one: defaults, the mount path.
  static std::unique_ptr<Client> OpenClient(ClientOptions o = {}) {
    o.etcd_endpoints = cluster_->etcd()->endpoints();
    o.cluster = "it";
    o.mount_root = *mounts_;
    o.default_deadline = kDeadline;
    auto c = Client::Open(o);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? std::move(*c) : nullptr;
  }

  // rangefs-bench's scan: kThreads threads, each reading every file
  // sequentially through a Reader (prefetching) in kReadSize reads,
  // starting at a different file (threads meet on the same files, as the
  // benchmark's do). Returns the first error, or a byte mismatch.
  static absl::Status Scan(const std::vector<std::string>& data,
                           const ClientOptions& options = {}) {
    std::unique_ptr<Client> client = OpenClient(options);
    if (client == nullptr) return absl::InternalError("no client");
    std::mutex mu;
    absl::Status first;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::string buf(kReadSize, '\0');
        for (int k = 0; k < kFiles; ++k) {
          const int i = (t + k) % kFiles;
          auto f = client->OpenFile(absl::StrCat("/f", i));
          absl::Status s = f.status();
          uint64_t at = 0;
          std::unique_ptr<Reader> r;
          if (s.ok()) r = (*f)->NewReader(ReaderOptions());
          while (s.ok()) {
            absl::StatusOr<size_t> n = r->Read(absl::MakeSpan(buf));
            if (!n.ok()) {
              s = n.status();
            } else if (*n == 0) {
              break;
            } else if (data[i].compare(at, *n, buf.data(), *n) != 0) {
              s = absl::DataLossError(
                  absl::StrCat("/f", i, ": wrong bytes at ", at));
            }
            if (n.ok()) at += *n;
          }
          if (s.ok() && at != data[i].size()) {
            s = absl::DataLossError(absl::StrCat("/f", i, ": ", at, " of ",
                                                 data[i].size(), " bytes"));
          }
          if (!s.ok()) {
            std::lock_guard<std::mutex> l(mu);
            if (first.ok()) first = s;
            return;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    return first;
  }
};

TEST_F(EcRestartTest, HealthyScanRightAfterADeadDataNodeRestarts) {
  std::vector<std::string> data;
  std::vector<int> columns;
  for (int i = 0; i < kFiles; ++i) {
    // Five rows and a partial one.
    data.push_back(RandomBytes(5 * kRow + 2 * kCell + 1234 * i, 10 + i));
    const std::vector<int> c = PutEc(absl::StrCat("/f", i), data.back());
    ASSERT_EQ(c.size(), 9u);
    if (i == 0) columns = c;
  }
  // Part E's dead node: the one holding data column 0 of the first file.
  testing::AgentProcess& dead = cluster_->agent(columns[0]);
  const std::string entry = MountEntry(dead.id);
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    ASSERT_THAT(dead.process->Kill(), IsOk());
    ASSERT_THAT(dead.process->Wait(kWait), IsOk());
    ASSERT_EQ(rename(entry.c_str(), (entry + ".dead").c_str()), 0);
    absl::Time start = absl::Now();
    const absl::Status degraded = Scan(data);
    const absl::Duration degraded_took = absl::Now() - start;
    ASSERT_EQ(rename((entry + ".dead").c_str(), entry.c_str()), 0);
    ASSERT_THAT(cluster_->Restart(dead), IsOk());
    ASSERT_TRUE(cluster_->WaitLive(
        dead.id, [](bool found, const ns::LiveEntry&) { return found; },
        kWait));
    EXPECT_THAT(degraded, IsOk()) << "scan with " << dead.id << " dead";
    EXPECT_LT(degraded_took, kDeadline / 2);
    start = absl::Now();
    const absl::Status healthy = Scan(data);
    EXPECT_THAT(healthy, IsOk()) << "healthy scan after the restart";
    // Far below the deadline: nothing waited for an answer that never came.
    EXPECT_LT(absl::Now() - start, kDeadline / 2);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace rangefs
