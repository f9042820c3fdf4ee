// namespace_bench: the namespace numbers of issue 3, against a real etcd
// started by the bench itself (Debian's etcd on 127.0.0.1, temp dir).
//
//   bazel run -c opt //namespace/bench:namespace_bench -- [--files=1000]
//       [--extents_per_file=1000]
//
// Prints: cached lookup latency p50/p99 of one hot path on one thread,
// cold lookup latency p50/p99, watch propagation p50/p99 (ReplaceLayout
// committed -> visible in another process-side cache), and for a namespace
// of files x extents_per_file extents (realistic names: nested dataset
// paths, 16-hex-digit object prefixes as the ingest writer makes them):
// in a fresh child process (nothing freed before, no writer threads), the
// RSS growth of a cache that preloads every layout, the warm-start time,
// and random lookups on --lookup_threads threads for --lookup_seconds: a
// random file's layout and the pieces of a 4 KiB read at a random offset
// in it, as a read resolves it (LayoutCache::Lookup + MapRange over the
// CachedLayout, parsing only the extent touched; latency p50/p99 per
// lookup, RSS after, when every layout has been decoded once). Targets:
// random lookup p50 < 2 us on 2 threads, propagation p99 < 100 ms, RSS <
// 200 MB, warm start < 3 s.
//
// Record sizes (issue 20): bytes per file record (etcd key + encoded
// layout) for a small file (one extent, 2 replicas), a 1 GiB file striped
// over 8 columns and a 1 TiB file striped over 64 columns (2 replicas
// each, ingest's object names), the growth of etcd's backend in use per
// record (--record_sample records of each kind written, dbSizeInUse
// before/after, one revision each), and how many such files fit in etcd's
// default (2 GiB) and maximum (8 GiB) backend quota. Open rates of a
// client (cold / listed / dataset) are client_lib/bench/open_bench.cc.
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "namespace/cached_layout.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/keys.h"
#include "namespace/layout_cache.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"

ABSL_FLAG(int, files, 1000, "files in the big namespace");
ABSL_FLAG(int, extents_per_file, 1000, "extents per file");
ABSL_FLAG(int, nodes, 8, "storage nodes referenced");
ABSL_FLAG(int, lookup_threads, 2, "threads of the random-lookup run");
ABSL_FLAG(double, lookup_seconds, 3, "length of the random-lookup run");
ABSL_FLAG(std::string, child_etcd, "",
          "internal: run as the fresh child process against this etcd");
ABSL_FLAG(int, record_sample, 20000,
          "records of each kind written to measure etcd bytes per record");
ABSL_FLAG(bool, records_only, false, "only the record-size rows");

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

// The path of big-namespace file `i`: nested like a dataset's shards.
std::string BigPath(int i) {
  return absl::StrFormat("/big/crawl-2026-11/shard-%03d/part-%05d.parquet",
                         i / 100, i);
}

// The layout of a file of `extents` 64 MiB extents, 2 replicas each, with
// object names as the ingest writer makes them (f/<16 hex digits>/e<k>)
// and node ids as a fleet's ("storage-017").
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
      rep->set_node_id(absl::StrFormat("storage-%03d", (salt + e + r) % nodes));
      rep->set_object(absl::StrFormat(
          "f/%016x/e%d", static_cast<uint64_t>(salt) * 0x9E3779B97F4A7C15ull,
          e));
    }
  }
  return l;
}

// A striped layout over `width` columns, 2 replicas each (ingest's form).
v1::FileLayout Striped(uint64_t size, int width, int nodes, int salt) {
  v1::FileLayout l;
  l.set_file_id(1000000 + salt);
  l.set_generation(1);
  l.set_state(v1::READY);
  l.set_size(size);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(1 << 20);
  l.set_created_unix_ms(1700000000000);
  l.set_modified_unix_ms(1700000000000);
  v1::StripedLayout* s = l.mutable_striped();
  s->set_stripe_unit(1 << 20);
  for (int t = 0; t < width; ++t) {
    v1::StripedLayout::Target* x = s->add_targets();
    for (int r = 0; r < 2; ++r) {
      v1::Replica* rep = x->add_replicas();
      rep->set_node_id(absl::StrCat("n", (t + r) % nodes));
      rep->set_object(
          absl::StrCat("f/", 0x1234567890abcdefULL + salt, "/c", t));
    }
  }
  return l;
}

