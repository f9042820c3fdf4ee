// copy_bench: re-replication throughput. Two in-process agents (separate
// export directories on the same disk, loopback TCP, data port on) copy
// one object with CopyObject (the agent reads the peer with verification
// and writes temp file + fsync + sidecar + rename), against a same-run
// ceiling: `cp` of the same object file between the two exports followed
// by `sync -f`. Rounds alternate the two; medians are printed. Not a test.
//
//   bazel run -c opt //storage_node:copy_bench -- --dir=/var/tmp --mib=512
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "storage_node/agent.h"
#include "storage_node/node_client.h"

ABSL_FLAG(std::string, dir, "/tmp", "Directory on the disk to test.");
ABSL_FLAG(int, mib, 512, "Object size in MiB.");
ABSL_FLAG(int, rounds, 3, "Rounds (each: one copy of each kind).");
ABSL_FLAG(int64_t, copy_max_bytes_per_sec, 0,
          "The destination agent's --copy_max_bytes_per_sec (0: none).");

namespace {

using rangefs::node::Agent;
using rangefs::node::NodeClient;

void Die(const std::string& what) {
  fprintf(stderr, "copy_bench: %s\n", what.c_str());
  exit(1);
}

std::unique_ptr<Agent> StartAgent(const std::string& dir, uint64_t cap) {
  mkdir(dir.c_str(), 0755);
  rangefs::node::AgentOptions o;
  o.node_id = dir;
  o.export_root = dir;
  o.data_listen = "auto";
  o.service.copy_max_bytes_per_sec = cap;
  auto a = Agent::Start(std::move(o));
  if (!a.ok()) Die(a.status().ToString());
  return *std::move(a);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  rangefs::node::TuneMallocForStreaming();
  const std::string base =
      absl::StrCat(absl::GetFlag(FLAGS_dir), "/copy_bench.", getpid());
  mkdir(base.c_str(), 0755);
  const uint64_t size =
      (uint64_t{1} << 20) * static_cast<uint64_t>(absl::GetFlag(FLAGS_mib));
  auto src = StartAgent(base + "/src", 0);
  auto dst = StartAgent(
      base + "/dst",
      static_cast<uint64_t>(absl::GetFlag(FLAGS_copy_max_bytes_per_sec)));
  auto to_src = NodeClient::Connect(src->address());
  auto to_dst = NodeClient::Connect(dst->address());
  if (!to_src.ok() || !to_dst.ok()) Die("connect");
  // The source object, written through the agent (with its sidecar).
  std::string chunk(4 << 20, '\0');
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 7);
  uint64_t sent = 0;
  auto w = (*to_src)->WriteObject(
      "obj",
      [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>({buf.size(), chunk.size(), size - sent}));
        memcpy(buf.data(), chunk.data(), n);
        sent += n;
        return n;
      },
      {.deadline = absl::Now() + absl::Minutes(10)});
  if (!w.ok()) Die(w.status().ToString());

  std::vector<double> copy_mbs, cp_mbs;
  for (int r = 0; r < absl::GetFlag(FLAGS_rounds); ++r) {
    rangefs::node::CopyObjectRequest req;
    req.set_path("obj");
    req.set_source_address(src->address());
    req.set_overwrite(true);
    absl::Time t0 = absl::Now();
    auto c = (*to_dst)->CopyObject(req, absl::Now() + absl::Minutes(10));
    if (!c.ok()) Die(c.status().ToString());
    copy_mbs.push_back(size / 1e6 / absl::ToDoubleSeconds(absl::Now() - t0));

    const std::string cmd =
        absl::StrCat("cp ", base, "/src/obj ", base, "/dst/cp.obj && sync -f ",
                     base, "/dst/cp.obj");
    t0 = absl::Now();
    if (system(cmd.c_str()) != 0) Die("cp failed: " + cmd);
    cp_mbs.push_back(size / 1e6 / absl::ToDoubleSeconds(absl::Now() - t0));
    printf("round %d: CopyObject %.0f MB/s, cp+sync %.0f MB/s\n", r + 1,
           copy_mbs.back(), cp_mbs.back());
  }
  const double copy = Median(copy_mbs), cp = Median(cp_mbs);
  printf(
      "%d MiB object, median of %d: CopyObject %.0f MB/s, cp+sync %.0f "
      "MB/s, ratio %.2f\n",
      absl::GetFlag(FLAGS_mib), absl::GetFlag(FLAGS_rounds), copy, cp,
      copy / cp);
  src->Shutdown(absl::Now());
  dst->Shutdown(absl::Now());
  const std::string rm = absl::StrCat("rm -rf ", base);
  if (system(rm.c_str()) != 0) Die("cleanup");
  return 0;
}
