#include "loadbalancer/registry.h"

#include <string>

#include "absl/status/status.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(RegistryTest, BuildsEveryListedPolicy) {
  ASSERT_EQ(PolicyNames().size(), 3u);
  for (absl::string_view name : PolicyNames()) {
    absl::StatusOr<std::unique_ptr<Policy>> p = NewPolicy(name);
    ASSERT_THAT(p, IsOk()) << name;
    ASSERT_NE(*p, nullptr);
    EXPECT_EQ((*p)->name(), name);
  }
}

TEST(RegistryTest, UnknownNameIsInvalidArgumentListingValidOnes) {
  EXPECT_THAT(NewPolicy("least_inflight"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"least_inflight\""),
                             HasSubstr("round_robin, least_loaded, sticky"))));
  EXPECT_THAT(NewPolicy(""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(NewPolicy("Round_Robin"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
