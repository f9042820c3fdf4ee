// Rebuilds of erasure-coded files from helper cells taken in place
// (client_lib/internal/ec_read.h, "Helpers in place"), against a real etcd
// and nine real rangefs-node processes, read through the mount path (each
// node's export directory stands in for its mount, <mount_root>/<node>):
// with a data-column node dead (its agent SIGKILLed, its mount entry
// renamed, as benchmark part E does it), a scan rebuilds the lost column
// from the other cells' bytes where they lie in the page cache, copying
// none of them, byte-exact; and a helper object truncated under a client
// that has it mapped, before the client looks or while its decode reads it
// (SIGBUS), costs that cell, not the process: the row is rebuilt from
// another cell.
#include <stdio.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "admin/commands.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "client_lib/testing/client_testing.h"
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
constexpr uint64_t kRows = 8;  // whole rows: every cell full, none short
constexpr size_t kReadSize = 4 * kCell;  // part E: 4 MiB reads, 1 MiB cells
constexpr absl::Duration kWait = absl::Seconds(60);

using testing::RandomBytes;

class EcInPlaceTest : public testing::LinkedAgentSuite<EcInPlaceTest> {
 public:
  static constexpr char kSuiteName[] = "ec_in_place_test";
  static constexpr int kSuiteAgents = kAgents;

 protected:
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    // Cells are taken in place only from local disk and memory file
    // systems (CallerSafe, node_ring.cc): elsewhere the feature is off.
    struct statfs st;
    ASSERT_EQ(statfs(cluster_->dir().c_str(), &st), 0);
    switch (static_cast<uint64_t>(st.f_type)) {
      case 0xEF53:      // ext2/3/4
      case 0x58465342:  // xfs
      case 0x9123683E:  // btrfs
      case 0x01021994:  // tmpfs
        break;
      default:
        GTEST_SKIP() << cluster_->dir() << ": file system 0x" << std::hex
                     << st.f_type << " is not read in place";
    }
  }

  void TearDown() override {
    if (dead_ == nullptr) return;
    const std::string entry = MountEntry(dead_->id);
    rename((entry + ".dead").c_str(), entry.c_str());
    EXPECT_THAT(cluster_->Restart(*dead_), IsOk());
    dead_ = nullptr;
  }

  // Puts `data` at `path` with --ec=6+3; returns its layout.
  v1::FileLayout PutEc(const std::string& path, const std::string& data) {
    v1::FileLayout l = PutEcFile(path, data);
    EXPECT_TRUE(ns::IsErasureCoded(l));
    EXPECT_EQ(l.striped().targets_size(), 9);
    return l;
  }

  static testing::AgentProcess* Agent(const std::string& id) {
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      if (cluster_->agent(i).id == id) return &cluster_->agent(i);
    }
    return nullptr;
  }

  // Column t's node and its object's path in that node's export.
  static std::string ColumnNode(const v1::FileLayout& l, int t) {
    return l.striped().targets(t).replicas(0).node_id();
  }
  static std::string ColumnObject(const v1::FileLayout& l, int t) {
    testing::AgentProcess* a = Agent(ColumnNode(l, t));
    return a == nullptr
               ? std::string()
               : absl::StrCat(a->export_dir, "/",
                              l.striped().targets(t).replicas(0).object());
  }

  // The node of column t dead, as part E kills it: its agent SIGKILLed,
  // its mount entry renamed (TearDown brings it back).
  void Kill(const v1::FileLayout& l, int t) {
    dead_ = Agent(ColumnNode(l, t));
    ASSERT_NE(dead_, nullptr);
    ASSERT_THAT(dead_->process->Kill(), IsOk());
    ASSERT_THAT(dead_->process->Wait(kWait), IsOk());
    const std::string entry = MountEntry(dead_->id);
    ASSERT_EQ(rename(entry.c_str(), (entry + ".dead").c_str()), 0);
  }

  // rangefs-bench's default client, on the mount path, with no hedges and
  // no stall moves (a loaded machine may cause either at will: a read
  // sent twice or moved would be counted twice).
  static std::unique_ptr<Client> OpenClient(const ClientTestHooks& hooks = {}) {
    ClientOptions o;
    o.etcd_endpoints = cluster_->etcd()->endpoints();
    o.cluster = "it";
    o.mount_root = *mounts_;
    o.default_deadline = absl::Seconds(20);
    o.hedging = false;
    o.stall_factor = 0;
    auto c = OpenClientForTesting(o, hooks);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Reads `path` whole through a Reader in kReadSize reads; the bytes.
  static absl::StatusOr<std::string> Scan(Client& client,
                                          const std::string& path) {
    auto f = client.OpenFile(path);
    if (!f.ok()) return f.status();
    std::unique_ptr<Reader> r = (*f)->NewReader(ReaderOptions());
    std::string out, buf(kReadSize, '\0');
    while (true) {
      absl::StatusOr<size_t> n = r->Read(absl::MakeSpan(buf));
      if (!n.ok()) return n.status();
      if (*n == 0) return out;
      out.append(buf, 0, *n);
    }
  }

  // A file of kRows rows put at `path`, its column 0's node then killed,
  // and a client (with `hooks`) that has not read it yet.
  struct Degraded {
    std::string data;
    v1::FileLayout layout;
    std::unique_ptr<Client> client;
  };
  void PutAndKill(const std::string& path, unsigned seed, Degraded& d,
                  const ClientTestHooks& hooks = {}) {
    d.data = RandomBytes(kRows * kRow, seed);
    d.layout = PutEc(path, d.data);
    ASSERT_FALSE(HasFailure());
    d.client = OpenClient(hooks);
    ASSERT_NE(d.client, nullptr);
    Kill(d.layout, 0);
  }

  // Scans `path` and checks every byte.
  static void ScanExact(Client& client, const std::string& path,
                        const std::string& data) {
    absl::StatusOr<std::string> got = Scan(client, path);
    ASSERT_THAT(got, IsOk());
    ASSERT_TRUE(*got == data) << path << ": bytes differ";
  }

  testing::AgentProcess* dead_ = nullptr;
};

