// open_bench: how fast a job opens every file of a big directory (issue
// 20), through the client library against a real etcd that the bench
// starts itself (Debian's etcd on 127.0.0.1, temp dir).
//
//   bazel run -c opt //client_lib:open_bench -- [--files=20000,200000]
//       [--rounds=5] [--cold_sample=20000] [--threads=2]
//
// For each directory size N (files of one 64 KiB extent, 2 replicas,
// written 128 per etcd transaction), --rounds rounds, the order of the
// three ways alternated between rounds, each on a fresh Client (Client::
// Open not timed, as a job's start-up):
//   cold    OpenFile of files never listed: one etcd Range each (timed on
//           --cold_sample files; "N files" extrapolates the rate),
//   listed  Client::List(dir), then OpenFile of every file (cache hits),
//   dataset Client::OpenDataset(dir), then Dataset::OpenFile of every file.
// Prints per way the seconds to open every file (median, min-max), opens/s
// and etcd requests per 10,000 files opened; then, per N, the rate of
// Dataset::OpenFile alone on --threads threads (median of the rounds) and
// the memory per 100,000 files held in a Dataset (heap in use, and RSS). Files
// are closed as soon as opened. The machine may be loaded: compare rows of one
// run, not with numbers written down elsewhere.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client_lib/client.h"
#include "client_lib/dataset.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/keys.h"
#include "proto/layout.pb.h"
#include "tests/testing/etcd_cluster.h"

ABSL_FLAG(std::string, files, "20000,200000", "directory sizes, comma list");
ABSL_FLAG(int, rounds, 5, "rounds per size");
ABSL_FLAG(int, cold_sample, 20000, "files opened cold per round (at most N)");
ABSL_FLAG(int, threads, 2, "threads for the dataset open rate");

namespace {

using namespace rangefs;  // NOLINT: a benchmark main.

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    fprintf(stderr, "open_bench: %s: %s\n", what, s.ToString().c_str());
    exit(1);
  }
}

long RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Heap bytes in use (malloc'd and not freed): unlike RSS, not hidden by
// memory an earlier round freed and the allocator reuses.
double HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks) + static_cast<double>(m.hblkhd);
}

std::string PathOf(const std::string& dir, int i) {
  return absl::StrFormat("%s/part-%06d", dir, i);
}

v1::FileLayout Small(int i) {
  v1::FileLayout l;
  l.set_file_id(1 + i);
  l.set_generation(1);
  l.set_state(v1::READY);
  l.set_size(64 << 10);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(1 << 20);
  v1::Extent* x = l.add_extents();
  x->set_offset(0);
  x->set_length(64 << 10);
  for (int r = 0; r < 2; ++r) {
    v1::Replica* rep = x->add_replicas();
    rep->set_node_id(absl::StrCat("n", (i + r) % 8));
    rep->set_object(absl::StrCat("f/", 0x1234567890abcdefULL + i, "/e0"));
  }
  return l;
}

void Load(etcd::EtcdClient& c, const std::string& dir, int n) {
  const ns::Keys keys("bench");
  for (int i = 0; i < n;) {
    etcdserverpb::TxnRequest txn;
    for (int k = 0; k < 128 && i < n; ++k, ++i) {
      etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(keys.File(PathOf(dir, i)));
      put->set_value(Small(i).SerializeAsString());
    }
    Check(c.Txn(txn).status(), "bulk put");
  }
}

std::unique_ptr<Client> NewClient(const std::string& endpoints) {
  ClientOptions o;
  o.etcd_endpoints = endpoints;
  o.cluster = "bench";
  o.mount_status_file = "-";
  auto c = Client::Open(o);
  Check(c.status(), "client open");
  return std::move(*c);
}

struct Sample {
  double seconds = 0;  // to open every file of the directory
  double rate = 0;     // opens per second
  double requests_per_10k = 0;
  double read_s = 0;  // of which reading the namespace (List, OpenDataset)
};

// One way of opening, on a fresh client.
Sample RunWay(const std::string& way, const std::string& endpoints,
              const std::string& dir, int n, int cold_n) {
  std::unique_ptr<Client> c = NewClient(endpoints);
  const uint64_t req0 = c->Stats().etcd_requests;
  const absl::Time t0 = absl::Now();
  int opened = 0;
  double read_s = 0;
  if (way == "cold") {
    for (int i = 0; i < cold_n; ++i, ++opened) {
      Check(c->OpenFile(PathOf(dir, i)).status(), "cold open");
    }
  } else if (way == "listed") {
    auto l = c->List(dir);
    Check(l.status(), "list");
    read_s = absl::ToDoubleSeconds(absl::Now() - t0);
    for (const FileInfo& f : *l) {
      Check(c->OpenFile(f.path).status(), "listed open");
      ++opened;
    }
  } else {
    auto d = c->OpenDataset(dir, 0);
    Check(d.status(), "dataset");
    read_s = absl::ToDoubleSeconds(absl::Now() - t0);
    auto l = (*d)->List("/");
    Check(l.status(), "dataset list");
    for (const FileInfo& f : *l) {
      Check((*d)->OpenFile(f.path).status(), "dataset open");
      ++opened;
    }
  }
  const double s = absl::ToDoubleSeconds(absl::Now() - t0);
  if (opened != (way == "cold" ? cold_n : n)) {
    fprintf(stderr, "open_bench: %s opened %d files, want %d\n", way.c_str(),
            opened, way == "cold" ? cold_n : n);
    exit(1);
  }
  Sample out;
  out.rate = opened / s;
  out.seconds = n / out.rate;
  out.read_s = read_s;
  out.requests_per_10k =
      static_cast<double>(c->Stats().etcd_requests - req0) * 10000.0 / opened;
  return out;
}

