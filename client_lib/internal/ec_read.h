// File: internal/ec_read.h
//
// Reads of erasure-coded files (proto/layout.proto, StripedLayout.erasure)
// in one call. Healthy reads need nothing of this unit: a data cell's piece
// (EcRole::kData) is read like a plain striped piece. When it cannot be
// (every attempt failed: a dead or inadmissible node, a missing object, an
// I/O error, a CRC mismatch under verification, a stall), or when its hedge
// timer fires (a parity hedge), EcReads rebuilds it: it reads the SAME byte
// range of other cells of the row (helper pieces, EcRole::kHelper: parity
// cells, then other data cells, the least loaded node first:
// ec_helper_choice.h; data cells past the file's end are zeros and never
// read) through the call's usual machinery (node queues,
// deadlines, health, stall detection, verification against each cell's
// sidecar), takes the first k that answer out of up to k + m - 1, decodes
// (ec::Codec) and fills the piece under the claim rule (Batch::Fill). A
// helper that fails, stalls or is slow is replaced by another cell, never
// retried in line.
//
// Lost for good versus slow: a cell is lost for good only for a hard cause
// (its read answered an error: the object missing, a CRC mismatch, its
// node refusing; or its node dead for errors, gone or disabled:
// PieceState::hard_failure). A cell given up only for slowness (a stall,
// an attempt timeout, a node dead only for those: on a loaded machine
// healthy nodes look so) is the row's fallback: when a row has too few
// cells otherwise, each such cell is read once more patiently
// (PieceState::patient: judged by attempt_timeout and the call's deadline
// only, never stalled), the lost piece's own cell first, and the row waits
// for them. More than m cells of a row lost for good: DATA_LOSS naming the
// file, the row and the lost cells. Fewer, but still too few cells
// answering: UNAVAILABLE naming the slow cells' nodes (the deadline first:
// DEADLINE_EXCEEDED, the piece's reasons name them), never DATA_LOSS.
//
// The row plan (ec_call_cells.h): the cells of the row that the call
// reads anyway as its own pieces (a scan's window holds whole rows) serve
// the rebuild from the caller's buffer, never read twice; the rebuild
// reads only the cells still missing, parity cells first (a data cell
// outside the call may be read by the next call as well). A whole row in
// one call thus costs k cell reads, as a healthy one does, plus a decode.
// Helpers in place: a helper cell on a local file system (a mount read
// the calling thread may do itself, cached_read.cc) whose bytes are all in
// the page cache is not copied: the decode reads them where they lie,
// through the object's mapping (RingFile::Mapped), under RunCatchingSigbus
// (base/sigbus_guard.h): an object truncated meanwhile loses its cells to
// the row, not the process. A lost cell then costs its decode alone, and
// a Reader need not read rows (reader.h).
// Reading k + 1 cells for a whole-cell rebuild and decoding from the
// first k was measured (tests/bench/RESULTS.md, part E): with a node dead
// it cost 1.9x a healthy scan's CPU against 1.5x for k, for no gain; it
// is not done.
//
// Thread-compatible: a call's loop uses its EcReads with Batch::mu held
// (a decode into the caller's buffer lets go of it while it runs: the
// piece is claimed, and the cells it reads are done).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_EC_READ_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_EC_READ_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/internal/batch.h"
#include "client_lib/internal/ec_buffers.h"
#include "client_lib/internal/ec_call_cells.h"
#include "ec/codec.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace client_internal {

// The codecs of a client, one per (k, m), made on first use and kept (their
// decode tables are cached per erasure pattern). Thread-safe.
class EcCodecs {
 public:
  // The codec for RS(k, m); INVALID_ARGUMENT if the codec refuses them.
  absl::StatusOr<const ec::Codec*> Get(int k, int m);

 private:
  absl::Mutex mu_;
  std::map<std::pair<int, int>, std::unique_ptr<ec::Codec>> codecs_
      ABSL_GUARDED_BY(mu_);
};

// Rows' cell checksums (".cells" objects) a client has read, so that a
// row's are read once. Bounded: forgets all when full. Thread-safe.
class EcCellCrcs {
 public:
  // The k + m CRCs of `row` of the file whose first parity object is
  // `parity_object`, if known.
  bool Find(uint64_t file_id, const std::string& parity_object, uint64_t row,
            std::vector<uint32_t>* crcs);
  void Add(uint64_t file_id, const std::string& parity_object, uint64_t row,
           std::vector<uint32_t> crcs);

 private:
  static constexpr size_t kMaxRows = 1 << 16;
  absl::Mutex mu_;
  std::map<std::tuple<uint64_t, std::string, uint64_t>, std::vector<uint32_t>>
      rows_ ABSL_GUARDED_BY(mu_);
};

