// RebuildEcColumn between in-process agents over loopback gRPC: a lost
// data or parity column is rebuilt byte-exact on the target agent (with its
// ".cells" object for parity), a dead or corrupt survivor is replaced by
// another, a rebuilt cell that fails its expected CRC leaves nothing
// behind and the error names the row, and every out-of-bounds request
// field is refused (INVALID_ARGUMENT naming it). A column rebuilt in ranges
// of rows appears only with its last range, whatever order the others
// came in (repeats overwrite), never from a staging object another
// attempt left, and never when a staged cell reads back wrong. A staging
// object left idle past its limit is swept (never that of a running call)
// and counted; a late range of its rebuild starts over cleanly.
#include "storage_node/ec_rebuilder.h"

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/crc32c.h"
#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "ec/codec.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage_node/agent_service.h"
#include "storage_node/ec_staging.h"
#include "storage_node/export_root.h"
#include "storage_node/node_client.h"
#include "storage_node/object_writer.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::HasSubstr;

constexpr int kK = 2;
constexpr int kM = 2;
constexpr uint64_t kCell = 4096;
// Two full rows and a partial third (column 1's last cell is short).
constexpr uint64_t kSize = 2 * kK * kCell + kCell + 904;

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

std::string Slurp(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The k + m column objects of a coded file of kSize random bytes, and its
// cell CRC table.
struct CodedFile {
  std::vector<std::string> columns;
  std::vector<uint32_t> crcs;  // rows x (k + m)
};

CodedFile Encode() {
  std::mt19937 rng(7);
  std::string data(kSize, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  auto codec = ec::NewCodec({.k = kK, .m = kM});
  EXPECT_THAT(codec, IsOk());
  CodedFile f;
  f.columns.resize(kK + kM);
  const uint64_t rows = (kSize + kK * kCell - 1) / (kK * kCell);
  for (uint64_t row = 0; row < rows; ++row) {
    std::vector<std::string> cells(kK + kM, std::string(kCell, '\0'));
    std::vector<uint64_t> stored(kK + kM, kCell);
    for (int c = 0; c < kK; ++c) {
      const uint64_t start = (row * kK + c) * kCell;
      stored[c] = start >= kSize ? 0 : std::min(kCell, kSize - start);
      if (stored[c] > 0) data.copy(cells[c].data(), stored[c], start);
    }
    std::vector<absl::Span<const char>> in;
    for (int c = 0; c < kK; ++c) in.emplace_back(cells[c].data(), kCell);
    std::vector<absl::Span<char>> out;
    for (int j = 0; j < kM; ++j) out.emplace_back(cells[kK + j].data(), kCell);
    EXPECT_THAT((*codec)->Encode(in, out), IsOk());
    for (int t = 0; t < kK + kM; ++t) {
      const std::string s = cells[t].substr(0, stored[t]);
      f.columns[t] += s;
      f.crcs.push_back(Crc32c(s));
    }
  }
  return f;
}

class EcRebuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto base = testing::ScopedTempDir::Make("ec_rebuilder_test");
    ASSERT_THAT(base, IsOk());
    base_ = *std::move(base);
    file_ = Encode();
    for (int t = 0; t < kK + kM; ++t) {
      agents_.push_back(Start(absl::StrCat("col", t)));
      Put(*agents_.back()->root, absl::StrCat("f/col", t), file_.columns[t]);
    }
    target_ = Start("target");
  }

  std::unique_ptr<TestAgent> Start(const std::string& name) {
    auto a = std::make_unique<TestAgent>();
    a->dir = absl::StrCat(base_.path(), "/", name);
    EXPECT_EQ(mkdir(a->dir.c_str(), 0755), 0);
    auto r = ExportRoot::Open(a->dir, {.writable = true});
    EXPECT_THAT(r, IsOk());
    a->root = *std::move(r);
    a->service =
        std::make_unique<AgentService>(a->root.get(), AgentServiceOptions{});
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

  static void Put(const ExportRoot& root, const std::string& path,
                  const std::string& bytes) {
    auto w = ObjectWriter::Begin(&root, path, kCell);
    ASSERT_THAT(w, IsOk());
    ASSERT_THAT((*w)->Append(bytes.data(), bytes.size()), IsOk());
    ASSERT_THAT((*w)->Commit(false), IsOk());
  }

  // A request rebuilding `column` from every other column, in order.
  RebuildEcColumnRequest Request(int column) const {
    RebuildEcColumnRequest r;
    r.set_path("new/col");
    r.set_k(kK);
    r.set_m(kM);
    r.set_column(column);
    r.set_cell_size(kCell);
    r.set_file_size(kSize);
    for (int t = 0; t < kK + kM; ++t) {
      if (t == column) continue;
      EcSurvivor* s = r.add_survivors();
      s->set_column(t);
      s->set_address(agents_[t]->address);
      s->set_path(absl::StrCat("f/col", t));
    }
    for (uint32_t c : file_.crcs) r.add_cell_crc32c(c);
    return r;
  }

  // Request(column) cut to rows [first, first + count) of attempt `id`.
  RebuildEcColumnRequest Range(int column, uint64_t first, uint64_t count,
                               uint64_t id) const {
    RebuildEcColumnRequest r = Request(column);
    r.set_first_row(first);
    r.set_row_count(count);
    r.set_rebuild_id(id);
    r.clear_cell_crc32c();
    for (uint64_t i = first * (kK + kM); i < (first + count) * (kK + kM); ++i) {
      r.add_cell_crc32c(file_.crcs[i]);
    }
    return r;
  }

  std::vector<std::string> Temps() const {
    auto t = target_->root->ListTemp();
    EXPECT_THAT(t, IsOk());
    return t.ok() ? *t : std::vector<std::string>{};
  }

  absl::StatusOr<RebuildEcColumnResponse> Rebuild(
      const RebuildEcColumnRequest& r) {
    return target_->client->RebuildEcColumn(r, absl::Now() + absl::Seconds(30));
  }

  // Overwrites `bytes` at `offset` of the staging object of "new/col" on
  // the target (what a faulty disk or another attempt left there).
  void OverwriteStaged(uint64_t offset, const std::string& bytes) const {
    const std::string staged = absl::StrCat(target_->dir, "/", kTempDirName,
                                            "/", EcStagingName("new/col"));
    std::fstream f(staged, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.is_open()) << staged;
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << staged;
  }

  std::string TargetFile(const std::string& path) const {
    return absl::StrCat(target_->dir, "/", path);
  }
  bool TargetHas(const std::string& path) const {
    struct stat st;
    return stat(TargetFile(path).c_str(), &st) == 0;
  }

  testing::ScopedTempDir base_;
  CodedFile file_;
  std::vector<std::unique_ptr<TestAgent>> agents_;
  std::unique_ptr<TestAgent> target_;
};

TEST_F(EcRebuilderTest, RebuildsEachColumnByteExact) {
  for (int t = 0; t < kK + kM; ++t) {
    SCOPED_TRACE(t);
    RebuildEcColumnRequest r = Request(t);
    r.set_overwrite(true);
    auto got = Rebuild(r);
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(got->size(), file_.columns[t].size());
    EXPECT_EQ(got->crc32c(), Crc32c(file_.columns[t]));
    // k survivors per row: the first two named.
    const int a = t == 0 ? 1 : 0, b = t <= 1 ? 2 : 1;
    const uint64_t read = file_.columns[a].size() +
                          (b < kK ? file_.columns[b].size() : 3 * kCell);
    EXPECT_EQ(got->bytes_read(), read);
    EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[t]);
    // A parity column gets its cell CRC table.
    EXPECT_EQ(TargetHas("new/col.cells"), t >= kK);
    if (t >= kK) {
      EXPECT_EQ(Slurp(TargetFile("new/col.cells")).size(),
                file_.crcs.size() * 4);
      EXPECT_EQ(got->cells_size(), file_.crcs.size() * 4);
    }
    ASSERT_THAT(target_->root->RemoveObject("new/col"), IsOk());
    if (t >= kK) {
      ASSERT_THAT(target_->root->RemoveObject("new/col.cells"), IsOk());
    }
  }
  // The agent counts what it rebuilt (what the keeper's tests look at).
  auto stats = target_->client->GetStats(absl::Now() + absl::Seconds(5));
  ASSERT_THAT(stats, IsOk());
  uint64_t all = 0;
  for (const std::string& c : file_.columns) all += c.size();
  EXPECT_EQ(stats->ec_rebuilt_bytes(), all);
}

