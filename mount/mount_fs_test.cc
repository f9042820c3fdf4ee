// MountFs without the kernel: MemoryKv as the namespace (watch callbacks
// run on the writing thread, so the index and the layout cache are current
// when a write returns), a real Client reading objects from files in a temp
// directory (the nodes' "mounts"; slowed by a FaultyFs where a test needs
// reads that wait).
#include "mount/mount_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "client_lib/fs.h"
#include "client_lib/testing/client_testing.h"
#include "client_lib/testing/fault_fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mount/read_batcher.h"
#include "namespace/keys.h"
#include "namespace/layout_cache.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"

namespace rangefs {
namespace mount {
namespace {

namespace v1 = ::rangefs::v1;
using ::testing::HasSubstr;

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

class MountFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mount_fs_testXXXXXX";
    root_ = mkdtemp(tmpl);
    ASSERT_EQ(mkdir((root_ + "/n0").c_str(), 0755), 0);
    store_ = ns::NewKvStore(&kv_);
    v1::NodeRecord r;
    r.set_id("n0");
    r.add_addresses("127.0.0.1:1");
    r.set_export_path("/export");
    ASSERT_THAT(store_->AddNode(r), IsOk());
  }

  void TearDown() override {
    fs_.reset();
    client_.reset();
    index_.reset();
    cache_.reset();
    ASSERT_EQ(system(absl::StrCat("rm -rf ", root_).c_str()), 0);
  }

