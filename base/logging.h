// File: logging.h
//
// A small leveled logger (Abseil 20220623 has no absl/log).
//
//   RANGEFS_LOG(INFO) << "registered node " << id;
//   RANGEFS_LOG(ERROR) << status;
//
// Lines go to stderr as "I1122 23:04:05.123456 agent.cc:42] text", or to
// the sink installed with SetLogSink (the Python package forwards them to
// Python's `logging`). The minimum level comes from SetMinLogLevel() or the
// RANGEFS_LOG_LEVEL environment variable (DEBUG, INFO, WARNING, ERROR).
//
// Repeated warnings are rate-limited: a WARNING or ERROR line identical to
// an earlier one from the same file:line (a watch reconnecting every 500 ms
// while etcd is down) is written once per SetLogRepeatPeriod() (default 60
// s); the next one written says how many were suppressed. Thread-safe: each
// line is written with one write(2).
#ifndef RANGEFS_BASE_LOGGING_H_
#define RANGEFS_BASE_LOGGING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rangefs {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();
// Parses "debug", "info", "warning" or "error" (any case).
bool ParseLogLevel(absl::string_view text, LogLevel* level);

// One log line, as a sink sees it. The views live for the call only.
struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  absl::string_view file;  // base name, "agent.cc"
  int line = 0;
  absl::string_view message;  // without prefix or newline
  absl::Time time;
};
using LogSink = std::function<void(const LogRecord&)>;

// Sends every line to `sink` instead of stderr; nullptr restores stderr.
// The sink runs on the logging thread, possibly several at once and under
// the caller's locks: it must be quick, must not block on locks of the
// code that logs, and must not log itself. Returns once no line is being
// written to the previous sink. Thread-safe.
void SetLogSink(LogSink sink);

// The window of the repeat limit; absl::ZeroDuration() turns it off.
void SetLogRepeatPeriod(absl::Duration period);

// Admits the first line of each key and then at most one per `period`,
// counting the ones it refuses. Keeps up to `max_keys` keys; when that is
// full, keys idle for a period are forgotten (if none are, all are).
// Thread-safe.
class RepeatLimiter {
 public:
  explicit RepeatLimiter(absl::Duration period, size_t max_keys = 1024);

  // True if a line with `key` may be written at `now`; then *suppressed
  // (may be null) is how many were refused since the last one admitted.
  bool Admit(absl::string_view key, absl::Time now, int64_t* suppressed);
  void set_period(absl::Duration period);

 private:
  struct Entry {
    absl::Time last_admitted;
    int64_t suppressed = 0;
  };
  absl::Mutex mu_;
  absl::Duration period_ ABSL_GUARDED_BY(mu_);
  const size_t max_keys_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

namespace logging_internal {

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;  // base name
  int line_;
  absl::Time time_;
  size_t prefix_size_ = 0;  // "I1122 ... agent.cc:42] "
  std::ostringstream stream_;
};

// Lets the macro below be used as an expression statement.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace logging_internal
}  // namespace rangefs

#define RANGEFS_LOG_LEVEL_DEBUG ::rangefs::LogLevel::kDebug
#define RANGEFS_LOG_LEVEL_INFO ::rangefs::LogLevel::kInfo
#define RANGEFS_LOG_LEVEL_WARNING ::rangefs::LogLevel::kWarning
#define RANGEFS_LOG_LEVEL_ERROR ::rangefs::LogLevel::kError

#define RANGEFS_LOG(level)                                                     \
  (RANGEFS_LOG_LEVEL_##level < ::rangefs::MinLogLevel())                       \
      ? (void)0                                                                \
      : ::rangefs::logging_internal::Voidify() &                               \
            ::rangefs::logging_internal::LogMessage(RANGEFS_LOG_LEVEL_##level, \
                                                    __FILE__, __LINE__)        \
                .stream()

#endif  // RANGEFS_BASE_LOGGING_H_
