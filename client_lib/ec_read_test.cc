// Reads of erasure-coded files (client_lib/internal/ec_read.h) over
// MemoryKv and MemoryFs/FaultyFs: the cells are real RS codes (ec::NewCodec),
// the faults are per node path.
#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/testing/client_testing.h"
#include "client_lib/testing/fault_fs.h"
#include "ec/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/ec_test_layout.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"
#include "storage_node/sidecar.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using ::testing::HasSubstr;

constexpr int kNodes = 10;
constexpr uint64_t kCell = 4096;
constexpr char kMountRoot[] = "/m";

std::string Node(int i) { return absl::StrCat("n", i); }

// Every subset of {0..n-1} with `size` members.
std::vector<std::vector<int>> Subsets(int n, int size) {
  std::vector<std::vector<int>> out;
  for (int mask = 0; mask < (1 << n); ++mask) {
    if (__builtin_popcount(mask) != size) continue;
    std::vector<int> s;
    for (int i = 0; i < n; ++i) {
      if (mask & (1 << i)) s.push_back(i);
    }
    out.push_back(s);
  }
  return out;
}

class EcReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = ns::NewKvStore(&kv_);
    for (int i = 0; i < kNodes; ++i) {
      v1::NodeRecord r;
      r.set_id(Node(i));
      r.add_addresses("127.0.0.1:1");
      r.set_export_path("/export");
      ASSERT_THAT(store_->AddNode(r), IsOk());
    }
  }
  void TearDown() override {
    faulty_.ClearRules();
    faulty_.Release();
    clients_.clear();
  }

  ClientOptions Options() {
    ClientOptions o;
    o.mount_root = kMountRoot;
    o.data_path = DataPath::kMount;
    o.seed = 42;
    o.default_deadline = absl::Seconds(10);
    return o;
  }
  // For tests that count reads exactly: no hedges (parity hedges
  // included) and no stall moves, each of which a loaded machine may cause
  // at will (a read descheduled past stall_min_delay moves its piece).
  ClientOptions CountingOptions() {
    ClientOptions o = Options();
    o.hedging = false;
    o.stall_factor = 0;
    return o;
  }
  Client* OpenClient(const ClientOptions& o) {
    ClientTestHooks h;
    h.kv = &kv_;
    h.fs = &faulty_;
    auto c = OpenClientForTesting(o, h);
    EXPECT_THAT(c, IsOk());
    clients_.push_back(c.ok() ? std::move(*c) : nullptr);
    return clients_.back().get();
  }

  void PutObject(int node, const std::string& object, const std::string& data) {
    const std::string dir = absl::StrCat(kMountRoot, "/", Node(node));
    mem_.AddFile(dir + "/" + object, data);
    node::BlockChecksummer sum(kCell);
    sum.Update(data.data(), data.size());
    mem_.AddFile(dir + "/" + node::SidecarPathFor(object),
                 node::EncodeSidecar(sum.Finish()));
  }

  // An RS(k, m) file of `size` random bytes: column t (data, then parity)
  // is object "<path>/c<t>" on node n<t>, cells of kCell bytes; parity
  // objects have their ".cells" checksums.
  std::string EcFile(const std::string& path, uint64_t size, int k, int m) {
    std::string data(size, '\0');
    for (char& ch : data) ch = static_cast<char>(absl::Uniform<uint8_t>(gen_));
    const uint64_t rows = (size + k * kCell - 1) / (k * kCell);
    std::vector<std::string> cols(k + m);
    std::string crcs;
    auto codec = ec::NewCodec({.k = k, .m = m});
    EXPECT_THAT(codec, IsOk());
    for (uint64_t r = 0; r < rows; ++r) {
      std::vector<std::string> cells(k + m, std::string(kCell, '\0'));
      std::vector<uint64_t> stored(k + m, kCell);
      for (int c = 0; c < k; ++c) {
        const uint64_t at = (r * k + c) * kCell;
        stored[c] = at >= size ? 0 : std::min(kCell, size - at);
        if (stored[c] > 0) cells[c].replace(0, stored[c], data, at, stored[c]);
      }
      std::vector<absl::Span<const char>> in;
      std::vector<absl::Span<char>> out;
      for (int c = 0; c < k; ++c) in.push_back(cells[c]);
      for (int j = 0; j < m; ++j) out.push_back(absl::MakeSpan(cells[k + j]));
      EXPECT_THAT((*codec)->Encode(in, out), IsOk());
      for (int t = 0; t < k + m; ++t) {
        cols[t] += cells[t].substr(0, stored[t]);
        const uint32_t crc = Crc32cExtend(0, cells[t].data(), stored[t]);
        for (int b = 0; b < 4; ++b)
          crcs.push_back(static_cast<char>(crc >> (8 * b)));
      }
    }
    v1::FileLayout l = ns::EcTestLayout(
        k, m, kCell, size, absl::StrCat("o", path.substr(1), "/c"));
    l.set_checksum(v1::CRC32C_SIDECAR);
    l.set_checksum_block_size(kCell);
    for (int t = 0; t < k + m; ++t) {
      const std::string& obj = l.striped().targets(t).replicas(0).object();
      PutObject(t, obj, cols[t]);
      if (t >= k) {
        mem_.AddFile(
            absl::StrCat(kMountRoot, "/", Node(t), "/", ns::EcCellsObject(obj)),
            crcs);
      }
    }
    EXPECT_THAT(store_->CreateFile(path, l), IsOk());
    return data;
  }

  // An RS(6,3) file of `rows` rows at `path`, data column 0 lost, and a
  // client without hedging (no spare helpers: only the cells wanted).
  std::string DegradedRs63(const std::string& path, uint64_t rows,
                           Client** client) {
    const std::string data = EcFile(path, rows * 6 * kCell, 6, 3);
    Lose({0});
    *client = OpenClient(CountingOptions());
    return data;
  }

  // Reads the whole of `path` through a Reader in Reads of `chunk` bytes
  // and closes the Reader (its prefetch ends) before returning the bytes.
  std::string ReadAllWithReader(Client* client, const std::string& path,
                                const ReaderOptions& ro, size_t chunk) {
    auto f = client->OpenFile(path);
    EXPECT_THAT(f, IsOk());
    if (!f.ok()) return "";
    std::unique_ptr<Reader> reader = (*f)->NewReader(ro);
    std::string got;
    std::string buf(chunk, '\0');
    while (true) {
      auto n = reader->Read(absl::MakeSpan(buf));
      EXPECT_THAT(n, IsOk());
      if (!n.ok() || *n == 0) break;
      got.append(buf, 0, *n);
    }
    return got;
  }

  // Every read on the nodes `lost` fails (earlier rules are cleared).
  void Lose(const std::vector<int>& lost) {
    faulty_.ClearRules();
    for (int n : lost) {
      faulty_.AddRule({.path_contains = absl::StrCat("/", Node(n), "/"),
                       .error = absl::NotFoundError("object gone")});
    }
  }

  // Reads [offset, offset + len) of `path` and checks the bytes.
  void ExpectBytes(Client* client, const std::string& path,
                   const std::string& data, uint64_t offset, uint64_t len,
                   const std::string& what) {
    auto f = client->OpenFile(path);
    ASSERT_THAT(f, IsOk());
    std::string buf(len, '\x5C');
    auto n = (*f)->Read(offset, absl::MakeSpan(buf));
    ASSERT_THAT(n, IsOk()) << what;
    const uint64_t want = std::min<uint64_t>(len, data.size() - offset);
    ASSERT_EQ(*n, want) << what;
    EXPECT_TRUE(buf.compare(0, want, data, offset, want) == 0) << what;
  }

  static const NodeStats* FindNode(const ClientStats& s,
                                   const std::string& id) {
    for (const NodeStats& n : s.nodes) {
      if (n.node == id) return &n;
    }
    static const NodeStats kNone;
    return &kNone;
  }

  absl::BitGen gen_{std::seed_seq{11}};
  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  MemoryFs mem_;
  FaultyFs faulty_{&mem_};
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(EcReadTest, HealthyReadsTouchOnlyDataCells) {
  const std::string data = EcFile("/h", 3 * 4 * kCell + 5000, 4, 2);
  Client* client = OpenClient(CountingOptions());
  ExpectBytes(client, "/h", data, 0, data.size(), "whole file");
  ExpectBytes(client, "/h", data, 4000, 300, "across a cell boundary");
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_helper_reads, 0u);
  EXPECT_EQ(s.ec_degraded_reads, 0u);
  for (const NodeStats& n : s.nodes) {
    if (n.node == "n4" || n.node == "n5") {
      EXPECT_EQ(n.requests, 0u) << n.node;
    }
  }
}