// What a call's erasure-coded reads did (ClientStats).
struct EcCounters {
  uint64_t degraded_reads = 0;       // pieces served by a rebuild
  uint64_t reconstructed_bytes = 0;  // bytes those rebuilds delivered
  uint64_t unchecked_cells = 0;      // whole cells rebuilt with no ".cells"
  uint64_t crc_mismatches = 0;       // rebuilt cells that failed the check
  uint64_t parity_hedges = 0;        // rebuilds started as hedges
  uint64_t parity_hedge_wins = 0;    // ... that answered before the cell
  uint64_t helper_reads = 0;         // helper pieces started
  // Bytes of helper cells that rebuilds decoded from copies (the rest came
  // from the call's own pieces or in place from the page cache: nothing
  // read for the rebuild alone was copied).
  uint64_t helper_bytes_copied = 0;
  uint64_t helper_bytes_in_place = 0;
  // Decodes from cells taken in place cut off by SIGBUS: an object shrank
  // under the read (its row was read again by copies).
  uint64_t decodes_cut_off = 0;
};

class EcReads {
 public:
  // What EcReads asks of the call's engine (ClientImpl, read_call.cc).
  class Engine {
   public:
    virtual ~Engine() = default;
    // Sends piece i's first attempt and puts it under the call's timers;
    // false if it could not be sent.
    virtual bool Start(int i) = 0;
    // Sends piece i again to its cell's node (tried before) as a patient
    // read (PieceState::patient); false if it could not be sent.
    virtual bool StartPatient(int i) = 0;
    // Whether the node of `r` is admissible now.
    virtual bool Usable(const v1::Replica& r) = 0;
    // Bytes in flight (queued or being read) on the node of `r`, by every
    // call of the client: which helper a rebuild reads (ec_helper_choice.h).
    virtual int64_t OutstandingBytes(const v1::Replica& r) = 0;
    // Takes `reads` reads' worth of the hedge budget; false if not left.
    virtual bool TakeHedgeBudget(int reads) = 0;
    virtual absl::StatusOr<const ec::Codec*> Codec(int k, int m) = 0;
    virtual EcCellCrcs& cell_crcs() = 0;
    // Called before each decode's pass, with b.mu released when the
    // decode runs without it (ClientHooks::before_ec_decode).
    virtual void BeforeDecode() {}
  };

  EcReads() = default;
  EcReads(const EcReads&) = delete;
  EcReads& operator=(const EcReads&) = delete;

  // Pieces of room Batch::pieces must have beyond the planned ones, for the
  // helpers of the kData pieces among them (reserved by PlanCall: a helper
  // never moves a piece).
  static size_t HelperRoom(const Batch& b);