TEST_F(EcRebuilderTest, RebuildsInRangesAndAppearsWithTheLast) {
  for (int t : {1, 3}) {  // a data column with a short last cell; parity
    SCOPED_TRACE(t);
    for (uint64_t row : {0, 1}) {
      auto got = Rebuild(Range(t, row, 1, 42));
      ASSERT_THAT(got, IsOk());
      EXPECT_FALSE(got->committed());
      EXPECT_EQ(got->size(), 0u);
      EXPECT_GT(got->bytes_read(), 0u);
      EXPECT_FALSE(TargetHas("new/col"));  // staged, not served
      EXPECT_FALSE(TargetHas("new/col.cells"));
      EXPECT_EQ(Temps().size(), 2u);  // the staging object and its record
    }
    auto got = Rebuild(Range(t, 2, 1, 42));
    ASSERT_THAT(got, IsOk());
    EXPECT_TRUE(got->committed());
    EXPECT_EQ(got->size(), file_.columns[t].size());
    EXPECT_EQ(got->crc32c(), Crc32c(file_.columns[t]));
    EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[t]);
    if (t >= kK) {
      EXPECT_EQ(got->cells_size(), file_.crcs.size() * 4);
      std::string want;
      for (uint32_t c : file_.crcs) {
        want.append(reinterpret_cast<const char*>(&c), 4);  // little-endian
      }
      EXPECT_EQ(Slurp(TargetFile("new/col.cells")), want);
      ASSERT_THAT(target_->root->RemoveObject("new/col.cells"), IsOk());
    }
    // The sidecar was written: the agent serves verified reads of it.
    std::string back(file_.columns[t].size(), '\0');
    auto n = target_->client->ReadRange(
        "new/col", 0, absl::MakeSpan(back),
        {.deadline = absl::Now() + absl::Seconds(5), .verify_on_server = true});
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(back, file_.columns[t]);
    EXPECT_THAT(Temps(), ::testing::IsEmpty());
    ASSERT_THAT(target_->root->RemoveObject("new/col"), IsOk());
  }
}