TEST_F(EcReadTest, AnyOneOrTwoLostCellsOfRs42AreRebuilt) {
  const std::string data = EcFile("/a", 3 * 4 * kCell + 5000, 4, 2);
  for (int lost = 1; lost <= 2; ++lost) {
    for (const std::vector<int>& set : Subsets(6, lost)) {
      Lose(set);
      Client* client = OpenClient(Options());
      const std::string what =
          absl::StrCat("lost nodes ", absl::StrJoin(set, ","));
      ExpectBytes(client, "/a", data, 0, data.size(), what);
      ExpectBytes(client, "/a", data, kCell + 100, 1000, what);  // in a cell
      ExpectBytes(client, "/a", data, data.size() - 700, 700, what);  // tail
      if (set[0] < 4) {
        EXPECT_GE(client->Stats().ec_degraded_reads, 1u) << what;
      }
    }
  }
}

TEST_F(EcReadTest, AnyThreeLostCellsOfRs63AreRebuilt) {
  const std::string data = EcFile("/b", 2 * 6 * kCell + 3 * kCell + 17, 6, 3);
  for (const std::vector<int>& set : Subsets(9, 3)) {
    Lose(set);
    Client* client = OpenClient(Options());
    const std::string what =
        absl::StrCat("lost nodes ", absl::StrJoin(set, ","));
    ExpectBytes(client, "/b", data, 0, data.size(), what);
    ExpectBytes(client, "/b", data, 2 * kCell + 9, 4000, what);
  }
}