TEST_F(EcInPlaceTest, ADeadDataColumnIsRebuiltFromCellsInPlace) {
  Degraded d;
  ASSERT_NO_FATAL_FAILURE(PutAndKill("/f", 1, d));
  // The first scan opens the other columns' objects (their first reads are
  // the nodes' threads'), the second finds them open.
  ASSERT_NO_FATAL_FAILURE(ScanExact(*d.client, "/f", d.data));
  const ClientStats before = d.client->Stats();
  ASSERT_NO_FATAL_FAILURE(ScanExact(*d.client, "/f", d.data));
  const ClientStats after = d.client->Stats();
  const uint64_t rebuilt =
      after.ec_reconstructed_bytes - before.ec_reconstructed_bytes;
  const uint64_t in_place =
      after.ec_helper_bytes_in_place - before.ec_helper_bytes_in_place;
  const uint64_t copied =
      after.ec_helper_bytes_copied - before.ec_helper_bytes_copied;
  // Column 0 of every row, rebuilt, each byte from k = 6 cells' bytes.
  EXPECT_EQ(rebuilt, kRows * kCell);
  EXPECT_GT(in_place, 0u);
  EXPECT_EQ(copied, 0u) << in_place << " bytes in place";
  EXPECT_EQ(after.ec_crc_mismatches, 0u);
}

TEST_F(EcInPlaceTest, AHelperObjectTruncatedUnderAClientCostsOnlyItsCell) {
  Degraded d;
  ASSERT_NO_FATAL_FAILURE(PutAndKill("/g", 2, d));
  for (int pass = 0; pass < 2; ++pass) {  // mapped, as above
    ASSERT_NO_FATAL_FAILURE(ScanExact(*d.client, "/g", d.data));
  }
  ASSERT_GT(d.client->Stats().ec_helper_bytes_in_place, 0u);
  // Every parity object but the last loses its second half: the rows
  // there have 5 data cells and one parity cell left, exactly k.
  for (int t = 6; t < 8; ++t) {
    const std::string object = ColumnObject(d.layout, t);
    ASSERT_EQ(truncate(object.c_str(), (kRows / 2) * kCell), 0) << object;
  }
  ASSERT_NO_FATAL_FAILURE(ScanExact(*d.client, "/g", d.data));
}

// The decode reads the mapped cells as they shrink: its SIGBUS ends the
// decode, not the process, and the row is read again by copies (the
// shrunk cells fail plainly; the others answer).
TEST_F(EcInPlaceTest, AHelperObjectTruncatedDuringADecodeCostsOnlyItsCell) {
  std::atomic<bool> armed{false};
  std::atomic<int> truncated{0};
  Degraded d;  // after what its client's hook uses: destroyed before it
  ClientTestHooks hooks;
  hooks.before_ec_decode = [&] {
    if (!armed.exchange(false)) return;
    // Parity columns 0 and 1: past the first row, gone.
    for (int t = 6; t < 8; ++t) {
      if (truncate(ColumnObject(d.layout, t).c_str(), kCell) == 0) truncated++;
    }
  };
  ASSERT_NO_FATAL_FAILURE(PutAndKill("/h", 3, d, hooks));
  for (int pass = 0; pass < 2; ++pass) {  // mapped, as above
    ASSERT_NO_FATAL_FAILURE(ScanExact(*d.client, "/h", d.data));
  }
  const ClientStats before = d.client->Stats();
  ASSERT_GT(before.ec_helper_bytes_in_place, 0u);
  // Read from the second row on: its decode is the first after arming,
  // from parity cells mapped (whole, as the first passes used them).
  armed = true;
  auto f = d.client->OpenFile("/h");
  ASSERT_THAT(f, IsOk());
  std::string got(d.data.size() - kRow, '\0');
  absl::StatusOr<size_t> n = (*f)->Read(kRow, absl::MakeSpan(got));
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, got.size());
  EXPECT_TRUE(got == d.data.substr(kRow));
  EXPECT_EQ(truncated.load(), 2);
  EXPECT_FALSE(armed.load());
  const ClientStats after = d.client->Stats();
  // The decode was cut off (the SIGBUS caught; so was each later row's
  // whose parity cells were mapped before the truncation), and the rows
  // were read again by copies.
  EXPECT_GE(after.ec_decodes_cut_off - before.ec_decodes_cut_off, 1u);
  EXPECT_GT(after.ec_helper_bytes_copied, before.ec_helper_bytes_copied);
}

}  // namespace
}  // namespace rangefs
