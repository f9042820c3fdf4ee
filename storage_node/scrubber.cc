#include "storage_node/scrubber.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {
namespace {

// Sleeps as needed so that `bytes` since `start` stay under `rate` bytes/s.
void Throttle(Clock* clock, absl::Time start, uint64_t bytes, uint64_t rate) {
  if (rate == 0) return;
  absl::Duration due = absl::Seconds(static_cast<double>(bytes) / rate);
  absl::Duration elapsed = clock->MonotonicNow() - start;
  if (due > elapsed) clock->SleepFor(due - elapsed);
}

// The body of VerifyObject, with throttling and cancellation between
// blocks. Returns CANCELLED if `cancelled` fired.
absl::Status VerifyObjectImpl(const ExportRoot& root, const std::string& path,
                              uint64_t* bytes_read, const ScrubOptions* opts,
                              absl::Time start, uint64_t* total) {
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd fd, root.OpenForRead(path));
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd sfd, root.OpenSidecarForRead(path));
  RANGEFS_ASSIGN_OR_RETURN(Checksums c, ReadSidecar(sfd.get(), path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat object ", path));
  }
  if (static_cast<uint64_t>(st.st_size) != c.object_size) {
    return absl::DataLossError(absl::StrCat("object ", path, " is ", st.st_size,
                                            " bytes, sidecar says ",
                                            c.object_size));
  }
  std::string buf(c.block_size, '\0');
  uint32_t whole = 0;
  for (size_t b = 0; b < c.block_crc32c.size(); ++b) {
    if (opts != nullptr && opts->cancelled && opts->cancelled()) {
      return absl::CancelledError("scrub cancelled");
    }
    uint64_t off = uint64_t{b} * c.block_size;
    size_t len = static_cast<size_t>(
        std::min<uint64_t>(c.block_size, c.object_size - off));
    size_t done = 0;
    while (done < len) {
      ssize_t n = pread(fd.get(), &buf[done], len - done,
                        static_cast<off_t>(off + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return ErrnoStatus(errno, absl::StrCat("pread ", path, " at ", off));
      }
      if (n == 0) {
        return absl::DataLossError(
            absl::StrCat("object ", path, " shrank while scrubbing"));
      }
      done += static_cast<size_t>(n);
    }
    if (bytes_read != nullptr) *bytes_read += len;
    uint32_t crc = Crc32c(absl::string_view(buf.data(), len));
    whole = Crc32cExtend(whole, buf.data(), len);
    if (crc != c.block_crc32c[b]) {
      return absl::DataLossError(
          absl::StrCat("object ", path, " block ", b, " (bytes ", off, "..",
                       off + len, ") has crc32c ", absl::Hex(crc),
                       ", sidecar says ", absl::Hex(c.block_crc32c[b])));
    }
    if (opts != nullptr) {
      *total += len;
      Throttle(opts->clock, start, *total, opts->max_bytes_per_sec);
    }
  }
  if (whole != c.crc32c) {
    return absl::DataLossError(
        absl::StrCat("object ", path, " whole-object crc32c mismatch"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyObject(const ExportRoot& root, const std::string& path,
                          uint64_t* bytes_read) {
  uint64_t total = 0;
  return VerifyObjectImpl(root, path, bytes_read, nullptr, absl::Time(),
                          &total);
}

ScrubReport ScrubExport(const ExportRoot& root, const ScrubOptions& options) {
  ScrubOptions opts = options;
  if (opts.clock == nullptr) opts.clock = Clock::Real();
  ScrubReport report;
  report.started = opts.clock->Now();
  const absl::Time start = opts.clock->MonotonicNow();
  uint64_t total = 0;
  absl::Status walk = root.ForEachObject([&](const std::string& path) {
    if (opts.cancelled && opts.cancelled()) {
      report.cancelled = true;
      return false;
    }
    uint64_t bytes = 0;
    absl::Status s = VerifyObjectImpl(root, path, &bytes, &opts, start, &total);
    report.bytes_checked += bytes;
    if (s.ok()) {
      ++report.objects_checked;
    } else if (absl::IsCancelled(s)) {
      report.cancelled = true;
      return false;
    } else if (absl::IsNotFound(s)) {
      // No sidecar (or the object vanished): nothing to verify against.
      ++report.objects_without_checksums;
    } else {
      ++report.objects_checked;
      RANGEFS_LOG(WARNING) << "scrub: " << s;
      report.corrupt_paths.push_back(path);
    }
    return true;
  });
  if (!walk.ok())
    RANGEFS_LOG(ERROR) << "scrub walk of " << root.root_dir() << ": " << walk;
  std::sort(report.corrupt_paths.begin(), report.corrupt_paths.end());
  report.finished = opts.clock->Now();
  return report;
}

BackgroundScrubber::BackgroundScrubber(const ExportRoot* root, Options options)
    : root_(root), options_(options) {
  thread_ = std::thread([this] { Run(); });
}

BackgroundScrubber::~BackgroundScrubber() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  thread_.join();
}

std::optional<ScrubReport> BackgroundScrubber::LastReport() const {
  absl::MutexLock l(&mu_);
  return last_;
}

int BackgroundScrubber::passes() const {
  absl::MutexLock l(&mu_);
  return passes_;
}

void BackgroundScrubber::Run() {
  ScrubOptions opts;
  opts.max_bytes_per_sec = options_.max_bytes_per_sec;
  opts.clock = options_.clock;
  opts.cancelled = [this] {
    absl::MutexLock l(&mu_);
    return stop_;
  };
  for (;;) {
    const absl::Time pass_start = absl::Now();
    ScrubReport r = ScrubExport(*root_, opts);
    RANGEFS_LOG(INFO) << "scrub of " << root_->root_dir() << ": "
                      << r.objects_checked << " objects, " << r.bytes_checked
                      << " bytes, " << r.corrupt_paths.size() << " corrupt";
    absl::MutexLock l(&mu_);
    if (!r.cancelled) {
      last_ = std::move(r);
      ++passes_;
    }
    const absl::Time next = pass_start + options_.interval;
    mu_.AwaitWithDeadline(absl::Condition(&stop_), next);
    if (stop_) return;
  }
}

}  // namespace node
}  // namespace rangefs