TEST_F(EcReadTest, RebuiltReadCostsTheSameRangeFromKCells) {
  const std::string data = EcFile("/r", 2 * 6 * kCell, 6, 3);
  Lose({2});
  Client* client = OpenClient(CountingOptions());  // exactly k reads
  ExpectBytes(client, "/r", data, 2 * kCell + 1000, 512, "one range");
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_degraded_reads, 1u);
  EXPECT_EQ(s.ec_reconstructed_bytes, 512u);
  EXPECT_EQ(s.ec_helper_reads, 6u);  // k helpers of 512 bytes each
  uint64_t helper_bytes = 0;
  for (const NodeStats& n : s.nodes) {
    if (n.node != "n2") helper_bytes += n.bytes;
  }
  EXPECT_EQ(helper_bytes, 6u * 512);
}

// The row plan: a call that covers whole rows takes a lost cell's
// survivors from its own pieces of the row; each survivor is read once, and
// only the missing cells (parity first) are read besides.
TEST_F(EcReadTest, RowPlanReadsEachSurvivorOnce) {
  constexpr int k = 6, m = 3;
  constexpr uint64_t kRows = 3;  // full rows, then a partial one
  const uint64_t size = kRows * k * kCell + 2 * kCell + 100;
  const std::string data = EcFile("/w", size, k, m);
  // Data column t's cells and bytes (the partial row: cells 0, 1 full,
  // cell 2 100 bytes, cells 3 to 5 none).
  auto cells_of = [&](int t) { return kRows + (t < 3 ? 1 : 0); };
  auto bytes_of = [&](int t) {
    return kRows * kCell + (t < 2 ? kCell : t == 2 ? 100 : 0);
  };
  for (int lost = 0; lost < k + m; ++lost) {
    Lose({lost});
    Client* client = OpenClient(CountingOptions());  // only the cells wanted
    const std::string what = absl::StrCat("lost node ", lost);
    ExpectBytes(client, "/w", data, 0, size, what);  // one call
    const ClientStats s = client->Stats();
    for (int t = 0; t < k; ++t) {
      if (t == lost) continue;
      const NodeStats* n = FindNode(s, Node(t));
      EXPECT_EQ(n->requests, cells_of(t)) << what << ", data node " << t;
      EXPECT_EQ(n->bytes, bytes_of(t)) << what << ", data node " << t;
    }
    // Helpers: a parity cell a full row; the partial row's zero cells
    // count as read, so it needs 2 (cell 0 or 1 lost) or 1 (cell 2).
    const uint64_t last_row = lost < 2 ? 2 : lost == 2 ? 1 : 0;
    EXPECT_EQ(s.ec_helper_reads, lost >= k ? 0 : kRows + last_row) << what;
    EXPECT_EQ(s.ec_degraded_reads, lost >= k ? 0 : kRows + (lost < 3)) << what;
    EXPECT_EQ(s.ec_unchecked_cells, 0u) << what;
  }
}

// The row plan never waits for a piece the call holds back: with
// ReadOptions::max_in_flight the rebuild's room comes first.
TEST_F(EcReadTest, RowPlanUnderMaxInFlight) {
  const std::string data = EcFile("/q", 4 * 6 * kCell + 5, 6, 3);
  for (int cap : {1, 2, 5}) {
    Lose({cap % 6});
    Client* client = OpenClient(Options());
    auto f = client->OpenFile("/q");
    ASSERT_THAT(f, IsOk());
    std::string buf(data.size(), '\0');
    ReadOptions ro;
    ro.max_in_flight = cap;
    ro.deadline = absl::Seconds(5);
    auto n = (*f)->Read(0, absl::MakeSpan(buf), ro);
    ASSERT_THAT(n, IsOk()) << "max_in_flight " << cap;
    EXPECT_TRUE(buf == data) << "max_in_flight " << cap;
  }
}

