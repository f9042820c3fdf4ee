#include "mount/xattrs.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "namespace/layout.h"

namespace rangefs {
namespace mount {

namespace {

int MinReplicas(const v1::FileLayout& l) {
  int n = INT_MAX;
  for (const v1::Extent& e : l.extents()) n = std::min(n, e.replicas_size());
  for (const auto& t : l.striped().targets()) {
    n = std::min(n, t.replicas_size());
  }
  return n == INT_MAX ? 0 : n;
}

}  // namespace

const std::vector<std::string>& XattrNames() {
  static const std::vector<std::string>* names = new std::vector<std::string>{
      "user.rangefs.layout",      "user.rangefs.generation",
      "user.rangefs.replicas",    "user.rangefs.nodes",
      "user.rangefs.file_id",     "user.rangefs.policy",
      "user.rangefs.policy_state"};
  return *names;
}

std::string XattrList() {
  std::string out;
  for (const std::string& n : XattrNames()) {
    out.append(n);
    out.push_back('\0');
  }
  return out;
}

bool IsPolicyXattr(absl::string_view name) {
  return name == "user.rangefs.policy" || name == "user.rangefs.policy_state";
}

absl::StatusOr<std::string> XattrValue(absl::string_view name,
                                       const v1::FileLayout& layout,
                                       const ns::PolicyResolution* policy) {
  if (IsPolicyXattr(name)) {
    if (policy == nullptr || policy->policy == nullptr) return "none";
    if (name == "user.rangefs.policy") {
      return ns::DescribePolicy(*policy->policy);
    }
    return ns::PolicyState(*policy, layout);
  }
  if (name == "user.rangefs.layout") {
    google::protobuf::util::JsonPrintOptions o;
    o.add_whitespace = false;
    o.preserve_proto_field_names = true;
    std::string out;
    auto s = google::protobuf::util::MessageToJsonString(layout, &out, o);
    if (!s.ok()) {
      return absl::InternalError(
          absl::StrCat("layout to JSON: ", std::string(s.message())));
    }
    return out;
  }
  if (name == "user.rangefs.generation") {
    return absl::StrCat(layout.generation());
  }
  if (name == "user.rangefs.replicas") return absl::StrCat(MinReplicas(layout));
  if (name == "user.rangefs.nodes") {
    return absl::StrJoin(ns::ReferencedNodes(layout), ",");
  }
  if (name == "user.rangefs.file_id") return absl::StrCat(layout.file_id());
  return absl::NotFoundError(absl::StrCat("no attribute ", name));
}

}  // namespace mount
}  // namespace rangefs
