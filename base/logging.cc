#include "base/logging.h"

#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rangefs {
namespace {

LogLevel InitialLevel() {
  const char* env = getenv("RANGEFS_LOG_LEVEL");
  LogLevel level = LogLevel::kInfo;
  if (env != nullptr) ParseLogLevel(env, &level);
  return level;
}

std::atomic<int>& LevelVar() {
  static std::atomic<int> level{static_cast<int>(InitialLevel())};
  return level;
}

// The installed sink. Writers hold mu shared while they call it, so
// SetLogSink (exclusive) returns once no line is in the old one.
struct SinkSlot {
  absl::Mutex mu;
  LogSink sink ABSL_GUARDED_BY(mu);
  std::atomic<bool> set{false};
};

SinkSlot& Sink() {
  static auto* slot = new SinkSlot;
  return *slot;
}

RepeatLimiter& Repeats() {
  static auto* limiter = new RepeatLimiter(absl::Seconds(60));
  return *limiter;
}

void WriteStderr(const std::string& line) {
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

void SetLogSink(LogSink sink) {
  SinkSlot& s = Sink();
  absl::MutexLock l(&s.mu);
  s.set = sink != nullptr;
  s.sink = std::move(sink);
}

void SetLogRepeatPeriod(absl::Duration period) { Repeats().set_period(period); }

RepeatLimiter::RepeatLimiter(absl::Duration period, size_t max_keys)
    : period_(period), max_keys_(max_keys) {}

void RepeatLimiter::set_period(absl::Duration period) {
  absl::MutexLock l(&mu_);
  period_ = period;
}

bool RepeatLimiter::Admit(absl::string_view key, absl::Time now,
                          int64_t* suppressed) {
  absl::MutexLock l(&mu_);
  if (period_ <= absl::ZeroDuration()) {
    if (suppressed != nullptr) *suppressed = 0;
    return true;
  }
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    Entry& e = it->second;
    if (now - e.last_admitted < period_) {
      ++e.suppressed;
      return false;
    }
    if (suppressed != nullptr) *suppressed = e.suppressed;
    e = Entry{now, 0};
    return true;
  }
  if (entries_.size() >= max_keys_) {
    const absl::Duration period = period_;  // the lambda holds no lock
    absl::erase_if(entries_, [&](const auto& kv) {
      return now - kv.second.last_admitted >= period;
    });
    if (entries_.size() >= max_keys_) entries_.clear();
  }
  entries_.emplace(std::string(key), Entry{now, 0});
  if (suppressed != nullptr) *suppressed = 0;
  return true;
}

void SetMinLogLevel(LogLevel level) {
  LevelVar().store(static_cast<int>(level));
}

LogLevel MinLogLevel() { return static_cast<LogLevel>(LevelVar().load()); }

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "debug") {
    *level = LogLevel::kDebug;
  } else if (t == "info") {
    *level = LogLevel::kInfo;
  } else if (t == "warning" || t == "warn") {
    *level = LogLevel::kWarning;
  } else if (t == "error") {
    *level = LogLevel::kError;
  } else {
    return false;
  }
  return true;
}

namespace logging_internal {

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level), line_(line) {
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  time_ = absl::TimeFromTimeval(tv);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char prefix[64];
  snprintf(prefix, sizeof(prefix), "%c%02d%02d %02d:%02d:%02d.%06ld ",
           kLetters[static_cast<int>(level)], tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long>(tv.tv_usec));
  const char* base = strrchr(file, '/');
  file_ = base ? base + 1 : file;
  stream_ << prefix << file_ << ":" << line << "] ";
  prefix_size_ = static_cast<size_t>(stream_.tellp());
}

LogMessage::~LogMessage() {
  std::string line = stream_.str();
  if (level_ >= LogLevel::kWarning) {
    // Key: file:line and the text, so one watch's repeats are one key and
    // two watches (their names are in the text) are two.
    int64_t suppressed = 0;
    const std::string key = absl::StrCat(
        file_, ":", line_, " ", absl::string_view(line).substr(prefix_size_));
    if (!Repeats().Admit(key, time_, &suppressed)) return;
    if (suppressed > 0) {
      absl::StrAppend(&line, " [", suppressed,
                      " identical line(s) suppressed since the last]");
    }
  }
  SinkSlot& s = Sink();
  if (s.set.load(std::memory_order_acquire)) {
    absl::ReaderMutexLock l(&s.mu);
    if (s.sink != nullptr) {
      LogRecord r;
      r.level = level_;
      r.file = file_;
      r.line = line_;
      r.message = absl::string_view(line).substr(prefix_size_);
      r.time = time_;
      s.sink(r);
      return;
    }
  }
  line.push_back('\n');
  WriteStderr(line);
}

}  // namespace logging_internal
}  // namespace rangefs