// Dataset::OpenFile alone on `threads` threads: opens per second.
double DatasetOpenRate(const Dataset& d, int n, const std::string& dir,
                       int threads) {
  std::vector<std::string> paths;
  paths.reserve(n);
  for (int i = 0; i < n; ++i) paths.push_back(PathOf(dir, i));
  std::atomic<int> bad{0};
  const absl::Time t0 = absl::Now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = t; i < n; i += threads) {
        if (!d.OpenFile(paths[i]).ok()) bad.fetch_add(1);
      }
    });
  }
  for (std::thread& t : ts) t.join();
  const double s = absl::ToDoubleSeconds(absl::Now() - t0);
  if (bad.load() != 0) {
    fprintf(stderr, "open_bench: %d dataset opens failed\n", bad.load());
    exit(1);
  }
  return n / s;
}

// "median (min-max)" of get(e) over `v`, with `digits` decimals.
template <typename T, typename F>
std::string Stats(const std::vector<T>& v, F get, int digits) {
  std::vector<double> x;
  for (const T& e : v) x.push_back(get(e));
  std::sort(x.begin(), x.end());
  return absl::StrFormat("%.*f (%.*f-%.*f)", digits, x[x.size() / 2], digits,
                         x.front(), digits, x.back());
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::vector<int> sizes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_files), ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1) {
      fprintf(stderr, "open_bench: bad --files entry '%s'\n",
              std::string(s).c_str());
      return 2;
    }
    sizes.push_back(n);
  }
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  const int threads = std::max(1, absl::GetFlag(FLAGS_threads));
  auto etcd = testing::EtcdCluster::Start(
      {.members = 1, .extra_flags = {"--quota-backend-bytes=8589934592"}});
  Check(etcd.status(), "start etcd");
  const std::string endpoints = (*etcd)->endpoints();
  auto ec = etcd::EtcdClient::Open({.endpoints = endpoints});
  Check(ec.status(), "etcd client");

  printf(
      "open benchmark (client library, real etcd on 127.0.0.1, %d "
      "rounds, order alternated; median (min-max))\n",
      rounds);
  for (int n : sizes) {
    const std::string dir = absl::StrCat("/meta", n);
    const absl::Time l0 = absl::Now();
    Load(**ec, dir, n);
    const double load_s = absl::ToDoubleSeconds(absl::Now() - l0);
    const int cold_n = std::min(n, absl::GetFlag(FLAGS_cold_sample));
    const std::vector<std::string> ways = {"cold", "listed", "dataset"};
    std::vector<std::vector<Sample>> samples(ways.size());
    std::vector<double> ds_rates;
    double rss_per_100k = 0, heap_per_100k = 0;
    for (int r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < ways.size(); ++k) {
        const size_t w = r % 2 == 0 ? k : ways.size() - 1 - k;
        samples[w].push_back(RunWay(ways[w], endpoints, dir, n, cold_n));
      }
      // Dataset opens alone, and (first round) the memory a dataset holds.
      std::unique_ptr<Client> c = NewClient(endpoints);
      const long rss0 = RssKb();
      const double heap0 = HeapBytes();
      auto d = c->OpenDataset(dir, 0);
      Check(d.status(), "dataset");
      if (r == 0) {
        rss_per_100k = (RssKb() - rss0) / 1024.0 * 100000.0 / n;
        heap_per_100k = (HeapBytes() - heap0) / 1e6 * 100000.0 / n;
      }
      ds_rates.push_back(DatasetOpenRate(**d, n, dir, threads));
    }
    printf("%d files in %s (written in %.1f s; cold timed on %d files)\n", n,
           dir.c_str(), load_s, cold_n);
    printf("  %-8s %-24s %-24s %-24s %s\n", "way", "s to open all",
           "of which List/Dataset", "opens/s", "etcd requests per 10k opens");
    for (size_t w = 0; w < ways.size(); ++w) {
      printf(
          "  %-8s %-24s %-24s %-24s %s\n", ways[w].c_str(),
          Stats(
              samples[w], [](const Sample& s) { return s.seconds; }, 3)
              .c_str(),
          Stats(
              samples[w], [](const Sample& s) { return s.read_s; }, 3)
              .c_str(),
          Stats(
              samples[w], [](const Sample& s) { return s.rate; }, 0)
              .c_str(),
          Stats(
              samples[w], [](const Sample& s) { return s.requests_per_10k; }, 1)
              .c_str());
    }
    printf("  Dataset::OpenFile alone on %d thread(s): %s opens/s\n", threads,
           Stats(
               ds_rates, [](double x) { return x; }, 0)
               .c_str());
    printf(
        "  memory per 100,000 files held in a Dataset: %.1f MB of heap in "
        "use (mallinfo2), RSS growth %.1f MB (low when freed memory of "
        "earlier rounds is reused)\n",
        heap_per_100k, rss_per_100k);
    fflush(stdout);
  }
  return 0;
}