  // Writes `data` as object `obj` on n0 and returns a one-extent layout.
  v1::FileLayout Put(const std::string& obj, const std::string& data) {
    const std::string p = absl::StrCat(root_, "/n0/", obj);
    int fd = open(p.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
    close(fd);
    v1::FileLayout l;
    l.set_size(data.size());
    l.set_state(v1::READY);
    v1::Extent* e = l.add_extents();
    e->set_length(data.size());
    e->set_has_crc32c(true);
    e->set_crc32c(Crc32c(data));
    v1::Replica* rep = e->add_replicas();
    rep->set_node_id("n0");
    rep->set_object(obj);
    return l;
  }

  void Start(int64_t revision = 0, bool io_uring = false) {
    auto cache = ns::LayoutCache::Open(&kv_, {});
    ASSERT_THAT(cache, IsOk());
    cache_ = *std::move(cache);
    NamespaceIndexOptions io;
    io.revision = revision;
    auto index = NamespaceIndex::Open(&kv_, cache_.get(), io,
                                      [this](absl::Span<const IndexChange> c) {
                                        if (fs_ != nullptr)
                                          fs_->OnIndexChanges(c);
                                      });
    ASSERT_THAT(index, IsOk());
    index_ = *std::move(index);
    ClientOptions co;
    co.mount_root = root_;
    co.data_path = DataPath::kMount;
    co.io_uring = io_uring;
    ClientTestHooks hooks;
    hooks.kv = &kv_;
    hooks.layout_cache = cache_.get();
    if (slow_disk_) {
      // Every object read waits 2 ms, as on a disk: the library's calling
      // thread waits (a voluntary context switch) whatever the machine's
      // load, where a read from memory may not.
      slow_disk_fs_.AddRule(
          {.action = FaultAction::kDelay, .delay = absl::Milliseconds(2)});
      hooks.fs = &slow_disk_fs_;
    }
    auto client = OpenClientForTesting(co, hooks);
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
    MountFsOptions fo;
    fo.revision = revision;
    fo.uid = 12;
    fo.gid = 34;
    fo.reader.initial_readahead = 4096;
    fo.load_policies = [this](int64_t revision) {
      return ns::LoadPolicies(kv_, ns::Keys(), revision);
    };
    fs_ = std::make_unique<MountFs>(
        client_.get(), index_.get(), cache_.get(), &counters_, fo,
        [this](std::vector<Notice> n) {
          notices_.insert(notices_.end(), n.begin(), n.end());
        });
  }

  // Reads [offset, offset + size) through `handle`.
  absl::StatusOr<std::string> Read(uint64_t handle, uint64_t offset,
                                   size_t size) {
    std::string out;
    absl::Status status;
    std::atomic<int> replies{0};
    absl::Notification done;
    fs_->Read(handle, offset, size,
              [&](const absl::Status& s, absl::Span<const char> b) {
                status = s;
                out.assign(b.data(), b.size());
                if (replies.fetch_add(1) == 0) done.Notify();
              });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_EQ(replies.load(), 1);
    if (!status.ok()) return status;
    return out;
  }

  std::string root_;
  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::unique_ptr<ns::LayoutCache> cache_;
  std::unique_ptr<NamespaceIndex> index_;
  std::unique_ptr<Client> client_;
  MountCounters counters_;
  std::vector<Notice> notices_;
  std::unique_ptr<MountFs> fs_;
  bool slow_disk_ = false;  // set before Start: objects read slowly
  std::unique_ptr<ReadOnlyFs> posix_fs_ = NewPosixFs();
  FaultyFs slow_disk_fs_{posix_fs_.get()};
};

TEST_F(MountFsTest, LookupGetattrReaddir) {
  ASSERT_THAT(store_->CreateFile("/d/f", Put("f", "hello")), IsOk());
  ASSERT_THAT(store_->CreateFile("/d/sub/g", Put("g", "x")), IsOk());
  Start();
  auto d = fs_->Lookup(kRootInode, "d");
  ASSERT_THAT(d, IsOk());
  EXPECT_TRUE(S_ISDIR(d->attr.st_mode));
  EXPECT_EQ(d->attr.st_mode & 0777, 0555u);
  auto f = fs_->Lookup(d->ino, "f");
  ASSERT_THAT(f, IsOk());
  EXPECT_TRUE(S_ISREG(f->attr.st_mode));
  EXPECT_EQ(f->attr.st_mode & 0777, 0444u);
  EXPECT_EQ(f->attr.st_size, 5);
  EXPECT_EQ(f->attr.st_uid, 12u);
  EXPECT_EQ(f->attr.st_gid, 34u);
  EXPECT_THAT(fs_->Lookup(d->ino, "nope"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(fs_->Lookup(f->ino, "x"), StatusIs(absl::StatusCode::kNotFound));
  auto st = fs_->GetAttr(f->ino);
  ASSERT_THAT(st, IsOk());
  EXPECT_EQ(st->st_ino, f->ino);

  auto dh = fs_->OpenDir(d->ino);
  ASSERT_THAT(dh, IsOk());
  std::vector<std::string> names;
  std::vector<uint64_t> inos;
  fs_->ReadDir(*dh, 0, true, [&](const DirItem& item, int64_t) {
    names.push_back(item.name);
    inos.push_back(item.ino);
    return true;
  });
  EXPECT_THAT(names, ::testing::ElementsAre(".", "..", "f", "sub"));
  EXPECT_EQ(inos[0], 0u);  // no reference for the dots
  EXPECT_EQ(inos[2], f->ino);
  // A full buffer after the first entry: the next call resumes there and
  // the entry that did not fit holds no reference.
  std::vector<std::string> first;
  fs_->ReadDir(*dh, 2, true, [&](const DirItem& item, int64_t next) {
    first.push_back(item.name);
    EXPECT_EQ(next, 3);
    return false;
  });
  EXPECT_THAT(first, ::testing::ElementsAre("f"));
  fs_->ReleaseDir(*dh);
  // f: one reference from lookup, one from readdirplus.
  fs_->Forget(f->ino, 2);
  EXPECT_THAT(fs_->GetAttr(f->ino), StatusIs(absl::StatusCode::kNotFound));
  struct statvfs v = fs_->StatFs();
  EXPECT_EQ(v.f_files, 2u);
  EXPECT_TRUE(v.f_flag & ST_RDONLY);
}

// df: the live nodes' capacity, not the files' bytes with nothing free.
TEST_F(MountFsTest, StatFsShowsTheLiveNodesCapacity) {
  for (const auto& [id, total, free] :
       std::vector<std::tuple<std::string, uint64_t, uint64_t>>{
           {"n0", 100ull << 30, 40ull << 30},
           {"n1", 50ull << 30, 10ull << 30}}) {
    v1::LiveRecord l;
    l.set_node_id(id);
    l.set_health(v1::LiveRecord::HEALTHY);
    l.set_total_bytes(total);
    l.set_free_bytes(free);
    ASSERT_THAT(store_->PutLive(l, 0), IsOk());
  }
  Start();
  struct statvfs v = fs_->StatFs();
  EXPECT_EQ(v.f_blocks * v.f_frsize, 150ull << 30);
  EXPECT_EQ(v.f_bfree * v.f_frsize, 50ull << 30);
  EXPECT_EQ(v.f_bavail, v.f_bfree);
}

TEST_F(MountFsTest, ReadsBytesSequentialAndRandom) {
  const std::string data = Pattern(300000, 1);
  ASSERT_THAT(store_->CreateFile("/f", Put("f", data)), IsOk());
  Start();
  auto f = fs_->Lookup(kRootInode, "f");
  ASSERT_THAT(f, IsOk());
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  EXPECT_FALSE(h->keep_cache);  // first open: nothing cached
  // Sequential 64 KiB requests, one at a time: the Reader serves them.
  std::string got;
  for (uint64_t off = 0; off < data.size(); off += 65536) {
    auto b = Read(h->handle, off, 65536);
    ASSERT_THAT(b, IsOk());
    got += *b;
  }
  EXPECT_EQ(got, data);
  EXPECT_GT(counters_.reader_reads.load(), 0u);
  auto b = Read(h->handle, 123457, 999);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(*b, data.substr(123457, 999));
  b = Read(h->handle, data.size(), 4096);  // at EOF
  ASSERT_THAT(b, IsOk());
  EXPECT_TRUE(b->empty());
  b = Read(h->handle, data.size() - 10, 4096);  // short only at EOF
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(*b, data.substr(data.size() - 10));
  EXPECT_EQ(fs_->open_handles(), 1u);
  fs_->Release(h->handle);
  EXPECT_EQ(fs_->open_handles(), 0u);
  // Reopen, same content: the page cache may be kept.
  auto h2 = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h2, IsOk());
  EXPECT_TRUE(h2->keep_cache);
  fs_->Release(h2->handle);
}

// A sequential stream of large requests (a direct_io mount read 1 MiB at a
// time) is read straight into the reply; small requests use the Reader.
TEST_F(MountFsTest, LargeSequentialRequestsSkipTheReader) {
  const std::string data = Pattern(3 << 20, 7);
  ASSERT_THAT(store_->CreateFile("/big", Put("big", data)), IsOk());
  Start();
  auto f = fs_->Lookup(kRootInode, "big");
  ASSERT_THAT(f, IsOk());
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  std::string got;
  for (uint64_t off = 0; off < data.size(); off += 1 << 20) {
    auto b = Read(h->handle, off, 1 << 20);
    ASSERT_THAT(b, IsOk());
    got += *b;
  }
  EXPECT_EQ(got, data);
  EXPECT_EQ(counters_.reader_reads.load(), 0u);
  // The same stream in 64 KiB requests goes through the Reader.
  got.clear();
  for (uint64_t off = 0; off < (1 << 20); off += 65536) {
    auto b = Read(h->handle, off, 65536);
    ASSERT_THAT(b, IsOk());
    got += *b;
  }
  EXPECT_EQ(got, data.substr(0, 1 << 20));
  EXPECT_GT(counters_.reader_reads.load(), 0u);
  fs_->Release(h->handle);
}
// Large sequential requests whose bytes the calling thread had to wait for
// (this fixture's client has no io_uring: every read is handed to a node
// worker, and each takes a disk's time) switch the stream to the Reader
// after two in a row, so that its prefetch reads ahead between requests.
TEST_F(MountFsTest, LargeSequentialRequestsThatWaitGoThroughTheReader) {
  const std::string data = Pattern(10 << 20, 9);
  ASSERT_THAT(store_->CreateFile("/cold", Put("cold", data)), IsOk());
  slow_disk_ = true;
  Start();
  auto f = fs_->Lookup(kRootInode, "cold");
  ASSERT_THAT(f, IsOk());
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  std::string got;
  for (uint64_t off = 0; off < data.size(); off += 1 << 20) {
    auto b = Read(h->handle, off, 1 << 20);
    ASSERT_THAT(b, IsOk());
    got += *b;
  }
  EXPECT_EQ(got, data);
  // Read 0 is not yet a stream; reads 1 and 2 wait, and the 7 after them
  // go through the Reader.
  EXPECT_EQ(counters_.reader_reads.load(), 7u);
  fs_->Release(h->handle);
}

// A cold request that continues the handle's stream is spliced (the kernel
// reads the object ahead as for a read(2) of it), also when it arrives
// before the worker that answered the one before has run again: the
// reader's next request comes as soon as the kernel has the reply, and a
// worker preempted right after writing it (a loaded machine) must not make
// the stream look concurrent. The next request here is handled on another
// thread from inside the reply.
TEST_F(MountFsTest, ColdRequestArrivingDuringTheLastReplyStillContinues) {
  const std::string data = Pattern(3 << 20, 5);
  ASSERT_THAT(store_->CreateFile("/s", Put("s", data)), IsOk());
  Start(0, /*io_uring=*/true);  // spliced spans need the library's ring
  auto f = fs_->Lookup(kRootInode, "s");
  ASSERT_THAT(f, IsOk());
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  // The first request is copied (and opens the object for later spans).
  ASSERT_THAT(Read(h->handle, 0, 1 << 20), IsOk());
  const int fd = open((root_ + "/n0/s").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);  // dirty pages are not dropped
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
  // What splicing needs of this machine (an io_uring ring that opened the
  // object): without it, nothing here can be checked.
  auto file = client_->OpenFile("/s");
  ASSERT_THAT(file, IsOk());
  auto local = (*file)->LocalSpans(1 << 20, 1 << 20);
  if (!local.ok()) GTEST_SKIP() << "no spliced reads here: " << local.status();
  bool next_spliced = false;
  ObjectSpan::Residency next_residency = ObjectSpan::Residency::kUnknown;
  const bool spliced = fs_->ReadSpliced(
      h->handle, 1 << 20, 1 << 20, [&](absl::Span<const ObjectSpan>) {
        std::thread next([&] {
          next_spliced = fs_->ReadSpliced(
              h->handle, 2 << 20, 1 << 20,
              [&](absl::Span<const ObjectSpan> spans) {
                next_residency =
                    spans.empty() ? next_residency : spans[0].residency;
                return absl::OkStatus();
              });
        });
        next.join();
        return absl::OkStatus();
      });
  EXPECT_TRUE(spliced);
  EXPECT_TRUE(next_spliced);
  if (next_spliced && next_residency != ObjectSpan::Residency::kNotCached) {
    GTEST_SKIP() << "the object's page cache could not be dropped here "
                    "(residency "
                 << static_cast<int>(next_residency) << ")";
  }
  EXPECT_EQ(counters_.spliced_reads.load(), 2u);
  fs_->Release(h->handle);
}

// direct_io=auto (the default): a large file's open is answered
// FOPEN_DIRECT_IO when the kernel lets such files be mmap()ed; a small one
// keeps the page cache (direct_io_mode.h).
TEST_F(MountFsTest, AutoOpensLargeFilesDirect) {
  const std::string big = Pattern(kAutoDirectIoMinBytes, 3);
  ASSERT_THAT(store_->CreateFile("/big", Put("big", big)), IsOk());
  ASSERT_THAT(store_->CreateFile("/small", Put("small", "abc")), IsOk());
  Start();
  auto b = fs_->Lookup(kRootInode, "big");
  auto s = fs_->Lookup(kRootInode, "small");
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(s, IsOk());
  struct Case {
    uint64_t ino;
    bool mmap_ok, direct;
  } cases[] = {
      {b->ino, true, true}, {b->ino, false, false}, {s->ino, true, false}};
  for (const Case& c : cases) {
    auto h = fs_->Open(c.ino, O_RDONLY, c.mmap_ok);
    ASSERT_THAT(h, IsOk());
    EXPECT_EQ(h->direct_io, c.direct) << c.ino << " mmap_ok " << c.mmap_ok;
    fs_->Release(h->handle);
  }
}

TEST_F(MountFsTest, WriteFlagsAreRefused) {
  ASSERT_THAT(store_->CreateFile("/f", Put("f", "abc")), IsOk());
  Start();
  auto f = fs_->Lookup(kRootInode, "f");
  ASSERT_THAT(f, IsOk());
  for (int flags : {O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC}) {
    EXPECT_THAT(fs_->Open(f->ino, flags),
                StatusIs(absl::StatusCode::kPermissionDenied));
  }
}

TEST_F(MountFsTest, ReplacedFileGivesStaleHandleNeverMixedBytes) {
  ASSERT_THAT(store_->CreateFile("/f", Put("f1", Pattern(8192, 1))), IsOk());
  Start();
  auto f = fs_->Lookup(kRootInode, "f");
  ASSERT_THAT(f, IsOk());
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  ASSERT_THAT(Read(h->handle, 0, 4096), IsOk());
  // Replicas moved (same bytes, same CRC): the handle keeps working.
  auto cur = store_->GetFile("/f");
  ASSERT_THAT(cur, IsOk());
  ASSERT_THAT(store_->ReplaceLayout("/f", Put("f1", Pattern(8192, 1)),
                                    cur->mod_revision),
              IsOk());
  auto same = Read(h->handle, 4096, 4096);
  ASSERT_THAT(same, IsOk());
  EXPECT_EQ(*same, Pattern(8192, 1).substr(4096));
  // Same size, other bytes: the old handle gets ESTALE (ABORTED).
  notices_.clear();
  cur = store_->GetFile("/f");
  ASSERT_THAT(cur, IsOk());
  ASSERT_THAT(store_->ReplaceLayout("/f", Put("f2", Pattern(8192, 2)),
                                    cur->mod_revision),
              IsOk());
  EXPECT_THAT(Read(h->handle, 0, 4096), StatusIs(absl::StatusCode::kAborted));
  EXPECT_GE(counters_.estale.load(), 1u);
  // The kernel is told to drop the inode's pages.
  ASSERT_FALSE(notices_.empty());
  EXPECT_EQ(notices_[0].kind, Notice::Kind::kInode);
  EXPECT_EQ(notices_[0].ino, f->ino);
  EXPECT_TRUE(notices_[0].pages);
  // A new open reads the new bytes and drops the page cache.
  auto h2 = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h2, IsOk());
  EXPECT_FALSE(h2->keep_cache);
  auto b = Read(h2->handle, 0, 8192);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(*b, Pattern(8192, 2));
  // Removed: ESTALE on the open handle, ENOENT for a lookup.
  ASSERT_THAT(store_->DeleteFile("/f", 0), IsOk());
  EXPECT_THAT(Read(h2->handle, 0, 10), StatusIs(absl::StatusCode::kAborted));
  EXPECT_THAT(fs_->Lookup(kRootInode, "f"),
              StatusIs(absl::StatusCode::kNotFound));
  fs_->Release(h->handle);
  fs_->Release(h2->handle);
}

TEST_F(MountFsTest, AFileThatIsAlsoADirectoryIsReadInsideIt) {
  // The store refuses the clash; an older version wrote it straight into
  // etcd.
  ASSERT_THAT(store_->CreateFile("/a", Put("a", "the file")), IsOk());
  etcdserverpb::TxnRequest txn;
  auto* p = txn.add_success()->mutable_request_put();
  p->set_key(ns::Keys().File("/a/b"));
  p->set_value(Put("b", "below").SerializeAsString());
  ASSERT_THAT(kv_.Txn(txn), IsOk());
  Start();
  auto a = fs_->Lookup(kRootInode, "a");
  ASSERT_THAT(a, IsOk());
  EXPECT_TRUE(S_ISDIR(a->attr.st_mode));
  auto b = fs_->Lookup(a->ino, "b");
  ASSERT_THAT(b, IsOk());
  auto f = fs_->Lookup(a->ino, ".rangefs-file");
  ASSERT_THAT(f, IsOk());
  EXPECT_TRUE(S_ISREG(f->attr.st_mode));
  EXPECT_EQ(f->attr.st_size, 8);
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  auto got = Read(h->handle, 0, 100);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, "the file");
  // Its xattrs are the file's (the layout of /a).
  auto id = fs_->GetXattr(f->ino, "user.rangefs.file_id");
  ASSERT_THAT(id, IsOk());
  EXPECT_EQ(*id, absl::StrCat(store_->GetFile("/a")->layout.file_id()));
  fs_->Release(h->handle);
}

TEST_F(MountFsTest, NamespaceChangesBecomeInvalidations) {
  ASSERT_THAT(store_->CreateFile("/d/a", Put("a", "a")), IsOk());
  Start();
  auto d = fs_->Lookup(kRootInode, "d");
  ASSERT_THAT(d, IsOk());
  notices_.clear();
  ASSERT_THAT(store_->CreateFile("/d/b", Put("b", "b")), IsOk());
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_EQ(notices_[0].kind, Notice::Kind::kEntry);
  EXPECT_EQ(notices_[0].ino, d->ino);
  EXPECT_EQ(notices_[0].name, "b");
  notices_.clear();
  // A new directory under the root (known): one entry notice for "e".
  ASSERT_THAT(store_->CreateFile("/e/f/g", Put("g", "g")), IsOk());
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_EQ(notices_[0].ino, kRootInode);
  EXPECT_EQ(notices_[0].name, "e");
  notices_.clear();
  // Nothing the kernel knows: nothing to invalidate.
  ASSERT_THAT(store_->CreateFile("/e/f/h", Put("h", "h")), IsOk());
  EXPECT_TRUE(notices_.empty());
}

TEST_F(MountFsTest, Xattrs) {
  ASSERT_THAT(store_->CreateFile("/f", Put("f", "abc")), IsOk());
  ASSERT_THAT(store_->CreateFile("/d/g", Put("g", "abc")), IsOk());
  Start();
  auto f = fs_->Lookup(kRootInode, "f");
  auto d = fs_->Lookup(kRootInode, "d");
  ASSERT_THAT(f, IsOk());
  ASSERT_THAT(d, IsOk());
  auto names = fs_->ListXattr(f->ino);
  ASSERT_THAT(names, IsOk());
  EXPECT_THAT(*names, HasSubstr("user.rangefs.generation"));
  auto g = fs_->GetXattr(f->ino, "user.rangefs.generation");
  ASSERT_THAT(g, IsOk());
  EXPECT_EQ(*g, "1");
  auto layout = fs_->GetXattr(f->ino, "user.rangefs.layout");
  ASSERT_THAT(layout, IsOk());
  EXPECT_THAT(*layout, HasSubstr("\"object\":\"f\""));
  EXPECT_THAT(fs_->GetXattr(f->ino, "user.nope"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(fs_->GetXattr(d->ino, "user.rangefs.layout"),
              StatusIs(absl::StatusCode::kNotFound));
  auto dn = fs_->ListXattr(d->ino);
  ASSERT_THAT(dn, IsOk());
  EXPECT_TRUE(dn->empty());
  // Storage policies: none, then /d's (its files have 1 replica, the
  // policy wants 2: pending) and the root's (met).
  EXPECT_EQ(*fs_->GetXattr(f->ino, "user.rangefs.policy"), "none");
  EXPECT_EQ(*fs_->GetXattr(f->ino, "user.rangefs.policy_state"), "none");
  ns::StoragePolicy p;
  p.dir = "/d";
  p.goal = ns::LayoutGoal::Replicas(2);
  ASSERT_THAT(ns::PutPolicy(kv_, ns::Keys(), p), IsOk());
  p.dir = "/";
  p.goal = ns::LayoutGoal::Replicas(1);
  ASSERT_THAT(ns::PutPolicy(kv_, ns::Keys(), p), IsOk());
  auto g_ino = fs_->Lookup(d->ino, "g");
  ASSERT_THAT(g_ino, IsOk());
  EXPECT_EQ(*fs_->GetXattr(g_ino->ino, "user.rangefs.policy"),
            "replicas=2 from /d");
  EXPECT_EQ(*fs_->GetXattr(g_ino->ino, "user.rangefs.policy_state"), "pending");
  EXPECT_EQ(*fs_->GetXattr(f->ino, "user.rangefs.policy"), "replicas=1 from /");
  EXPECT_EQ(*fs_->GetXattr(f->ino, "user.rangefs.policy_state"), "met");
  EXPECT_THAT(*fs_->ListXattr(f->ino), HasSubstr("user.rangefs.policy_state"));
}

TEST_F(MountFsTest, InvalidRecordIsListedButDoesNotOpen) {
  ns::Keys keys;
  etcdserverpb::TxnRequest txn;
  auto* p = txn.add_success()->mutable_request_put();
  p->set_key(keys.File("/bad"));
  p->set_value("not a layout");
  ASSERT_THAT(kv_.Txn(txn), IsOk());
  Start();
  auto f = fs_->Lookup(kRootInode, "bad");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->attr.st_size, 0);
  EXPECT_THAT(fs_->Open(f->ino, O_RDONLY),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("/bad")));
}

TEST_F(MountFsTest, PinnedRevisionReadsTheOldBytes) {
  ASSERT_THAT(store_->CreateFile("/f", Put("f1", Pattern(5000, 1))), IsOk());
  auto rev = store_->CurrentRevision();
  ASSERT_THAT(rev, IsOk());
  auto cur = store_->GetFile("/f");
  ASSERT_THAT(cur, IsOk());
  ASSERT_THAT(store_->ReplaceLayout("/f", Put("f2", Pattern(6000, 2)),
                                    cur->mod_revision),
              IsOk());
  Start(*rev);
  auto f = fs_->Lookup(kRootInode, "f");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->attr.st_size, 5000);
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  auto b = Read(h->handle, 0, 8192);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(*b, Pattern(5000, 1));
  auto gen = fs_->GetXattr(f->ino, "user.rangefs.generation");
  ASSERT_THAT(gen, IsOk());
  EXPECT_EQ(*gen, "1");
  fs_->Release(h->handle);
}

