// rangefs-bench: workloads through the rangefs client library.
//
//   rangefs-bench --etcd=HOST:PORT --cluster=C --workload=scan|lookup|mixed
//                 [--threads=8] [--duration_s=10] [--warmup_s=0] [--once]
//                 [--dir=/]
//                 [--data_path=auto|mount|agent|nfs] [--policy=least_loaded]
//                 [--io_size=4M] [--lookup_size=4096] [--batch=32]
//                 [--max_in_flight=0]
//                 [--verify_against=LOCAL_DIR] [--timeline=FILE] [--json]
//                 [--io_uring=true] [--io_uring_depth=32] [--max_io_size=1M]
//                 [--prefetch=true] [--zero_copy=false] [--hedging=true]
//                 [--stall_factor=4] [--attempt_timeout_s=5] [--deadline_s=30]
//                 [--teardown_timeout_s=1] [--dataset] [--revision=R]
//   rangefs-bench --api=reader|read|readv --etcd=... --cluster=... [--dir=/]
//                 [--threads=N] [--io_size=1M] [--batch=32]
//                 [--lookup_size=4096]
//                 [--duration_s=10] [--warmup_s=0] [--once] [--o_direct]
//                 [--json]
//
// scan: each thread reads whole files sequentially (Reader with adaptive
// readahead), files handed out round-robin; with --once every file is read
// exactly once, else until --duration_s. lookup: random --lookup_size reads
// across all files, --batch per ReadV (at most --max_in_flight of them at
// once when set: a thread's reads in flight stay at that depth, as with
// fio's iodepth, instead of draining at each call's end). mixed: half the
// threads each.
// Files come from Client::List + OpenFile (listed layouts are cached: no
// etcd request per open), or with --dataset from one pinned Dataset of
// --dir (Client::OpenDataset at --revision, 0 = latest; no etcd after it).
// The report's "metadata" line times listing and opening every file.
// --verify_against compares every byte read with LOCAL_DIR/<path>.
// Timing (like fio's --time_based --ramp_time): the workers run
// --warmup_s + --duration_s; what completes in the warm-up is not counted,
// and a call (a Read, a ReadV of lookups) that began in it counts by the
// share of its time after it. The measured window runs from the end of the
// warm-up (or the first request) to the completion of the last read, on
// CLOCK_MONOTONIC; bytes, calls and CPU (getrusage: user + system of the
// whole process, the client's own threads included) are taken over that
// same window.
// Prints GB/s, IOPS, latency p50/p99/p999 per call, client CPU s per GB,
// retries/hedges and per-node bytes; --json prints the same as one object,
// with per-node stalls/timeouts/moved attempts and "last_read_mono_ns" (the
// CLOCK_MONOTONIC time at which the last read returned, so that a parent
// can time the exit that follows: the Client is destroyed after the report)
// and "start_unix_us" (the wall-clock time of --timeline's 0, so that a
// parent can line the timeline up with other processes' logs). A scan
// whose run ends right after a short Reader::Read reads once more, so that
// an error the Reader kept for that Read (a prefetch past its deadline) is
// counted in "errors" and "deferred_errors" and printed, not dropped.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/flag_config.h"
#include "base/flags_usage.h"
#include "client_lib/client.h"
#include "tests/bench/kept_error.h"

ABSL_FLAG(std::string, config, "",
          "rangefs config file; flags and $RANGEFS_ETCD/$RANGEFS_CLUSTER "
          "override it. Default: $RANGEFS_CONFIG.");
ABSL_FLAG(std::string, etcd, "127.0.0.1:2379", "etcd endpoints");
ABSL_FLAG(std::string, cluster, "default", "rangefs cluster name");
ABSL_FLAG(std::string, mount_root, "/mnt/rangefs", "client mount root");
ABSL_FLAG(std::string, data_path, "auto", "auto | mount | agent | nfs");
ABSL_FLAG(std::string, policy, "least_loaded", "load-balancing policy");
ABSL_FLAG(std::string, workload, "scan", "scan | lookup | mixed");
ABSL_FLAG(std::string, api, "",
          "reader | read | readv: that entry point alone with the library's "
          "defaults (tuning flags are refused), each thread its own share");
ABSL_FLAG(std::string, dir, "/", "namespace directory holding the files");
ABSL_FLAG(bool, dataset, false,
          "open the files from one pinned Dataset of --dir (OpenDataset)");
ABSL_FLAG(int64_t, revision, 0, "--dataset: etcd revision (0 = latest)");
ABSL_FLAG(int, threads, 8, "worker threads");
ABSL_FLAG(double, duration_s, 10, "run time (unless --once)");
ABSL_FLAG(double, warmup_s, 0,
          "time-based runs: read this long first, uncounted (fio's "
          "--ramp_time)");
ABSL_FLAG(bool, once, false, "scan: read every file exactly once, then stop");
ABSL_FLAG(std::string, io_size, "4M", "scan read size per call");
ABSL_FLAG(bool, prefetch, true,
          "scan: the Reader fetches the next window in the background");
ABSL_FLAG(bool, zero_copy, false,
          "scan: Reader::Next (views of the Reader's window) instead of "
          "Reader::Read into our own buffer");
