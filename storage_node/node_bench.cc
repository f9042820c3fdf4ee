// node_bench: ReadRange throughput over loopback, over gRPC and over the
// agent's raw-TCP data port (data_port.h), against plain TCP streams
// measured in the same run, and WriteObject throughput against `dd` to the
// same disk. Not a test; run via storage_node/node_bench.sh.
//
// TCP baselines: iperf3 itself on loopback when it is installed (one
// stream, memory to memory, 1 MiB writes), our own memory-to-memory stream
// (iperf3-like: it never touches a file), and the best of two plain streams of
// the same object file (pread + write, and sendfile), unframed and unchecked:
// what serving those bytes over one TCP connection costs at the least.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "storage_node/agent.h"
#include "storage_node/node_client.h"

ABSL_FLAG(std::string, dir, "/tmp", "Directory on the disk to test.");
ABSL_FLAG(int, mib, 1024, "MiB per measurement.");
ABSL_FLAG(bool, default_malloc, false,
          "Skip TuneMallocForStreaming (to measure its effect).");
ABSL_FLAG(int, chunk_kib, 0,
          "ReadRange chunk size of the agent in KiB (0: the agent default).");
ABSL_FLAG(int, rounds, 3, "Rounds; the median of each measurement is shown.");
ABSL_FLAG(int, read_mib, 1,
          "MiB per ReadRange call, into one reused buffer (1: like the "
          "TCP baselines, and the client's 1 MiB pieces).");

namespace {

double MiBps(uint64_t bytes, absl::Duration d) {
  return static_cast<double>(bytes) / (1 << 20) / absl::ToDoubleSeconds(d);
}

// 127.0.0.1:`port` (0: any free port, for bind).
sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// Where a plain TCP stream's bytes come from.
enum class Source {
  kMemory,    // one hot 1 MiB buffer, written again and again (iperf3-like)
  kPread,     // the object's file: pread 1 MiB, write it (cat | nc)
  kSendfile,  // the object's file: sendfile 1 MiB at a time
};

// One TCP stream over 127.0.0.1 of `bytes` bytes, received 1 MiB at a time
// into one hot buffer, no framing, no checksums: the ceiling for a data
// path. Returns MiB/s (or -1).
double TcpStream(uint64_t bytes, Source source, const std::string& file) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof(a);
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(ls, 1) != 0 ||
      getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return -1;
  }
  const int fd = source == Source::kMemory ? -1 : open(file.c_str(), O_RDONLY);
  if (source != Source::kMemory && fd < 0) return -1;
  std::thread server([ls, bytes, source, fd] {
    int s = accept(ls, nullptr, nullptr);
    std::vector<char> buf(1 << 20, 'x');
    for (uint64_t sent = 0; sent < bytes;) {
      const size_t want =
          static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - sent));
      ssize_t n;
      if (source == Source::kSendfile) {
        off_t pos = static_cast<off_t>(sent);
        n = sendfile(s, fd, &pos, want);
      } else {
        if (source == Source::kPread &&
            pread(fd, buf.data(), want, static_cast<off_t>(sent)) !=
                static_cast<ssize_t>(want)) {
          break;
        }
        n = 0;
        for (size_t done = 0; done < want;) {
          ssize_t w = write(s, buf.data() + done, want - done);
          if (w <= 0) break;
          done += static_cast<size_t>(w);
          n = static_cast<ssize_t>(done);
        }
      }
      if (n <= 0) break;
      sent += static_cast<uint64_t>(n);
    }
    close(s);
  });
  int c = socket(AF_INET, SOCK_STREAM, 0);
  const absl::Time start = absl::Now();
  if (connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
  std::vector<char> buf(1 << 20);
  uint64_t got = 0;
  ssize_t n;
  while ((n = read(c, buf.data(), buf.size())) > 0) got += n;
  const absl::Duration d = absl::Now() - start;
  close(c);
  server.join();
  close(ls);
  if (fd >= 0) close(fd);
  return got == bytes ? MiBps(got, d) : -1;
}

// A free loopback TCP port (0 if none).
int FreePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(s);
  return port;
}