TEST_F(EcRebuilderTest, RangesInAnyOrderAndRepeatedOverwrite) {
  // The last range first: rows 0 and 1 are missing, nothing appears.
  ASSERT_THAT(Rebuild(Range(1, 1, 1, 5)), IsOk());
  EXPECT_THAT(Rebuild(Range(1, 2, 1, 5)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("row 0 of 3 was not rebuilt")));
  EXPECT_FALSE(TargetHas("new/col"));
  // Row 0, row 1 again (a retried call), then the last range again.
  ASSERT_THAT(Rebuild(Range(1, 0, 1, 5)), IsOk());
  ASSERT_THAT(Rebuild(Range(1, 1, 2, 5)), IsOk());  // rows 1-2: ends it
  EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[1]);
  EXPECT_THAT(Temps(), ::testing::IsEmpty());
}

TEST_F(EcRebuilderTest, StagingOfAnotherAttemptIsReplacedNeverServed) {
  // A crashed keeper's attempt 1 staged rows 0 and 1; the staging object
  // also holds junk where row 2 goes.
  ASSERT_THAT(Rebuild(Range(3, 0, 2, 1)), IsOk());
  OverwriteStaged(2 * kCell, std::string(kCell, 'x'));
  // Attempt 2 starts with its later rows: attempt 1's rows do not count.
  ASSERT_THAT(Rebuild(Range(3, 1, 1, 2)), IsOk());
  EXPECT_THAT(
      Rebuild(Range(3, 2, 1, 2)).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("row 0 of 3")));
  EXPECT_FALSE(TargetHas("new/col"));
  ASSERT_THAT(Rebuild(Range(3, 0, 1, 2)), IsOk());
  ASSERT_THAT(Rebuild(Range(3, 2, 1, 2)), IsOk());
  EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[3]);

  // A leftover staging object and a whole-column call (the old form,
  // rebuild_id 0): it starts afresh.
  RebuildEcColumnRequest leftover = Range(0, 0, 1, 9);
  leftover.set_overwrite(true);  // column 3 is there now
  ASSERT_THAT(Rebuild(leftover), IsOk());
  RebuildEcColumnRequest whole = Request(0);
  whole.set_overwrite(true);
  auto got = Rebuild(whole);
  ASSERT_THAT(got, IsOk());
  EXPECT_TRUE(got->committed());
  EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[0]);
  EXPECT_THAT(Temps(), ::testing::IsEmpty());
}