ABSL_FLAG(int, lookup_size, 4096, "lookup read size");
ABSL_FLAG(int, batch, 32, "lookup ranges per ReadV");
ABSL_FLAG(int, max_in_flight, 0,
          "lookup: ReadOptions::max_in_flight of each ReadV (0: the whole "
          "batch at once); with a batch much larger than it, each thread "
          "keeps that many reads in flight");
ABSL_FLAG(int, lookup_buffers, 0,
          "lookup: land the ranges of a ReadV in this many buffers, reused "
          "in turn (range i in buffer i % N; fio's jobs land their reads in "
          "iodepth buffers), when not verifying; 0: one buffer per range");
ABSL_FLAG(std::string, verify_against, "", "compare bytes with DIR/<path>");
ABSL_FLAG(std::string, timeline, "", "write MB/s per 100 ms to this file");
ABSL_FLAG(bool, json, false, "print JSON");
ABSL_FLAG(bool, hedging, true, "hedged reads");
ABSL_FLAG(double, stall_factor, 4,
          "stall detection: x node p99 (ClientOptions::stall_factor; 0 off)");
ABSL_FLAG(bool, o_direct, false, "mount path: O_DIRECT");
ABSL_FLAG(std::string, agent_ca, "", "agent path: CA of the agents (TLS)");
ABSL_FLAG(std::string, agent_cert, "", "agent path: client cert (mTLS)");
ABSL_FLAG(std::string, agent_key, "", "agent path: client key (mTLS)");
ABSL_FLAG(std::string, verify, "off", "checksums: off | sampled | full");
ABSL_FLAG(double, deadline_s, 30, "per-call deadline");
ABSL_FLAG(double, attempt_timeout_s, 5,
          "an attempt pending this long is timed out (its node marked dead)");
ABSL_FLAG(int, inflight_per_node, 8, "physical reads in flight per node");
ABSL_FLAG(uint64_t, min_file_size, 0, "only use files at least this big");
ABSL_FLAG(uint64_t, max_file_size, UINT64_MAX, "only files at most this big");
ABSL_FLAG(bool, io_uring, true, "mount path: per-node io_uring ring thread");
ABSL_FLAG(bool, single_flight, true,
          "concurrent reads of the same bytes share one physical read");
ABSL_FLAG(bool, page_cache_reads, true,
          "mount path: the calling thread copies bytes already in the page "
          "cache of a local file system itself");
ABSL_FLAG(bool, in_place_reads, true,
          "small mount reads on the caller's ring and agent reads land in "
          "the caller's buffer itself (ClientOptions::in_place_reads)");
ABSL_FLAG(int, io_uring_depth, 32, "io_uring: reads in flight per node");
ABSL_FLAG(int, nfs_connections_per_node, 1,
          "data_path=nfs: NFS connections per node");
ABSL_FLAG(int, nfs_event_loops, 0,
          "data_path=nfs: the most NFS event-loop threads (0: one per CPU)");
ABSL_FLAG(std::string, max_io_size, "1M", "largest physical read");
ABSL_FLAG(double, teardown_timeout_s, 1,
          "ClientOptions::teardown_timeout: the longest the Client's "
          "destruction waits for I/O threads blocked in a hung mount");

namespace {

using rangefs::Client;
using rangefs::File;

uint64_t ParseSize(const std::string& s) {
  uint64_t mult = 1;
  std::string t = s;
  if (!t.empty() && (t.back() == 'K' || t.back() == 'k')) mult = 1 << 10;
  if (!t.empty() && (t.back() == 'M' || t.back() == 'm')) mult = 1 << 20;
  if (!t.empty() && (t.back() == 'G' || t.back() == 'g')) mult = 1ull << 30;
  if (mult != 1) t.pop_back();
  uint64_t v = 0;
  if (!absl::SimpleAtoi(t, &v)) {
    fprintf(stderr, "bad size %s\n", s.c_str());
    exit(2);
  }
  return v * mult;
}

// Latencies in microseconds, merged at the end.
struct Samples {
  std::vector<double> us;
  void Add(absl::Duration d) { us.push_back(absl::ToDoubleMicroseconds(d)); }
};

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(q * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

int64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Raises `v` to at least `x`.
void AtLeast(std::atomic<int64_t>& v, int64_t x) {
  int64_t cur = v.load();
  while (cur < x && !v.compare_exchange_weak(cur, x)) {
  }
}

// User and system CPU seconds of the whole process so far.
struct Cpu {
  double user = 0, sys = 0;
};

Cpu CpuNow() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return {ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
          ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6};
}

class Verifier {
 public:
  explicit Verifier(std::string root) : root_(std::move(root)) {}
  bool enabled() const { return !root_.empty(); }
  // Compares `data` with the local copy; returns false on mismatch.
  bool Check(const std::string& path, uint64_t offset, const char* data,
             size_t n) {
    std::ifstream in(root_ + path, std::ios::binary);
    if (!in) return false;
    std::string local(n, '\0');
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(local.data(), static_cast<std::streamsize>(n));
    return static_cast<size_t>(in.gcount()) == n &&
           memcmp(local.data(), data, n) == 0;
  }

