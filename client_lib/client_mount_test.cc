// Unit tests of the client's mount path over the real file system (temp
// directories as the nodes' mounts, MemoryKv as the namespace): the
// io_uring ring threads, the callers' own rings for small reads, their
// fallback to worker threads, a read hung in a ring (and a teardown that
// leaves it behind), and rangefs-mountd's status file feeding the dead-node
// table.
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/clock.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/mountd/mount_status.h"
#include "client_lib/testing/client_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"
#include "storage_node/sidecar.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;

constexpr int kNodes = 4;

std::string Node(int i) { return absl::StrCat("n", i); }

// Entries of /proc/self/<dir> (threads of "task", descriptors of "fd")
// that satisfy `keep` (given the entry's path).
template <typename F>
int CountProcEntries(const char* dir, F keep) {
  const std::string base = absl::StrCat("/proc/self/", dir);
  DIR* d = opendir(base.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.' && keep(absl::StrCat(base, "/", e->d_name))) ++n;
  }
  closedir(d);
  return n;
}

int ThreadCount() {
  return CountProcEntries("task", [](const std::string&) { return true; });
}

// Descriptors of this process open on `path`.
int FdsOn(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);  // as /proc shows it
  if (real == nullptr) return -1;
  const std::string want = real;
  free(real);
  return CountProcEntries("fd", [&](const std::string& fd) {
    char target[4096];
    const ssize_t n = readlink(fd.c_str(), target, sizeof(target));
    return n > 0 && std::string(target, static_cast<size_t>(n)) == want;
  });
}

// Polls `done` up to 30 s (generous: the machine may be loaded).
template <typename F>
bool Eventually(F done) {
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// What "at once" means for a call that returns, or a teardown that ends,
// without waiting for hung reads: well within the deadlines the tests set
// against it, with room for a loaded machine.
constexpr absl::Duration kAtOnce = absl::Seconds(5);

class ClientMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/mountXXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = ns::NewKvStore(&kv_);
    for (int i = 0; i < kNodes; ++i) {
      ASSERT_EQ(mkdir((root_ + "/" + Node(i)).c_str(), 0755), 0);
      v1::NodeRecord r;
      r.set_id(Node(i));
      r.add_addresses("127.0.0.1:1");  // no agent listens there
      r.set_export_path("/export");
      ASSERT_THAT(store_->AddNode(r), IsOk());
    }
  }

  void TearDown() override {
    if (fifo_fd_ >= 0) {  // release a read hung on the FIFO
      std::string junk(1 << 16, 'j');
      EXPECT_GT(write(fifo_fd_, junk.data(), junk.size()), 0);
    }
    clients_.clear();
    if (fifo_fd_ >= 0) close(fifo_fd_);
  }

  ClientOptions Options() {
    ClientOptions o;
    o.mount_root = root_;
    o.data_path = DataPath::kMount;
    o.seed = 42;
    o.default_deadline = absl::Seconds(10);
    return o;
  }

  // The in-memory namespace; the mounts are real directories.
  ClientTestHooks Hooks() {
    ClientTestHooks h;
    h.kv = &kv_;
    return h;
  }

  Client* OpenClient(ClientOptions o) {
    auto c = OpenClientForTesting(o, Hooks());
    EXPECT_THAT(c, IsOk());
    clients_.push_back(c.ok() ? std::move(*c) : nullptr);
    return clients_.back().get();
  }

  std::string RandomBytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(absl::Uniform<uint8_t>(gen_));
    return s;
  }

  void WriteFile(const std::string& path, const std::string& data) {
    std::ofstream out(path, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    ASSERT_TRUE(out.good()) << path;
  }

  // An object on a node's mount, with its CRC sidecar.
  void PutObject(const std::string& node, const std::string& object,
                 const std::string& data) {
    const std::string dir = absl::StrCat(root_, "/", node);
    WriteFile(dir + "/" + object, data);
    node::BlockChecksummer sum(4096);
    sum.Update(data.data(), data.size());
    const std::string sidecar = dir + "/" + node::SidecarPathFor(object);
    std::string parent = sidecar.substr(0, sidecar.rfind('/'));
    mkdir(parent.c_str(), 0755);
    WriteFile(sidecar, node::EncodeSidecar(sum.Finish()));
  }

  // Random extents, each with replicas on `nodes` (objects at 4 KiB-aligned
  // random offsets so that O_DIRECT reads cover neighbouring bytes).
  std::string ExtentFile(const std::string& path, size_t size,
                         std::vector<int> nodes) {
    std::string data = RandomBytes(size);
    v1::FileLayout l;
    l.set_size(size);
    l.set_state(v1::READY);
    l.set_checksum(v1::CRC32C_SIDECAR);
    l.set_checksum_block_size(4096);
    uint64_t pos = 0;
    for (int i = 0; pos < size; ++i) {
      uint64_t len = std::min<uint64_t>(
          size - pos, absl::Uniform<uint64_t>(gen_, 1, 300000));
      auto* e = l.add_extents();
      e->set_offset(pos);
      e->set_length(len);
      for (int n : nodes) {
        const uint64_t lead = absl::Uniform(gen_, 0, 3) * 4096;
        const std::string obj = absl::StrCat("o", path.substr(1), "-e", i);
        PutObject(Node(n), obj, RandomBytes(lead) + data.substr(pos, len));
        auto* r = e->add_replicas();
        r->set_node_id(Node(n));
        r->set_object(obj);
        r->set_object_offset(lead);
      }
      pos += len;
    }
    EXPECT_THAT(store_->CreateFile(path, l), IsOk());
    return data;
  }

  // A one-extent file whose replica on each of `nodes` is `objects[i]`.
  void OneExtentFile(const std::string& path, size_t size,
                     std::vector<std::pair<int, std::string>> replicas) {
    v1::FileLayout l;
    l.set_size(size);
    l.set_state(v1::READY);
    auto* e = l.add_extents();
    e->set_offset(0);
    e->set_length(size);
    for (const auto& [n, obj] : replicas) {
      auto* r = e->add_replicas();
      r->set_node_id(Node(n));
      r->set_object(obj);
    }
    EXPECT_THAT(store_->CreateFile(path, l), IsOk());
  }

  // "/one": `size` random bytes in one object on node `node`; returns them.
  std::string OneObjectFile(int node, size_t size) {
    std::string data = RandomBytes(size);
    PutObject(Node(node), "one", data);
    OneExtentFile("/one", data.size(), {{node, "one"}});
    return data;
  }

  // "/striped": 4 rows of 1 MiB units over the kNodes columns (column t:
  // object "col<t>" on node t).
  static constexpr uint64_t kUnit = 1 << 20;
  static constexpr uint64_t kColumn = 4 * kUnit;
  struct Striped {
    std::string data;
    std::vector<std::string> objects;  // column t's object file
  };
  // `rows` rows of units (a column of rows * kUnit bytes).
  Striped StripedFile(uint64_t rows = kColumn / kUnit) {
    Striped out{.data = RandomBytes(kNodes * rows * kUnit)};
    v1::FileLayout l;
    l.set_size(out.data.size());
    l.set_state(v1::READY);
    auto* s = l.mutable_striped();
    s->set_stripe_unit(kUnit);
    for (int t = 0; t < kNodes; ++t) {
      std::string column;
      for (uint64_t k = t; k < out.data.size() / kUnit; k += kNodes) {
        column += out.data.substr(k * kUnit, kUnit);
      }
      const std::string obj = absl::StrCat("col", t);
      PutObject(Node(t), obj, column);
      out.objects.push_back(absl::StrCat(root_, "/", Node(t), "/", obj));
      auto* r = s->add_targets()->add_replicas();
      r->set_node_id(Node(t));
      r->set_object(obj);
    }
    EXPECT_THAT(store_->CreateFile("/striped", l), IsOk());
    return out;
  }

  // Opens `path` and reads its first bytes, which opens its object on the
  // node's ring thread: later reads may take the page-cache path. Null
  // (with a test failure) on error.
  static std::unique_ptr<File> OpenWarm(Client* client,
                                        const std::string& path) {
    if (client == nullptr) return nullptr;
    auto f = client->OpenFile(path);
    EXPECT_THAT(f, IsOk());
    if (!f.ok()) return nullptr;
    std::string first(4096, '\0');
    EXPECT_THAT((*f)->Read(0, absl::MakeSpan(first)), IsOk());
    return std::move(*f);
  }

  static const NodeStats& FindNode(const ClientStats& s,
                                   const std::string& id) {
    for (const NodeStats& n : s.nodes) {
      if (n.node == id) return n;
    }
    static const NodeStats kNone;
    return kNone;
  }

  // Polls (up to 30 s) until node `id` has no attempt in flight.
  static bool AwaitNoneInflight(Client* client, const std::string& id) {
    return Eventually(
        [&] { return FindNode(client->Stats(), id).inflight == 0; });
  }

  // Reads `dst` from `f` at 0 in a thread until `started()` says its read
  // hangs where the test wants it, then cancels the call: unlike a short
  // deadline, a loaded machine cannot end the call before the read got
  // there. Returns the call's result; *started_ok: whether it got there
  // (within 30 s).
  template <typename F>
  static absl::StatusOr<size_t> ReadUntilHung(File& f, absl::Span<char> dst,
                                              F started, bool* started_ok) {
    ReadCanceller cancel;
    absl::StatusOr<size_t> n;
    absl::Time returned;
    std::thread caller([&] {
      n = f.Read(0, dst, {.deadline = absl::Seconds(60), .canceller = &cancel});
      returned = absl::Now();
    });
    *started_ok = Eventually(started);
    const absl::Time t0 = absl::Now();
    cancel.Cancel();
    caller.join();
    EXPECT_LT(returned - t0, kAtOnce) << "after Cancel";
    return n;
  }

  // Writes <root>/.rangefs-mounts: every node healthy except `down`.
  void WriteStatus(const std::vector<int>& down, absl::Time updated) {
    mountd::MountStatusFile f;
    f.updated_unix_ms = absl::ToUnixMillis(updated);
    f.pass = ++status_pass_;
    f.mounter = "bind";
    for (int i = 0; i < kNodes; ++i) {
      mountd::MountStatusEntry e;
      e.node_id = Node(i);
      e.path = absl::StrCat(root_, "/", Node(i));
      e.health = std::find(down.begin(), down.end(), i) != down.end()
                     ? mountd::MountHealth::kUnhealthy
                     : mountd::MountHealth::kHealthy;
      f.mounts.push_back(e);
    }
    ASSERT_THAT(mountd::WriteMountStatus(root_ + "/.rangefs-mounts", f),
                IsOk());
  }

  absl::BitGen gen_{std::seed_seq{11}};
  std::string root_;
  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::vector<std::unique_ptr<Client>> clients_;
  int fifo_fd_ = -1;
  int status_pass_ = 0;
};