// A small file: one extent of 64 KiB, 2 replicas.
v1::FileLayout Small(int nodes, int salt) {
  v1::FileLayout l;
  l.set_file_id(1000000 + salt);
  l.set_generation(1);
  l.set_state(v1::READY);
  l.set_size(64 << 10);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(1 << 20);
  l.set_created_unix_ms(1700000000000);
  l.set_modified_unix_ms(1700000000000);
  v1::Extent* x = l.add_extents();
  x->set_offset(0);
  x->set_length(64 << 10);
  x->set_crc32c(0x9e3779b9u);
  for (int r = 0; r < 2; ++r) {
    v1::Replica* rep = x->add_replicas();
    rep->set_node_id(absl::StrCat("n", (salt + r) % nodes));
    rep->set_object(absl::StrCat("f/", 0x1234567890abcdefULL + salt, "/e0"));
  }
  return l;
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    fprintf(stderr, "namespace_bench: %s: %s\n", what, s.ToString().c_str());
    exit(1);
  }
}

// The fresh child process: RSS before and after a cache preloads the big
// namespace, then random lookups on `threads` threads. Prints one line:
// "rss0_kb rss1_kb rss2_kb warm_s loaded lookups p50_us p99_us parses
// rss3_kb" (rss3: after malloc_trim, i.e. without the free memory the
// allocator kept from the listing's transient buffers).
int RunChild(const std::string& endpoints, int files) {
  std::vector<std::string> paths;
  for (int i = 0; i < files; ++i) paths.push_back(BigPath(i));
  const long rss0 = RssKb();
  const absl::Time warm0 = absl::Now();
  auto client = etcd::EtcdClient::Open({.endpoints = endpoints});
  Check(client.status(), "child etcd client");
  auto kv = ns::NewEtcdKv(client->get());
  auto cache = ns::LayoutCache::Open(kv.get(), {.cluster = "bench"});
  Check(cache.status(), "child cache");
  auto loaded = (*cache)->Preload("/big");
  Check(loaded.status(), "preload");
  const double warm_s = absl::ToDoubleSeconds(absl::Now() - warm0);
  const long rss1 = RssKb();

  const int threads = std::max(1, absl::GetFlag(FLAGS_lookup_threads));
  const auto run_for = std::chrono::duration<double>(
      std::max(0.1, absl::GetFlag(FLAGS_lookup_seconds)));
  // Latencies in 10 ns bins up to 1 ms (a fixed 800 KB per thread, so that
  // the RSS after the run is the cache's, not the samples'); slower ones
  // (at most one per ms) kept as they are.
  constexpr size_t kBins = 100000;
  std::vector<std::vector<uint64_t>> lat(threads, std::vector<uint64_t>(kBins));
  std::vector<std::vector<double>> slow(threads);
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(77 + t);
      std::vector<uint64_t>& mine = lat[t];
      const auto end = std::chrono::steady_clock::now() + run_for;
      for (auto now = std::chrono::steady_clock::now(); now < end;) {
        const std::string& path = paths[rng() % paths.size()];
        const uint64_t want = rng();
        auto l = (*cache)->Lookup(path);
        if (!l.ok()) {
          failed = true;
          return;
        }
        // The extent holding a random offset, as a read resolves it: the
        // pieces of a 4 KiB read there (ClientImpl::PlanCall).
        const uint64_t off = want % std::max<uint64_t>(1, (*l)->header.size());
        absl::StatusOr<ns::MappedRange> m =
            ns::MapRange(**l, off, 4096, 1 << 20);
        if (!m.ok() || m->pieces.empty() || m->pieces[0].offset != off ||
            m->pieces[0].replicas->empty()) {
          failed = true;
          return;
        }
        const auto done = std::chrono::steady_clock::now();
        const auto ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(done - now)
                .count();
        if (ns / 10 < static_cast<int64_t>(kBins)) {
          ++mine[ns / 10];
        } else {
          slow[t].push_back(ns / 1e3);
        }
        now = done;
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failed) {
    fprintf(stderr, "namespace_bench: a random lookup failed\n");
    return 1;
  }
  const long rss2 = RssKb();
  malloc_trim(0);
  const long rss3 = RssKb();
  std::vector<uint64_t> all(kBins);
  std::vector<double> all_slow;
  uint64_t n = 0;
  for (int t = 0; t < threads; ++t) {
    for (size_t i = 0; i < kBins; ++i) all[i] += lat[t][i];
    all_slow.insert(all_slow.end(), slow[t].begin(), slow[t].end());
  }
  for (uint64_t c : all) n += c;
  n += all_slow.size();
  std::sort(all_slow.begin(), all_slow.end());
  // The q-quantile in us (the upper edge of its 10 ns bin below 1 ms).
  auto quantile = [&](double q) {
    if (n == 0) return 0.0;
    const uint64_t rank = static_cast<uint64_t>(q * (n - 1));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBins; ++i) {
      seen += all[i];
      if (seen > rank) return (i + 1) * 0.01;
    }
    return all_slow[rank - seen];
  };
  printf("%ld %ld %ld %.3f %zu %llu %.3f %.3f %llu %ld\n", rss0, rss1, rss2,
         warm_s, *loaded, static_cast<unsigned long long>(n), quantile(0.5),
         quantile(0.99),
         static_cast<unsigned long long>((*cache)->stats().parses), rss3);
  return 0;
}

}  // namespace

