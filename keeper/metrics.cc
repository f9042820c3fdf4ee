#include "keeper/metrics.h"

#include "base/prometheus_text.h"

namespace rangefs {
namespace keeper {

void KeeperMetrics::AddRound(const RoundReport& r) {
  ++rounds;
  moves_done += static_cast<uint64_t>(r.moves_done);
  moves_failed += static_cast<uint64_t>(r.moves_failed);
  moves_abandoned += static_cast<uint64_t>(r.moves_abandoned);
  repairs_done += static_cast<uint64_t>(r.repairs_done);
  bytes_copied += r.bytes_copied;
  trash_deleted += static_cast<uint64_t>(r.trash_deleted);
  orphans_found += static_cast<uint64_t>(r.orphans_found);
  conversions_done += static_cast<uint64_t>(r.conversions_done);
  conversions_failed += static_cast<uint64_t>(r.conversions_failed);
  convert_bytes_written += r.convert_bytes_written;
  convert_bytes_saved += r.convert_bytes_saved;
  round = r;
  in_round = false;
  eta_s = r.bytes_planned > r.bytes_copied ? -1 : 0;
}

std::string KeeperPrometheusText(const KeeperMetrics& m) {
  PrometheusText w("rangefs_keeper_");
  w.Gauge("active", "1 while this keeper holds the leader lease",
          m.active ? 1 : 0);
  w.Counter("rounds_total", "Rounds finished", m.rounds);
  w.Counter("moves_done_total", "Replica moves and repairs completed",
            m.moves_done);
  w.Counter("moves_failed_total", "Replica moves failed (retried next round)",
            m.moves_failed);
  w.Counter("moves_abandoned_total",
            "Replica moves abandoned (the layout changed)", m.moves_abandoned);
  w.Counter("repairs_done_total", "Corrupt replicas repaired in place",
            m.repairs_done);
  w.Counter("copied_bytes_total", "Bytes copied by moves", m.bytes_copied);
  w.Counter("trash_deleted_total",
            "Unreferenced objects deleted after the grace rule",
            m.trash_deleted);
  w.Counter("orphans_found_total", "Orphan objects found and trashed",
            m.orphans_found);
  const RoundReport& r = m.round;
  w.Gauge("round_in_progress",
          "1 while a round's moves run (the round gauges are its progress)",
          m.in_round ? 1 : 0);
  w.Gauge("round_revision", "etcd revision of the round", r.revision);
  w.Gauge("files", "Files in the round's listing", r.files);
  w.Gauge("dead_nodes", "Dead nodes", r.dead_nodes);
  w.Gauge("draining_nodes", "Draining nodes", r.draining_nodes);
  w.Gauge("missing_nodes", "Nodes without a live record, not yet dead",
          r.missing_nodes);
  w.Gauge("round_moves_planned",
          "Replica moves the round planned (under-replicated or misplaced "
          "slots)",
          r.moves_planned);
  w.Gauge("round_moves_done", "Of them done", r.moves_done);
  w.Gauge("round_moves_failed", "Of them failed", r.moves_failed);
  w.Gauge("round_bytes_planned", "Bytes the round plans to copy",
          r.bytes_planned);
  w.Gauge("round_bytes_copied", "Of them copied", r.bytes_copied);
  w.Gauge("under_replicated_files",
          "Files with a replica to re-create (dead, draining or corrupt)",
          r.under_replicated_files);
  w.Gauge("under_replicated_bytes",
          "Bytes of the slots with a replica to re-create",
          r.under_replicated_bytes);
  w.Gauge("at_risk_files",
          "Files with a replica on a missing node (not yet dead_after)",
          r.at_risk_files);
  w.Gauge("at_risk_bytes",
          "Bytes of the slots with a replica on a missing node",
          r.at_risk_bytes);
  w.Gauge("heal_starts_unix_seconds",
          "When the first missing node turns dead and its replicas are "
          "re-created (0: no node missing)",
          r.heal_starts == absl::InfiniteFuture()
              ? 0
              : absl::ToUnixSeconds(r.heal_starts));
  w.Gauge("dead_after_seconds",
          "How long a node is missing before it counts as dead",
          absl::ToDoubleSeconds(r.dead_after));
  w.Gauge("stuck_slots", "Slots with no good source or no target", r.stuck);
  w.Gauge("trash_pending", "Objects awaiting deletion", r.trash_pending);
  w.Gauge("round_eta_seconds",
          "Estimated seconds until the round's copies are done (-1: unknown)",
          m.eta_s);
  w.Counter("conversions_done_total",
            "Storage-policy conversions completed (layouts swapped)",
            m.conversions_done);
  w.Counter("conversions_failed_total",
            "Storage-policy conversions failed (retried next round)",
            m.conversions_failed);
  w.Counter("convert_written_bytes_total",
            "Bytes written or copied by storage-policy conversions",
            m.convert_bytes_written);
  w.Gauge("convert_saved_bytes",
          "Raw bytes freed by the conversions done since the start (< 0: "
          "they use more), once their trash is deleted",
          m.convert_bytes_saved);
  w.Gauge("convert_eta_seconds",
          "Estimated seconds until every file meets its storage policy "
          "(-1: unknown)",
          r.convert_eta_s);
  const struct {
    const char* name;
    const char* help;
    int which;
  } per_policy[] = {
      {"convert_pending_files",
       "Files whose layout does not meet their storage policy yet", 0},
      {"convert_pending_bytes", "Logical bytes of those files", 1},
      {"convert_pending_saved_bytes",
       "Raw bytes converting those files frees (< 0: uses more)", 2},
      {"convert_stuck_files", "Of those files, those that cannot convert now",
       3},
  };
  for (const auto& f : per_policy) {
    w.Family(f.name, MetricType::kGauge, f.help);
    for (const auto& [policy, b] : r.convert_backlog) {
      const MetricLabel label[] = {{"policy", policy}};
      switch (f.which) {
        case 0:
          w.Sample(f.name, label, b.files);
          break;
        case 1:
          w.Sample(f.name, label, b.bytes);
          break;
        case 2:
          w.Sample(f.name, label, b.bytes_saved);
          break;
        default:
          w.Sample(f.name, label, b.stuck);
          break;
      }
    }
  }
  return w.Take();
}

double EtaSeconds(uint64_t bytes_left, uint64_t bytes_done,
                  absl::Duration elapsed) {
  if (bytes_left == 0) return 0;
  const double secs = absl::ToDoubleSeconds(elapsed);
  if (bytes_done == 0 || secs <= 0) return -1;
  return static_cast<double>(bytes_left) * secs /
         static_cast<double>(bytes_done);
}

}  // namespace keeper
}  // namespace rangefs