// Reads `data` of `path` back with single reads and a large ReadV.
void ExpectReadsBack(Client* client, const std::string& path,
                     const std::string& data, absl::BitGen& gen) {
  auto f = client->OpenFile(path);
  ASSERT_THAT(f, IsOk());
  std::string all(data.size(), '\0');
  auto n = (*f)->Read(0, absl::MakeSpan(all));
  ASSERT_THAT(n, IsOk());
  ASSERT_EQ(*n, data.size());
  ASSERT_TRUE(all == data);
  std::vector<std::string> bufs(200);
  std::vector<ReadRange> ranges;
  for (auto& b : bufs) {
    b.assign(absl::Uniform<size_t>(gen, 1, 20000), '\0');
    ranges.push_back(
        {absl::Uniform<uint64_t>(gen, 0, data.size()), absl::MakeSpan(b)});
  }
  auto results = (*f)->ReadV(ranges);
  for (size_t i = 0; i < ranges.size(); ++i) {
    ASSERT_THAT(results[i], IsOk());
    const size_t want =
        std::min<size_t>(bufs[i].size(), data.size() - ranges[i].offset);
    ASSERT_EQ(*results[i], want);
    ASSERT_TRUE(bufs[i].substr(0, want) == data.substr(ranges[i].offset, want))
        << "range " << i << " at " << ranges[i].offset;
  }
}

uint64_t Sum(const ClientStats& s, uint64_t NodeStats::*field) {
  uint64_t n = 0;
  for (const NodeStats& x : s.nodes) n += x.*field;
  return n;
}

// [0, size) of a file mapped read-only (MAP_SHARED), and which of its
// pages the page cache holds (mincore: bit 0 of each entry).
struct MappedPages {
  MappedPages() = default;
  MappedPages(const MappedPages&) = delete;
  MappedPages& operator=(const MappedPages&) = delete;
  ~MappedPages() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
  void* addr = MAP_FAILED;
  size_t size = 0;
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident;  // one entry per page
};

// [0, size) of `path` as MappedPages; null if it cannot tell (open, mmap
// or mincore failed).
std::unique_ptr<MappedPages> MapPages(const std::string& path, uint64_t size) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return nullptr;
  auto m = std::make_unique<MappedPages>();
  m->size = size;
  m->addr = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m->addr == MAP_FAILED) return nullptr;
  m->resident.resize((size + m->page - 1) / m->page);
  if (mincore(m->addr, size, m->resident.data()) != 0) return nullptr;
  return m;
}

// Pages of [offset, offset + length) of `path` in the page cache; -1 if
// it cannot tell.
int64_t ResidentPages(const std::string& path, uint64_t offset,
                      uint64_t length) {
  const std::unique_ptr<MappedPages> m = MapPages(path, offset + length);
  if (m == nullptr) return -1;
  int64_t n = 0;
  for (size_t i = offset / m->page; i < m->resident.size(); ++i) {
    n += m->resident[i] & 1;
  }
  return n;
}

// Pages of [offset, offset + length) of `path` (page-aligned) that are in
// the page cache as part of a folio larger than one page, from
// /proc/self/pagemap and /proc/kpageflags (KPF_COMPOUND_HEAD,
// KPF_COMPOUND_TAIL); -1 if it cannot tell (not root, no such files).
// Waits for pages still being read (it maps and touches each cached one).
int64_t LargeFolioPages(const std::string& path, uint64_t offset,
                        uint64_t length) {
  const std::unique_ptr<MappedPages> m = MapPages(path, offset + length);
  if (m == nullptr) return -1;
  const int pagemap = open("/proc/self/pagemap", O_RDONLY);
  const int flags = open("/proc/kpageflags", O_RDONLY);
  absl::Cleanup close_both = [&] {
    if (pagemap >= 0) close(pagemap);
    if (flags >= 0) close(flags);
  };
  if (pagemap < 0 || flags < 0) return -1;
  const size_t page = m->page;
  int64_t large = 0;
  for (size_t i = offset / page; i < m->resident.size(); ++i) {
    if ((m->resident[i] & 1) == 0) continue;
    const volatile char* at = static_cast<const char*>(m->addr) + i * page;
    (void)*at;  // maps the cached page (no readahead: it is cached)
    uint64_t entry = 0;
    const off_t slot = static_cast<off_t>(
        (reinterpret_cast<uintptr_t>(at) / page) * sizeof(entry));
    if (pread(pagemap, &entry, sizeof(entry), slot) != sizeof(entry)) {
      return -1;
    }
    const uint64_t pfn = entry & ((uint64_t{1} << 55) - 1);
    if ((entry >> 63) == 0 || pfn == 0) return -1;  // no PFNs shown
    uint64_t f = 0;
    if (pread(flags, &f, sizeof(f), static_cast<off_t>(pfn * sizeof(f))) !=
        sizeof(f)) {
      return -1;
    }
    if (f & ((uint64_t{1} << 15) | (uint64_t{1} << 16))) ++large;
  }
  return large;
}