// Writes `n` records of `make(i)` at `dir`/part-%06d (128 puts per
// transaction) and returns etcd's backend growth in use per record.
template <typename Make>
double EtcdBytesPerRecord(etcd::EtcdClient& c, const ns::Keys& keys,
                          const std::string& dir, int n, Make make) {
  auto before = c.Status();
  Check(before.status(), "etcd status");
  for (int i = 0; i < n;) {
    etcdserverpb::TxnRequest txn;
    for (int k = 0; k < 128 && i < n; ++k, ++i) {
      etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(keys.File(absl::StrFormat("%s/part-%06d", dir, i)));
      put->set_value(make(i).SerializeAsString());
    }
    Check(c.Txn(txn).status(), "bulk put");
  }
  auto after = c.Status();
  Check(after.status(), "etcd status");
  return static_cast<double>(after->dbsizeinuse() - before->dbsizeinuse()) / n;
}

void RecordRows(etcd::EtcdClient& c, int nodes, int sample) {
  const ns::Keys keys("bench");
  struct Kind {
    const char* name;
    const char* dir;
    std::function<v1::FileLayout(int)> make;
  };
  const uint64_t kGiB = uint64_t{1} << 30;
  const Kind kinds[] = {
      {"small file (1 extent)", "/rec/small",
       [&](int i) { return Small(nodes, i); }},
      {"1 GiB striped x8", "/rec/gib",
       [&](int i) { return Striped(kGiB, 8, nodes, i); }},
      {"1 TiB striped x64", "/rec/tib",
       [&](int i) { return Striped(1024 * kGiB, 64, nodes, i); }},
  };
  printf(
      "file records in etcd (%d of each written; key /rangefs/v1/bench/"
      "files/rec/<kind>/part-NNNNNN)\n",
      sample);
  printf("  %-24s %8s %8s %14s %16s %16s\n", "kind", "key B", "value B",
         "etcd B/record", "fit in 2 GiB", "fit in 8 GiB");
  for (const Kind& k : kinds) {
    const std::string key = keys.File(absl::StrCat(k.dir, "/part-000000"));
    const size_t value = k.make(0).ByteSizeLong();
    const double in_use = EtcdBytesPerRecord(c, keys, k.dir, sample, k.make);
    printf("  %-24s %8zu %8zu %14.0f %16.0f %16.0f\n", k.name, key.size(),
           value, in_use, 2.0 * kGiB / in_use, 8.0 * kGiB / in_use);
  }
  printf(
      "  (etcd keeps every revision of a key until compaction; a "
      "re-put file costs a record again until then)\n");
}

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int files = absl::GetFlag(FLAGS_files);
  if (!absl::GetFlag(FLAGS_child_etcd).empty()) {
    return RunChild(absl::GetFlag(FLAGS_child_etcd), files);
  }
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
    rec.set_id(absl::StrFormat("storage-%03d", n));
    rec.add_addresses(absl::StrCat("127.0.0.1:", 7000 + n));
    rec.set_export_path("/srv/rangefs");
    Check(store->AddNode(rec), "add node");
  }

  RecordRows(**client, nodes, absl::GetFlag(FLAGS_record_sample));
  if (absl::GetFlag(FLAGS_records_only)) return 0;

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
        Check(
            store->CreateFile(BigPath(i), Layout(per_file, nodes, i)).status(),
            "create big");
      }
    });
  }
  for (auto& t : writers) t.join();
  const double load_s = absl::ToDoubleSeconds(absl::Now() - load0);

  // Warm start, RSS and random lookups in a fresh process (this one has
  // just freed the writers' memory, which would hide the cache's growth).
  const std::string cmd = absl::StrCat(
      "/proc/", getpid(), "/exe --child_etcd=", (*etcd)->endpoints(),
      " --files=", files,
      " --lookup_threads=", absl::GetFlag(FLAGS_lookup_threads),
      " --lookup_seconds=", absl::GetFlag(FLAGS_lookup_seconds));
  FILE* child = popen(cmd.c_str(), "r");
  long rss0 = 0, rss1 = 0, rss2 = 0, rss3 = 0;
  double warm_s = 0, rand_p50 = 0, rand_p99 = 0;
  size_t loaded = 0;
  unsigned long long lookups = 0, parses = 0;
  const int got =
      child == nullptr
          ? 0
          : fscanf(child, "%ld %ld %ld %lf %zu %llu %lf %lf %llu %ld", &rss0,
                   &rss1, &rss2, &warm_s, &loaded, &lookups, &rand_p50,
                   &rand_p99, &parses, &rss3);
  const int child_rc = child == nullptr ? -1 : pclose(child);
  if (got != 10 || child_rc != 0) {
    fprintf(stderr, "namespace_bench: the child process failed (%s)\n",
            cmd.c_str());
    return 1;
  }

  const double extents = static_cast<double>(files) * per_file;
  printf("namespace benchmark (real etcd on 127.0.0.1)\n");
  printf(
      "  cached lookup      p50 %.3f us  p99 %.3f us   (one hot path, one "
      "thread)\n",
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
         warm_s, loaded);
  printf(
      "  random lookups     p50 %.3f us  p99 %.3f us  (%d threads, %llu "
      "lookups, %llu layouts decoded; target p50 < 2 us)\n",
      rand_p50, rand_p99, absl::GetFlag(FLAGS_lookup_threads), lookups, parses);
  printf(
      "  client RSS growth  %.1f MB for %.0f extents (%.0f B/extent), fresh "
      "process   (target < 200 MB)\n",
      (rss1 - rss0) / 1024.0, extents, (rss1 - rss0) * 1024.0 / extents);
  printf(
      "  after the lookups  %.1f MB over the start (decoded layouts: header "
      "+ extent index)\n",
      (rss2 - rss0) / 1024.0);
  printf(
      "  after malloc_trim  %.1f MB over the start (what the cache holds; the "
      "rest was free memory kept by the allocator)\n",
      (rss3 - rss0) / 1024.0);
  return 0;
}
