// File: http_get.h
//
// One HTTP/1.0 GET to a server on 127.0.0.1, for tests of metrics
// endpoints:
//
//   absl::StatusOr<std::string> r = testing::HttpGet(port, "/metrics");
//   // r: the whole response, status line and headers included.
#ifndef RANGEFS_BASE_TESTING_HTTP_GET_H_
#define RANGEFS_BASE_TESTING_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rangefs {
namespace testing {

// Sends "GET `path` HTTP/1.0" to 127.0.0.1:`port` and reads until the
// server closes (each socket call bounded by `timeout`, whole seconds).
// UNAVAILABLE if it cannot connect or the exchange fails.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(5));

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_BASE_TESTING_HTTP_GET_H_