// Drops `path` from the page cache (written back first); false if it
// stays (a file system that keeps it: the test cannot tell then).
bool DropCached(const std::string& path, uint64_t size) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  fdatasync(fd);
  const bool ok = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  close(fd);
  return ok && ResidentPages(path, 0, size) == 0;
}

// Sequential reads of a striped file ask the kernel for the next window
// of every column (readahead_hints.h): pages of columns that no read has
// touched since the cache was dropped come in ahead of the reader; random
// reads ask for nothing.
TEST_F(ClientMountTest, SequentialReadsHintTheColumnsAheadAndRandomOnesDoNot) {
  const Striped striped = StripedFile();
  const std::string& data = striped.data;
  const std::vector<std::string>& objects = striped.objects;
  Client* client = OpenClient(Options());
  ASSERT_NE(client, nullptr);
  std::unique_ptr<File> f = OpenWarm(client, "/striped");
  ASSERT_NE(f, nullptr);
  std::string all(data.size(), '\0');  // opens every column's object
  ASSERT_THAT(f->Read(0, absl::MakeSpan(all)), IsOk());
  ASSERT_TRUE(all == data);
  auto drop_all = [&] {
    for (const std::string& o : objects) {
      if (!DropCached(o, kColumn)) return false;
    }
    return true;
  };
  if (!drop_all()) GTEST_SKIP() << "the page cache of " << root_ << " stays";

  // Random: rows 0, 1, 2 of columns 0, 1, 3, never adjacent. Column 2
  // gets no read and no hint.
  std::string buf(kUnit, '\0');
  for (uint64_t unit : {0, 5, 11, 4}) {
    ASSERT_THAT(f->Read(unit * kUnit, absl::MakeSpan(buf)), IsOk());
    EXPECT_TRUE(buf == data.substr(unit * kUnit, kUnit)) << unit;
  }
  EXPECT_EQ(ResidentPages(objects[2], 0, kColumn), 0);

  // Sequential: units 0 and 1 (columns 0 and 1, row 0). The second call
  // hints the next 4 units: row 0 of columns 2 and 3, which no read
  // touched, and row 1 of columns 0 and 1.
  ASSERT_TRUE(drop_all());
  // A new stream: not the continuation of an earlier call.
  ASSERT_THAT(f->Read(8 * kUnit + 7, absl::MakeSpan(buf.data(), 1)), IsOk());
  ASSERT_TRUE(drop_all());
  for (uint64_t unit : {0, 1}) {
    ASSERT_THAT(f->Read(unit * kUnit, absl::MakeSpan(buf)), IsOk());
    EXPECT_TRUE(buf == data.substr(unit * kUnit, kUnit)) << unit;
  }
  const int64_t unit_pages = kUnit / sysconf(_SC_PAGESIZE);
  for (int t : {2, 3}) {
    EXPECT_TRUE(Eventually([&] {
      return ResidentPages(objects[t], 0, kUnit) == unit_pages;
    })) << "column "
        << t << ": " << ResidentPages(objects[t], 0, kUnit) << " of "
        << unit_pages << " pages";
    // Not far past the window: the kernel's readahead, started at row 0
    // with a 1 MiB request, reads at most 2 MiB on a disk whose
    // read_ahead_kb is below 32 MiB; row 3 of columns 2, 3 stays out.
    EXPECT_EQ(ResidentPages(objects[t], 3 * kUnit, kUnit), 0) << "column " << t;
  }
}

// The hints start the kernel's own readahead (hint_ahead.cc), whose pages
// come in as large folios after its first window, not as
// POSIX_FADV_WILLNEED's 4 KiB ones: copying out of those costs every later
// reader of the pages 1.5-2x the CPU. A cold sequential scan of 12 MiB
// columns, whose hints run up to 8 MiB ahead of the reader on each column,
// leaves most of each column in large folios.
TEST_F(ClientMountTest, HintedColumnsComeInAsLargeFolios) {
  constexpr uint64_t kRows = 12;
  const uint64_t column = kRows * kUnit;
  const Striped striped = StripedFile(kRows);
  const std::vector<std::string>& objects = striped.objects;
  auto drop_all = [&] {
    for (const std::string& o : objects) {
      if (!DropCached(o, column)) return false;
    }
    return true;
  };
  if (!drop_all()) GTEST_SKIP() << "the page cache of " << root_ << " stays";
  {  // Does the kernel's own readahead make large folios here at all?
    std::string chunk(kUnit, '\0');
    const int fd = open(objects[0].c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    for (uint64_t at = 0; at < column; at += kUnit) {
      ASSERT_EQ(pread(fd, chunk.data(), kUnit, static_cast<off_t>(at)),
                static_cast<ssize_t>(kUnit));
    }
    close(fd);
    const int64_t large = LargeFolioPages(objects[0], 0, column);
    if (large < 0) {
      GTEST_SKIP() << "no /proc/kpageflags or PFNs in /proc/self/pagemap";
    }
    if (large == 0) {
      GTEST_SKIP() << "the kernel's readahead makes no large folios on "
                   << root_;
    }
  }
  Client* client = OpenClient(Options());
  ASSERT_NE(client, nullptr);
  std::unique_ptr<File> f = OpenWarm(client, "/striped");
  ASSERT_NE(f, nullptr);
  std::string all(striped.data.size(), '\0');  // opens every column's object
  ASSERT_THAT(f->Read(0, absl::MakeSpan(all)), IsOk());
  ASSERT_TRUE(drop_all());
  std::string buf(kUnit, '\0');
  for (uint64_t at = 0; at < striped.data.size(); at += kUnit) {
    ASSERT_THAT(f->Read(at, absl::MakeSpan(buf)), IsOk());
    ASSERT_TRUE(buf == striped.data.substr(at, kUnit)) << at;
  }
  EXPECT_GT(Sum(client->Stats(), &NodeStats::cached_reads), 0u)
      << "no read found its bytes read ahead";
  const int64_t pages = column / sysconf(_SC_PAGESIZE);
  for (int t = 0; t < kNodes; ++t) {
    const int64_t large = LargeFolioPages(objects[t], 0, column);
    EXPECT_GT(large, pages / 2) << "column " << t << ": " << large << " of "
                                << pages << " pages in large folios";
  }
}

// Client::ReadV feeds the same hints (HintReadV, file_impl.h): a FUSE
// mount's concurrent kernel requests, batched into ReadV calls
// (mount/read_batcher.h) and arriving out of order, count as one
// sequential stream of the file; random 4 KiB ranges hint nothing.
TEST_F(ClientMountTest, SequentialReadVHintsTheColumnsAheadAndRandomOnesDoNot) {
  const Striped striped = StripedFile();
  const std::string& data = striped.data;
  const std::vector<std::string>& objects = striped.objects;
  Client* client = OpenClient(Options());
  ASSERT_NE(client, nullptr);
  std::unique_ptr<File> f = OpenWarm(client, "/striped");
  ASSERT_NE(f, nullptr);
  std::string all(data.size(), '\0');  // opens every column's object
  ASSERT_THAT(f->Read(0, absl::MakeSpan(all)), IsOk());
  auto drop_all = [&] {
    for (const std::string& o : objects) {
      if (!DropCached(o, kColumn)) return false;
    }
    return true;
  };
  if (!drop_all()) GTEST_SKIP() << "the page cache of " << root_ << " stays";
  // One ReadV of `ranges` (offset, size) of f; checks the bytes.
  auto read_v = [&](const std::vector<std::pair<uint64_t, size_t>>& ranges) {
    std::vector<std::string> bufs;
    std::vector<FileReadRange> v;
    bufs.reserve(ranges.size());
    for (const auto& [offset, size] : ranges) {
      bufs.emplace_back(size, '\0');
      v.push_back({f.get(), offset, absl::MakeSpan(bufs.back())});
    }
    std::vector<absl::StatusOr<size_t>> got = client->ReadV(v);
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_THAT(got[i], IsOk());
      EXPECT_TRUE(bufs[i] == data.substr(v[i].offset, bufs[i].size()))
          << v[i].offset;
    }
  };

  // Random: 4 KiB ranges of column 1 (units 1, 5, 9, 13), never adjacent
  // (even 4 KiB blocks only). A hint after any of them would reach
  // column 2, which no range reads.
  constexpr size_t kBlock = 4096;
  std::vector<uint64_t> blocks;
  for (uint64_t unit : {1, 5, 9, 13}) {
    for (uint64_t b = 0; b < kUnit / kBlock; b += 2) {
      blocks.push_back(unit * kUnit + b * kBlock);
    }
  }
  std::shuffle(blocks.begin(), blocks.end(), gen_);
  for (int call = 0; call < 4; ++call) {
    std::vector<std::pair<uint64_t, size_t>> ranges;
    for (int i = 0; i < 32; ++i)
      ranges.push_back({blocks[call * 32 + i], kBlock});
    read_v(ranges);
  }
  EXPECT_EQ(ResidentPages(objects[2], 0, kColumn), 0);

  // Sequential: units 0 and 1 (row 0 of columns 0 and 1) in 128 KiB
  // ranges, shuffled within each of two calls, as the kernel's readahead
  // requests come. The hints run ahead over row 0 of columns 2 and 3,
  // which no range reads.
  ASSERT_TRUE(drop_all());
  constexpr size_t kRequest = 128 << 10;
  for (uint64_t unit : {0, 1}) {
    std::vector<std::pair<uint64_t, size_t>> ranges;
    for (uint64_t at = 0; at < kUnit; at += kRequest) {
      ranges.push_back({unit * kUnit + at, kRequest});
    }
    std::shuffle(ranges.begin(), ranges.end(), gen_);
    read_v(ranges);
  }
  const int64_t unit_pages = kUnit / sysconf(_SC_PAGESIZE);
  for (int t : {2, 3}) {
    EXPECT_TRUE(Eventually([&] {
      return ResidentPages(objects[t], 0, kUnit) == unit_pages;
    })) << "column "
        << t << ": " << ResidentPages(objects[t], 0, kUnit) << " of "
        << unit_pages << " pages";
    // How far past the hinted range the kernel reads is its readahead's
    // choice (hint_ahead.cc): a hint at row 1 may meet the mark the first
    // window left there and start the next one.
  }
}