// iperf3 on loopback: one stream of `bytes`, memory to memory. Returns
// MiB/s (receiver side), or -1 when iperf3 is missing or fails.
double Iperf3(uint64_t bytes) {
  if (system("command -v iperf3 >/dev/null 2>&1") != 0) return -1;
  const int port = FreePort();
  if (port == 0) return -1;
  const std::string p = std::to_string(port);
  const char* argv[] = {"iperf3", "-s",        "-p",   p.c_str(),
                        "-B",     "127.0.0.1", nullptr};
  pid_t server;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const int rc = posix_spawnp(&server, "iperf3", &fa, nullptr,
                              const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  // Listening yet? (The server shrugs off a connection that closes.)
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = Loopback(port);
    up = connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(c);
    if (!up) absl::SleepFor(absl::Milliseconds(10));
  }
  double mibps = -1;
  if (up) {
    // -l 1M: iperf3's default 128 KiB writes understate loopback ~2x.
    const std::string cmd =
        absl::StrCat("iperf3 -c 127.0.0.1 -p ", port, " -l 1M -n ", bytes,
                     " -J 2>/dev/null");
    FILE* f = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (f != nullptr && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
      out.append(buf, n);
    }
    if (f != nullptr) pclose(f);
    const size_t at = out.find("\"sum_received\"");
    const size_t bps = out.find("\"bits_per_second\":", at);
    if (at != std::string::npos && bps != std::string::npos) {
      mibps = strtod(out.c_str() + bps + 18, nullptr) / 8 / (1 << 20);
    }
  }
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  return mibps > 0 ? mibps : -1;
}

