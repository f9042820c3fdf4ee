#include "loadbalancer/node_health.h"

#include <algorithm>
#include <utility>

namespace rangefs {
namespace lb {

NodeHealthTable::NodeHealthTable(Clock* clock, NodeHealthOptions options)
    : clock_(clock != nullptr ? clock : Clock::Real()), options_(options) {}

NodeState& NodeHealthTable::Entry(absl::string_view node) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    NodeState s;
    s.node = std::string(node);
    s.known = true;
    it = nodes_.emplace(s.node, std::move(s)).first;
  }
  return it->second;
}

void NodeHealthTable::MarkDead(NodeState& s, absl::Time now) {
  s.dead = true;
  s.dead_since = clock_->Now();
  s.probe_backoff = options_.initial_probe_backoff;
  s.next_probe = now + s.probe_backoff;
  s.probe_inflight = false;
  probe_granted_.erase(s.node);
}

void NodeHealthTable::ProbeFailed(NodeState& s, absl::Time now) {
  s.probe_backoff = std::min(s.probe_backoff * 2, options_.max_probe_backoff);
  s.next_probe = now + s.probe_backoff;
  s.probe_inflight = false;
  probe_granted_.erase(s.node);
}

void NodeHealthTable::Revive(NodeState& s) {
  s.dead = false;
  s.dead_since = absl::InfinitePast();
  s.probe_backoff = absl::ZeroDuration();
  s.next_probe = absl::InfinitePast();
  s.probe_inflight = false;
  s.consecutive_failures = 0;
  s.only_timeouts = true;
}

void NodeHealthTable::RecordSuccess(absl::string_view node,
                                    absl::Duration latency) {
  RecordSuccesses(node, 1, latency);
}

void NodeHealthTable::RecordSuccesses(absl::string_view node, int64_t count,
                                      absl::Duration last_latency) {
  absl::MutexLock l(&mu_);
  NodeState& s = Entry(node);
  s.successes += count;
  s.consecutive_failures = 0;
  s.only_timeouts = true;
  s.last_latency = last_latency;
  if (s.dead) {
    Revive(s);
    probe_granted_.erase(s.node);
  }
}

void NodeHealthTable::RecordFailure(absl::string_view node,
                                    const absl::Status& status) {
  const absl::Time now = clock_->MonotonicNow();
  absl::MutexLock l(&mu_);
  NodeState& s = Entry(node);
  ++s.failures;
  ++s.consecutive_failures;
  s.last_error =
      status.ok() ? std::string("failure with OK status") : status.ToString();
  const bool timeout = status.code() == absl::StatusCode::kDeadlineExceeded;
  if (!timeout) s.only_timeouts = false;
  if (s.dead) {
    // Requests already in flight when the node died also land here; only
    // the probe's outcome moves the backoff.
    if (s.probe_inflight) ProbeFailed(s, now);
    return;
  }
  if (s.consecutive_failures >=
          std::max(1, options_.max_consecutive_failures) ||
      (timeout && options_.dead_on_timeout)) {
    MarkDead(s, now);
  }
}

void NodeHealthTable::SetLive(absl::string_view node, bool live,
                              bool draining) {
  absl::MutexLock l(&mu_);
  NodeState& s = Entry(node);
  if (!s.live && live && s.dead) {
    Revive(s);
    probe_granted_.erase(s.node);
  }
  s.live = live;
  s.draining = draining;
}

void NodeHealthTable::SetAdminState(absl::string_view node, AdminState state) {
  absl::MutexLock l(&mu_);
  Entry(node).admin = state;
}

void NodeHealthTable::Remove(absl::string_view node) {
  absl::MutexLock l(&mu_);
  auto it = nodes_.find(node);
  if (it != nodes_.end()) nodes_.erase(it);
  auto pit = probe_granted_.find(node);
  if (pit != probe_granted_.end()) probe_granted_.erase(pit);
}

bool NodeHealthTable::Admissible(absl::string_view node) const {
  absl::MutexLock l(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return true;
  const NodeState& s = it->second;
  return !s.dead && s.live && !s.draining && s.admin == AdminState::kActive;
}

bool NodeHealthTable::ShouldProbe(absl::string_view node) {
  const absl::Time now = clock_->MonotonicNow();
  absl::MutexLock l(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return false;
  NodeState& s = it->second;
  if (!s.dead || !s.live || s.draining || s.admin != AdminState::kActive) {
    return false;
  }
  if (s.probe_inflight) {
    auto pit = probe_granted_.find(node);
    if (pit == probe_granted_.end() ||
        now - pit->second < options_.probe_timeout) {
      return false;
    }
    ProbeFailed(s, now);  // lost probe
  }
  if (now < s.next_probe) return false;
  s.probe_inflight = true;
  probe_granted_[s.node] = now;
  return true;
}

NodeState NodeHealthTable::State(absl::string_view node) const {
  absl::MutexLock l(&mu_);
  auto it = nodes_.find(node);
  if (it != nodes_.end()) return it->second;
  NodeState s;
  s.node = std::string(node);
  return s;
}

std::vector<NodeState> NodeHealthTable::Snapshot() const {
  std::vector<NodeState> out;
  {
    absl::MutexLock l(&mu_);
    out.reserve(nodes_.size());
    for (const auto& [id, s] : nodes_) out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const NodeState& a, const NodeState& b) {
    return a.node < b.node;
  });
  return out;
}

}  // namespace lb
}  // namespace rangefs
