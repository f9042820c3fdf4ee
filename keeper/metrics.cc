#include "keeper/metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rangefs {
namespace keeper {
namespace {

void Metric(std::string* out, const char* name, const char* type,
            const char* help, double value) {
  absl::StrAppendFormat(out, "# HELP rangefs_keeper_%s %s\n", name, help);
  absl::StrAppendFormat(out, "# TYPE rangefs_keeper_%s %s\n", name, type);
  absl::StrAppendFormat(out, "rangefs_keeper_%s %.17g\n", name, value);
}

}  // namespace

void KeeperMetrics::AddRound(const RoundReport& r) {
  ++rounds;
  moves_done += static_cast<uint64_t>(r.moves_done);
  moves_failed += static_cast<uint64_t>(r.moves_failed);
  moves_abandoned += static_cast<uint64_t>(r.moves_abandoned);
  repairs_done += static_cast<uint64_t>(r.repairs_done);
  bytes_copied += r.bytes_copied;
  trash_deleted += static_cast<uint64_t>(r.trash_deleted);
  orphans_found += static_cast<uint64_t>(r.orphans_found);
  round = r;
  in_round = false;
  eta_s = r.bytes_planned > r.bytes_copied ? -1 : 0;
}

std::string KeeperPrometheusText(const KeeperMetrics& m) {
  std::string out;
  Metric(&out, "active", "gauge", "1 while this keeper holds the leader lease",
         m.active ? 1 : 0);
  Metric(&out, "rounds_total", "counter", "Rounds finished", m.rounds);
  Metric(&out, "moves_done_total", "counter",
         "Replica moves and repairs completed", m.moves_done);
  Metric(&out, "moves_failed_total", "counter",
         "Replica moves failed (retried next round)", m.moves_failed);
  Metric(&out, "moves_abandoned_total", "counter",
         "Replica moves abandoned (the layout changed)", m.moves_abandoned);
  Metric(&out, "repairs_done_total", "counter",
         "Corrupt replicas repaired in place", m.repairs_done);
  Metric(&out, "copied_bytes_total", "counter", "Bytes copied by moves",
         m.bytes_copied);
  Metric(&out, "trash_deleted_total", "counter",
         "Unreferenced objects deleted after the grace rule", m.trash_deleted);
  Metric(&out, "orphans_found_total", "counter",
         "Orphan objects found and trashed", m.orphans_found);
  const RoundReport& r = m.round;
  Metric(&out, "round_in_progress", "gauge",
         "1 while a round's moves run (the round gauges are its progress)",
         m.in_round ? 1 : 0);
  Metric(&out, "round_revision", "gauge", "etcd revision of the round",
         static_cast<double>(r.revision));
  Metric(&out, "files", "gauge", "Files in the round's listing", r.files);
  Metric(&out, "dead_nodes", "gauge", "Dead nodes", r.dead_nodes);
  Metric(&out, "draining_nodes", "gauge", "Draining nodes", r.draining_nodes);
  Metric(&out, "missing_nodes", "gauge",
         "Nodes without a live record, not yet dead", r.missing_nodes);
  Metric(&out, "round_moves_planned", "gauge",
         "Replica moves the round planned (under-replicated or misplaced "
         "slots)",
         r.moves_planned);
  Metric(&out, "round_moves_done", "gauge", "Of them done", r.moves_done);
  Metric(&out, "round_moves_failed", "gauge", "Of them failed", r.moves_failed);
  Metric(&out, "round_bytes_planned", "gauge", "Bytes the round plans to copy",
         static_cast<double>(r.bytes_planned));
  Metric(&out, "round_bytes_copied", "gauge", "Of them copied",
         static_cast<double>(r.bytes_copied));
  Metric(&out, "under_replicated_files", "gauge",
         "Files with a replica to re-create (dead, draining or corrupt)",
         r.under_replicated_files);
  Metric(&out, "under_replicated_bytes", "gauge",
         "Bytes of the slots with a replica to re-create",
         static_cast<double>(r.under_replicated_bytes));
  Metric(&out, "stuck_slots", "gauge", "Slots with no good source or no target",
         r.stuck);
  Metric(&out, "trash_pending", "gauge", "Objects awaiting deletion",
         r.trash_pending);
  Metric(&out, "round_eta_seconds", "gauge",
         "Estimated seconds until the round's copies are done (-1: unknown)",
         m.eta_s);
  return out;
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