TEST_F(ClientMountTest, RingAndWorkerPathsAreByteExact) {
  const std::string data = ExtentFile("/f", 3 << 20, {0, 1});
  for (int mode = 0; mode < 16; ++mode) {
    ClientOptions o = Options();
    o.io_uring = mode & 1;
    o.o_direct = mode & 2;
    o.verify = (mode & 4) ? VerifyMode::kFull : VerifyMode::kOff;
    o.page_cache_reads = mode & 8;
    o.max_io_size = 64 << 10;
    Client* client = OpenClient(o);
    ASSERT_NE(client, nullptr);
    ExpectReadsBack(client, "/f", data, gen_);
    ClientStats s = client->Stats();
    SCOPED_TRACE(absl::StrCat("mode ", mode));
    EXPECT_GT(Sum(s, &NodeStats::mount_reads), 0u);
    // Without io_uring no thread holds the files open for the page-cache
    // path; O_DIRECT reads never take it. Verifying, it takes only pieces
    // of whole sidecar blocks (random ranges rarely are).
    const bool cached = o.page_cache_reads && o.io_uring && !o.o_direct;
    if (!cached) {
      EXPECT_EQ(Sum(s, &NodeStats::cached_reads), 0u);
    } else if (o.verify == VerifyMode::kOff) {
      EXPECT_GT(Sum(s, &NodeStats::cached_reads), 0u);
    }
    if (o.io_uring) {
      EXPECT_EQ(
          Sum(s, &NodeStats::uring_reads) + Sum(s, &NodeStats::cached_reads),
          Sum(s, &NodeStats::mount_reads));
    } else {
      EXPECT_EQ(Sum(s, &NodeStats::uring_reads), 0u);
    }
    // No read failed. (A read slowed past its stall delay on a loaded
    // machine is moved and counted as an error of its node: allowed.)
    EXPECT_EQ(Sum(s, &NodeStats::errors),
              Sum(s, &NodeStats::stalls) + Sum(s, &NodeStats::timeouts));
    EXPECT_EQ(s.checksum_failures, 0u);
  }
}

// ReadOptions::max_in_flight with pieces the calling thread copies itself
// from the page cache: each one it finishes makes room for the next, with
// no other thread to wake it (the call waited out its deadline once).
TEST_F(ClientMountTest, MaxInFlightWithPageCacheReadsFinishes) {
  const std::string data = ExtentFile("/f", 1 << 20, {0, 1});
  ClientOptions o = Options();
  o.io_uring = true;
  o.page_cache_reads = true;
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  ExpectReadsBack(client, "/f", data, gen_);  // warm: cached, files open
  auto f = client->OpenFile("/f");
  ASSERT_THAT(f, IsOk());
  std::vector<std::string> bufs(64, std::string(4096, 'x'));
  std::vector<ReadRange> ranges;
  for (int k = 0; k < 64; ++k) {
    ranges.push_back({.offset = static_cast<uint64_t>(k) * 16384,
                      .dst = absl::MakeSpan(bufs[k])});
  }
  const uint64_t cached_before = Sum(client->Stats(), &NodeStats::cached_reads);
  auto res =
      (*f)->ReadV(ranges, {.deadline = absl::Seconds(30), .max_in_flight = 2});
  for (int k = 0; k < 64; ++k) {
    ASSERT_THAT(res[k], IsOk()) << k;
    ASSERT_EQ(bufs[k], data.substr(k * 16384, 4096)) << k;
  }
  EXPECT_GT(Sum(client->Stats(), &NodeStats::cached_reads), cached_before);
}

TEST_F(ClientMountTest, FailedRingSetupFallsBackToWorkerThreads) {
  const std::string data = ExtentFile("/f", 1 << 20, {0, 1});
  ClientOptions o = Options();
  o.io_uring_depth = 1 << 20;  // io_uring_queue_init refuses (EINVAL)
  // A refused ring must not touch descriptors that are not its own: the
  // teardown of a ring that never was closes fd 0, which a later open then
  // reuses under another file's cached handle.
  if (fcntl(0, F_GETFD) < 0) {
    ASSERT_EQ(open("/dev/null", O_RDONLY), 0);  // the lowest free: fd 0
  }
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  ExpectReadsBack(client, "/f", data, gen_);
  clients_.clear();  // every ring attempt, client's and nodes', is over
  EXPECT_GE(fcntl(0, F_GETFD), 0) << "fd 0 was closed";
  client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  ExpectReadsBack(client, "/f", data, gen_);
  ClientStats s = client->Stats();
  EXPECT_GT(Sum(s, &NodeStats::mount_reads), 0u);
  EXPECT_EQ(Sum(s, &NodeStats::uring_reads), 0u);
}

