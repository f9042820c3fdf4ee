#include "python/src/log_forwarder.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/logging.h"

namespace py = pybind11;

namespace rangefs {
namespace python {
namespace {

constexpr size_t kMaxQueued = 10000;

struct Line {
  int level;  // Python's logging level
  std::string file;
  int line;
  std::string message;
  double unix_time;
};

int PythonLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 10;
    case LogLevel::kInfo:
      return 20;
    case LogLevel::kWarning:
      return 30;
    case LogLevel::kError:
      return 40;
  }
  return 40;
}

// Thread-safe. The queue and the forwarding thread.
class Forwarder {
 public:
  explicit Forwarder(py::object emit) : emit_(std::move(emit)) {
    thread_ = std::thread([this] { Run(); });
    SetLogSink([this](const LogRecord& r) { Push(r); });
  }

  // Restores stderr, forwards what is queued, joins. Called with the GIL.
  ~Forwarder() {
    SetLogSink(nullptr);
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    {
      py::gil_scoped_release release;
      thread_.join();
    }
    emit_ = py::object();
  }

 private:
  void Push(const LogRecord& r) {
    absl::MutexLock l(&mu_);
    if (queue_.size() >= kMaxQueued) {
      ++dropped_;
      return;
    }
    queue_.push_back(Line{PythonLevel(r.level), std::string(r.file), r.line,
                          std::string(r.message),
                          absl::ToUnixMicros(r.time) / 1e6});
  }

  void Run() {
    for (;;) {
      std::deque<Line> batch;
      int64_t dropped = 0;
      bool stop = false;
      {
        absl::MutexLock l(&mu_);
        mu_.Await(absl::Condition(
            +[](Forwarder* f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu_) {
              return f->stop_ || !f->queue_.empty();
            },
            this));
        batch.swap(queue_);
        std::swap(dropped, dropped_);
        stop = stop_;
      }
      if (!batch.empty()) Emit(batch, dropped);
      if (stop) return;
    }
  }

  void Emit(const std::deque<Line>& batch, int64_t dropped) {
    py::gil_scoped_acquire gil;
    if (!emit_) return;
    if (dropped > 0) {
      Call(Line{30, "log_forwarder.cc", __LINE__,
                absl::StrCat(dropped, " log line(s) dropped (queue full)"),
                batch.front().unix_time});
    }
    for (const Line& line : batch) Call(line);
  }

  // With the GIL. A failing handler must not end the thread.
  void Call(const Line& l) {
    try {
      emit_(l.level, l.file, l.line, l.message, l.unix_time);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("rangefs log forwarding");
    }
  }

  py::object emit_;  // touched with the GIL only
  absl::Mutex mu_;
  std::deque<Line> queue_ ABSL_GUARDED_BY(mu_);
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// The module's one forwarder; touched with the GIL only.
std::unique_ptr<Forwarder>& Current() {
  static auto* f = new std::unique_ptr<Forwarder>;
  return *f;
}

}  // namespace

void BindLogForwarding(py::module_& m) {
  m.def(
      "_start_log_forwarding",
      [](py::object emit) {
        Current().reset();
        Current() = std::make_unique<Forwarder>(std::move(emit));
      },
      py::arg("emit"),
      "Sends the library's log lines to emit(level, file, line, message, "
      "unix_time), called on one forwarding thread with the GIL.");
  m.def(
      "_stop_log_forwarding", [] { Current().reset(); },
      "Forwards what is queued, then writes log lines to stderr again.");
}

}  // namespace python
}  // namespace rangefs