TEST_F(EcRebuilderTest, StagedCellThatReadsBackWrongIsNotServed) {
  ASSERT_THAT(Rebuild(Range(0, 0, 2, 3)), IsOk());
  // The disk returns something else for row 1 than what was written.
  OverwriteStaged(kCell + 17, "\x5a");
  EXPECT_THAT(Rebuild(Range(0, 2, 1, 3)).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("row 1 reads back with CRC-32C")));
  EXPECT_FALSE(TargetHas("new/col"));
  // Row 1 again, then the end: the column appears, byte-exact.
  ASSERT_THAT(Rebuild(Range(0, 1, 1, 3)), IsOk());
  ASSERT_THAT(Rebuild(Range(0, 2, 1, 3)), IsOk());
  EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[0]);
}

TEST_F(EcRebuilderTest, ReplacesCorruptSurvivor) {
  // Column 0's object is corrupt in row 1; its sidecar still matches (only
  // the cell CRC table shows it): column 3 stands in for that row.
  std::string bad = file_.columns[0];
  bad[kCell + 10] ^= 1;
  ASSERT_THAT(agents_[0]->root->RemoveObject("f/col0"), IsOk());
  Put(*agents_[0]->root, "f/col0", bad);
  auto got = Rebuild(Request(1));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[1]);
}

TEST_F(EcRebuilderTest, ReplacesDeadSurvivor) {
  agents_[0]->server->Shutdown(std::chrono::system_clock::now());
  RebuildEcColumnRequest r = Request(1);
  r.set_survivor_timeout_ms(5000);
  auto got = Rebuild(r);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[1]);
}

TEST_F(EcRebuilderTest, TooFewGoodSurvivorsNamesTheRow) {
  RebuildEcColumnRequest r = Request(1);
  r.mutable_survivors()->DeleteSubrange(2, 1);  // columns 0 and 2 left
  std::string bad = file_.columns[2];
  bad[2 * kCell + 1] ^= 1;  // row 2
  ASSERT_THAT(agents_[2]->root->RemoveObject("f/col2"), IsOk());
  Put(*agents_[2]->root, "f/col2", bad);
  auto got = Rebuild(r);
  EXPECT_THAT(got.status(), StatusIs(absl::StatusCode::kDataLoss,
                                     HasSubstr("row 2: only 1 good cell")));
  EXPECT_FALSE(TargetHas("new/col"));
}

TEST_F(EcRebuilderTest, CrcMismatchWritesNothingAndNamesTheRow) {
  for (int t : {1, 3}) {
    SCOPED_TRACE(t);
    RebuildEcColumnRequest r = Request(t);
    // The expected CRC of the rebuilt cell in row 1 is wrong.
    r.set_cell_crc32c(1 * (kK + kM) + t, r.cell_crc32c(1 * (kK + kM) + t) ^ 1);
    auto got = Rebuild(r);
    EXPECT_THAT(
        got.status(),
        StatusIs(absl::StatusCode::kDataLoss,
                 HasSubstr(absl::StrCat("row 1: rebuilt cell of column ", t,
                                        " has CRC-32C"))));
    EXPECT_FALSE(TargetHas("new/col"));
    EXPECT_FALSE(TargetHas("new/col.cells"));
    EXPECT_THAT(Temps(), ::testing::IsEmpty());  // a whole-column call
  }
}

