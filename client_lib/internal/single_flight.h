// File: internal/single_flight.h
//
// Single flight at the piece level: concurrent reads in one client of the
// same bytes share one physical read. A piece (call.h) whose bytes lie
// within a piece already being read by another call (or by the same call)
// of the same file record (path and etcd mod_revision: the same layout, so
// the same bytes) joins that read as a follower instead of reading itself.
// When the leader's read succeeds, the I/O thread that holds its bytes
// copies them into every follower (Batch::Deliver, under each follower's
// claim rule). When the leader's call ends without them (deadline,
// cancellation, every replica failed), its followers are released and read
// for themselves (Batch::Release). A follower never waits past its own
// call's deadline: its call returns DEADLINE_EXCEEDED like any other.
//
// Locks: a call joins all its pieces at once, before it dispatches any,
// with the table's mutex only (no Batch::mu held: a Deliver or Release
// that comes at once takes the follower's Batch::mu itself); the table's
// mutex is never held while a Batch::mu is taken, and a leader ends its
// flight without its own Batch::mu held.
// Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_SINGLE_FLIGHT_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_SINGLE_FLIGHT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace rangefs {
namespace client_internal {

struct Batch;
class FlightTable;

// One physical read that other pieces may join. Created by FlightTable.
class Flight {
 public:
  struct Follower {
    std::shared_ptr<Batch> batch;
    int piece = 0;
    uint64_t offset = 0;  // of the follower's piece in the file
    uint64_t length = 0;
  };

  // `path` is in a layout the leader's call keeps alive; a flight is in
  // the table only while that call runs.
  Flight(std::shared_ptr<FlightTable> table, std::pair<int64_t, uint64_t> key,
         const std::string* path, uint64_t offset, uint64_t length)
      : table_(std::move(table)),
        key_(key),
        path_(path),
        offset_(offset),
        length_(length) {}

  // The leader's read succeeded: `bytes` holds the flight's `length` bytes
  // (valid during this call). Copies them into every follower still
  // waiting and ends the flight. Call without any Batch::mu held.
  void Publish(const char* bytes);
  // The leader's call ended without the bytes: releases the followers to
  // read for themselves. Idempotent. Call without any Batch::mu held.
  void Abandon();

 private:
  friend class FlightTable;
  const std::shared_ptr<FlightTable> table_;
  const std::pair<int64_t, uint64_t> key_;  // mod_revision, file_id
  const std::string* const path_;
  const uint64_t offset_;
  const uint64_t length_;
  // Guarded by the table's mutex.
  bool ended_ = false;
  std::vector<Follower> followers_;
};

struct FlightStats {
  uint64_t shared_pieces = 0;  // pieces served by another piece's read
  uint64_t shared_bytes = 0;   // their bytes: physical reads saved
  uint64_t released = 0;       // followers whose leader ended without bytes
  int64_t waiting = 0;         // followers waiting now
};

class FlightTable : public std::enable_shared_from_this<FlightTable> {
 public:
  // For every piece of `batch` (planned, none dispatched yet): if a flight
  // in progress covers its bytes (same path and record, same or containing
  // range), joins it; else starts one that the piece leads (PieceState::
  // flight: it reads, then Publish or Abandon). Appends the leaders'
  // indices to `lead`, in reverse piece order. Pieces shorter than
  // `min_bytes` neither join nor lead: they are appended to `lead` without
  // a flight. Call without batch->mu.
  void JoinOrLead(const std::shared_ptr<Batch>& batch, uint64_t min_bytes,
                  std::vector<int>& lead);
  FlightStats stats() const;

 private:
  friend class Flight;
  using Key = std::pair<int64_t, uint64_t>;  // mod_revision, file_id
  // Ends `f`: removes it from the table and returns its followers (none
  // if it had ended already).
  std::vector<Flight::Follower> Take(Flight* f);

  // A std::mutex: taken twice per read call, and Debian's debug-build
  // absl::Mutex runs deadlock detection on every lock.
  mutable std::mutex mu_;
  // Guarded by mu_.
  absl::flat_hash_map<Key, std::vector<std::shared_ptr<Flight>>> flights_;
  std::atomic<uint64_t> shared_pieces_{0}, shared_bytes_{0}, released_{0};
  std::atomic<int64_t> waiting_{0};
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_SINGLE_FLIGHT_H_