 private:
  std::string root_;
};

// The flags that tune the Client or the reads: refused with --api, whose
// rows measure the library's defaults.
constexpr const char* kTuningFlags[] = {"workload",
                                        "data_path",
                                        "nfs_connections_per_node",
                                        "nfs_event_loops",
                                        "policy",
                                        "prefetch",
                                        "zero_copy",
                                        "max_in_flight",
                                        "lookup_buffers",
                                        "hedging",
                                        "stall_factor",
                                        "verify",
                                        "deadline_s",
                                        "attempt_timeout_s",
                                        "inflight_per_node",
                                        "io_uring",
                                        "single_flight",
                                        "page_cache_reads",
                                        "in_place_reads",
                                        "io_uring_depth",
                                        "max_io_size",
                                        "teardown_timeout_s"};

// The first tuning flag among the arguments (--NAME, --NAME=V, --noNAME),
// or "".
std::string TuningFlagGiven(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    a = a.substr(2, a.find('=') == std::string::npos ? std::string::npos
                                                     : a.find('=') - 2);
    for (const char* f : kTuningFlags) {
      if (a == f || a == std::string("no") + f) return f;
    }
  }
  return "";
}

// One thread's share of the files (see --api in the header comment).
struct Part {
  File* file;
  uint64_t begin, end;
};

std::vector<Part> PartsOf(const std::vector<std::unique_ptr<File>>& files,
                          int threads, int t) {
  const size_t n = files.size();
  std::vector<Part> parts;
  if (static_cast<size_t>(threads) <= n) {
    for (size_t i = t; i < n; i += threads) {
      parts.push_back({files[i].get(), 0, files[i]->size()});
    }
    return parts;
  }
  File* f = files[t % n].get();
  // Threads t % n, t % n + n, ... share file t % n; this one is index t / n.
  const uint64_t sharing = (threads - t % n + n - 1) / n;
  const uint64_t index = t / n;
  auto edge = [&](uint64_t k) {
    return k == sharing ? f->size() : f->size() * k / sharing / 4096 * 4096;
  };
  parts.push_back({f, edge(index), edge(index + 1)});
  return parts;
}

}  // namespace

constexpr char kUsage[] =
    "usage: rangefs-bench --etcd=H:P,... --cluster=C "
    "--workload=scan|lookup|mixed [--FLAG=VALUE ...]\n"
    "Workloads through the rangefs client library (its header comment; "
    "tests/bench/run.sh).";

// Config keys (base/config.cc) that set flags (flags > environment >
// config file > defaults: base/layered_config.h).
constexpr rangefs::FlagBinding kConfigBindings[] = {
    {"etcd_endpoints", "etcd"},
    {"cluster", "cluster"},
    {"mount_root", "mount_root"},
    {"agent_ca", "agent_ca"},
    {"agent_cert", "agent_cert"}};