TEST_F(EcRebuilderTest, RefusesExistingObjectWithoutOverwrite) {
  Put(*target_->root, "new/col", "old");
  EXPECT_THAT(Rebuild(Request(0)).status(),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(Slurp(TargetFile("new/col")), "old");
}

TEST_F(EcRebuilderTest, RefusesBadRequestsOverTheWire) {
  RebuildEcColumnRequest r = Request(0);
  r.set_path("../escape");
  EXPECT_THAT(Rebuild(r).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("path")));
}

// Idle staging objects (a rebuild its caller abandoned) are swept, by a
// rebuilder beside the target's service with a fake clock: the sweep
// reads only its Now() against the files' modification times.
class EcStagingSweepTest : public EcRebuilderTest {
 protected:
  // A rebuilder of the target's export; no background sweep unless
  // `idle` is nonzero.
  std::unique_ptr<EcRebuilder> Rebuilder(absl::Duration idle = {}) {
    return std::make_unique<EcRebuilder>(
        target_->root.get(),
        EcRebuilderOptions{
            .clock = &clock_,
            .staging_idle = idle,
            .on_swept_bytes = [this](uint64_t n) { OnSwept(n); }});
  }

  void OnSwept(uint64_t n) {
    swept_bytes_ += n;
    if (!swept_.HasBeenNotified()) swept_.Notify();
  }

  static absl::Time Deadline() { return absl::Now() + absl::Seconds(30); }

  FakeClock clock_{absl::Now()};
  std::atomic<uint64_t> swept_bytes_{0};
  absl::Notification swept_;
};

TEST_F(EcStagingSweepTest, RemovesOnlyStagingIdlePastTheLimitAndCountsIt) {
  auto rebuilder = Rebuilder();
  ASSERT_THAT(rebuilder->Rebuild(Range(1, 0, 2, 7), Deadline(), nullptr),
              IsOk());
  auto other = target_->root->CreateTemp();  // a write in progress
  ASSERT_THAT(other, IsOk());
  ASSERT_EQ(Temps().size(), 3u);
  clock_.Advance(absl::Minutes(59));
  auto sweep = rebuilder->SweepIdleStaging(absl::Hours(1));
  ASSERT_THAT(sweep, IsOk());
  EXPECT_EQ(sweep->objects, 0u);
  EXPECT_EQ(Temps().size(), 3u);

  clock_.Advance(absl::Minutes(2));
  sweep = rebuilder->SweepIdleStaging(absl::Hours(1));
  ASSERT_THAT(sweep, IsOk());
  EXPECT_EQ(sweep->objects, 1u);
  EXPECT_GE(sweep->bytes, 2 * kCell);  // two rows, and the record
  EXPECT_EQ(swept_bytes_.load(), sweep->bytes);
  EXPECT_THAT(Temps(), ::testing::ElementsAre(other->name));

  // The abandoned attempt's last range starts a fresh staging object and
  // names the first row it lacks; sent again from there, it completes.
  EXPECT_THAT(rebuilder->Rebuild(Range(1, 2, 1, 7), Deadline(), nullptr),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("row 0 of 3 was not rebuilt")));
  EXPECT_FALSE(TargetHas("new/col"));
  ASSERT_THAT(rebuilder->Rebuild(Range(1, 0, 2, 7), Deadline(), nullptr),
              IsOk());
  ASSERT_THAT(rebuilder->Rebuild(Range(1, 2, 1, 7), Deadline(), nullptr),
              IsOk());
  EXPECT_EQ(Slurp(TargetFile("new/col")), file_.columns[1]);
}