// A scan through a Reader with default settings reads whole rows per call
// once it knows the stream is degraded (internal/reader.h), so the row plan
// rebuilds each lost cell from the row's other data cells the call holds
// and one parity cell.
TEST_F(EcReadTest, ReaderScanRebuildsEachRowFromOneParityCell) {
  constexpr uint64_t kRows = 120;  // 2880 KiB in rows of 24 KiB
  Client* client = nullptr;
  const std::string data = DegradedRs63("/v", kRows, &client);
  EXPECT_TRUE(ReadAllWithReader(client, "/v", ReaderOptions{}, 40 << 10) ==
              data);
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_degraded_reads, kRows);
  // A parity cell a row, but for row 10: the first window [0, 256K) and
  // the prefetch after it, sized before any rebuild was seen, split it
  // (cells 1 to 3 in the window: 3 parity cells). Unshaped fills also
  // split row 74 at 1792K (two more).
  EXPECT_EQ(s.ec_helper_reads, kRows + 2);
}

// The same with reads that land straight in the caller's buffer (the
// Reader's path for 128 KiB and up from the page cache, as rangefs-bench's
// default 4 MiB scan of 6 MiB rows): once the stream is degraded, each
// Read ends on a row boundary, so each row is read by one call.
TEST_F(EcReadTest, ReaderDirectScanRebuildsEachRowFromOneParityCell) {
  constexpr uint64_t kRows = 120;  // 2880 KiB in rows of 24 KiB
  Client* client = nullptr;
  const std::string data = DegradedRs63("/v", kRows, &client);
  ReaderOptions ro;
  ro.prefetch = false;  // every Read of 128 KiB and up is direct
  // Reads of 136 KiB: 5 2/3 rows.
  EXPECT_TRUE(ReadAllWithReader(client, "/v", ro, 136 << 10) == data);
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_degraded_reads, kRows);
  // A parity cell a row, but for row 5: the first call, [0, 136K), made
  // before any rebuild was seen, holds its cells 0 to 3 (3 parity cells).
  EXPECT_EQ(s.ec_helper_reads, kRows + 2);
}

// A scan opens a Reader per pass over a file (rangefs-bench: per file it
// picks). A new Reader of a file its last stream found degraded starts
// degraded (FileImpl::EcDegraded): its first call is shaped to whole rows
// too, so its first row costs one parity cell, not three.
TEST_F(EcReadTest, NewReaderOfADegradedFileReadsWholeRowsFromItsFirstRead) {
  constexpr uint64_t kRows = 120;
  Client* client = nullptr;
  const std::string data = DegradedRs63("/v", kRows, &client);
  auto f = client->OpenFile("/v");
  ASSERT_THAT(f, IsOk());
  ReaderOptions ro;
  ro.prefetch = false;
  uint64_t helpers = 0;
  for (int pass = 0; pass < 2; ++pass) {
    std::unique_ptr<Reader> reader = (*f)->NewReader(ro);
    std::string got;
    std::string buf(136 << 10, '\0');
    while (true) {
      auto n = reader->Read(absl::MakeSpan(buf));
      ASSERT_THAT(n, IsOk());
      if (*n == 0) break;
      got.append(buf, 0, *n);
    }
    EXPECT_TRUE(got == data) << "pass " << pass;
    const uint64_t now = client->Stats().ec_helper_reads;
    // The first pass as above (its first call: 3 parity cells for row
    // 5); the second: one parity cell a row.
    EXPECT_EQ(now - helpers, pass == 0 ? kRows + 2 : kRows) << "pass " << pass;
    helpers = now;
  }
}

