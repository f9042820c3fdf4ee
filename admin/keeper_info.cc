#include "admin/keeper_info.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace admin {

KeeperInfo ReadKeeperInfo(ns::NamespaceStore& store) {
  auto get = [&](const std::string& key) -> absl::StatusOr<std::string> {
    RANGEFS_ASSIGN_OR_RETURN(ns::KvRange r, store.kv()->Range(key, "", 1, 0));
    if (r.kvs.empty()) return absl::NotFoundError(key);
    return r.kvs[0].value;
  };
  KeeperInfo k;
  absl::StatusOr<std::string> leader = get(store.keys().KeeperLeader());
  if (absl::IsNotFound(leader.status())) return k;
  if (!leader.ok()) {
    k.error = leader.status();
    return k;
  }
  k.id = *leader;
  absl::StatusOr<std::string> raw = get(store.keys().KeeperStatus());
  k.reported = raw.ok() && k.st.ParseFromString(*raw);
  return k;
}

std::vector<std::string> UnreachableNodes(
    const std::vector<ns::NodeEntry>& nodes,
    const std::vector<ns::LiveEntry>& live) {
  std::set<std::string> live_ids;
  for (const ns::LiveEntry& e : live) {
    if (e.invalid.empty()) live_ids.insert(e.record.node_id());
  }
  std::vector<std::string> out;
  for (const ns::NodeEntry& n : nodes) {
    if (n.invalid.empty() && live_ids.count(n.record.id()) == 0) {
      out.push_back(n.record.id());
    }
  }
  return out;
}

std::optional<int64_t> HealStartsInSeconds(const KeeperInfo& k,
                                           absl::Time now) {
  if (!k.reported || k.st.heal_starts_unix_ms() <= 0) return std::nullopt;
  const absl::Duration left =
      absl::FromUnixMillis(k.st.heal_starts_unix_ms()) - now;
  if (left <= absl::ZeroDuration()) return 0;
  // Rounded up: "in 1s" until it is due, never "in 0s".
  return absl::ToInt64Seconds(absl::Ceil(left, absl::Seconds(1)));
}

std::string HealCountdown(const KeeperInfo& k, absl::Time now) {
  const std::optional<int64_t> in = HealStartsInSeconds(k, now);
  if (!in.has_value()) return "";
  if (*in == 0) return "healing now";
  return absl::StrCat("healing starts in ",
                      absl::FormatDuration(absl::Seconds(*in)));
}

}  // namespace admin
}  // namespace rangefs