// CPU seconds (user + system) this process has used so far.
double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace rangefs::node;  // NOLINT
  // As rangefs-node's main does (the agent runs in this process).
  if (!absl::GetFlag(FLAGS_default_malloc)) TuneMallocForStreaming();
  const uint64_t total = static_cast<uint64_t>(absl::GetFlag(FLAGS_mib)) << 20;
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  const std::string base =
      absl::StrCat(absl::GetFlag(FLAGS_dir), "/node_bench.", getpid());
  const std::string exp = base + "/export";
  if (system(("mkdir -p " + exp).c_str()) != 0) return 1;

  AgentOptions agent_options{
      .node_id = "bench", .export_root = exp, .data_listen = "auto"};
  if (absl::GetFlag(FLAGS_chunk_kib) > 0) {
    agent_options.service.chunk_size =
        static_cast<size_t>(absl::GetFlag(FLAGS_chunk_kib)) << 10;
  }
  auto agent = Agent::Start(std::move(agent_options));
  if (!agent.ok()) {
    fprintf(stderr, "agent: %s\n", agent.status().ToString().c_str());
    return 1;
  }
  // gRPC only (writes and "ReadRange over gRPC"), and the default client,
  // which reads over the agent's data port.
  auto nc =
      NodeClient::Connect((*agent)->address(), {}, {.use_data_port = false});
  if (!nc.ok()) return 1;
  auto dpc = NodeClient::Connect((*agent)->address());
  if (!dpc.ok()) return 1;
  std::vector<char> pattern(1 << 20);
  for (size_t i = 0; i < pattern.size(); ++i) {
    pattern[i] = static_cast<char>(i * 7);
  }
  std::vector<char> buf(
      static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_read_mib))) << 20);

  // Rounds alternate each measurement with its baseline, so that load from
  // other processes hits both alike; the medians are reported.
  std::vector<double> dd_v, write_v, tcp_v, file_v, read_v, dp_v, iperf_v,
      sendfile_v;
  for (int round = 0; round < rounds; ++round) {
    // dd to the same disk, with fsync like WriteObject.
    const std::string dd = absl::StrCat("dd if=/dev/zero of=", base,
                                        "/dd.bin bs=1M count=", total >> 20,
                                        " conv=fsync status=none");
    absl::Time t0 = absl::Now();
    if (system(dd.c_str()) != 0) return 1;
    dd_v.push_back(MiBps(total, absl::Now() - t0));
    if (system(absl::StrCat("rm -f ", base, "/dd.bin").c_str()) != 0) return 1;

    uint64_t sent = 0;
    double cpu0 = CpuSeconds();
    t0 = absl::Now();
    auto w = (*nc)->WriteObject(
        "bench/obj",
        [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
          size_t n =
              std::min<uint64_t>({dst.size(), pattern.size(), total - sent});
          // Fill the whole message from the 1 MiB pattern.
          for (size_t done = 0; done < n;) {
            const size_t k = std::min(n - done, pattern.size());
            memcpy(dst.data() + done, pattern.data(), k);
            done += k;
          }
          sent += n;
          return n;
        },
        {.overwrite = true, .expected_size = static_cast<int64_t>(total)});
    write_v.push_back(MiBps(total, absl::Now() - t0));
    const double write_cpu = CpuSeconds() - cpu0;
    if (!w.ok()) {
      fprintf(stderr, "write: %s\n", w.status().ToString().c_str());
      return 1;
    }

    // Reads the whole object with `client`; returns MiB/s and CPU s/GiB.
    auto read_all = [&](NodeClient* client, double* cpu_per_gib) -> double {
      uint64_t got = 0;
      const double c0 = CpuSeconds();
      const absl::Time start = absl::Now();
      while (got < total) {
        auto n = client->ReadRange("bench/obj", got, absl::MakeSpan(buf));
        if (!n.ok() || *n == 0) {
          fprintf(stderr, "read: %s\n", n.status().ToString().c_str());
          exit(1);
        }
        got += *n;
      }
      const double mibps = MiBps(total, absl::Now() - start);
      *cpu_per_gib =
          (CpuSeconds() - c0) / (static_cast<double>(total) / (1 << 30));
      return mibps;
    };
    tcp_v.push_back(TcpStream(total, Source::kMemory, ""));
    iperf_v.push_back(Iperf3(total));
    const std::string obj = exp + "/bench/obj";
    const double by_pread = TcpStream(total, Source::kPread, obj);
    const double by_sendfile = TcpStream(total, Source::kSendfile, obj);
    file_v.push_back(std::max(by_pread, by_sendfile));
    sendfile_v.push_back(by_sendfile);
    fprintf(stderr, "round %d: file tcp by pread %.1f, by sendfile %.1f\n",
            round + 1, by_pread, by_sendfile);
    if (tcp_v.back() <= 0 || file_v.back() <= 0) {
      fprintf(stderr, "a TCP baseline failed\n");
      return 1;
    }
    double read_cpu = 0, dp_cpu = 0;
    read_v.push_back(read_all(nc->get(), &read_cpu));
    dp_v.push_back(read_all(dpc->get(), &dp_cpu));
    if ((*dpc)->data_port() == 0) {
      fprintf(stderr, "the data port was not used\n");
      return 1;
    }
    const double gib = static_cast<double>(total) / (1 << 30);
    fprintf(stderr,
            "round %d: iperf3 %.1f  tcp %.1f  file tcp %.1f  gRPC ReadRange "
            "%.1f (%.2f, "
            "%.2f) cpu %.2f s/GiB  data port %.1f (%.2f, %.2f) cpu %.2f s/GiB  "
            "WriteObject %.1f dd %.1f (%.2f) cpu %.2f s/GiB\n",
            round + 1, iperf_v.back(), tcp_v.back(), file_v.back(),
            read_v.back(), read_v.back() / tcp_v.back(),
            read_v.back() / file_v.back(), read_cpu, dp_v.back(),
            dp_v.back() / tcp_v.back(), dp_v.back() / file_v.back(), dp_cpu,
            write_v.back(), dd_v.back(), write_v.back() / dd_v.back(),
            write_cpu / gib);
  }
  (*agent)->Shutdown(absl::Now() + absl::Seconds(5));
  agent->reset();
  if (system(("rm -rf " + base).c_str()) != 0) return 1;

  const double read_mibps = Median(read_v), tcp_mibps = Median(tcp_v);
  const double file_mibps = Median(file_v), dp_mibps = Median(dp_v);
  const double write_mibps = Median(write_v), dd_mibps = Median(dd_v);
  printf("bytes per measurement: %llu MiB, median of %d rounds\n",
         static_cast<unsigned long long>(total >> 20), rounds);
  const double iperf_mibps = Median(iperf_v);
  if (iperf_mibps > 0) {
    printf("iperf3, loopback, one stream:         %8.1f MiB/s\n", iperf_mibps);
  } else {
    printf("iperf3: not installed or failed\n");
  }
  printf("plain TCP stream, memory to memory:   %8.1f MiB/s\n", tcp_mibps);
  printf("plain TCP stream of the object file:  %8.1f MiB/s\n", file_mibps);
  printf(
      "ReadRange over gRPC:                  %8.1f MiB/s  ratio %.2f "
      "(vs memory %.2f)\n",
      read_mibps, read_mibps / file_mibps, read_mibps / tcp_mibps);
  printf(
      "ReadRange over data port:             %8.1f MiB/s  ratio %.2f "
      "(vs memory %.2f)\n",
      dp_mibps, dp_mibps / file_mibps, dp_mibps / tcp_mibps);
  if (iperf_mibps > 0) {
    printf("vs iperf3: data port %.2f, gRPC %.2f (ratios of medians)\n",
           dp_mibps / iperf_mibps, read_mibps / iperf_mibps);
  }
  const double sendfile_mibps = Median(sendfile_v);
  printf(
      "vs sendfile stream of the object (%.1f MiB/s): data port %.2f "
      "(target >= 0.8), gRPC %.2f\n",
      sendfile_mibps, dp_mibps / sendfile_mibps, read_mibps / sendfile_mibps);
  printf("WriteObject (fsync):                  %8.1f MiB/s\n", write_mibps);
  printf("dd bs=1M conv=fsync:                  %8.1f MiB/s  ratio %.2f\n",
         dd_mibps, write_mibps / dd_mibps);
  return 0;
}