// The rebuilds of a whole-row scan read their parity cell from the m
// parity nodes in turn (internal/ec_helper_choice.h), not all from parity
// column 0's node: over capped links that node was every file's rebuild
// bottleneck (tests/bench/part_en.sh).
TEST_F(EcReadTest, ReaderScanSpreadsRebuildReadsOverTheParityNodes) {
  constexpr uint64_t kRows = 120;
  Client* client = nullptr;
  const std::string data = DegradedRs63("/v", kRows, &client);
  ReaderOptions ro;
  ro.prefetch = false;
  EXPECT_TRUE(ReadAllWithReader(client, "/v", ro, 136 << 10) == data);
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_helper_reads, kRows + 2);
  for (int t = 6; t < 9; ++t) {
    const uint64_t got = FindNode(s, Node(t))->ec_helper_reads;
    // In turn by row, less what the call's helpers in flight shift (31 to
    // 47 seen); parity column 0's node took 120 of 122 before.
    EXPECT_GE(got, kRows / 5) << Node(t) << " (parity cell " << t - 6 << ")";
    EXPECT_LE(got, kRows / 2) << Node(t);
  }
}

// A parity node that holds its reads (SIGSTOPped, a hung mount) is read
// once: its read stays in flight, and the next rebuilds pick the parity
// nodes with less in flight, so the scan neither errs nor waits on it row
// after row.
TEST_F(EcReadTest, HungParityNodeIsPassedOverByLaterRebuilds) {
  constexpr uint64_t kRows = 24;
  const std::string data = EcFile("/h", kRows * 6 * kCell, 6, 3);
  Lose({0});
  faulty_.AddRule({.path_contains = "/n6/", .action = FaultAction::kBlock});
  ClientOptions o = Options();
  o.hedging = false;
  o.attempt_timeout = absl::Seconds(20);  // only another helper saves it
  Client* client = OpenClient(o);
  ReaderOptions ro;
  ro.prefetch = false;
  const absl::Time start = absl::Now();
  EXPECT_TRUE(ReadAllWithReader(client, "/h", ro, 6 * kCell) == data);
  const absl::Duration took = absl::Now() - start;
  const ClientStats s = client->Stats();
  faulty_.Release();
  EXPECT_LT(took, absl::Seconds(8));
  EXPECT_EQ(s.ec_degraded_reads, kRows);
  // The first Read's rows were all planned before any answer: n6 got its
  // turn in them (a third, 4 or 5 of 11; parity column 0 for all 11
  // before). Its reads stayed in flight and were judged stalled: no more.
  EXPECT_LE(FindNode(s, "n6")->ec_helper_reads, 6u);
  // Their replacements and the later rows: n7 and n8 in turn (n7 took all
  // but one before).
  EXPECT_GE(FindNode(s, "n7")->ec_helper_reads, 8u);
  EXPECT_GE(FindNode(s, "n8")->ec_helper_reads, 8u);
}

TEST_F(EcReadTest, LostParityCellsLeaveHealthyReadsAlone) {
  const std::string data = EcFile("/p", 2 * 4 * kCell + 1, 4, 2);
  Lose({4, 5});
  Client* client = OpenClient(CountingOptions());
  ExpectBytes(client, "/p", data, 0, data.size(), "whole file");
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_helper_reads, 0u);
  for (const NodeStats& n : s.nodes) EXPECT_EQ(n.errors, 0u) << n.node;
}

TEST_F(EcReadTest, CorruptDataCellIsRebuiltUnderFullVerification) {
  const std::string data = EcFile("/c", 2 * 4 * kCell, 4, 2);
  mem_.CorruptByte("/m/n1/oc/c1", 100);  // data cell 1 of row 0
  ClientOptions o = Options();
  o.verify = VerifyMode::kFull;
  Client* client = OpenClient(o);
  ExpectBytes(client, "/c", data, 0, data.size(), "whole file");
  ExpectBytes(client, "/c", data, kCell + 50, 100, "in the corrupt cell");
  const ClientStats s = client->Stats();
  EXPECT_GE(s.checksum_failures, 1u);
  EXPECT_GE(s.ec_degraded_reads, 1u);
}

