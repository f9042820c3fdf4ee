// namespace_bench: the namespace numbers of issue 3, against a real etcd
// started by the bench itself (Debian's etcd on 127.0.0.1, temp dir).
//
//   bazel run -c opt //namespace/bench:namespace_bench -- [--files=1000]
//       [--extents_per_file=1000]
//
// Prints: cached lookup latency p50/p99, cold lookup latency p50/p99, watch
// propagation p50/p99 (ReplaceLayout committed -> visible in another
// process-side cache), and for a namespace of files x extents_per_file
// extents: the client's RSS growth and warm-start time (open a cache and
// preload every layout). Targets: cached p50 < 2 us, propagation p99 <
// 100 ms, RSS < 200 MB, warm start < 3 s.
#include <stdio.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/layout_cache.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"

ABSL_FLAG(int, files, 1000, "files in the big namespace");
ABSL_FLAG(int, extents_per_file, 1000, "extents per file");
ABSL_FLAG(int, nodes, 8, "storage nodes referenced");

namespace {

using namespace rangefs;  // NOLINT: a benchmark main.

double Pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

long RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

v1::FileLayout Layout(int extents, int nodes, int salt) {
  v1::FileLayout l;
  l.set_state(v1::READY);
  const uint64_t len = 64 << 20;
  l.set_size(len * extents);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(1 << 20);
  for (int e = 0; e < extents; ++e) {
    v1::Extent* x = l.add_extents();
    x->set_offset(len * e);
    x->set_length(len);
    for (int r = 0; r < 2; ++r) {
      v1::Replica* rep = x->add_replicas();
      rep->set_node_id(absl::StrCat("n", (salt + e + r) % nodes));
      rep->set_object(absl::StrCat("f/", salt, "/e", e));
    }
  }
  return l;
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    fprintf(stderr, "namespace_bench: %s: %s\n", what, s.ToString().c_str());
    exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int files = absl::GetFlag(FLAGS_files);
  const int per_file = absl::GetFlag(FLAGS_extents_per_file);
  const int nodes = absl::GetFlag(FLAGS_nodes);

  auto etcd = testing::EtcdCluster::Start(
      {.members = 1, .extra_flags = {"--quota-backend-bytes=4294967296"}});
  Check(etcd.status(), "start etcd");
  auto client = etcd::EtcdClient::Open({.endpoints = (*etcd)->endpoints()});
  Check(client.status(), "etcd client");
  auto kv = ns::NewEtcdKv(client->get());
  auto store = ns::NewKvStore(kv.get(), {.cluster = "bench"});
  for (int n = 0; n < nodes; ++n) {
    v1::NodeRecord rec;
    rec.set_id(absl::StrCat("n", n));
    rec.add_addresses(absl::StrCat("127.0.0.1:", 7000 + n));
    rec.set_export_path("/srv/rangefs");
    Check(store->AddNode(rec), "add node");
  }

  // --- small files: lookups and propagation ---
  const int kSmall = 200;
  for (int i = 0; i < kSmall; ++i) {
    Check(store->CreateFile(absl::StrCat("/small/", i), Layout(4, nodes, i))
              .status(),
          "create small");
  }
  // The job side has its own etcd connection, as a separate process would.
  auto job_client = etcd::EtcdClient::Open({.endpoints = (*etcd)->endpoints()});
  Check(job_client.status(), "job client");
  auto job_kv = ns::NewEtcdKv(job_client->get());
  auto cache = ns::LayoutCache::Open(job_kv.get(), {.cluster = "bench"});
  Check(cache.status(), "cache");

  std::vector<double> cold_us;
  for (int i = 0; i < kSmall; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Check((*cache)->Lookup(absl::StrCat("/small/", i)).status(), "cold");
    cold_us.push_back(std::chrono::duration<double, std::micro>(
                          std::chrono::steady_clock::now() - t0)
                          .count());
  }
  std::vector<double> hit_us;
  hit_us.reserve(1000000);
  const std::string hot = "/small/7";
  for (int i = 0; i < 1000000; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto l = (*cache)->Lookup(hot);
    auto t1 = std::chrono::steady_clock::now();
    if (!l.ok()) Check(l.status(), "hit");
    hit_us.push_back(
        std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::vector<double> prop_ms;
  for (int i = 0; i < 200; ++i) {
    std::string path = absl::StrCat("/small/", i % kSmall);
    auto cur = store->GetFile(path);
    Check(cur.status(), "get");
    auto t0 = absl::Now();
    auto r = store->ReplaceLayout(path, Layout(4, nodes, i + 1000),
                                  cur->mod_revision);
    Check(r.status(), "replace");
    Check((*cache)->WaitForRevision(r->mod_revision, absl::Seconds(10)),
          "propagation");
    prop_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
  }

  // --- the big namespace ---
  const absl::Time load0 = absl::Now();
  const int kWriters = 8;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = w; i < files; i += kWriters) {
        Check(store
                  ->CreateFile(absl::StrCat("/big/", i),
                               Layout(per_file, nodes, i))
                  .status(),
              "create big");
      }
    });
  }
  for (auto& t : writers) t.join();
  const double load_s = absl::ToDoubleSeconds(absl::Now() - load0);

  // Warm start: a fresh client (own connection, own cache) loads it all.
  const long rss0 = RssKb();
  const absl::Time warm0 = absl::Now();
  auto warm_client =
      etcd::EtcdClient::Open({.endpoints = (*etcd)->endpoints()});
  Check(warm_client.status(), "warm client");
  auto warm_kv = ns::NewEtcdKv(warm_client->get());
  auto warm = ns::LayoutCache::Open(warm_kv.get(), {.cluster = "bench"});
  Check(warm.status(), "warm cache");
  auto loaded = (*warm)->Preload("/big");
  Check(loaded.status(), "preload");
  const double warm_s = absl::ToDoubleSeconds(absl::Now() - warm0);
  const long rss1 = RssKb();

  const double extents = static_cast<double>(files) * per_file;
  printf("namespace benchmark (real etcd on 127.0.0.1)\n");
  printf(
      "  cached lookup      p50 %.3f us  p99 %.3f us   (target p50 < 2 us)\n",
      Pct(hit_us, 0.5), Pct(hit_us, 0.99));
  printf("  cold lookup        p50 %.0f us  p99 %.0f us   (one etcd Range)\n",
         Pct(cold_us, 0.5), Pct(cold_us, 0.99));
  printf(
      "  watch propagation  p50 %.2f ms  p99 %.2f ms  (target p99 < 100 ms)\n",
      Pct(prop_ms, 0.5), Pct(prop_ms, 0.99));
  printf(
      "  namespace          %d files x %d extents = %.0f extents, written in "
      "%.1f s\n",
      files, per_file, extents, load_s);
  printf("  warm start         %.2f s to load %zu layouts   (target < 3 s)\n",
         warm_s, *loaded);
  printf(
      "  client RSS growth  %.1f MB for %.0f extents (%.0f B/extent)   "
      "(target < 200 MB)\n",
      (rss1 - rss0) / 1024.0, extents, (rss1 - rss0) * 1024.0 / extents);
  return 0;
}
