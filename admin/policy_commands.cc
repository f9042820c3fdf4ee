#include "admin/policy_commands.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"
#include "namespace/storage_policy.h"
#include "namespace/storage_policy_placement.h"

namespace rangefs {
namespace admin {
namespace {

// "/crawl/" -> "/crawl"; then the namespace's directory rule.
absl::StatusOr<std::string> PolicyDir(const Args& a, const char* usage) {
  if (a.positional().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("usage: ", usage));
  }
  std::string dir = a.positional()[0];
  if (dir.size() > 1 && absl::EndsWith(dir, "/")) dir.pop_back();
  if (absl::Status s = ns::ValidateDir(dir); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy directory: ", s.message()));
  }
  return dir;
}

// --replicas=N or --ec=K+M, exactly one.
absl::StatusOr<ns::LayoutGoal> GoalFromFlags(const Args& a) {
  if (a.Has("replicas") == a.Has("ec")) {
    return absl::InvalidArgumentError(
        "policy set: give exactly one of --replicas=N and --ec=K+M");
  }
  if (a.Has("ec")) return ns::ParseLayoutGoal(absl::StrCat("ec=", a.Get("ec")));
  return ns::ParseLayoutGoal(absl::StrCat("replicas=", a.Get("replicas")));
}

absl::StatusOr<ns::PlacementCapacity> ReadCapacity(ns::NamespaceStore& store) {
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes, store.ListNodes());
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::LiveEntry> live, store.ListLive());
  return ns::CountPlacementCapacity(nodes, live);
}

absl::StatusOr<Table> PolicySet(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(
      a.CheckAllowed({"replicas", "ec", "min-size", "min-age"}));
  const char* usage =
      "policy set DIR (--replicas=N | --ec=K+M) [--min-size=BYTES] "
      "[--min-age=DURATION]";
  ns::StoragePolicy p;
  RANGEFS_ASSIGN_OR_RETURN(p.dir, PolicyDir(a, usage));
  RANGEFS_ASSIGN_OR_RETURN(p.goal, GoalFromFlags(a));
  if (a.Has("min-size")) {
    RANGEFS_ASSIGN_OR_RETURN(p.min_size, ParseBytes(a.Get("min-size")));
  }
  if (a.Has("min-age")) {
    RANGEFS_ASSIGN_OR_RETURN(p.min_age, ParseMinAge(a.Get("min-age")));
  }
  p.set_time = absl::Now();
  RANGEFS_ASSIGN_OR_RETURN(ns::PlacementCapacity capacity,
                           ReadCapacity(*ctx.store));
  if (absl::Status s = ns::CheckGoalPlaceable(p.goal, capacity); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("policy set ", p.dir, " ", p.goal.ToString(),
                     " refused: ", s.message()));
  }
  RANGEFS_RETURN_IF_ERROR(
      ns::PutPolicy(*ctx.store->kv(), ctx.store->keys(), p));
  Table t;
  t.message = absl::StrCat(
      "policy set: ", ns::DescribePolicy(p),
      "; new files put below it follow it, and rangefs-keeper converts the "
      "files already there");
  return t;
}

absl::StatusOr<Table> PolicyLs(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  if (!a.positional().empty()) {
    return absl::InvalidArgumentError("usage: policy ls");
  }
  RANGEFS_ASSIGN_OR_RETURN(
      ns::PolicyTable policies,
      ns::LoadPolicies(*ctx.store->kv(), ctx.store->keys()));
  RANGEFS_ASSIGN_OR_RETURN(ns::PlacementCapacity capacity,
                           ReadCapacity(*ctx.store));
  Table t;
  t.columns = {"dir", "goal", "min_size", "min_age", "set", "placeable"};
  for (const ns::StoragePolicy& p : policies.policies()) {
    const absl::Status placeable = ns::CheckGoalPlaceable(p.goal, capacity);
    t.AddRow(
        {p.dir, p.goal.ToString(), Cell::Int(static_cast<int64_t>(p.min_size)),
         absl::FormatDuration(p.min_age),
         absl::FormatTime("%Y-%m-%d %H:%M:%S", p.set_time, absl::UTCTimeZone()),
         placeable.ok() ? std::string("yes")
                        : absl::StrCat("no: ", placeable.message())});
  }
  for (const std::string& bad : policies.invalid()) {
    t.AddRow({"-", "invalid", Cell::Null(), "-", "-", bad});
  }
  t.message = absl::StrCat(policies.policies().size(), " policy(ies)");
  if (!policies.invalid().empty()) {
    absl::StrAppend(&t.message, ", ", policies.invalid().size(),
                    " invalid record(s) (ignored; `policy rm` the directory "
                    "or `policy set` it again)");
  }
  return t;
}

absl::StatusOr<Table> PolicyRm(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  RANGEFS_ASSIGN_OR_RETURN(std::string dir, PolicyDir(a, "policy rm DIR"));
  RANGEFS_RETURN_IF_ERROR(
      ns::DeletePolicy(*ctx.store->kv(), ctx.store->keys(), dir));
  Table t;
  t.message = absl::StrCat(
      "policy of ", dir,
      " removed; files below it keep their layout (a policy further up, if "
      "any, applies now)");
  return t;
}

}  // namespace

absl::StatusOr<absl::Duration> ParseMinAge(absl::string_view text) {
  absl::Duration d;
  bool ok = false;
  int64_t days = 0;
  if (absl::EndsWith(text, "d") &&
      absl::SimpleAtoi(text.substr(0, text.size() - 1), &days) && days >= 0 &&
      days <= 36600) {
    d = absl::Hours(24 * days);
    ok = true;
  } else {
    ok = absl::ParseDuration(text, &d);
  }
  if (!ok || d < absl::ZeroDuration() ||
      d > absl::Seconds(ns::kMaxPolicyMinAgeSeconds) ||
      d != absl::Seconds(absl::ToInt64Seconds(d))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--min-age=\"", text,
        "\": want a duration of whole seconds up to 100 years, e.g. 36h, "
        "90m, 7d or 0"));
  }
  return d;
}

absl::StatusOr<Table> RunPolicyCommand(Context& ctx, Args& args) {
  const std::string verb = args.Shift();
  if (verb == "set") return PolicySet(ctx, args);
  if (verb == "ls" || verb == "list") return PolicyLs(ctx, args);
  if (verb == "rm" || verb == "remove") return PolicyRm(ctx, args);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy command \"", verb, "\"\n", Usage("policy")));
}

}  // namespace admin
}  // namespace rangefs
