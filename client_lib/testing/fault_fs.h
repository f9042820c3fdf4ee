// File: fault_fs.h
//
// Test file systems for the client's mount path.
//
// MemoryFs: files and directories in memory.
// FaultyFs: wraps another ReadOnlyFs and, for PReads whose path contains a
// substring, fails, delays or blocks the Nth matching read (or every one).
// A blocked read waits until Release() (or the FaultyFs is destroyed) and
// then performs the real read, writing into the buffer it was given, like a
// hung hard NFS mount that comes back.
//
//   MemoryFs mem;  mem.AddFile("/m/n1/obj", data);
//   FaultyFs faulty(&mem);
//   faulty.AddRule({.path_contains = "/n1/", .action = FaultAction::kBlock});
//
// Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_TESTING_FAULT_FS_H_
#define RANGEFS_CLIENT_LIB_TESTING_FAULT_FS_H_

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client_lib/fs.h"

namespace rangefs {

class MemoryFs : public ReadOnlyFs {
 public:
  // Adds (or replaces) a file; its parent directories come to exist.
  void AddFile(const std::string& path, std::string data);
  // Flips bit 0 of byte `offset` of `path`.
  void CorruptByte(const std::string& path, uint64_t offset);
  void RemoveDir(const std::string& dir);  // CheckDir then fails
  uint64_t reads() const { return reads_.load(); }

  // Files are keyed by MountPath::full(); an object path with "..", "."
  // or empty components is refused like PosixFs does (INVALID_ARGUMENT).
  absl::StatusOr<size_t> PRead(const MountPath& path, uint64_t offset,
                               absl::Span<char> dst,
                               const FsReadOptions& options) override;
  absl::StatusOr<std::string> ReadFile(const MountPath& path) override;
  absl::Status CheckDir(const std::string& path) override;

 private:
  absl::Mutex mu_;
  std::map<std::string, std::string> files_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, bool> dirs_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> reads_{0};
};

enum class FaultAction { kFail, kDelay, kBlock };

struct FaultRule {
  std::string path_contains;  // empty = every path
  FaultAction action = FaultAction::kFail;
  // 0 = every matching read; else only the nth (1-based) matching read.
  int nth = 0;
  absl::Status error = absl::UnavailableError("injected EIO");
  absl::Duration delay = absl::ZeroDuration();  // kDelay (real time)
  // kDelay: plus a uniformly random extra in [0, jitter).
  absl::Duration jitter = absl::ZeroDuration();
};

class FaultyFs : public ReadOnlyFs {
 public:
  explicit FaultyFs(ReadOnlyFs* base) : base_(base) {}
  // Releases blocked reads and waits until none is inside PRead.
  ~FaultyFs() override;

  void AddRule(FaultRule rule);
  void ClearRules();
  // Unblocks every blocked read, now and later (until AddRule again).
  void Release();
  int blocked_now();
  // Waits until at least `n` reads are blocked; false after `timeout`.
  bool WaitForBlocked(int n, absl::Duration timeout);
  int faults() { return faults_.load(); }
  // The most PReads inside at once since construction or ResetMaxInside.
  int max_inside();
  void ResetMaxInside();

  absl::StatusOr<size_t> PRead(const MountPath& path, uint64_t offset,
                               absl::Span<char> dst,
                               const FsReadOptions& options) override;
  absl::StatusOr<std::string> ReadFile(const MountPath& path) override {
    return base_->ReadFile(path);
  }
  absl::Status CheckDir(const std::string& path) override {
    return base_->CheckDir(path);
  }

 private:
  struct Rule {
    FaultRule rule;
    int matched = 0;
  };
  ReadOnlyFs* const base_;
  absl::Mutex mu_;
  std::vector<Rule> rules_ ABSL_GUARDED_BY(mu_);
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  int blocked_ ABSL_GUARDED_BY(mu_) = 0;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
  int max_inside_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int> faults_{0};
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_TESTING_FAULT_FS_H_