TEST_F(ClientMountTest, HungRingReadBlocksOneSlotAndNoCallerBuffer) {
  // n0's replica of /hung is a FIFO: a read of it waits until we write.
  const std::string fifo = root_ + "/n0/hung";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  fifo_fd_ = open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // the client's open
  ASSERT_GE(fifo_fd_, 0);                              // won't block
  OneExtentFile("/hung", 4096, {{0, "hung"}});
  const std::string good = RandomBytes(4096);
  PutObject(Node(1), "good", good);
  OneExtentFile("/both", 4096, {{0, "hung"}, {1, "good"}});
  const std::string other = ExtentFile("/other", 1 << 20, {0});

  ClientOptions o = Options();
  o.hedging = false;
  o.attempt_timeout = absl::Seconds(2);
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  auto hung = client->OpenFile("/hung");
  ASSERT_THAT(hung, IsOk());
  std::string buf(4096, '\x5C');
  // Until n0's ring thread opened the FIFO (and so reads it).
  bool started = false;
  auto n = ReadUntilHung(
      **hung, absl::MakeSpan(buf),
      [&] {
        return FindNode(client->Stats(), "n0").uring_reads >= 1 &&
               FdsOn(fifo) == 2;
      },
      &started);
  ASSERT_TRUE(started) << FdsOn(fifo) << " descriptor(s) on the FIFO";
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kCancelled));

  // n0's ring still reads its other objects while one slot hangs.
  ExpectReadsBack(client, "/other", other, gen_);
  // A piece sent to the hung replica is retried on the other one.
  auto both = client->OpenFile("/both");
  ASSERT_THAT(both, IsOk());
  for (int i = 0; i < 3; ++i) {
    std::string got(4096, '\0');
    auto m = (*both)->Read(0, absl::MakeSpan(got));
    ASSERT_THAT(m, IsOk());
    EXPECT_EQ(*m, 4096u);
    EXPECT_TRUE(got == good);
  }

  // Release the hung read: its bytes must land in the ring's buffer only.
  std::string junk(1 << 16, 'j');
  ASSERT_GT(write(fifo_fd_, junk.data(), junk.size()), 0);
  EXPECT_TRUE(AwaitNoneInflight(client, "n0"));
  EXPECT_EQ(buf, std::string(4096, '\x5C'));
}

TEST_F(ClientMountTest, TeardownLeavesAHungRingReadWithItsFileOpen) {
  // n0's only replica of /hung is a FIFO: an io_uring read of it waits
  // until we write, like a read on a hung mount.
  const std::string fifo = root_ + "/n0/hung";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  fifo_fd_ = open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // the client's open
  ASSERT_GE(fifo_fd_, 0);                              // won't block
  OneExtentFile("/hung", 4096, {{0, "hung"}});
  const std::string other = ExtentFile("/other", 1 << 20, {0});
  const int threads_before = ThreadCount();
  ClientOptions o = Options();
  o.hedging = false;
  o.teardown_timeout = absl::Milliseconds(200);
  auto client = OpenClientForTesting(o, Hooks());
  ASSERT_THAT(client, IsOk());
  {
    auto hung = (*client)->OpenFile("/hung");
    ASSERT_THAT(hung, IsOk());
    std::string buf(4096, '\0');
    bool started = false;
    EXPECT_THAT(ReadUntilHung(
                    **hung, absl::MakeSpan(buf),
                    [&] {
                      return FindNode((*client)->Stats(), "n0").uring_reads >=
                                 1 &&
                             FdsOn(fifo) == 2;
                    },
                    &started),
                StatusIs(absl::StatusCode::kCancelled));
    ASSERT_TRUE(started) << FdsOn(fifo) << " descriptor(s) on the FIFO";
  }
  EXPECT_EQ(FdsOn(fifo), 2);  // ours and the hung read's
  const absl::Time t0 = absl::Now();
  client->reset();
  EXPECT_LT(absl::Now() - t0, kAtOnce) << "teardown_timeout 200 ms";
  // The ring thread, its ring, buffers and the file of its hung read are
  // left behind; the descriptor stays open, so no later client (below)
  // gets its number while the read may still land.
  EXPECT_GT(ThreadCount(), threads_before);
  EXPECT_EQ(FdsOn(fifo), 2);
  Client* next = OpenClient(Options());
  ExpectReadsBack(next, "/other", other, gen_);
  clients_.clear();
  // The read ends: the left thread frees the ring, closes the file, exits.
  std::string junk(1 << 16, 'j');
  ASSERT_GT(write(fifo_fd_, junk.data(), junk.size()), 0);
  EXPECT_TRUE(Eventually([&] { return FdsOn(fifo) == 1; }));
  EXPECT_TRUE(Eventually([&] { return ThreadCount() == threads_before; }))
      << ThreadCount() - threads_before << " thread(s) still running";
}

TEST_F(ClientMountTest, SmallReadsRunOnTheCallersRingAndLargeOnesDoNot) {
  const std::string data = ExtentFile("/f", 1 << 20, {0, 1});
  const std::string one = RandomBytes(1 << 20);
  PutObject(Node(2), "one", one);
  OneExtentFile("/one", one.size(), {{2, "one"}});
  ClientOptions o = Options();
  o.max_io_size = 256 << 10;
  o.page_cache_reads = false;  // the rings' paths, not the page cache's
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  // The first reads open the objects on the nodes' ring threads; the
  // small ranges of the ReadV then go on the caller's ring.
  ExpectReadsBack(client, "/f", data, gen_);
  EXPECT_GT(Sum(client->Stats(), &NodeStats::caller_reads), 0u);

  auto f = client->OpenFile("/one");
  ASSERT_THAT(f, IsOk());
  std::string got(4096, '\0');
  ASSERT_THAT((*f)->Read(0, absl::MakeSpan(got)), IsOk());  // opens "one"
  ClientStats s = client->Stats();
  // 256 KiB pieces go to the node's ring thread.
  std::string big(768 << 10, '\0');
  ASSERT_THAT((*f)->Read(4096, absl::MakeSpan(big)), IsOk());
  EXPECT_TRUE(big == one.substr(4096, big.size()));
  ClientStats s2 = client->Stats();
  EXPECT_EQ(FindNode(s2, "n2").caller_reads, FindNode(s, "n2").caller_reads);
  EXPECT_EQ(FindNode(s2, "n2").uring_reads, FindNode(s, "n2").uring_reads + 3);
  // A 4 KiB read: on the caller's ring.
  ASSERT_THAT((*f)->Read(8192, absl::MakeSpan(got)), IsOk());
  EXPECT_TRUE(got == one.substr(8192, got.size()));
  EXPECT_EQ(FindNode(client->Stats(), "n2").caller_reads,
            FindNode(s2, "n2").caller_reads + 1);
}

// Reads that end on the caller's ring are accounted (finished a reap at a
// time) as any other: each node's bytes, its latency samples (one a
// successful attempt), nothing left in flight.
TEST_F(ClientMountTest, CallerRingReadsAreAccountedLikeAnyOther) {
  const std::string data = ExtentFile("/f", 1 << 20, {0, 1, 2});
  ClientOptions o = Options();
  o.page_cache_reads = false;  // the rings' paths, not the page cache's
  o.hedging = false;           // one attempt a piece
  o.io_uring_depth = 512;      // the whole ReadV fits on the caller's ring
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  ExpectReadsBack(client, "/f", data, gen_);  // opens the objects
  const ClientStats before = client->Stats();
  auto f = client->OpenFile("/f");
  ASSERT_THAT(f, IsOk());
  constexpr int kRanges = 300;
  std::vector<std::string> bufs(kRanges, std::string(4096, '\0'));
  std::vector<ReadRange> ranges;
  for (std::string& b : bufs) {
    ranges.push_back({absl::Uniform<uint64_t>(gen_, 0, data.size() - b.size()),
                      absl::MakeSpan(b)});
  }
  const auto results = (*f)->ReadV(ranges);
  for (int i = 0; i < kRanges; ++i) {
    ASSERT_THAT(results[i], IsOk());
    ASSERT_TRUE(bufs[i] == data.substr(ranges[i].offset, 4096)) << i;
  }
  const ClientStats after = client->Stats();
  EXPECT_GT(Sum(after, &NodeStats::caller_reads),
            Sum(before, &NodeStats::caller_reads) + kRanges / 2);
  EXPECT_EQ(Sum(after, &NodeStats::bytes) - Sum(before, &NodeStats::bytes),
            uint64_t{kRanges} * 4096);
  uint64_t samples = 0;
  for (const NodeStats& n : after.nodes) {
    EXPECT_EQ(n.inflight, 0) << n.node;
    EXPECT_EQ(n.outstanding_bytes, 0) << n.node;
    EXPECT_EQ(n.errors, 0u) << n.node;
    EXPECT_TRUE(n.admissible) << n.node;
    samples += n.latency.count;
  }
  // Every attempt succeeded, each with its latency sample.
  EXPECT_EQ(samples, Sum(after, &NodeStats::requests));
}