TEST_F(MountFsTest, PinnedMountOpensFromItsDatasetAfterCompaction) {
  ASSERT_THAT(store_->CreateFile("/f", Put("f1", Pattern(5000, 1))), IsOk());
  ASSERT_THAT(store_->CreateFile("/g", Put("g1", Pattern(3000, 3))), IsOk());
  auto rev = store_->CurrentRevision();
  ASSERT_THAT(rev, IsOk());
  Start(*rev);
  auto f = fs_->Lookup(kRootInode, "f");
  ASSERT_THAT(f, IsOk());
  auto hf = fs_->Open(f->ino, O_RDONLY);  // reads the dataset
  ASSERT_THAT(hf, IsOk());
  fs_->Release(hf->handle);
  // etcd forgets revision `rev`; the mount's opens do not need it.
  ASSERT_THAT(store_->DeleteFile("/g", 0), IsOk());
  auto now = store_->CurrentRevision();
  ASSERT_THAT(now, IsOk());
  ASSERT_THAT(kv_.Compact(*now), IsOk());
  auto g = fs_->Lookup(kRootInode, "g");
  ASSERT_THAT(g, IsOk());
  auto hg = fs_->Open(g->ino, O_RDONLY);
  ASSERT_THAT(hg, IsOk());
  auto b = Read(hg->handle, 0, 8192);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(*b, Pattern(3000, 3));
  fs_->Release(hg->handle);
}

