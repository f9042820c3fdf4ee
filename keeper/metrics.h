// File: metrics.h
//
// rangefs-keeper's Prometheus metrics (rangefs_keeper_*: totals since the
// process started and the gauges of the round in progress or last
// finished) and the ETA of a round, served at --metrics_port
// (base/metrics_server.h) and/or written to --metrics_file
// (base/atomic_file.h, for node_exporter's textfile collector):
//
//   KeeperMetrics m;
//   m.active = true;
//   m.AddRound(report);
//   RANGEFS_RETURN_IF_ERROR(
//       WriteFileAtomically(path, KeeperPrometheusText(m)));
//
// Plain values; the caller serializes access.
#ifndef RANGEFS_KEEPER_METRICS_H_
#define RANGEFS_KEEPER_METRICS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "keeper/keeper.h"

namespace rangefs {
namespace keeper {

struct KeeperMetrics {
  bool active = false;  // holds the leader lease
  uint64_t rounds = 0;  // finished rounds
  uint64_t moves_done = 0, moves_failed = 0, moves_abandoned = 0;
  uint64_t repairs_done = 0, bytes_copied = 0;
  uint64_t trash_deleted = 0, orphans_found = 0;
  // Storage-policy conversions done and failed, bytes they wrote, and the
  // raw bytes they freed (once their trash is collected).
  uint64_t conversions_done = 0, conversions_failed = 0;
  uint64_t convert_bytes_written = 0;
  int64_t convert_bytes_saved = 0;
  bool in_round = false;  // `round` is in progress (else the last one)
  RoundReport round;
  double eta_s = -1;  // of the round in progress; < 0: unknown

  // Adds a finished round to the totals and makes it the last round.
  void AddRound(const RoundReport& r);
};

std::string KeeperPrometheusText(const KeeperMetrics& m);

// Seconds to copy `bytes_left` at the rate of `bytes_done` in `elapsed`;
// -1 when there is no rate yet (nothing copied), 0 when nothing is left.
double EtaSeconds(uint64_t bytes_left, uint64_t bytes_done,
                  absl::Duration elapsed);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_METRICS_H_