TEST_F(EcStagingSweepTest, LeavesTheStagingOfARunningCallAlone) {
  auto rebuilder = Rebuilder();
  // The call stops between its two rows (where it polls for cancellation)
  // until the sweep is done.
  absl::Notification inside, go;
  int polls = 0;
  absl::Status call;
  std::thread t([&] {
    call = rebuilder
               ->Rebuild(Range(1, 0, 2, 7), Deadline(),
                         [&] {
                           if (++polls == 2) {
                             inside.Notify();
                             go.WaitForNotification();
                           }
                           return false;
                         })
               .status();
  });
  ASSERT_TRUE(inside.WaitForNotificationWithTimeout(absl::Seconds(30)));
  clock_.Advance(absl::Hours(2));  // its row 0 looks idle for 2 hours
  auto sweep = rebuilder->SweepIdleStaging(absl::Hours(1));
  go.Notify();
  t.join();
  ASSERT_THAT(sweep, IsOk());
  EXPECT_EQ(sweep->objects, 0u);
  ASSERT_THAT(call, IsOk());
  EXPECT_EQ(Temps().size(), 2u);
  // Once the call ended, the same staging object is fair game.
  clock_.Advance(absl::Hours(2));
  sweep = rebuilder->SweepIdleStaging(absl::Hours(1));
  ASSERT_THAT(sweep, IsOk());
  EXPECT_EQ(sweep->objects, 1u);
  EXPECT_THAT(Temps(), ::testing::IsEmpty());
}