TEST_F(ClientMountTest, CallersRingFollowsANodesNewMountPath) {
  const std::string before = OneObjectFile(2, 64 << 10);
  ClientOptions o = Options();
  o.page_cache_reads = false;  // the rings' paths, not the page cache's
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  auto f = client->OpenFile("/one");
  ASSERT_THAT(f, IsOk());
  std::string got(4096, '\0');
  // The first read opens the object (the node's ring thread), the next
  // ones run on the caller's ring, which keeps the node's mount path.
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT((*f)->Read(4096, absl::MakeSpan(got)), IsOk());
    ASSERT_TRUE(got == before.substr(4096, got.size()));
  }
  ASSERT_GT(FindNode(client->Stats(), "n2").caller_reads, 0u);

  // The node's record moves its mount to a directory where the object
  // holds other bytes: the caller's ring must read there from now on.
  char* real = realpath(root_.c_str(), nullptr);  // no "//" (TempDir's)
  ASSERT_NE(real, nullptr);
  const std::string moved = std::string(real) + "/n2-moved";
  free(real);
  ASSERT_EQ(mkdir(moved.c_str(), 0755), 0);
  const std::string after = RandomBytes(before.size());
  WriteFile(moved + "/one", after);
  auto n2 = store_->GetNode("n2");
  ASSERT_THAT(n2, IsOk());
  n2->record.set_mount_path(moved);
  ASSERT_THAT(store_->UpdateNode(n2->record, n2->mod_revision), IsOk());
  ASSERT_TRUE(Eventually([&] {
    return (*f)->Read(4096, absl::MakeSpan(got)).ok() &&
           got == after.substr(4096, got.size());
  })) << "reads stayed on the old mount path";
  const uint64_t caller = FindNode(client->Stats(), "n2").caller_reads;
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT((*f)->Read(8192, absl::MakeSpan(got)), IsOk());
    EXPECT_TRUE(got == after.substr(8192, got.size()));
  }
  EXPECT_GT(FindNode(client->Stats(), "n2").caller_reads, caller);
}

TEST_F(ClientMountTest, ReadThatWouldBlockLeavesTheCallersRing) {
  const std::string fifo = root_ + "/n0/hung";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  fifo_fd_ = open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(fifo_fd_, 0);
  OneExtentFile("/hung", 4096, {{0, "hung"}});
  ClientOptions o = Options();
  o.hedging = false;
  o.page_cache_reads = false;  // the caller's ring, not the page cache
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  auto hung = client->OpenFile("/hung");
  ASSERT_THAT(hung, IsOk());
  // A first read, fed at once, opens the FIFO on n0's ring thread.
  const std::string first = RandomBytes(4096);
  ASSERT_EQ(write(fifo_fd_, first.data(), first.size()), 4096);
  std::string got(4096, '\0');
  ASSERT_THAT((*hung)->Read(0, absl::MakeSpan(got)), IsOk());
  EXPECT_TRUE(got == first);
  EXPECT_EQ(FindNode(client->Stats(), "n0").caller_reads, 0u);

  // The second read starts on the caller's ring (RWF_NOWAIT), would block,
  // and moves to n0's ring thread, where it hangs: a calling thread never
  // owns a read that a hung mount holds.
  std::string buf(4096, '\x5C');
  // Until the node's ring thread started it (first, caller, node ring).
  bool started = false;
  auto n = ReadUntilHung(
      **hung, absl::MakeSpan(buf),
      [&] { return FindNode(client->Stats(), "n0").uring_reads >= 3; },
      &started);
  ASSERT_TRUE(started);
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kCancelled));
  ClientStats s = client->Stats();
  EXPECT_EQ(FindNode(s, "n0").caller_reads, 1u);
  // It was to land in `buf` itself: the move gave `buf` back to the piece.
  EXPECT_EQ(FindNode(s, "n0").in_place_reads, 1u);
  EXPECT_EQ(FindNode(s, "n0").uring_reads, 3u);  // first, caller, node ring
  EXPECT_EQ(FindNode(s, "n0").inflight, 1);

  // Released, the read ends in the ring's buffer, never in `buf`.
  std::string junk(4096, 'j');
  ASSERT_EQ(write(fifo_fd_, junk.data(), junk.size()), 4096);
  EXPECT_TRUE(AwaitNoneInflight(client, "n0"));
  EXPECT_EQ(buf, std::string(4096, '\x5C'));
  // The borrowed ring goes on serving small reads (of a regular file).
  const std::string good = RandomBytes(8192);
  PutObject(Node(1), "good", good);
  OneExtentFile("/good", good.size(), {{1, "good"}});
  auto g = client->OpenFile("/good");
  ASSERT_THAT(g, IsOk());
  ASSERT_THAT((*g)->Read(0, absl::MakeSpan(got)), IsOk());  // opens it
  ASSERT_THAT((*g)->Read(4096, absl::MakeSpan(got)), IsOk());
  EXPECT_TRUE(got == good.substr(4096));
  EXPECT_EQ(FindNode(client->Stats(), "n1").caller_reads, 1u);
}

// A small read on the caller's ring that is exactly its piece's bytes
// lands in the caller's buffer itself (ClientOptions::in_place_reads):
// buffered always, O_DIRECT only into an aligned buffer, never with the
// option off. The bytes are exact every way.
TEST_F(ClientMountTest, SmallReadsLandInPlace) {
  const std::string one = OneObjectFile(2, 256 << 10);
  constexpr int kRanges = 8;
  char* mem = static_cast<char*>(aligned_alloc(4096, (kRanges + 1) * 4096));
  ASSERT_NE(mem, nullptr);
  absl::Cleanup free_mem = [mem] { free(mem); };
  for (int mode = 0; mode < 4; ++mode) {
    const bool direct = mode & 1;
    const bool in_place = !(mode & 2);
    ClientOptions o = Options();
    o.o_direct = direct;
    o.in_place_reads = in_place;
    o.page_cache_reads = false;  // the caller's ring, not the page cache
    Client* client = OpenClient(o);
    std::unique_ptr<File> f = OpenWarm(client, "/one");
    ASSERT_NE(f, nullptr);
    for (size_t shift : {size_t{0}, size_t{513}}) {  // aligned, then not
      SCOPED_TRACE(absl::StrCat("direct ", direct, " in_place ", in_place,
                                " shift ", shift));
      const NodeStats before = FindNode(client->Stats(), "n2");
      memset(mem, 0, (kRanges + 1) * 4096);
      std::vector<ReadRange> ranges;
      for (int k = 0; k < kRanges; ++k) {
        ranges.push_back({.offset = static_cast<uint64_t>(3 * k + 1) * 4096,
                          .dst = absl::MakeSpan(mem + shift + k * 4096, 4096)});
      }
      auto res = f->ReadV(ranges);
      for (int k = 0; k < kRanges; ++k) {
        ASSERT_THAT(res[k], IsOk()) << k;
        EXPECT_EQ(
            memcmp(ranges[k].dst.data(), one.data() + ranges[k].offset, 4096),
            0)
            << k;
      }
      const NodeStats after = FindNode(client->Stats(), "n2");
      EXPECT_EQ(after.caller_reads, before.caller_reads + kRanges);
      const bool lands = in_place && (!direct || shift == 0);
      EXPECT_EQ(after.in_place_reads - before.in_place_reads,
                lands ? uint64_t{kRanges} : 0u);
      EXPECT_EQ(after.inflight, 0);
    }
  }
}

