// read_bench: measures the rangefs client's mount data path on local object
// files, for comparison with fio on the same files (bench/read_bench.py
// runs both and prints ratios); with --nfs=URL, its `nfs` data path on the
// same files served by an NFS server (node i's export: URL/n<i>), for
// comparison with nfs-cat and tests/bench/nfs_async_read.
//
//   read_bench --dir=D --mode=prepare --nodes=4 --size_mb=256
//   read_bench --dir=D --mode=seq [--o_direct] [--chunk_mb=16]
//   read_bench --dir=D --mode=rand --bs=4096 --batch=32 --seconds=5
//
// The namespace is an in-process MemoryKv holding one file striped (1 MiB
// units) over <nodes> nodes whose "mounts" are D/n<i>, each holding one
// object D/n<i>/obj. Prints one line "result <mode> <bytes/s> <iops>".
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client_lib/client.h"
#include "client_lib/testing/client_testing.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"

ABSL_FLAG(std::string, dir, "/tmp/rangefs-bench", "Object directory.");
ABSL_FLAG(std::string, mode, "seq", "prepare | seq | rand");
ABSL_FLAG(int, nodes, 4, "Nodes (one object each).");
ABSL_FLAG(int, size_mb, 256, "Object size per node (MiB).");
ABSL_FLAG(bool, o_direct, false, "O_DIRECT on the mount path.");
ABSL_FLAG(int, chunk_mb, 16, "seq: bytes per File::Read call (MiB).");
ABSL_FLAG(int, passes, 2, "seq: passes over the file (best is printed).");
ABSL_FLAG(int, bs, 4096, "rand: read size.");
ABSL_FLAG(int, batch, 32, "rand: ranges per ReadV.");
ABSL_FLAG(int, threads, 1, "rand: caller threads.");
ABSL_FLAG(double, seconds, 5, "rand: run time.");
ABSL_FLAG(int, inflight_per_node, 8, "ClientOptions::max_inflight_per_node.");
ABSL_FLAG(int, max_io_kb, 1024, "ClientOptions::max_io_size (KiB).");
ABSL_FLAG(bool, single_flight, true, "ClientOptions::single_flight.");
ABSL_FLAG(std::string, nfs, "",
          "data_path=nfs: node i's export is <nfs>/n<i> (e.g. "
          "nfs://127.0.0.1:2049/srv/bench), NFSv4");
ABSL_FLAG(int, nfs_connections, 1, "ClientOptions::nfs_connections_per_node.");

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;

int Prepare(const std::string& dir, int nodes, uint64_t size) {
  mkdir(dir.c_str(), 0755);
  std::string buf(1 << 20, '\0');
  absl::BitGen gen;
  for (int i = 0; i < nodes; ++i) {
    const std::string d = absl::StrCat(dir, "/n", i);
    mkdir(d.c_str(), 0755);
    const std::string p = d + "/obj";
    int fd = open(p.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) {
      perror(p.c_str());
      return 1;
    }
    for (uint64_t off = 0; off < size; off += buf.size()) {
      for (size_t k = 0; k < buf.size(); k += 8) {
        uint64_t v = absl::Uniform<uint64_t>(gen);
        memcpy(&buf[k], &v, 8);
      }
      if (write(fd, buf.data(), buf.size()) !=
          static_cast<ssize_t>(buf.size())) {
        perror("write");
        return 1;
      }
    }
    fsync(fd);
    close(fd);
  }
  return 0;
}

