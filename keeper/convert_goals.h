// File: convert_goals.h
//
// The keeper's view of storage policies (namespace/storage_policy.h): once
// a round, every policy is read from etcd and each file's goal resolved
// (nearest ancestor policy; min-size and min-age exemptions) into the
// GoalOf that repair/convert_plan.h plans with.
//
//   ko.goals = [&] { return LoadGoals(store.get(), Clock::Real()); };
#ifndef RANGEFS_KEEPER_CONVERT_GOALS_H_
#define RANGEFS_KEEPER_CONVERT_GOALS_H_

#include "absl/status/statusor.h"
#include "base/clock.h"
#include "namespace/storage_policy.h"
#include "namespace/store.h"
#include "repair/convert_plan.h"

namespace rangefs {
namespace keeper {

// A GoalOf over `table` judged at `now` (the file's age from its
// layout's created_unix_ms).
GoalOf GoalsFrom(ns::PolicyTable table, absl::Time now);

// Reads the policies of `store`'s cluster (bad records are logged and
// skipped) and returns GoalsFrom(them, clock->Now()). Errors: etcd's.
// `store` and `clock` are not owned.
absl::StatusOr<GoalOf> LoadGoals(ns::NamespaceStore* store, Clock* clock);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_CONVERT_GOALS_H_