// Verifying, an in-place read of whole sidecar blocks is checked where it
// landed: a corrupt block is never returned as good.
TEST_F(ClientMountTest, CorruptInPlaceReadIsNeverReturned) {
  const std::string one = OneObjectFile(1, 64 << 10);
  {
    const std::string path = absl::StrCat(root_, "/n1/one");
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(3 * 4096 + 7);
    io.put(static_cast<char>(one[3 * 4096 + 7] ^ 1));
    ASSERT_TRUE(io.good());
  }
  ClientOptions o = Options();
  o.verify = VerifyMode::kFull;
  o.page_cache_reads = false;  // the caller's ring, not the page cache
  Client* client = OpenClient(o);
  std::unique_ptr<File> f = OpenWarm(client, "/one");  // loads the sidecar
  ASSERT_NE(f, nullptr);
  const NodeStats before = FindNode(client->Stats(), "n1");
  std::string good(4096, '\0'), bad(4096, '\0');
  ASSERT_THAT(f->Read(2 * 4096, absl::MakeSpan(good)), IsOk());
  EXPECT_TRUE(good == one.substr(2 * 4096, 4096));
  EXPECT_THAT(f->Read(3 * 4096, absl::MakeSpan(bad)),
              StatusIs(absl::StatusCode::kDataLoss));
  const NodeStats after = FindNode(client->Stats(), "n1");
  EXPECT_EQ(after.in_place_reads, before.in_place_reads + 2);
  EXPECT_EQ(after.checksum_failures, before.checksum_failures + 1);
  EXPECT_EQ(after.inflight, 0);
}

// Once a node's ring thread has opened an object, reads of its cached
// bytes are copied by the calling thread itself: whole pieces, verified
// against the sidecar, with no hand-off (uring_reads does not move).
TEST_F(ClientMountTest, CachedBytesAreCopiedByTheCallingThread) {
  const std::string one = OneObjectFile(2, 1 << 20);
  for (VerifyMode verify : {VerifyMode::kOff, VerifyMode::kFull}) {
    ClientOptions o = Options();
    o.verify = verify;
    o.max_io_size = 256 << 10;
    Client* client = OpenClient(o);
    std::unique_ptr<File> f = OpenWarm(client, "/one");
    ASSERT_NE(f, nullptr);
    const NodeStats before = FindNode(client->Stats(), "n2");
    EXPECT_EQ(before.cached_reads, 0u);
    std::string all(one.size(), '\0');
    ASSERT_THAT(f->Read(0, absl::MakeSpan(all)), IsOk());
    EXPECT_TRUE(all == one);
    const NodeStats after = FindNode(client->Stats(), "n2");
    EXPECT_EQ(after.cached_reads, before.cached_reads + 4);  // 4 pieces
    EXPECT_EQ(after.uring_reads, before.uring_reads);
    EXPECT_EQ(after.bytes, before.bytes + one.size());
    EXPECT_EQ(after.inflight, 0);
    EXPECT_EQ(client->Stats().retries, 0u);
  }
}

// The real clock, counting the monotonic reads of one thread (the test's:
// the engine's own threads read it too).
class CallerClockCounter : public Clock {
 public:
  absl::Time Now() override { return Clock::Real()->Now(); }
  absl::Time MonotonicNow() override {
    if (std::this_thread::get_id() == caller_) reads_.fetch_add(1);
    return Clock::Real()->MonotonicNow();
  }
  void SleepFor(absl::Duration d) override { Clock::Real()->SleepFor(d); }
  int reads() const { return reads_.load(); }

 private:
  const std::thread::id caller_ = std::this_thread::get_id();
  std::atomic<int> reads_{0};
};

// A ReadV of many small cached ranges (issue 34's random 4 KiB rows) is
// served by the calling thread as one run: each range's only per-range
// cost beyond its copy is its dispatch (one clock read: the attempt's
// start). The copies are counted together, with one clock read, not two
// a range (each range's start and end, and a lock of the health table
// each, as before).
TEST_F(ClientMountTest, CachedReadVRangesAreCountedTogether) {
  const Striped s = StripedFile();
  CallerClockCounter clock;
  ClientTestHooks hooks = Hooks();
  hooks.clock = &clock;
  auto c = OpenClientForTesting(Options(), hooks);
  ASSERT_THAT(c, IsOk());
  Client* client = c->get();
  std::unique_ptr<File> f = OpenWarm(client, "/striped");
  ASSERT_NE(f, nullptr);
  std::string all(s.data.size(), '\0');  // opens every column's object
  ASSERT_THAT(f->Read(0, absl::MakeSpan(all)), IsOk());
  ASSERT_TRUE(all == s.data);
  constexpr int kRanges = 32;
  std::vector<std::string> bufs(kRanges, std::string(4096, 'x'));
  std::vector<FileReadRange> ranges;
  for (int k = 0; k < kRanges; ++k) {
    const uint64_t off =
        absl::Uniform<uint64_t>(gen_, 0, s.data.size() / 4096) * 4096;
    ranges.push_back({f.get(), off, absl::MakeSpan(bufs[k])});
  }
  const ClientStats before = client->Stats();
  const int reads_before = clock.reads();
  auto res = client->ReadV(ranges, {});
  const int reads = clock.reads() - reads_before;
  const ClientStats after = client->Stats();
  for (int k = 0; k < kRanges; ++k) {
    ASSERT_THAT(res[k], IsOk()) << k;
    ASSERT_TRUE(bufs[k] == s.data.substr(ranges[k].offset, 4096)) << k;
  }
  // Every range from the page cache, each node's count right.
  EXPECT_EQ(Sum(after, &NodeStats::cached_reads) -
                Sum(before, &NodeStats::cached_reads),
            static_cast<uint64_t>(kRanges));
  EXPECT_EQ(Sum(after, &NodeStats::bytes) - Sum(before, &NodeStats::bytes),
            uint64_t{kRanges} * 4096);
  for (const NodeStats& n : after.nodes) EXPECT_EQ(n.inflight, 0) << n.node;
  // One a range (Dispatch) and a few for the call; 3 a range before.
  EXPECT_LE(reads, kRanges + 4);
}

// A Reader whose bytes come out of the page cache reads what it is asked
// for straight into the caller's buffer: no window read ahead in the
// background (a second copy, for nothing), one piece per MiB asked.
TEST_F(ClientMountTest, ReaderOverCachedBytesReadsNothingAhead) {
  const std::string one = OneObjectFile(2, 8 << 20);
  Client* client = OpenClient(Options());
  std::unique_ptr<File> f = OpenWarm(client, "/one");
  ASSERT_NE(f, nullptr);
  const uint64_t before = client->Stats().bytes;
  std::unique_ptr<Reader> reader = f->NewReader();
  std::string got;
  std::string buf(1 << 20, '\0');
  for (int i = 0; i < 4; ++i) {
    auto n = reader->Read(absl::MakeSpan(buf));
    ASSERT_THAT(n, IsOk());
    ASSERT_EQ(*n, buf.size());
    got.append(buf);
  }
  EXPECT_TRUE(got == one.substr(0, 4 << 20));
  EXPECT_EQ(client->Stats().bytes - before, uint64_t{4} << 20);
  EXPECT_GE(FindNode(client->Stats(), "n2").cached_reads, 4u);
}