TEST_F(EcReadTest, RebuiltWholeCellIsCheckedAgainstTheRowsCellsCrc) {
  const std::string data = EcFile("/x", 2 * 4 * kCell, 4, 2);
  Lose({0});
  mem_.CorruptByte("/m/n1/ox/c1", 7);      // a survivor, row 0
  Client* client = OpenClient(Options());  // no verification of survivors
  auto f = client->OpenFile("/x");
  ASSERT_THAT(f, IsOk());
  std::string buf(kCell, '\0');
  auto n = (*f)->Read(0, absl::MakeSpan(buf));  // all of data cell 0, row 0
  ASSERT_THAT(n, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(n.status().message(), HasSubstr("does not match its CRC32C"));
  EXPECT_THAT(n.status().message(), HasSubstr("row 0"));
  EXPECT_EQ(client->Stats().ec_crc_mismatches, 1u);
  // The start of a cell, not all of it: no CRC applies (no false alarm).
  std::string head(1000, '\0');
  auto h = (*f)->Read(4 * kCell, absl::MakeSpan(head));  // row 1, cell 0
  ASSERT_THAT(h, IsOk());
  EXPECT_TRUE(head == data.substr(4 * kCell, 1000));
  // Row 1's survivors are sound: its cell 0 is rebuilt and checked.
  ExpectBytes(client, "/x", data, 4 * kCell, kCell, "row 1");
  EXPECT_EQ(client->Stats().ec_unchecked_cells, 0u);
  // Survivors verified against their sidecars: the corrupt one is replaced.
  ClientOptions o = Options();
  o.verify = VerifyMode::kFull;
  Client* verifying = OpenClient(o);
  ExpectBytes(verifying, "/x", data, 0, data.size(), "verified survivors");
  EXPECT_GE(verifying->Stats().checksum_failures, 1u);
}

TEST_F(EcReadTest, HungDataCellNodeIsRebuiltAroundWithoutErrors) {
  const std::string data = EcFile("/g", 2 * 6 * kCell, 6, 3);
  faulty_.AddRule({.path_contains = "/n3/", .action = FaultAction::kBlock});
  ClientOptions o = Options();
  o.attempt_timeout = absl::Seconds(20);  // only a rebuild can save it
  Client* client = OpenClient(o);
  const absl::Time start = absl::Now();
  for (int i = 0; i < 3; ++i) {
    ExpectBytes(client, "/g", data, 0, data.size(), "whole file");
    ExpectBytes(client, "/g", data, 3 * kCell + 10, 100, "in the hung cell");
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  const ClientStats s = client->Stats();
  EXPECT_GE(s.ec_degraded_reads + s.ec_parity_hedge_wins, 1u);
  faulty_.Release();
}

TEST_F(EcReadTest, HungHelperIsReplacedByAnotherCell) {
  const std::string data = EcFile("/k", 2 * 4 * kCell, 4, 2);
  Lose({0});
  // Cell 1 is one of the first k helpers of cell 0's rebuild; it hangs.
  faulty_.AddRule({.path_contains = "/n1/", .action = FaultAction::kBlock});
  ClientOptions o = Options();
  o.attempt_timeout = absl::Seconds(20);  // only a spare cell can save it
  Client* client = OpenClient(o);
  const absl::Time start = absl::Now();
  ExpectBytes(client, "/k", data, 100, 2000, "cell 0 of row 0");
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_degraded_reads, 1u);
  EXPECT_GE(s.ec_helper_reads, 5u);  // k, and the spare
  EXPECT_GE(FindNode(s, "n5")->ec_helper_reads, 1u);
  faulty_.Release();
}

// A rebuilt piece that leads a single flight decodes into its caller's
// buffer and feeds the flight's followers from there (Batch::EndFill): the
// second reader of the same lost range waits for the first one's rebuild
// and gets the same bytes, with one rebuild and one set of helper reads.
TEST_F(EcReadTest, FollowerOfARebuiltPieceGetsItsBytesFromOneRebuild) {
  const std::string data = EcFile("/s", 2 * 4 * kCell, 4, 2);
  Lose({0});
  // Every helper of cell 0's rebuild waits until released.
  for (int n = 1; n < 6; ++n) {
    faulty_.AddRule({.path_contains = absl::StrCat("/", Node(n), "/"),
                     .action = FaultAction::kBlock});
  }
  ClientOptions o = Options();
  o.hedging = false;
  o.single_flight_min_bytes = 1;  // cells of 4 KiB lead flights
  o.attempt_timeout = absl::Seconds(20);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/s");
  ASSERT_THAT(f, IsOk());
  constexpr uint64_t kOffset = 100, kLen = 2000;  // inside cell 0
  std::string first(kLen, '\0'), second(kLen, '\0');
  absl::StatusOr<size_t> r1 = size_t{0}, r2 = size_t{0};
  std::thread leader([&] { r1 = (*f)->Read(kOffset, absl::MakeSpan(first)); });
  auto until = [](auto done) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (!done() && absl::Now() < end) absl::SleepFor(absl::Milliseconds(2));
    return done();
  };
  EXPECT_TRUE(until([&] { return faulty_.blocked_now() >= 1; }));
  std::thread follower(
      [&] { r2 = (*f)->Read(kOffset, absl::MakeSpan(second)); });
  EXPECT_TRUE(until([&] { return client->Stats().shared_waiting == 1; }))
      << "waiting " << client->Stats().shared_waiting;
  faulty_.Release();
  leader.join();
  follower.join();
  ASSERT_THAT(r1, IsOk());
  ASSERT_THAT(r2, IsOk());
  EXPECT_EQ(*r1, kLen);
  EXPECT_EQ(*r2, kLen);
  EXPECT_TRUE(first == data.substr(kOffset, kLen));
  EXPECT_TRUE(second == data.substr(kOffset, kLen));
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.shared_pieces, 1u);
  EXPECT_EQ(s.ec_degraded_reads, 1u);
}

