// File: internal/read_ring.h
//
// ReadRing: up to `depth` file reads in flight on one io_uring
// (IORING_OP_READ into buffers the ring owns), plus an eventfd read kept
// armed so that another thread can end a wait (Wake). It knows nothing of
// its users: each read carries an opaque Context that the ring keeps and
// hands back when the read ends (3FS's ReadIO user context).
//
//   std::unique_ptr<ReadRing> ring = ReadRing::Create(32, false, &error);
//   ring->Start(file, offset, length, alloc, direct, std::move(ctx));
//   ring->SubmitAndWait(absl::InfiniteDuration());
//   ring->Reap([](ReadRing::Slot& s, int res) { /* s.buf, s.done */ });
//
// Used by one thread at a time (Wake aside).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_READ_RING_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_READ_RING_H_

#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "client_lib/fs.h"
#include "client_lib/internal/ring_file.h"

namespace rangefs {
namespace client_internal {

class ReadRing {
 public:
  // What the ring's user attaches to a read (subclass it). When the read
  // has been reaped the ring calls Recycle: a context that lets go of what
  // it holds (and returns true) stays with its slot, memory and all, for
  // the next read there (NextContext); any other is destroyed.
  struct Context {
    virtual ~Context() = default;
    virtual bool Recycle() { return false; }
  };
  struct Slot {
    std::unique_ptr<Context> context;
    std::shared_ptr<RingFile> file;
    uint64_t offset = 0;  // of the read's first byte in the file
    bool direct = false;  // O_DIRECT: a short, unaligned read is the end
    char* buf = nullptr;  // aligned, owned; grows only
    size_t cap = 0;
    // Not null: the read lands here (the caller's memory) instead of `buf`.
    char* into = nullptr;
    size_t want = 0;  // bytes to read from `offset`
    size_t done = 0;
    // Where the bytes are.
    char* data() const { return into != nullptr ? into : buf; }
  };

  // Null, with the reason in `*error`, when the kernel refuses a ring.
  // `nowait`: every read is RWF_NOWAIT, and one that would block ends with
  // -EAGAIN (or -EOPNOTSUPP where the file system cannot say) instead of
  // waiting in an io-wq worker of the submitting thread: a calling thread
  // must never own a read that a hung mount holds (its exit would wait).
  static std::unique_ptr<ReadRing> Create(int depth, bool nowait,
                                          std::string* error);
  ~ReadRing();
  ReadRing(const ReadRing&) = delete;
  ReadRing& operator=(const ReadRing&) = delete;

  size_t free_slots() const { return free_.size(); }
  bool wake_armed() const { return wake_armed_; }
  int inflight() const { return inflight_; }
  // The context of the slot the next Start takes (precondition:
  // free_slots() > 0): the one its last read left (recycled), or a new C.
  // Fill it, then Start with a null context.
  template <typename C>
  C* NextContext();
  // Prepares the read of `want` bytes at `offset` of `file` into a free
  // slot's buffer (at least `alloc` bytes, aligned for O_DIRECT;
  // precondition: free_slots() > 0), or into `into` if not null (`want`
  // bytes that stay valid until the read is reaped; aligned for
  // O_DIRECT); the kernel sees it at the next SubmitAndWait. A null
  // `context`: the slot keeps the one NextContext gave.
  void Start(std::shared_ptr<RingFile> file, uint64_t offset, size_t want,
             size_t alloc, bool direct, std::unique_ptr<Context> context,
             char* into = nullptr);
  // Submits what was prepared, then waits up to `timeout` (zero: not at
  // all; InfiniteDuration: without limit) for a completion or a Wake.
  void SubmitAndWait(absl::Duration timeout);
  // For each read that ended (every byte wanted, end of file or an error):
  // done(slot, res) with res < 0 a -errno, then the slot is free again (its
  // context and file released; its buffer keeps the bytes until the slot's
  // next Start). Short reads are issued again for the rest.
  // At most `max` of them (the others stay in the kernel's queue for the
  // next Reap).
  template <typename F>
  void Reap(F&& done, size_t max = SIZE_MAX);
  // Ends a SubmitAndWait of the ring's user. Any thread.
  void Wake();

 private:
  static constexpr uint64_t kWakeTag = ~uint64_t{0};

  ReadRing() = default;
  // A free submission entry (the ring has one more than its slots).
  io_uring_sqe* GetSqe();
  void Issue(int slot);
  // Moves the completions out of the kernel's queue into ended_.
  void TakeCompletions(size_t max);

  io_uring ring_{};
  bool nowait_ = false;
  bool ring_ok_ = false;  // io_uring_queue_init succeeded
  int wake_fd_ = -1;
  uint64_t wake_buf_ = 0;
  bool wake_armed_ = false;
  std::vector<Slot> slots_;
  std::vector<int> free_;
  int inflight_ = 0;
  std::vector<std::pair<int, int>> ended_;  // Reap's scratch
};

template <typename C>
C* ReadRing::NextContext() {
  Slot& s = slots_[free_.back()];
  C* c = dynamic_cast<C*>(s.context.get());
  if (c == nullptr) {
    auto fresh = std::make_unique<C>();
    c = fresh.get();
    s.context = std::move(fresh);
  }
  return c;
}

template <typename F>
void ReadRing::Reap(F&& done, size_t max) {
  TakeCompletions(max);
  for (const auto& [i, res] : ended_) {
    Slot& s = slots_[i];
    if (res == -EINTR || (res == -EAGAIN && !nowait_)) {
      Issue(i);
      continue;
    }
    if (res > 0) {
      s.done += static_cast<size_t>(res);
      // Short reads are retried for the rest; O_DIRECT: a short read that
      // is not a multiple of the alignment can only be EOF.
      const bool eof = s.direct && res % kDirectIoAlignment != 0;
      if (s.done < s.want && !eof) {
        Issue(i);
        continue;
      }
    }
    done(s, res);
    // Released only now: `done` may keep its context's references. The
    // buffer keeps its bytes until the slot's next Start.
    if (s.context != nullptr && !s.context->Recycle()) s.context.reset();
    s.file.reset();
    s.into = nullptr;
    --inflight_;
    free_.push_back(i);
  }
  ended_.clear();
}

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_READ_RING_H_