int main(int argc, char** argv) {
  if (auto text = rangefs::HelpOrVersion(argc, argv, "rangefs-bench", kUsage)) {
    fputs(text->c_str(), stdout);
    return 0;
  }
  if (absl::Status s =
          rangefs::ApplyLayeredConfigToFlags(argc, argv, kConfigBindings);
      !s.ok()) {
    fprintf(stderr, "rangefs-bench: %s\n", s.ToString().c_str());
    return 2;
  }
  absl::ParseCommandLine(argc, argv);
  // Debian's Abseil is a debug build: every absl::Mutex lock runs deadlock
  // detection (~5% of the CPU of small reads). Off, as in release builds
  // (the client library leaves process-wide settings to main()).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (absl::GetFlag(FLAGS_max_in_flight) < 0) {
    fprintf(stderr, "rangefs-bench: --max_in_flight=%d: must be 0 or more\n",
            absl::GetFlag(FLAGS_max_in_flight));
    return 2;
  }
  if (absl::GetFlag(FLAGS_lookup_buffers) < 0) {
    fprintf(stderr, "rangefs-bench: --lookup_buffers=%d: must be 0 or more\n",
            absl::GetFlag(FLAGS_lookup_buffers));
    return 2;
  }
  const std::string api = absl::GetFlag(FLAGS_api);
  if (!api.empty() && api != "reader" && api != "read" && api != "readv") {
    fprintf(stderr, "rangefs-bench: --api=%s: reader, read or readv\n",
            api.c_str());
    return 2;
  }
  if (const std::string f = TuningFlagGiven(argc, argv);
      !api.empty() && !f.empty()) {
    fprintf(stderr,
            "rangefs-bench: --%s with --api=%s: --api measures the library's "
            "defaults, tuning flags are refused\n",
            f.c_str(), api.c_str());
    return 2;
  }
  rangefs::ClientOptions o;
  o.etcd_endpoints = absl::GetFlag(FLAGS_etcd);
  o.cluster = absl::GetFlag(FLAGS_cluster);
  o.mount_root = absl::GetFlag(FLAGS_mount_root);
  o.o_direct = absl::GetFlag(FLAGS_o_direct);
  o.agent_tls.ca_file = absl::GetFlag(FLAGS_agent_ca);
  o.agent_tls.cert_file = absl::GetFlag(FLAGS_agent_cert);
  o.agent_tls.key_file = absl::GetFlag(FLAGS_agent_key);
  if (api.empty()) {  // else the library's defaults, what a user gets
    o.lb_policy = absl::GetFlag(FLAGS_policy);
    o.hedging = absl::GetFlag(FLAGS_hedging);
    o.stall_factor = absl::GetFlag(FLAGS_stall_factor);
    o.max_inflight_per_node = absl::GetFlag(FLAGS_inflight_per_node);
    o.io_uring = absl::GetFlag(FLAGS_io_uring);
    o.page_cache_reads = absl::GetFlag(FLAGS_page_cache_reads);
    o.in_place_reads = absl::GetFlag(FLAGS_in_place_reads);
    o.single_flight = absl::GetFlag(FLAGS_single_flight);
    o.io_uring_depth = absl::GetFlag(FLAGS_io_uring_depth);
    o.max_io_size = ParseSize(absl::GetFlag(FLAGS_max_io_size));
    o.default_deadline = absl::Seconds(absl::GetFlag(FLAGS_deadline_s));
    o.attempt_timeout = absl::Seconds(absl::GetFlag(FLAGS_attempt_timeout_s));
    o.teardown_timeout = absl::Seconds(absl::GetFlag(FLAGS_teardown_timeout_s));
    std::string dp = absl::GetFlag(FLAGS_data_path);
    o.data_path = dp == "mount"   ? rangefs::DataPath::kMount
                  : dp == "agent" ? rangefs::DataPath::kAgent
                  : dp == "nfs"   ? rangefs::DataPath::kNfs
                                  : rangefs::DataPath::kAuto;
    o.nfs_connections_per_node = absl::GetFlag(FLAGS_nfs_connections_per_node);
    o.nfs_event_loops = absl::GetFlag(FLAGS_nfs_event_loops);
    std::string vm = absl::GetFlag(FLAGS_verify);
    o.verify = vm == "full"      ? rangefs::VerifyMode::kFull
               : vm == "sampled" ? rangefs::VerifyMode::kSampled
                                 : rangefs::VerifyMode::kOff;
  }
  auto client_or = Client::Open(o);
  if (!client_or.ok()) {
    fprintf(stderr, "rangefs-bench: %s\n",
            client_or.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<Client> client = std::move(*client_or);
  // Metadata: list and open every file, timed, with the etcd requests it
  // took.
  const uint64_t requests_before = client->Stats().etcd_requests;
  const absl::Time meta_start = absl::Now();
  std::unique_ptr<rangefs::Dataset> dataset;
  absl::StatusOr<std::vector<rangefs::FileInfo>> infos;
  if (absl::GetFlag(FLAGS_dataset)) {
    auto d = client->OpenDataset(absl::GetFlag(FLAGS_dir),
                                 absl::GetFlag(FLAGS_revision));
    if (!d.ok()) {
      fprintf(stderr, "rangefs-bench: %s\n", d.status().ToString().c_str());
      return 1;
    }
    dataset = std::move(*d);
    infos = dataset->List("/");
  } else {
    infos = client->List(absl::GetFlag(FLAGS_dir));
  }
  if (!infos.ok()) {
    fprintf(stderr, "rangefs-bench: %s\n", infos.status().ToString().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<File>> files;
  for (const auto& info : *infos) {
    if (!info.invalid.empty()) {
      fprintf(stderr, "rangefs-bench: skipping %s: %s\n", info.path.c_str(),
              info.invalid.c_str());
      continue;
    }
    if (!info.ready || info.size < absl::GetFlag(FLAGS_min_file_size) ||
        info.size > absl::GetFlag(FLAGS_max_file_size)) {
      continue;
    }
    auto f = dataset != nullptr ? dataset->OpenFile(info.path)
                                : client->OpenFile(info.path);
    if (!f.ok()) {
      fprintf(stderr, "rangefs-bench: open %s: %s\n", info.path.c_str(),
              f.status().ToString().c_str());
      return 1;
    }
    files.push_back(std::move(*f));
  }
  const double meta_s = absl::ToDoubleSeconds(absl::Now() - meta_start);
  const uint64_t meta_requests =
      client->Stats().etcd_requests - requests_before;
  if (!absl::GetFlag(FLAGS_json)) {
    printf(
        "metadata: %zu file(s) listed and opened in %.3f s (%s), %llu "
        "etcd request(s)%s\n",
        files.size(), meta_s, dataset != nullptr ? "dataset" : "listed",
        static_cast<unsigned long long>(meta_requests),
        dataset != nullptr
            ? absl::StrCat(" at revision ", dataset->revision()).c_str()
            : "");
  }
  if (files.empty()) {
    fprintf(stderr, "rangefs-bench: no files under %s\n",
            absl::GetFlag(FLAGS_dir).c_str());
    return 1;
  }
  const std::string workload = api.empty()      ? absl::GetFlag(FLAGS_workload)
                               : api == "readv" ? "lookup"
                                                : "scan";
  const int threads = std::max(1, absl::GetFlag(FLAGS_threads));
  const bool once = absl::GetFlag(FLAGS_once);
  const uint64_t io_size = ParseSize(absl::GetFlag(FLAGS_io_size));
  const size_t lookup_size = absl::GetFlag(FLAGS_lookup_size);
  const int batch = std::max(1, absl::GetFlag(FLAGS_batch));
  const int lookup_buffers = absl::GetFlag(FLAGS_lookup_buffers);
  const absl::Duration duration =
      absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  Verifier verifier(absl::GetFlag(FLAGS_verify_against));

  // bytes: all read so far, warm-up included (the 100 ms timeline).
  std::atomic<uint64_t> bytes{0}, errors{0}, mismatches{0};
  // Errors a Reader kept for its next Read (Reader::Read returns the bytes
  // it has and the error with the next call) when the run's end came
  // first: counted in `errors` too.
  std::atomic<uint64_t> deferred_errors{0};
  std::atomic<size_t> next_file{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> measuring{true};  // false during the warm-up
  std::atomic<int> workers_done{0};
  std::atomic<int64_t> last_read_ns{0};
  // The measured window's start (MonotonicNs; 0 until the warm-up ends),
  // and what was read in it. A call that began before the window counts
  // the share of its bytes and reads that its time inside the window is of
  // its whole time: a ReadV of 8192 lookups lasts ~80 ms, and counting it
  // whole would credit the window with reads done in the warm-up (fio
  // counts each I/O by its own completion).
  std::atomic<int64_t> window_ns{0};
  std::atomic<uint64_t> window_bytes{0}, window_milli_ops{0};
  auto count_call = [&](int64_t begin_ns, int64_t end_ns, uint64_t n_bytes,
                        uint64_t n_ops) {
    const int64_t w = window_ns.load();
    if (w == 0 || end_ns <= w) return;  // ended before the window
    const double share = begin_ns >= w
                             ? 1.0
                             : static_cast<double>(end_ns - w) /
                                   static_cast<double>(end_ns - begin_ns);
    window_bytes += static_cast<uint64_t>(std::llround(n_bytes * share));
    window_milli_ops +=
        static_cast<uint64_t>(std::llround(n_ops * share * 1000));
  };
  std::mutex samples_mu;
  Samples scan_lat, lookup_lat;
  std::vector<std::string> first_errors;

  auto record_error = [&](const absl::Status& s) {
    ++errors;
    std::lock_guard<std::mutex> l(samples_mu);
    if (first_errors.size() < 5) first_errors.push_back(s.ToString());
  };

  // --api=reader|read: one pass over the thread's share per iteration.
  auto share = [&](int t) {
    Samples local;
    std::string buf(io_size, '\0');
    const std::vector<Part> parts = PartsOf(files, threads, t);
    // One call: Reader::Read or File::Read of up to io_size bytes at pos.
    auto one_read = [&](const Part& p, rangefs::Reader* reader, uint64_t pos) {
      absl::Span<char> dst(buf.data(),
                           std::min<uint64_t>(io_size, p.end - pos));
      return reader != nullptr ? reader->Read(dst) : p.file->Read(pos, dst);
    };
    bool failed = false;
    while (!stop.load() && !failed) {
      for (const Part& p : parts) {
        std::unique_ptr<rangefs::Reader> reader;
        if (api == "reader") {
          reader = p.file->NewReader();
          if (absl::Status s = reader->Seek(p.begin); !s.ok()) {
            record_error(s);
            failed = true;
            break;
          }
        }
        for (uint64_t pos = p.begin; pos < p.end && !stop.load();) {
          absl::Time t0 = absl::Now();
          const int64_t begin_ns = MonotonicNs();
          absl::StatusOr<size_t> n = one_read(p, reader.get(), pos);
          if (measuring.load(std::memory_order_relaxed)) {
            local.Add(absl::Now() - t0);
          }
          const int64_t end_ns = MonotonicNs();
          AtLeast(last_read_ns, end_ns);
          if (!n.ok() || *n == 0) {
            record_error(n.ok() ? absl::OutOfRangeError(absl::StrCat(
                                      p.file->path(), ": no bytes at ", pos))
                                : n.status());
            failed = true;
            break;
          }
          if (verifier.enabled() &&
              !verifier.Check(p.file->path(), pos, buf.data(), *n)) {
            ++mismatches;
          }
          pos += *n;
          bytes += *n;
          count_call(begin_ns, end_ns, *n, 1);
        }
        if (failed || stop.load()) break;
      }
      if (once) break;
    }
    std::lock_guard<std::mutex> l(samples_mu);
    scan_lat.us.insert(scan_lat.us.end(), local.us.begin(), local.us.end());
  };

  const bool zero_copy = absl::GetFlag(FLAGS_zero_copy);
  auto scan = [&](int) {
    Samples local;
    std::string buf(io_size, '\0');
    while (!stop.load()) {
      size_t i = next_file.fetch_add(1);
      if (once && i >= files.size()) break;
      File* f = files[i % files.size()].get();
      rangefs::ReaderOptions ro;
      ro.prefetch = absl::GetFlag(FLAGS_prefetch);
      std::unique_ptr<rangefs::Reader> owned_reader = f->NewReader(ro);
      rangefs::Reader& reader = *owned_reader;
      uint64_t pos = 0;
      // The last Read was short: the Reader may hold an error for the next.
      bool short_read = false;
      bool ended = false;  // by an error or the end of the file
      while (!stop.load()) {
        absl::Time t0 = absl::Now();
        const int64_t begin_ns = MonotonicNs();
        const char* data = buf.data();
        absl::StatusOr<size_t> n;
        if (zero_copy) {
          auto view = reader.Next(buf.size());
          if (view.ok()) {
            data = view->data();
            n = view->size();
          } else {
            n = view.status();
          }
        } else {
          n = reader.Read(absl::MakeSpan(buf));
        }
        if (measuring.load(std::memory_order_relaxed)) {
          local.Add(absl::Now() - t0);
        }
        AtLeast(last_read_ns, MonotonicNs());
        if (!n.ok()) {
          record_error(n.status());
          ended = true;
          break;
        }
        if (*n == 0) {
          ended = true;
          break;
        }
        short_read = *n < buf.size();
        if (verifier.enabled() && !verifier.Check(f->path(), pos, data, *n)) {
          ++mismatches;
        }
        pos += *n;
        bytes += *n;
        count_call(begin_ns, MonotonicNs(), *n, 1);
      }
      // The run ended after a short Read: the error the Reader kept for
      // the next one (a prefetch past its deadline) is counted, not
      // dropped with the Reader (not timed, no bytes counted).
      if (!ended) {
        const absl::Status kept = rangefs::bench::KeptError(
            reader, short_read, zero_copy, absl::MakeSpan(buf));
        if (!kept.ok()) {
          ++deferred_errors;
          record_error(kept);
        }
      }
    }
    std::lock_guard<std::mutex> l(samples_mu);
    scan_lat.us.insert(scan_lat.us.end(), local.us.begin(), local.us.end());
  };

  auto lookup = [&](int t) {
    Samples local;
    std::mt19937_64 rng(1234 + t);
    // Page-aligned buffers, as an O_DIRECT program (and fio) has: reads of
    // whole 4 KiB blocks can land in them in place.
    // Fewer buffers than ranges (--lookup_buffers): ranges in flight at
    // once may share one (the bytes are not looked at then, as fio's).
    const int nbufs = lookup_buffers > 0 && !verifier.enabled()
                          ? std::min(lookup_buffers, batch)
                          : batch;
    const size_t stride = (lookup_size + 4095) / 4096 * 4096;
    std::unique_ptr<char, decltype(&free)> mem(
        static_cast<char*>(aligned_alloc(4096, stride * nbufs)), &free);
    memset(mem.get(), 0, stride * nbufs);
    std::vector<absl::Span<char>> bufs;
    for (int b = 0; b < batch; ++b) {
      bufs.push_back(
          absl::MakeSpan(mem.get() + stride * (b % nbufs), lookup_size));
    }
    std::vector<rangefs::FileReadRange> ranges(batch);
    std::vector<uint64_t> offs(batch);
    // --api=readv: ReadOptions{} (max_in_flight is a refused flag there).
    const rangefs::ReadOptions read_options{
        .max_in_flight = absl::GetFlag(FLAGS_max_in_flight)};
    while (!stop.load()) {
      for (int b = 0; b < batch; ++b) {
        File* f = files[rng() % files.size()].get();
        uint64_t max_off =
            f->size() > lookup_size ? f->size() - lookup_size : 0;
        uint64_t off = max_off ? (rng() % max_off) & ~uint64_t{4095} : 0;
        ranges[b] = {f, off, bufs[b]};
        offs[b] = off;
      }
      absl::Time t0 = absl::Now();
      const int64_t begin_ns = MonotonicNs();
      auto results = client->ReadV(ranges, read_options);
      if (measuring.load(std::memory_order_relaxed)) {
        local.Add(absl::Now() - t0);
      }
      const int64_t end_ns = MonotonicNs();
      AtLeast(last_read_ns, end_ns);
      uint64_t call_bytes = 0, call_ops = 0;
      for (int b = 0; b < batch; ++b) {
        if (!results[b].ok()) {
          record_error(results[b].status());
          continue;
        }
        call_bytes += *results[b];
        ++call_ops;
        if (verifier.enabled() &&
            !verifier.Check(ranges[b].file->path(), offs[b], bufs[b].data(),
                            *results[b])) {
          ++mismatches;
        }
      }
      bytes += call_bytes;  // the timeline's
      count_call(begin_ns, end_ns, call_bytes, call_ops);
    }
    std::lock_guard<std::mutex> l(samples_mu);
    lookup_lat.us.insert(lookup_lat.us.end(), local.us.begin(), local.us.end());
  };

  const absl::Duration warmup =
      once ? absl::ZeroDuration()
           : absl::Seconds(std::max(0.0, absl::GetFlag(FLAGS_warmup_s)));
  measuring = warmup == absl::ZeroDuration();
  // The measured window's start: bytes, calls and CPU at that moment.
  Cpu cpu0 = CpuNow();
  int64_t t0_ns = MonotonicNs();
  if (measuring) window_ns = t0_ns;
  const absl::Time start = absl::Now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    bool is_scan =
        workload == "scan" || (workload == "mixed" && t < (threads + 1) / 2);
    workers.emplace_back([&, t, is_scan] {
      if (!is_scan) {
        lookup(t);
      } else if (!api.empty()) {
        share(t);
      } else {
        scan(t);
      }
      ++workers_done;
    });
  }
  // Timeline sampler (every 100 ms), the end of the warm-up and the
  // duration limit, each at its exact time.
  std::vector<std::pair<double, double>> timeline;
  uint64_t last_bytes = 0;
  absl::Time last = start;
  absl::Time next_sample = start + absl::Milliseconds(100);
  const absl::Time warm_end = start + warmup;
  const absl::Time deadline = warm_end + duration;
  while (true) {
    absl::Time now = absl::Now();
    absl::Time wake = next_sample;
    if (!measuring.load()) wake = std::min(wake, warm_end);
    if (!once) wake = std::min(wake, deadline);
    if (wake > now) absl::SleepFor(wake - now);
    now = absl::Now();
    if (!measuring.load() && now >= warm_end) {
      cpu0 = CpuNow();
      t0_ns = MonotonicNs();
      window_ns = t0_ns;
      measuring = true;
    }
    if (now >= next_sample) {
      uint64_t b = bytes.load();
      timeline.push_back(
          {absl::ToDoubleSeconds(now - start),
           (b - last_bytes) / 1e6 / absl::ToDoubleSeconds(now - last)});
      last_bytes = b;
      last = now;
      next_sample += absl::Milliseconds(100);
    }
    if (once && workload == "scan") {
      if (workers_done.load() == threads) break;
    } else if (now >= deadline) {
      break;
    }
  }
  stop = true;
  for (auto& w : workers) w.join();
  // The window ends with the last read's completion (not at a sampler tick).
  const Cpu cpu1 = CpuNow();
  const int64_t end_ns = std::max(last_read_ns.load(), t0_ns + 1);
  const double secs = (end_ns - t0_ns) / 1e9;
  const uint64_t counted = window_bytes.load();
  const double counted_ops = window_milli_ops.load() / 1000.0;
  const double cpu_user = cpu1.user - cpu0.user;
  const double cpu_sys = cpu1.sys - cpu0.sys;
  const double cpu = cpu_user + cpu_sys;
  rangefs::ClientStats st = client->Stats();

  const double gbps = counted / 1e9 / secs;
  const double iops = counted_ops / secs;
  auto& lat = workload == "lookup" ? lookup_lat : scan_lat;
  double p50 = Percentile(lat.us, 0.50), p99 = Percentile(lat.us, 0.99),
         p999 = Percentile(lat.us, 0.999);
  double lp50 = Percentile(lookup_lat.us, 0.5),
         lp99 = Percentile(lookup_lat.us, 0.99);
  const double cpu_per_gb = counted ? cpu / (counted / 1e9) : 0;

  if (!absl::GetFlag(FLAGS_timeline).empty()) {
    std::ofstream tl(absl::GetFlag(FLAGS_timeline));
    for (auto& [t, mbps] : timeline) tl << t << " " << mbps << "\n";
  }
  std::string nodes_json, nodes_text, detail_json;
  for (const auto& n : st.nodes) {
    absl::StrAppend(&nodes_json, nodes_json.empty() ? "" : ", ", "\"", n.node,
                    "\": ", n.bytes);
    absl::StrAppend(&detail_json, detail_json.empty() ? "" : ", ", "\"", n.node,
                    "\": {\"requests\": ", n.requests,
                    ", \"errors\": ", n.errors, ", \"stalls\": ", n.stalls,
                    ", \"timeouts\": ", n.timeouts, ", \"moved\": ", n.moved,
                    ", \"caller_reads\": ", n.caller_reads,
                    ", \"in_place_reads\": ", n.in_place_reads,
                    ", \"mount_reads\": ", n.mount_reads,
                    ", \"agent_reads\": ", n.agent_reads,
                    ", \"nfs_reads\": ", n.nfs_reads, "}");
    absl::StrAppend(
        &nodes_text,
        absl::StrFormat(
            "  %-8s %10.1f MB  %6d req  %3d err  (mount %d of which on "
            "callers' rings %d (in place %d), from the page cache %d; agent "
            "%d)\n",
            n.node, n.bytes / 1e6, static_cast<int>(n.requests),
            static_cast<int>(n.errors), static_cast<int>(n.mount_reads),
            static_cast<int>(n.caller_reads),
            static_cast<int>(n.in_place_reads),
            static_cast<int>(n.cached_reads), static_cast<int>(n.agent_reads)));
  }
  if (absl::GetFlag(FLAGS_json)) {
    printf(
        "{\"workload\": \"%s\", \"api\": \"%s\", \"threads\": %d, \"seconds\": "
        "%.3f, "
        "\"bytes\": %llu, \"gbps\": %.4f, \"ops\": %llu, \"iops\": %.1f, "
        "\"p50_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f, "
        "\"lookup_p50_us\": %.1f, \"lookup_p99_us\": %.1f, "
        "\"cpu_s_per_gb\": %.3f, \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, "
        "\"warmup_s\": %.3f, \"errors\": %llu, \"deferred_errors\": %llu, "
        "\"mismatches\": %llu, "
        "\"retries\": %llu, \"hedges\": %llu, \"hedge_wins\": %llu, "
        "\"checksum_failures\": %llu, \"shared_bytes\": %llu, "
        "\"ec_degraded_reads\": %llu, \"ec_reconstructed_bytes\": %llu, "
        "\"ec_parity_hedges\": %llu, \"ec_parity_hedge_wins\": %llu, "
        "\"ec_helper_reads\": %llu, \"ec_helper_bytes_copied\": %llu, "
        "\"ec_helper_bytes_in_place\": %llu, \"ec_decodes_cut_off\": %llu, "
        "\"files\": %zu, \"nodes\": {%s}, "
        "\"node_attempts\": {%s}, \"last_read_mono_ns\": %lld, "
        "\"metadata_s\": %.4f, \"metadata_etcd_requests\": %llu, "
        "\"start_unix_us\": %lld}\n",
        workload.c_str(), api.c_str(), threads, secs,
        static_cast<unsigned long long>(counted), gbps,
        static_cast<unsigned long long>(counted_ops), iops, p50, p99, p999,
        lp50, lp99, cpu_per_gb, cpu_user, cpu_sys,
        absl::ToDoubleSeconds(warmup),
        static_cast<unsigned long long>(errors.load()),
        static_cast<unsigned long long>(deferred_errors.load()),
        static_cast<unsigned long long>(mismatches.load()),
        static_cast<unsigned long long>(st.retries),
        static_cast<unsigned long long>(st.hedges),
        static_cast<unsigned long long>(st.hedge_wins),
        static_cast<unsigned long long>(st.checksum_failures),
        static_cast<unsigned long long>(st.shared_bytes),
        static_cast<unsigned long long>(st.ec_degraded_reads),
        static_cast<unsigned long long>(st.ec_reconstructed_bytes),
        static_cast<unsigned long long>(st.ec_parity_hedges),
        static_cast<unsigned long long>(st.ec_parity_hedge_wins),
        static_cast<unsigned long long>(st.ec_helper_reads),
        static_cast<unsigned long long>(st.ec_helper_bytes_copied),
        static_cast<unsigned long long>(st.ec_helper_bytes_in_place),
        static_cast<unsigned long long>(st.ec_decodes_cut_off), files.size(),
        nodes_json.c_str(), detail_json.c_str(),
        static_cast<long long>(last_read_ns.load()), meta_s,
        static_cast<unsigned long long>(meta_requests),
        static_cast<long long>(absl::ToUnixMicros(start)));
  } else {
    printf("workload %s: %d thread(s), %zu file(s), %.2f s\n", workload.c_str(),
           threads, files.size(), secs);
    printf("  throughput %.3f GB/s (%.1f MB in total), %.0f ops/s\n", gbps,
           counted / 1e6, iops);
    printf("  latency per call: p50 %.0f us, p99 %.0f us, p999 %.0f us\n", p50,
           p99, p999);
    printf("  client CPU %.2f s per GB (user %.2f s, system %.2f s)\n",
           cpu_per_gb, cpu_user, cpu_sys);
    printf(
        "  errors %llu (%llu kept by a Reader past the run's end), byte "
        "mismatches %llu, retries %llu, hedges %llu (%llu won), checksum "
        "failures %llu\n",
        static_cast<unsigned long long>(errors.load()),
        static_cast<unsigned long long>(deferred_errors.load()),
        static_cast<unsigned long long>(mismatches.load()),
        static_cast<unsigned long long>(st.retries),
        static_cast<unsigned long long>(st.hedges),
        static_cast<unsigned long long>(st.hedge_wins),
        static_cast<unsigned long long>(st.checksum_failures));
    if (st.ec_helper_reads > 0) {
      printf(
          "  erasure-coded: %llu piece(s) rebuilt (%.1f MB), %llu parity "
          "hedge(s) (%llu won), %llu helper read(s)\n",
          static_cast<unsigned long long>(st.ec_degraded_reads),
          st.ec_reconstructed_bytes / 1e6,
          static_cast<unsigned long long>(st.ec_parity_hedges),
          static_cast<unsigned long long>(st.ec_parity_hedge_wins),
          static_cast<unsigned long long>(st.ec_helper_reads));
    }
    if (st.shared_bytes > 0) {
      printf(
          "  single flight: %.1f MB read once for several threads (counted "
          "in the throughput; --single_flight=false to fetch every byte)\n",
          st.shared_bytes / 1e6);
    }
    printf("  per node:\n%s", nodes_text.c_str());
  }
  for (const std::string& e : first_errors) {
    fprintf(stderr, "rangefs-bench: error: %s\n", e.c_str());
  }
  fflush(stdout);
  // Files, then the Client: bounded even with reads stuck in a hung mount
  // (ClientOptions::teardown_timeout).
  files.clear();
  dataset.reset();
  client.reset();
  return errors.load() == 0 && mismatches.load() == 0 ? 0 : 1;
}