// A piece copied out of the page cache still feeds the pieces that wait
// for its bytes (single flight), in the same call or another.
TEST_F(ClientMountTest, PageCachePieceFeedsItsSingleFlightFollowers) {
  const std::string one = OneObjectFile(2, 256 << 10);
  Client* client = OpenClient(Options());
  std::unique_ptr<File> f = OpenWarm(client, "/one");
  ASSERT_NE(f, nullptr);
  std::string a(one.size(), '\0'), b(one.size(), '\0');
  std::vector<ReadRange> ranges = {{0, absl::MakeSpan(a)},
                                   {0, absl::MakeSpan(b)}};
  const absl::Time t0 = absl::Now();
  auto results = f->ReadV(ranges);
  EXPECT_LT(absl::Now() - t0, kAtOnce);  // no wait for the 10 s deadline
  ASSERT_THAT(results[0], IsOk());
  ASSERT_THAT(results[1], IsOk());
  EXPECT_TRUE(a == one);
  EXPECT_TRUE(b == one);
  const ClientStats s = client->Stats();
  EXPECT_EQ(FindNode(s, "n2").cached_reads, 1u);
  EXPECT_EQ(s.shared_pieces, 1u);
}

// Small pieces skip single flight (its bookkeeping would cost more than
// the read it saves): two equal 4 KiB ranges are read twice.
TEST_F(ClientMountTest, SmallPiecesSkipSingleFlight) {
  const std::string one = OneObjectFile(2, 64 << 10);
  Client* client = OpenClient(Options());
  ASSERT_NE(client, nullptr);
  auto f = client->OpenFile("/one");
  ASSERT_THAT(f, IsOk());
  std::string a(4096, '\0'), b(4096, '\0');
  std::vector<ReadRange> ranges = {{8192, absl::MakeSpan(a)},
                                   {8192, absl::MakeSpan(b)}};
  auto results = (*f)->ReadV(ranges);
  ASSERT_THAT(results[0], IsOk());
  ASSERT_THAT(results[1], IsOk());
  EXPECT_TRUE(a == one.substr(8192, 4096));
  EXPECT_TRUE(b == a);
  const ClientStats s = client->Stats();
  EXPECT_EQ(s.shared_pieces, 0u);
  EXPECT_EQ(FindNode(s, "n2").requests, 2u);
}

// Verifying needs whole sidecar blocks: a piece that is not goes to the
// node's ring, which reads the blocks around it.
TEST_F(ClientMountTest, PieceNotWholeBlocksWhenVerifyingGoesToTheRing) {
  const std::string one = OneObjectFile(2, 64 << 10);
  ClientOptions o = Options();
  o.verify = VerifyMode::kFull;
  Client* client = OpenClient(o);
  std::unique_ptr<File> f = OpenWarm(client, "/one");
  ASSERT_NE(f, nullptr);
  std::string got(4096, '\0');
  ASSERT_THAT(f->Read(4096, absl::MakeSpan(got)), IsOk());
  EXPECT_TRUE(got == one.substr(4096, 4096));
  const NodeStats s = FindNode(client->Stats(), "n2");
  EXPECT_EQ(s.cached_reads, 1u);  // the block-aligned read
  std::string odd(100, '\0');
  ASSERT_THAT(f->Read(5000, absl::MakeSpan(odd)), IsOk());
  EXPECT_TRUE(odd == one.substr(5000, 100));
  const NodeStats s2 = FindNode(client->Stats(), "n2");
  EXPECT_EQ(s2.cached_reads, s.cached_reads);
  EXPECT_EQ(s2.mount_reads, s.mount_reads + 1);
}

// A corrupt cached block is never returned: the page-cache path leaves the
// piece to the usual path, which finds the mismatch (here, on the only
// replica: DATA_LOSS).
TEST_F(ClientMountTest, CorruptCachedBytesAreNeverReturned) {
  const std::string one = OneObjectFile(1, 256 << 10);
  ClientOptions o = Options();
  o.verify = VerifyMode::kFull;
  Client* client = OpenClient(o);
  std::unique_ptr<File> f = OpenWarm(client, "/one");
  ASSERT_NE(f, nullptr);
  std::string all(one.size(), '\0');
  ASSERT_THAT(f->Read(0, absl::MakeSpan(all)), IsOk());
  ASSERT_TRUE(all == one);
  const NodeStats before = FindNode(client->Stats(), "n1");
  ASSERT_GT(before.cached_reads, 0u);  // the page-cache path serves it
  // Flip a byte of the object in place (the open file sees it).
  {
    const std::string path = absl::StrCat(root_, "/n1/one");
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(1000);
    io.put(static_cast<char>(one[1000] ^ 1));
    ASSERT_TRUE(io.good());
  }
  EXPECT_THAT(f->Read(0, absl::MakeSpan(all)),
              StatusIs(absl::StatusCode::kDataLoss));
  const NodeStats after = FindNode(client->Stats(), "n1");
  EXPECT_EQ(after.cached_reads, before.cached_reads);
  EXPECT_GT(after.checksum_failures, before.checksum_failures);
  EXPECT_EQ(after.inflight, 0);
}

TEST_F(ClientMountTest, MountdStatusGatesMountReads) {
  const std::string data = ExtentFile("/f", 1 << 20, {0, 1});
  WriteStatus({0}, absl::Now());  // n0's mount unhealthy
  ClientOptions o = Options();
  o.mount_recheck_interval = absl::Milliseconds(20);
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 5; ++i) ExpectReadsBack(client, "/f", data, gen_);
  ClientStats s = client->Stats();
  EXPECT_EQ(FindNode(s, "n0").mount_reads, 0u);
  EXPECT_GT(FindNode(s, "n1").mount_reads, 0u);
  EXPECT_TRUE(FindNode(s, "n0").mount_reported_down);
  EXPECT_FALSE(FindNode(s, "n0").admissible);

  // Healthy again: reads reach n0 once the file is re-read.
  WriteStatus({}, absl::Now());
  EXPECT_TRUE(Eventually([&] {
    ExpectReadsBack(client, "/f", data, gen_);
    return FindNode(client->Stats(), "n0").mount_reads > 0;
  }));
  EXPECT_FALSE(FindNode(client->Stats(), "n0").mount_reported_down);

  // A stale file (mountd gone) is ignored.
  WriteStatus({1}, absl::Now() - absl::Hours(1));
  absl::SleepFor(absl::Milliseconds(30));  // past mount_recheck_interval
  ExpectReadsBack(client, "/f", data, gen_);
  EXPECT_FALSE(FindNode(client->Stats(), "n1").mount_reported_down);
}

TEST_F(ClientMountTest, MountdStatusSendsAutoReadsToTheAgent) {
  const std::string data = ExtentFile("/f", 256 << 10, {0});
  WriteStatus({0}, absl::Now());
  ClientOptions o = Options();
  o.data_path = DataPath::kAuto;
  o.mount_recheck_interval = absl::Milliseconds(20);
  o.default_deadline = absl::Seconds(2);
  Client* client = OpenClient(o);
  ASSERT_NE(client, nullptr);
  auto f = client->OpenFile("/f");
  ASSERT_THAT(f, IsOk());
  std::string buf(data.size(), '\0');
  // The only replica's mount is down and its agent does not listen.
  EXPECT_FALSE((*f)->Read(0, absl::MakeSpan(buf)).ok());
  ClientStats s = client->Stats();
  EXPECT_EQ(FindNode(s, "n0").mount_reads, 0u);
  EXPECT_GT(FindNode(s, "n0").agent_reads, 0u);

  WriteStatus({}, absl::Now());
  // Back to the mount once the status file is re-read (every 20 ms).
  ASSERT_TRUE(
      Eventually([&] { return (*f)->Read(0, absl::MakeSpan(buf)).ok(); }));
  EXPECT_TRUE(buf == data);
  EXPECT_GT(FindNode(client->Stats(), "n0").mount_reads, 0u);
}

}  // namespace
}  // namespace rangefs