TEST_F(EcReadTest, SlowDataCellIsParityHedged) {
  const std::string data = EcFile("/s", 6 * kCell, 6, 3);
  ClientOptions o = Options();
  o.stall_factor = 0;  // no stall: only a hedge moves it
  o.attempt_timeout = absl::Seconds(20);
  // Parity hedges a loaded machine fires while warming (k reads of budget
  // each) must not leave too little for the one this test is about.
  o.hedge_burst = 1000;
  Client* client = OpenClient(o);
  // Warm the latency window so that hedges are not held back by the cold
  // prior, then make n2 slow.
  for (int i = 0; i < 20; ++i) {
    ExpectBytes(client, "/s", data, 0, data.size(), "warm");
  }
  const ClientStats warm = client->Stats();
  faulty_.AddRule({.path_contains = "/n2/",
                   .action = FaultAction::kDelay,
                   .delay = absl::Seconds(3)});
  const absl::Time start = absl::Now();
  ExpectBytes(client, "/s", data, 2 * kCell + 5, 300, "slow cell");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.ec_parity_hedges - warm.ec_parity_hedges, 1u);
  EXPECT_EQ(s.ec_parity_hedge_wins - warm.ec_parity_hedge_wins, 1u);
  EXPECT_GE(s.hedges - warm.hedges, 1u);
}

TEST_F(EcReadTest, MoreThanMLostCellsIsDataLossNamingTheRow) {
  const std::string data = EcFile("/d", 3 * 4 * kCell, 4, 2);
  Lose({0, 4, 5});
  Client* client = OpenClient(Options());
  auto f = client->OpenFile("/d");
  ASSERT_THAT(f, IsOk());
  std::string buf(100, '\0');
  auto n = (*f)->Read(2 * 4 * kCell + 10, absl::MakeSpan(buf));  // row 2
  ASSERT_THAT(n, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(n.status().message(), HasSubstr("/d"));
  EXPECT_THAT(n.status().message(), HasSubstr("row 2"));
  EXPECT_THAT(n.status().message(), HasSubstr("data cell 0 on node n0"));
  EXPECT_THAT(n.status().message(), HasSubstr("parity cell 0 on node n4"));
  EXPECT_THAT(n.status().message(), HasSubstr("parity cell 1 on node n5"));
  // The other cells of the row still read.
  ExpectBytes(client, "/d", data, 2 * 4 * kCell + kCell, 100, "cell 1");
}

// Issue 35: on a loaded machine the stall judge gave up on healthy but
// slow nodes, and a row with 4 of its 9 cells on them was called lost
// (DATA_LOSS). Cells given up only for slowness are the row's fallback:
// read again patiently and waited for. Here the slow nodes' reads block
// (FaultyFs) until every one of them has been judged stalled, then answer.
TEST_F(EcReadTest, RowWithFourSlowCellsWaitsForThemNoDataLoss) {
  constexpr int k = 6, m = 3;
  const std::string data = EcFile("/slow", 2 * k * kCell, k, m);
  struct Case {
    std::vector<int> lost;  // hard: the object is gone
    std::vector<int> slow;  // data cells whose reads block until released
    bool hedging = false;   // parity hedges too (as in production)
  };
  for (const Case& tc : {Case{{}, {0, 1, 2, 3}}, Case{{0}, {1, 2, 3}},
                         Case{{5}, {0, 2, 4}}, Case{{}, {0, 1, 2, 3}, true}}) {
    const std::string what =
        absl::StrCat("lost ", absl::StrJoin(tc.lost, ","), " slow ",
                     absl::StrJoin(tc.slow, ","), tc.hedging ? " hedging" : "");
    Lose(tc.lost);
    for (int n : tc.slow) {
      faulty_.AddRule({.path_contains = absl::StrCat("/", Node(n), "/"),
                       .action = FaultAction::kBlock});
    }
    ClientOptions o = Options();
    o.hedging = tc.hedging;
    o.hedge_burst = 1000;  // parity hedges take k reads of the budget each
    o.attempt_timeout = absl::Seconds(30);  // the slow cells never time out
    o.default_deadline = absl::Seconds(30);
    Client* client = OpenClient(o);
    auto f = client->OpenFile("/slow");
    ASSERT_THAT(f, IsOk());
    std::string buf(data.size(), '\0');
    absl::StatusOr<size_t> n = 0;
    std::thread reader([&] { n = (*f)->Read(0, absl::MakeSpan(buf)); });
    // Every slow node judged stalled (bounded wait): the old code had
    // called the row lost by then. With hedging, a cell whose parity hedge
    // gave up has nowhere else to go: it is waited for, never judged
    // stalled; there the parity hedges and a stall are waited for.
    auto all_stalled = [&] {
      const ClientStats s = client->Stats();
      if (tc.hedging) {
        return s.hedges >= tc.slow.size() &&
               std::any_of(tc.slow.begin(), tc.slow.end(), [&](int i) {
                 return FindNode(s, Node(i))->stalls >= 1;
               });
      }
      return std::all_of(tc.slow.begin(), tc.slow.end(), [&](int i) {
        return FindNode(s, Node(i))->stalls >= 1;
      });
    };
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    while (!all_stalled() && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));  // polling, bounded
    }
    EXPECT_TRUE(all_stalled()) << what;
    faulty_.ClearRules();
    faulty_.Release();
    reader.join();
    ASSERT_THAT(n, IsOk()) << what;
    ASSERT_EQ(*n, data.size()) << what;
    EXPECT_TRUE(buf == data) << what;
  }
}

