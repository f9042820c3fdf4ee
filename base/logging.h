// File: logging.h
//
// A small leveled logger (Abseil 20220623 has no absl/log).
//
//   RANGEFS_LOG(INFO) << "registered node " << id;
//   RANGEFS_LOG(ERROR) << status;
//
// Lines go to stderr as "I1122 23:04:05.123456 agent.cc:42] text". The
// minimum level comes from SetMinLogLevel() or the RANGEFS_LOG_LEVEL
// environment variable (DEBUG, INFO, WARNING, ERROR). Thread-safe: each line
// is written with one write(2).
#ifndef RANGEFS_BASE_LOGGING_H_
#define RANGEFS_BASE_LOGGING_H_

#include <sstream>

#include "absl/strings/string_view.h"

namespace rangefs {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();
// Parses "debug", "info", "warning" or "error" (any case).
bool ParseLogLevel(absl::string_view text, LogLevel* level);

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
