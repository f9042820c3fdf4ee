#include "keeper/convert_goals.h"

#include <memory>
#include <utility>

#include "base/logging.h"
#include "base/status_macros.h"

namespace rangefs {
namespace keeper {

GoalOf GoalsFrom(ns::PolicyTable table, absl::Time now) {
  auto t = std::make_shared<const ns::PolicyTable>(std::move(table));
  return [t, now](const ns::FileEntry& f) -> std::optional<FileGoal> {
    const ns::PolicyResolution r = ns::ResolvePolicy(
        *t, f.path, f.layout.size(),
        absl::FromUnixMillis(f.layout.created_unix_ms()), now);
    if (r.policy == nullptr || !r.goal) return std::nullopt;
    return FileGoal{*r.goal, r.policy->dir};
  };
}

absl::StatusOr<GoalOf> LoadGoals(ns::NamespaceStore* store, Clock* clock) {
  RANGEFS_ASSIGN_OR_RETURN(ns::PolicyTable t,
                           ns::LoadPolicies(*store->kv(), store->keys()));
  for (const std::string& bad : t.invalid()) {
    RANGEFS_LOG(WARNING) << "keeper: storage policy skipped: " << bad;
  }
  return GoalsFrom(std::move(t), clock->Now());
}

}  // namespace keeper
}  // namespace rangefs