// Slow cells that never answer within the call's deadline: the call ends
// with DEADLINE_EXCEEDED or UNAVAILABLE naming the slow nodes, never
// DATA_LOSS (no more than m cells are known lost).
TEST_F(EcReadTest, SlowCellsPastTheDeadlineAreNotDataLoss) {
  const std::string data = EcFile("/late", 6 * kCell, 6, 3);
  for (int n : {0, 1, 2, 3}) {
    faulty_.AddRule({.path_contains = absl::StrCat("/", Node(n), "/"),
                     .action = FaultAction::kBlock});
  }
  ClientOptions o = Options();
  o.hedging = false;
  o.attempt_timeout = absl::Seconds(30);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/late");
  ASSERT_THAT(f, IsOk());
  std::string buf(data.size(), '\0');
  ReadOptions ro;
  ro.deadline = absl::Seconds(3);
  auto n = (*f)->Read(0, absl::MakeSpan(buf), ro);
  faulty_.Release();
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().code(),
              ::testing::AnyOf(absl::StatusCode::kDeadlineExceeded,
                               absl::StatusCode::kUnavailable))
      << n.status();
  EXPECT_THAT(n.status().message(), HasSubstr("slow")) << n.status();
  EXPECT_THAT(n.status().message(), HasSubstr("on node n1")) << n.status();
}

// Four cells of a row lost for good (objects gone): DATA_LOSS naming the
// row, as before.
TEST_F(EcReadTest, FourHardLostCellsOfRs63IsDataLossNamingTheRow) {
  const std::string data = EcFile("/gone", 2 * 6 * kCell, 6, 3);
  Lose({0, 2, 4, 7});
  Client* client = OpenClient(Options());
  auto f = client->OpenFile("/gone");
  ASSERT_THAT(f, IsOk());
  for (int row : {0, 1}) {
    std::string buf(6 * kCell, '\0');
    auto n = (*f)->Read(row * 6 * kCell, absl::MakeSpan(buf));
    ASSERT_THAT(n, StatusIs(absl::StatusCode::kDataLoss));
    EXPECT_THAT(n.status().message(), HasSubstr(absl::StrCat("row ", row)));
    EXPECT_THAT(n.status().message(), HasSubstr("data cell 0 on node n0"));
    EXPECT_THAT(n.status().message(), HasSubstr("parity cell 1 on node n7"));
  }
}

TEST_F(EcReadTest, EdgeSizesAreByteExactWithALostCell) {
  const uint64_t row = 4 * kCell;
  for (uint64_t size : {uint64_t{1}, kCell - 1, kCell, kCell + 1, row - 1, row,
                        row + 1, 3 * row + 777}) {
    const std::string path = absl::StrCat("/e", size);
    const std::string data = EcFile(path, size, 4, 2);
    for (int lost : {0, 3, 4}) {
      Lose({lost});
      Client* client = OpenClient(Options());
      const std::string what = absl::StrCat("size ", size, " lost ", lost);
      ExpectBytes(client, path, data, 0, size, what);
      ExpectBytes(client, path, data, size - 1, 1, what);
    }
  }
}

}  // namespace
}  // namespace rangefs