TEST_F(EcStagingSweepTest, RunsInTheBackgroundFromTheStart) {
  ASSERT_THAT(Rebuild(Range(3, 0, 1, 7)), IsOk());  // through the service
  clock_.Advance(absl::Hours(2));
  auto rebuilder = Rebuilder(absl::Hours(1));  // sweeps at once, then every
  ASSERT_TRUE(swept_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_GT(swept_bytes_.load(), 0u);
  EXPECT_THAT(Temps(), ::testing::IsEmpty());
  EXPECT_EQ(StagingSweepInterval(absl::Hours(1)), absl::Minutes(10));
  EXPECT_EQ(StagingSweepInterval(absl::Minutes(20)), absl::Minutes(5));
  EXPECT_EQ(StagingSweepInterval(absl::Seconds(1)), absl::Seconds(1));
}

// The agent counts the bytes it swept (GetStats, and so its metrics).
TEST_F(EcStagingSweepTest, AgentServiceCountsSweptBytes) {
  ASSERT_THAT(Rebuild(Range(3, 0, 1, 7)), IsOk());
  clock_.Advance(absl::Hours(2));
  AgentService service(target_->root.get(), {.clock = &clock_});
  // Its sweep ran at once on a thread of its own: wait, bounded.
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (service.Stats().ec_staging_swept_bytes() == 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_GT(service.Stats().ec_staging_swept_bytes(), 0u);
  EXPECT_THAT(Temps(), ::testing::IsEmpty());
}

// Each field's bounds (pure: no agent needed).
TEST(ValidateRebuildRequestTest, NamesTheBrokenField) {
  RebuildEcColumnRequest good;
  good.set_path("a/b");
  good.set_k(2);
  good.set_m(1);
  good.set_column(2);
  good.set_cell_size(4096);
  good.set_file_size(3 * 2 * 4096);  // 3 rows
  for (int t = 0; t < 2; ++t) {
    EcSurvivor* s = good.add_survivors();
    s->set_column(t);
    s->set_address("127.0.0.1:1");
    s->set_path("a/c");
  }
  for (int i = 0; i < 9; ++i) good.add_cell_crc32c(0);
  ASSERT_THAT(ValidateRebuildRequest(good), IsOk());

  struct Case {
    std::string want;
    std::function<void(RebuildEcColumnRequest&)> edit;
  };
  // An edit asking for rows [first, first + count).
  auto rows_from = [](uint64_t first, uint64_t count) {
    return [first, count](RebuildEcColumnRequest& r) {
      r.set_first_row(first);
      r.set_row_count(count);
    };
  };
  const std::vector<Case> cases = {
      {"path", [](auto& r) { r.set_path("../x"); }},
      {"path", [](auto& r) { r.set_path("/abs"); }},
      {"path", [](auto& r) { r.set_path("x.rangefs-crc"); }},
      {"k = 0", [](auto& r) { r.set_k(0); }},
      {"m = 0", [](auto& r) { r.set_m(0); }},
      {"m = 40", [](auto& r) { r.set_m(40); }},
      {"column -1", [](auto& r) { r.set_column(-1); }},
      {"column 3", [](auto& r) { r.set_column(3); }},
      {"cell_size 100", [](auto& r) { r.set_cell_size(100); }},
      {"cell_size", [](auto& r) { r.set_cell_size(uint64_t{1} << 40); }},
      {"cell CRCs", [](auto& r) { r.add_cell_crc32c(0); }},
      {"file_size", [](auto& r) { r.set_file_size(uint64_t{1} << 62); }},
      {"more than 1048576 cell CRCs in one call",
       [](auto& r) { r.set_file_size(uint64_t{1} << 40); }},
      {"first_row 3 is not below the file's 3 rows",
       [](auto& r) { r.set_first_row(3); }},
      {"first_row", [](auto& r) { r.set_first_row(~0ull); }},
      {"row_count 0", [](auto& r) { r.set_row_count(0); }},
      {"row_count 3 from first_row 1 is not in [1, 2]", rows_from(1, 3)},
      {"row_count", rows_from(2, ~0ull)},
      {"9 cell CRCs; rows [1, 2) of 3 cells need 3", rows_from(1, 1)},
      {"rebuild_id 0",
       [](auto& r) {
         r.set_first_row(1);
         r.mutable_cell_crc32c()->Truncate(6);
       }},
      {"1 survivors", [](auto& r) { r.mutable_survivors()->RemoveLast(); }},
      {"survivor 1 (column 0)",
       [](auto& r) { r.mutable_survivors(1)->set_column(0); }},
      {"survivor 0 (column 2)",
       [](auto& r) { r.mutable_survivors(0)->set_column(2); }},
      {"survivor 1 (column 1): address",
       [](auto& r) { r.mutable_survivors(1)->set_address(""); }},
      {"survivor 0 (column 0): path",
       [](auto& r) { r.mutable_survivors(0)->set_path("a/../../etc"); }},
      {"object_offset",
       [](auto& r) { r.mutable_survivors(0)->set_object_offset(~0ull); }},
  };
  // Ranges: the rows' CRCs only, with a rebuild id.
  RebuildEcColumnRequest range = good;
  range.set_first_row(1);
  range.set_row_count(1);
  range.set_rebuild_id(1);
  range.mutable_cell_crc32c()->Truncate(3);
  EXPECT_THAT(ValidateRebuildRequest(range), IsOk());
  range.clear_row_count();  // to the end: rows 1 and 2
  EXPECT_THAT(ValidateRebuildRequest(range),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("rows [1, 3) of 3 cells need 6")));
  // One call no longer carries the whole table: an RS(6,3) file of 6 MiB
  // cells past the old cap (116509 rows, 1048581 CRCs) rebuilds in ranges,
  // up to its last row; the whole table in one call is refused.
  RebuildEcColumnRequest big = good;
  big.set_k(6);
  big.set_m(3);
  big.set_column(8);
  big.set_cell_size(6 << 20);
  big.mutable_survivors()->Clear();
  for (int t = 0; t < 6; ++t) {
    EcSurvivor* s = big.add_survivors();
    s->set_column(t);
    s->set_address("127.0.0.1:1");
    s->set_path("a/c");
  }
  const uint64_t rows = 116509;
  big.set_file_size(rows * 6 * (6 << 20));
  big.set_first_row(rows - 1000);
  big.set_row_count(1000);
  big.set_rebuild_id(77);
  big.mutable_cell_crc32c()->Clear();
  for (int i = 0; i < 1000 * 9; ++i) big.add_cell_crc32c(0);
  EXPECT_THAT(ValidateRebuildRequest(big), IsOk());
  big.clear_row_count();  // rows - 1000 to the end: the same range
  EXPECT_THAT(ValidateRebuildRequest(big), IsOk());
  big.set_first_row(0);
  EXPECT_THAT(ValidateRebuildRequest(big),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("more than 1048576 cell CRCs")));

  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    RebuildEcColumnRequest r = good;
    c.edit(r);
    EXPECT_THAT(
        ValidateRebuildRequest(r),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want)));
  }
}

}  // namespace
}  // namespace node
}  // namespace rangefs