TEST_F(MountFsTest, ConcurrentSmallReadsAreRightAndBatched) {
  const std::string data = Pattern(1 << 20, 5);
  ASSERT_THAT(store_->CreateFile("/f", Put("f", data)), IsOk());
  Start();
  auto f = fs_->Lookup(kRootInode, "f");
  ASSERT_THAT(f, IsOk());
  auto h = fs_->Open(f->ino, O_RDONLY);
  ASSERT_THAT(h, IsOk());
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const uint64_t off = (static_cast<uint64_t>(t) * 7919 + i * 104729) %
                             (data.size() - 4096);
        auto b = Read(h->handle, off, 4096);
        if (!b.ok()) {
          errors.fetch_add(1);
        } else if (*b != data.substr(off, 4096)) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  fs_->Release(h->handle);
}

TEST_F(MountFsTest, ReadBatcherGroupsWhatArrivesWhileABatchRuns) {
  const std::string data = Pattern(65536, 6);
  ASSERT_THAT(store_->CreateFile("/f", Put("f", data)), IsOk());
  Start();
  auto file = client_->OpenFile("/f");
  ASSERT_THAT(file, IsOk());
  ReadBatcher b(client_.get(), {.max_batch = 32, .max_leaders = 1});
  absl::Notification in_first, release_first;
  std::atomic<int> done{0}, wrong{0};
  // The first request's completion blocks its leader thread: the next five
  // queue up meanwhile and run as one batch afterwards.
  std::thread leader([&] {
    b.Submit(
        {file->get(), 0, 100, [&](absl::StatusOr<size_t> n, const char* bytes) {
           if (!n.ok() || std::string(bytes, *n) != data.substr(0, 100)) {
             wrong.fetch_add(1);
           }
           in_first.Notify();
           release_first.WaitForNotification();
           done.fetch_add(1);
         }});
  });
  in_first.WaitForNotification();
  for (int i = 1; i <= 5; ++i) {
    const uint64_t off = static_cast<uint64_t>(i) * 1000;
    b.Submit({file->get(), off, 10,
              [&, off](absl::StatusOr<size_t> n, const char* bytes) {
                if (!n.ok() || std::string(bytes, *n) != data.substr(off, 10)) {
                  wrong.fetch_add(1);
                }
                done.fetch_add(1);
              }});
  }
  EXPECT_EQ(done.load(), 0);  // all queued behind the blocked leader
  release_first.Notify();
  leader.join();
  EXPECT_EQ(done.load(), 6);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(b.requests(), 6u);
  EXPECT_EQ(b.batches(), 2u);
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