int Run() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const uint64_t obj_size = uint64_t{1} << 20 << 0;
  const uint64_t size = static_cast<uint64_t>(absl::GetFlag(FLAGS_size_mb)) *
                        obj_size * static_cast<uint64_t>(nodes);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "prepare") {
    return Prepare(dir, nodes, size / static_cast<uint64_t>(nodes));
  }
  ns::MemoryKv kv;
  auto store = ns::NewKvStore(&kv);
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY);
  l.mutable_striped()->set_stripe_unit(1 << 20);
  for (int i = 0; i < nodes; ++i) {
    v1::NodeRecord r;
    r.set_id(absl::StrCat("n", i));
    r.add_addresses("127.0.0.1:1");
    r.set_export_path(absl::StrCat(dir, "/n", i));
    if (!store->AddNode(r).ok()) return 1;
    if (!absl::GetFlag(FLAGS_nfs).empty()) {
      v1::LiveRecord live;
      live.set_node_id(r.id());
      live.set_health(v1::LiveRecord::HEALTHY);
      live.mutable_nfs_export()->set_url(
          absl::StrCat(absl::GetFlag(FLAGS_nfs), "/n", i));
      live.mutable_nfs_export()->set_version("4");
      if (!store->PutLive(live, 0).ok()) return 1;
    }
    auto* rep = l.mutable_striped()->add_targets()->add_replicas();
    rep->set_node_id(r.id());
    rep->set_object("obj");
  }
  if (auto s = store->CreateFile("/bench", l); !s.ok()) {
    fprintf(stderr, "%s\n", s.status().ToString().c_str());
    return 1;
  }
  ClientOptions o;
  ClientTestHooks hooks;
  hooks.kv = &kv;
  o.mount_root = dir;
  o.data_path =
      absl::GetFlag(FLAGS_nfs).empty() ? DataPath::kMount : DataPath::kNfs;
  o.nfs_connections_per_node = absl::GetFlag(FLAGS_nfs_connections);
  o.o_direct = absl::GetFlag(FLAGS_o_direct);
  o.max_inflight_per_node = absl::GetFlag(FLAGS_inflight_per_node);
  o.max_io_size = static_cast<size_t>(absl::GetFlag(FLAGS_max_io_kb)) << 10;
  o.hedging = false;  // one local disk: hedges only add load
  o.single_flight = absl::GetFlag(FLAGS_single_flight);
  auto client = OpenClientForTesting(o, hooks);
  if (!client.ok()) {
    fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  auto file = (*client)->OpenFile("/bench");
  if (!file.ok()) return 1;
  File* f = file->get();

  if (mode == "seq") {
    const size_t chunk = static_cast<size_t>(absl::GetFlag(FLAGS_chunk_mb))
                         << 20;
    std::vector<char> buf(chunk);
    double best = 0;
    for (int pass = 0; pass < absl::GetFlag(FLAGS_passes); ++pass) {
      const absl::Time t0 = absl::Now();
      uint64_t total = 0;
      for (uint64_t off = 0; off < size; off += chunk) {
        auto n = f->Read(off, absl::MakeSpan(buf));
        if (!n.ok()) {
          fprintf(stderr, "%s\n", n.status().ToString().c_str());
          return 1;
        }
        total += *n;
      }
      best = std::max(best, total / absl::ToDoubleSeconds(absl::Now() - t0));
    }
    printf("result seq %.0f 0\n", best);
    return 0;
  }
  if (mode == "rand") {
    const int bs = absl::GetFlag(FLAGS_bs);
    const int batch = absl::GetFlag(FLAGS_batch);
    const int threads = absl::GetFlag(FLAGS_threads);
    const absl::Time end =
        absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_seconds));
    std::atomic<uint64_t> ios{0}, errors{0};
    std::vector<std::thread> ts;
    const absl::Time t0 = absl::Now();
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        absl::BitGen gen;
        std::vector<char> mem(static_cast<size_t>(bs) * batch);
        std::vector<ReadRange> ranges(batch);
        const uint64_t blocks = size / static_cast<uint64_t>(bs);
        while (absl::Now() < end) {
          for (int i = 0; i < batch; ++i) {
            ranges[i].offset = absl::Uniform<uint64_t>(gen, 0, blocks) *
                               static_cast<uint64_t>(bs);
            ranges[i].dst = absl::MakeSpan(&mem[static_cast<size_t>(i) * bs],
                                           static_cast<size_t>(bs));
          }
          auto r = f->ReadV(ranges);
          for (auto& x : r) {
            if (!x.ok() && errors.fetch_add(1) == 0) {
              fprintf(stderr, "first error: %s\n",
                      x.status().ToString().c_str());
            }
          }
          ios.fetch_add(static_cast<uint64_t>(batch));
        }
        (void)t;
      });
    }
    for (auto& t : ts) t.join();
    const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
    if (errors.load() > 0)
      fprintf(stderr, "%lu errors\n", (unsigned long)errors.load());
    printf("result rand %.0f %.0f\n", ios.load() * bs / secs,
           ios.load() / secs);
    return errors.load() == 0 ? 0 : 1;
  }
  fprintf(stderr, "unknown --mode=%s\n", mode.c_str());
  return 2;
}

}  // namespace
}  // namespace rangefs

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Debian's Abseil is a debug build: every absl::Mutex lock runs deadlock
  // detection (~5% of the CPU of small reads). Off, as in release builds.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return rangefs::Run();
}