  // Piece i (kData or kHelper) has no replica left to try: its rebuild
  // starts (kData) or its cell is replaced (kHelper) at the next Step.
  // False for a plain piece (it fails the usual way).
  bool TakeFailed(Batch& b, int i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Piece i's hedge timer fired: starts a rebuild of a kData piece (a
  // parity hedge, k reads of the budget) or one spare helper for a kHelper
  // piece (one read). True if one started.
  bool Hedge(Batch& b, int i, Engine& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Whether piece i has somewhere to go besides its own cell: a rebuild
  // (kData) or an untried cell of its row (kHelper).
  bool HasAlternative(const Batch& b, int i) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  // Starts the rebuilds of failed pieces, replaces lost helpers, decodes
  // rows that have k cells, fails rows that cannot have them, and drops
  // rebuilds whose piece was read after all. May release b.mu while it
  // copies (Batch::Fill).
  void Step(Batch& b, Engine& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);

  const EcCounters& counters() const { return counters_; }
  // Piece i's rebuild (its own, or the one it is a helper of), in words,
  // for a diagnostic (ClientImpl::RescueStuck); empty if it has none.
  std::string Describe(const Batch& b, int i) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);

 private:
  enum class CellState : uint8_t {
    kIdle,     // not read (yet)
    kSelf,     // the cell being rebuilt
    kZero,     // past the file's end: zeros, no read
    kReading,  // a helper piece in flight
    kLost,     // its helper failed
    kOwn,      // the call's own piece reads it (the row plan): no helper
  };
  struct Cell {
    CellState state = CellState::kIdle;
    int piece = -1;     // its helper piece; kOwn: the call's piece
    uint64_t read = 0;  // bytes of the range it holds (the rest: zeros)
    // Its bytes, unless kOwn or taken in place (its helper piece's
    // `mapped`: then unused). EcBuffers: reused.
    EcBuffer buf;
    const char* own = nullptr;  // kOwn: the range in the caller's buffer
    int own_piece = -1;         // the call's piece that reads it, if any
    std::string why;            // kLost: the helper's last failure
    // kLost: only for slowness (a fallback, see the file comment), and
    // whether a patient read of it was started already.
    bool slow = false;
    bool patient = false;
  };
  struct Rebuild {
    int piece = 0;  // the kData piece
    ns::EcGeometry g;
    uint64_t row = 0;
    int lost = 0;  // the piece's cell (its data column)
    uint64_t in_cell = 0;
    uint64_t length = 0;
    bool hedge = false;       // started while the cell's own read ran
    bool own_failed = false;  // the cell's own read failed meanwhile
    bool ended = false;
    bool failed = false;   // ended without the bytes
    absl::Status failure;  // why, when failed
    // Too few cells but for slow ones: waits for them (Fallback); the
    // piece's own cell was read again patiently.
    bool fallback = false;
    bool self_patient = false;
    std::vector<Cell> cells;  // k + m
    // A whole cell is rebuilt: checked against the row's ".cells" CRCs,
    // read by the kCells piece `crc_piece` from any parity column.
    bool check = false;
    // A decode from cells taken in place was cut off (an object shrank
    // under it): the row's cells are read by copies from then on.
    bool copy_only = false;
    bool crc_known = false;
    bool crc_unavailable = false;  // every ".cells" read failed
    uint32_t crc = 0;
    int crc_piece = -1;
    std::unique_ptr<char[]> crc_buf;
    google::protobuf::RepeatedPtrField<v1::Replica> cells_objects;
  };

  void StartRebuild(Batch& b, int i, bool hedge, Engine& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // The row plan: the cells of r's row the call's own pieces read.
  void TakeOwnCells(Batch& b, Rebuild& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // kOwn cells whose piece failed, or lost its own read and is being
  // rebuilt itself: lost to r.
  void DropLostOwnCells(const Batch& b, Rebuild& r) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  // Cell t's bytes (r.length of them) once Present: the caller's buffer
  // (kOwn), the object's mapping (a helper taken in place: Mapped) or the
  // helper's buffer.
  static const char* Bytes(const Batch& b, const Rebuild& r, int t)
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  static bool Mapped(const Batch& b, const Rebuild& r, int t)
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  // After a decode from cells taken in place was cut off (an object shrank
  // under it): those cells are not read yet, and the row's cells are read
  // by copies from now on (a copy of a shrunk object fails plainly: lost).
  // `cut_off`: after a SIGBUS, not an eviction (Decode's check).
  void UnmapCells(Batch& b, Rebuild& r, bool cut_off)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Decodes, starts helpers or fails, as the row's cells allow.
  void Advance(Batch& b, Rebuild& r, Engine& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Too few cells left but for slow ones: reads them again patiently (the
  // piece's own cell first) and waits; false if nothing is left to wait
  // for.
  bool Fallback(Batch& b, Rebuild& r, Engine& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Whether the call's piece i, slow, still has a read of its own coming:
  // in flight, or the patient one its rebuild starts (Fallback).
  bool OwnPending(const Batch& b, int i) const ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  // Cells of r lost for good (hard causes only).
  int HardLost(const Batch& b, const Rebuild& r) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  // Why r cannot be rebuilt: DATA_LOSS (more than m cells lost for good)
  // or UNAVAILABLE naming the slow cells.
  absl::Status RowLost(const Batch& b, const Rebuild& r) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  std::string SlowCells(const Batch& b, const Rebuild& r) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  // Starts helpers until k cells are in or in flight; false if too few
  // cells are left.
  bool Refill(Batch& b, Rebuild& r, Engine& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // An idle cell of r (ec_helper_choice.h: an admissible node first, a
  // parity cell before a data cell, the least loaded node); -1 if none.
  int PickCell(const Rebuild& r, const Batch& b, Engine& e) const;
  bool StartCell(Batch& b, Rebuild& r, int t, Engine& e, bool patient = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Whole-cell rebuilds: the lost cell's CRC, from the cache or a read of
  // the row's ".cells" (a kCells piece over the m parity nodes).
  void StartCrc(Batch& b, Rebuild& r, Engine& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Whether the check can be made (or is known impossible) now.
  bool CrcSettled(Batch& b, Rebuild& r, Engine& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Adds a piece of the row's file (range -1, within the reserved room);
  // -1 if the room is spent.
  static int AddPiece(Batch& b, const Rebuild& r, EcRole role)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Whether cell t's bytes are in (read, or zeros).
  bool Present(const Batch& b, const Rebuild& r, int t) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  void Decode(Batch& b, Rebuild& r, Engine& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Ends r: its helpers in flight are cancelled and no longer awaited.
  void End(Batch& b, Rebuild& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // A helper or ".cells" piece of an ended rebuild: cancelled and done,
  // unless bytes are being copied into it (claimed): that copy ends it.
  static void Drop(Batch& b, PieceState& h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Ends r without the bytes; fails its piece unless the cell's own read
  // still runs.
  void Fail(Batch& b, Rebuild& r, const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  static void FailPiece(Batch& b, int i, const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Whether piece i's own failure is already on its way to Step (this
  // unit's queue, or the call's failed attempts).
  bool OwnFailureQueued(const Batch& b, int i) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);
  std::string TooFewCells(const Batch& b, const Rebuild& r) const
      ABSL_SHARED_LOCKS_REQUIRED(b.mu);

  std::vector<std::unique_ptr<Rebuild>> rebuilds_;
  EcCallCells call_cells_;
  std::vector<int> failed_;  // pieces handed over by TakeFailed
  // Data pieces whose own answer a failed parity hedge's claim dropped
  // (Fail): read again.
  std::vector<int> reread_;
  EcCounters counters_;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_EC_READ_H_
