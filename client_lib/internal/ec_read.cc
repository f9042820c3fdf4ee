#include "client_lib/internal/ec_read.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/crc32c.h"
#include "base/logging.h"
#include "base/sigbus_guard.h"
#include "client_lib/internal/ec_helper_choice.h"

namespace rangefs {
namespace client_internal {
namespace {

// The name of cell t of a row with k data cells: "data cell 2", "parity
// cell 0".
std::string CellName(int t, int k) {
  return t < k ? absl::StrCat("data cell ", t)
               : absl::StrCat("parity cell ", t - k);
}

const v1::Replica& CellReplica(const v1::FileLayout& l, int t, int k) {
  return t < k ? ns::DataReplica(l, t) : ns::ParityReplica(l, t - k);
}

}  // namespace

absl::StatusOr<const ec::Codec*> EcCodecs::Get(int k, int m) {
  absl::MutexLock l(&mu_);
  std::unique_ptr<ec::Codec>& c = codecs_[{k, m}];
  if (c == nullptr) {
    absl::StatusOr<std::unique_ptr<ec::Codec>> made =
        ec::NewCodec({.kind = ec::CodecKind::kRsCauchyGf8, .k = k, .m = m});
    if (!made.ok()) return made.status();
    c = std::move(*made);
  }
  return c.get();
}

bool EcCellCrcs::Find(uint64_t file_id, const std::string& parity_object,
                      uint64_t row, std::vector<uint32_t>* crcs) {
  absl::MutexLock l(&mu_);
  auto it = rows_.find({file_id, parity_object, row});
  if (it == rows_.end()) return false;
  *crcs = it->second;
  return true;
}

void EcCellCrcs::Add(uint64_t file_id, const std::string& parity_object,
                     uint64_t row, std::vector<uint32_t> crcs) {
  absl::MutexLock l(&mu_);
  if (rows_.size() >= kMaxRows) rows_.clear();
  rows_[{file_id, parity_object, row}] = std::move(crcs);
}

size_t EcReads::HelperRoom(const Batch& b) {
  size_t room = 0;
  for (const PieceState& p : b.pieces) {
    if (p.ec != EcRole::kData) continue;
    const ns::EcGeometry g = ns::EcGeometryOf(*p.layout);
    // Helpers and a ".cells" read; each slow cell once more (the
    // fallback); a rebuild of its own after a parity hedge that gave up;
    // each cell once more by copy after a decode from cells taken in
    // place was cut off or found them evicted (UnmapCells).
    room += 4 * static_cast<size_t>(g.k + g.m);
  }
  return room;
}

bool EcReads::TakeFailed(Batch& b, int i) {
  PieceState& p = b.pieces[i];
  if (p.ec == EcRole::kNone) return false;
  if (p.ec != EcRole::kData) {
    // The helper (or ".cells" read) is over; its rebuild goes on without
    // it.
    p.done = true;
    b.remaining--;
  }
  failed_.push_back(i);
  return true;
}

bool EcReads::Hedge(Batch& b, int i, Engine& e) {
  PieceState& p = b.pieces[i];
  if (p.ec == EcRole::kData) {
    if (p.rebuild >= 0) return false;
    const ns::EcGeometry g = ns::EcGeometryOf(*p.layout);
    if (!e.TakeHedgeBudget(g.k)) return false;
    counters_.parity_hedges++;
    StartRebuild(b, i, /*hedge=*/true, e);
    return true;
  }
  if (p.ec != EcRole::kHelper) return false;
  Rebuild& r = *rebuilds_[p.rebuild];
  if (r.ended) return false;
  const int t = PickCell(r, b, e);
  if (t < 0 || !e.TakeHedgeBudget(1)) return false;
  return StartCell(b, r, t, e);
}

bool EcReads::HasAlternative(const Batch& b, int i) const {
  const PieceState& p = b.pieces[i];
  if (p.ec == EcRole::kData) {
    return p.rebuild < 0 || !rebuilds_[p.rebuild]->ended;
  }
  if (p.ec != EcRole::kHelper) return false;
  const Rebuild& r = *rebuilds_[p.rebuild];
  if (r.ended) return false;
  return std::any_of(r.cells.begin(), r.cells.end(),
                     [](const Cell& c) { return c.state == CellState::kIdle; });
}

void EcReads::Step(Batch& b, Engine& e) {
  std::vector<int> reread;
  reread.swap(reread_);
  for (int i : reread) {
    PieceState& p = b.pieces[i];
    if (p.done || p.claimed || p.active > 0) continue;
    // (Not sent: its failure is taken below, as any read's.)
    if (!e.StartPatient(i)) failed_.push_back(i);
  }
  std::vector<int> failed;
  failed.swap(failed_);
  for (int i : failed) {
    PieceState& p = b.pieces[i];
    if (p.ec == EcRole::kCells) {
      rebuilds_[p.rebuild]->crc_unavailable = true;
    } else if (p.ec == EcRole::kHelper) {
      Cell& c = rebuilds_[p.rebuild]->cells[p.cell];
      if (c.state != CellState::kReading || c.piece != i) continue;
      c.state = CellState::kLost;
      c.slow = !p.hard_failure;
      c.why = p.reasons.empty() ? std::string("failed") : p.reasons.back();
    } else if (p.rebuild < 0) {
      StartRebuild(b, i, /*hedge=*/false, e);
    } else {
      Rebuild& r = *rebuilds_[p.rebuild];
      r.own_failed = true;
      if (r.failed && !p.done) {
        if (r.hedge) {
          // A parity hedge gave up while the cell's own read ran, which
          // failed since: a rebuild of its own (with its fallback).
          StartRebuild(b, i, /*hedge=*/false, e);
        } else {
          FailPiece(b, i, r.failure);
        }
      }
    }
  }
  for (size_t k = 0; k < rebuilds_.size(); ++k) {
    Rebuild& r = *rebuilds_[k];
    if (!r.ended) Advance(b, r, e);
  }
}

void EcReads::StartRebuild(Batch& b, int i, bool hedge, Engine& e) {
  PieceState& p = b.pieces[i];
  auto r = std::make_unique<Rebuild>();
  r->piece = i;
  r->g = ns::EcGeometryOf(*p.layout);
  const ns::CellAddress at = ns::LocateCell(r->g, p.piece.offset);
  r->row = at.row;
  r->lost = at.column;
  r->in_cell = at.offset_in_cell;
  r->length = p.piece.length;
  r->hedge = hedge;
  r->own_failed = !hedge;
  r->cells.resize(static_cast<size_t>(r->g.k + r->g.m));
  for (int t = 0; t < r->g.k + r->g.m; ++t) {
    Cell& c = r->cells[t];
    const uint64_t stored =
        t < r->g.k ? ns::DataCellBytes(r->g, r->row, t) : r->g.cell;
    c.read = stored > r->in_cell ? std::min(r->length, stored - r->in_cell) : 0;
    if (t == r->lost) {
      c.state = CellState::kSelf;
    } else if (c.read == 0) {
      // Past the file's end (the partial last row): zeros, no read.
      c.state = CellState::kZero;
      c.buf = EcBuffers::Shared().Take(r->length);
      memset(c.buf.get(), 0, r->length);
    }
  }
  // The whole lost cell (its stored bytes) is rebuilt: its CRC applies.
  r->check =
      r->in_cell == 0 && r->length == ns::DataCellBytes(r->g, r->row, r->lost);
  p.rebuild = static_cast<int>(rebuilds_.size());
  rebuilds_.push_back(std::move(r));
  Rebuild& added = *rebuilds_.back();
  TakeOwnCells(b, added);
  if (added.check) StartCrc(b, added, e);
  Advance(b, added, e);
}

void EcReads::TakeOwnCells(Batch& b, Rebuild& r) {
  const v1::FileLayout* layout = b.pieces[r.piece].layout;
  for (int t = 0; t < r.g.k; ++t) {
    Cell& c = r.cells[t];
    // Only a cell whose piece holds the whole range (the caller's buffer
    // has no zeros past a short cell's end).
    if (c.state != CellState::kIdle || c.read != r.length) continue;
    const uint64_t offset =
        (r.row * static_cast<uint64_t>(r.g.k) + t) * r.g.cell + r.in_cell;
    const char* at = nullptr;
    const int i = call_cells_.Find(b, layout, offset, r.length, &at);
    if (i < 0 || i == r.piece) continue;
    PieceState& p = b.pieces[i];
    // Sent (or done): a piece the call holds back (ReadOptions::
    // max_in_flight) or that follows another call's flight may wait for
    // this very rebuild's room; a helper reads that cell instead.
    if (!p.done && p.last == nullptr) continue;
    c.state = CellState::kOwn;
    c.piece = i;
    c.own_piece = i;
    c.own = at;
    p.ec_survivor = true;  // its end wakes the loop (Batch::NotifiesEach)
  }
  DropLostOwnCells(b, r);
}

void EcReads::DropLostOwnCells(const Batch& b, Rebuild& r) const {
  for (Cell& c : r.cells) {
    if (c.state != CellState::kOwn) continue;
    const PieceState& p = b.pieces[c.piece];
    // Its own read still runs (a parity hedge of it may win first): its
    // bytes come either way.
    // Waited for by a rebuild that lacks cells but slow ones (Fallback):
    // its own rebuild reads it again patiently.
    if (p.done ? p.status.ok()
               : (r.fallback && OwnPending(b, c.piece)) || p.rebuild < 0 ||
                     !rebuilds_[p.rebuild]->own_failed) {
      continue;
    }
    // Failed, or lost and rebuilt itself: another cell stands in (never a
    // rebuild waiting on another's).
    c.state = CellState::kLost;
    c.slow = !p.hard_failure;
    c.why = p.done
                ? p.status.ToString()
                : absl::StrCat("being rebuilt itself",
                               p.reasons.empty()
                                   ? std::string()
                                   : absl::StrCat(" (", p.reasons.back(), ")"));
  }
}

const char* EcReads::Bytes(const Batch& b, const Rebuild& r, int t) {
  const Cell& c = r.cells[t];
  if (c.state == CellState::kOwn) return c.own;
  return Mapped(b, r, t) ? b.pieces[c.piece].mapped : c.buf.get();
}

bool EcReads::Mapped(const Batch& b, const Rebuild& r, int t) {
  const Cell& c = r.cells[t];
  return c.state == CellState::kReading && b.pieces[c.piece].mapped != nullptr;
}

bool EcReads::Present(const Batch& b, const Rebuild& r, int t) const {
  const Cell& c = r.cells[t];
  if (c.state == CellState::kOwn) {
    const PieceState& p = b.pieces[c.piece];
    return p.done && p.status.ok();
  }
  return c.state == CellState::kZero ||
         (c.state == CellState::kReading && b.pieces[c.piece].done);
}

void EcReads::Advance(Batch& b, Rebuild& r, Engine& e) {
  if (b.pieces[r.piece].done) {  // its own read won (or it failed)
    End(b, r);
    return;
  }
  DropLostOwnCells(b, r);
  int present = 0;
  for (int t = 0; t < r.g.k + r.g.m; ++t) present += Present(b, r, t);
  if (present >= r.g.k) {
    if (CrcSettled(b, r, e)) Decode(b, r, e);
    return;
  }
  if (!Refill(b, r, e) && !Fallback(b, r, e)) Fail(b, r, RowLost(b, r));
}

bool EcReads::Fallback(Batch& b, Rebuild& r, Engine& e) {
  // A parity hedge whose cell's own read still runs: that read is the
  // fallback.
  if (!r.own_failed) return false;
  if (HardLost(b, r) > r.g.m) return false;
  PieceState& p = b.pieces[r.piece];
  if (!r.fallback) {
    r.fallback = true;
    p.reasons.push_back(absl::StrCat("row ", r.row,
                                     " has too few cells but for slow ones, "
                                     "waited for: ",
                                     SlowCells(b, r)));
  }
  // The piece's own cell first: its bytes need no decode.
  if (!r.self_patient && !p.hard_failure && !p.done && !p.claimed &&
      p.active == 0) {
    r.self_patient = true;
    if (!e.StartPatient(r.piece)) p.reasons.push_back("no replica to read");
  }
  const bool own_read = p.active > 0;
  int in_play = 0;
  for (Cell& c : r.cells) {
    // The call's own pieces of the row, slow, not done: waited for (their
    // rebuilds read them again).
    if (c.state == CellState::kLost && c.slow && c.own_piece >= 0 &&
        OwnPending(b, c.own_piece)) {
      c.state = CellState::kOwn;
      c.piece = c.own_piece;
    }
    in_play += c.state == CellState::kZero || c.state == CellState::kReading ||
               c.state == CellState::kOwn;
  }
  // The other slow cells: read again, once, patiently.
  for (int t = 0; t < r.g.k + r.g.m && in_play < r.g.k; ++t) {
    Cell& c = r.cells[t];
    if (c.state != CellState::kLost || !c.slow || c.patient) continue;
    c.patient = true;
    if (StartCell(b, r, t, e, /*patient=*/true)) ++in_play;
  }
  return own_read || in_play >= r.g.k;
}

bool EcReads::OwnPending(const Batch& b, int i) const {
  const PieceState& p = b.pieces[i];
  if (p.done || p.hard_failure) return false;
  // A read of its own in flight, or one its rebuild will start.
  return p.active > 0 || p.rebuild < 0 || !rebuilds_[p.rebuild]->self_patient;
}

int EcReads::HardLost(const Batch& b, const Rebuild& r) const {
  int hard = 0;
  for (const Cell& c : r.cells) {
    if (c.state == CellState::kSelf) {
      hard += r.own_failed && b.pieces[r.piece].hard_failure;
    } else if (c.state == CellState::kLost) {
      hard += !c.slow;
    }
  }
  return hard;
}

absl::Status EcReads::RowLost(const Batch& b, const Rebuild& r) const {
  if (HardLost(b, r) > r.g.m) return absl::DataLossError(TooFewCells(b, r));
  const PieceState& p = b.pieces[r.piece];
  return absl::UnavailableError(absl::StrCat(
      "erasure-coded file ", *p.path, " (RS ", r.g.k, "+", r.g.m, "): row ",
      r.row, ": bytes [", p.piece.offset, ", ", p.piece.offset + p.piece.length,
      ") not read: too few cells answered, but no more than ", r.g.m,
      " are known lost; slow (not lost): ", SlowCells(b, r)));
}

std::string EcReads::SlowCells(const Batch& b, const Rebuild& r) const {
  const PieceState& p = b.pieces[r.piece];
  const v1::FileLayout& l = *p.layout;
  std::vector<std::string> slow;
  for (int t = 0; t < r.g.k + r.g.m; ++t) {
    const Cell& c = r.cells[t];
    const bool self =
        c.state == CellState::kSelf && r.own_failed && !p.hard_failure;
    if (!self && !(c.state == CellState::kLost && c.slow)) continue;
    const std::string why = !self               ? c.why
                            : p.reasons.empty() ? std::string()
                                                : p.reasons.front();
    slow.push_back(absl::StrCat(
        CellName(t, r.g.k), " on node ", CellReplica(l, t, r.g.k).node_id(),
        why.empty() ? "" : absl::StrCat(" (", why, ")")));
  }
  return slow.empty() ? std::string("none") : absl::StrJoin(slow, "; ");
}

bool EcReads::Refill(Batch& b, Rebuild& r, Engine& e) {
  int in_play = 0;
  for (const Cell& c : r.cells) {
    in_play += c.state == CellState::kZero || c.state == CellState::kReading ||
               c.state == CellState::kOwn;
  }
  while (in_play < r.g.k) {
    const int t = PickCell(r, b, e);
    if (t < 0) return false;
    if (StartCell(b, r, t, e)) ++in_play;
  }
  return true;
}

int EcReads::PickCell(const Rebuild& r, const Batch& b, Engine& e) const {
  const v1::FileLayout& l = *b.pieces[r.piece].layout;
  absl::InlinedVector<HelperCandidate, 16> idle;
  for (int t = 0; t < r.g.k + r.g.m; ++t) {
    if (r.cells[t].state != CellState::kIdle) continue;
    const v1::Replica& at = CellReplica(l, t, r.g.k);
    idle.push_back({.cell = t,
                    .usable = e.Usable(at),
                    .outstanding_bytes = e.OutstandingBytes(at)});
  }
  return PickHelperCell(idle, r.g.k, r.g.m, r.row);
}

int EcReads::AddPiece(Batch& b, const Rebuild& r, EcRole role) {
  // HelperRoom's reserve (every way a rebuild adds pieces, counted there)
  // is not expected to run out: a new piece must never move the others.
  if (b.pieces.size() == b.pieces.capacity()) return -1;
  const int i = static_cast<int>(b.pieces.size());
  PieceState& h = b.pieces.emplace_back();
  const PieceState& parent = b.pieces[r.piece];
  h.piece.offset = parent.piece.offset;
  h.range = -1;
  h.layout = parent.layout;
  h.path = parent.path;
  h.mod_revision = parent.mod_revision;
  h.file_id = parent.file_id;
  h.ec = role;
  h.rebuild = parent.rebuild;
  b.remaining++;
  return i;
}

bool EcReads::StartCell(Batch& b, Rebuild& r, int t, Engine& e, bool patient) {
  Cell& c = r.cells[t];
  const int i = AddPiece(b, r, EcRole::kHelper);
  if (i < 0) {
    c.state = CellState::kLost;
    c.slow = true;  // not known lost
    c.why = "no room for a helper read";
    return false;
  }
  c.buf = EcBuffers::Shared().Take(r.length);  // not zeroed: read fills it
  // Bytes past the cell's stored end (a partial last cell) are zeros.
  memset(c.buf.get() + c.read, 0, r.length - c.read);
  PieceState& h = b.pieces[i];
  h.piece.length = c.read;
  h.piece.replicas = &h.layout->striped().targets(t).replicas();
  h.piece.object_delta = r.row * r.g.cell + r.in_cell;
  h.piece.unit = static_cast<uint32_t>(t);
  h.stream_key =
      b.pieces[r.piece].stream_key ^ (uint64_t{0x9E3779B97F4A7C15} * (t + 1));
  h.cell = t;
  h.patient = patient;
  h.mappable = !r.copy_only && c.read == r.length;
  h.dst = c.buf.get();
  c.piece = i;
  c.state = CellState::kReading;
  if (!e.Start(i)) {
    h.done = true;
    b.remaining--;
    c.state = CellState::kLost;
    c.slow = false;
    c.why = "no replica to read";
    return false;
  }
  counters_.helper_reads++;
  return true;
}

void EcReads::StartCrc(Batch& b, Rebuild& r, Engine& e) {
  const v1::FileLayout& l = *b.pieces[r.piece].layout;
  const std::string& first = ns::ParityReplica(l, 0).object();
  std::vector<uint32_t> crcs;
  if (e.cell_crcs().Find(b.pieces[r.piece].file_id, first, r.row, &crcs)) {
    r.crc_known = true;
    r.crc = crcs[r.lost];
    return;
  }
  for (int j = 0; j < r.g.m; ++j) {
    v1::Replica* o = r.cells_objects.Add();
    o->set_node_id(ns::ParityReplica(l, j).node_id());
    o->set_object(ns::EcCellsObject(ns::ParityReplica(l, j).object()));
  }
  const int i = AddPiece(b, r, EcRole::kCells);
  if (i < 0) {
    r.crc_unavailable = true;
    return;
  }
  const uint64_t n = static_cast<uint64_t>(r.g.k + r.g.m) * ns::kEcCellCrcBytes;
  r.crc_buf = std::make_unique<char[]>(n);
  PieceState& h = b.pieces[i];
  h.piece.length = n;
  h.piece.replicas = &r.cells_objects;
  h.piece.object_delta = ns::EcCellsOffset(r.g, r.row);
  h.piece.unit = static_cast<uint32_t>(r.g.k + r.g.m);
  h.stream_key = b.pieces[r.piece].stream_key ^ 0xCE115;
  h.unverified = true;  // no sidecar: the CRCs are their own check
  h.dst = r.crc_buf.get();
  r.crc_piece = i;
  if (!e.Start(i)) {
    h.done = true;
    b.remaining--;
    r.crc_unavailable = true;
  }
}

bool EcReads::CrcSettled(Batch& b, Rebuild& r, Engine& e) {
  if (!r.check || r.crc_known || r.crc_unavailable) return true;
  if (!b.pieces[r.crc_piece].done) return false;
  std::vector<uint32_t> crcs(static_cast<size_t>(r.g.k + r.g.m));
  for (size_t t = 0; t < crcs.size(); ++t) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(
        r.crc_buf.get() + t * ns::kEcCellCrcBytes);
    crcs[t] = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
              uint32_t{p[3]} << 24;
  }
  r.crc = crcs[r.lost];
  r.crc_known = true;
  const PieceState& p = b.pieces[r.piece];
  e.cell_crcs().Add(p.file_id, ns::ParityReplica(*p.layout, 0).object(), r.row,
                    std::move(crcs));
  return true;
}

void EcReads::Decode(Batch& b, Rebuild& r, Engine& e) {
  absl::StatusOr<const ec::Codec*> codec = e.Codec(r.g.k, r.g.m);
  if (!codec.ok()) {
    Fail(b, r, codec.status());
    return;
  }
  std::vector<const char*> cells(r.cells.size(), nullptr);
  int used = 0;
  bool mapped = false;  // some in an object's mapping: may vanish
  uint64_t copied = 0;  // helper bytes copied to get here
  uint64_t taken = 0;   // ... taken in place
  for (int t = 0; t < r.g.k + r.g.m && used < r.g.k; ++t) {
    if (!Present(b, r, t)) continue;
    cells[t] = Bytes(b, r, t);
    ++used;
    if (Mapped(b, r, t)) {
      const PieceState& h = b.pieces[r.cells[t].piece];
      if (!h.mapped_file->Resident(h.mapped, r.cells[t].read)) {
        // Evicted since it was taken: touching it would read the disk on
        // this thread. The row's cells are read by copies instead.
        UnmapCells(b, r, /*cut_off=*/false);
        Advance(b, r, e);
        return;
      }
      mapped = true;
      taken += r.cells[t].read;
    } else if (r.cells[t].state == CellState::kReading) {
      copied += r.cells[t].read;
    }
  }
  // Into the caller's buffer itself when the piece can be claimed (no
  // copy; the followers of the flight it leads are fed from there by
  // EndFill), without b.mu (the cells read are done: nothing writes them);
  // else into a buffer of our own, then Fill.
  PieceState& p = b.pieces[r.piece];
  char* const in_place = b.ClaimForFill(r.piece);
  EcBuffer own;
  if (in_place == nullptr) own = EcBuffers::Shared().Take(r.length);
  char* const out = in_place != nullptr ? in_place : own.get();
  const int wanted[] = {r.lost};
  char* const outs[] = {out};
  absl::Status s;
  bool crc_ok = false;
  auto decode = [&] {
    e.BeforeDecode();
    s = (*codec)->Decode(cells, wanted, outs, r.length,
                         mapped ? RunCatchingSigbus : nullptr);
    crc_ok = !s.ok() || !r.check || !r.crc_known ||
             Crc32cExtend(0, out, r.length) == r.crc;
  };
  if (in_place != nullptr) {
    b.mu.Unlock();
    decode();
    b.mu.Lock();
  } else {
    decode();
  }
  if (!s.ok() || !crc_ok) {
    if (in_place != nullptr) b.EndFill(r.piece, false);
  }
  if (!s.ok() && mapped && absl::IsDataLoss(s)) {
    // A mapped cell's object shrank under the decode (SIGBUS): those cells
    // are read again, by copies, which fail plainly where they shrank.
    counters_.decodes_cut_off++;
    UnmapCells(b, r, /*cut_off=*/true);
    Advance(b, r, e);
    return;
  }
  if (!s.ok()) {
    Fail(b, r,
         absl::InternalError(absl::StrCat("decoding row ", r.row, " of ",
                                          *p.path, ": ", s.ToString())));
    return;
  }
  if (!crc_ok) {
    // A survivor's bytes are wrong (unverified reads): never returned.
    counters_.crc_mismatches++;
    Fail(b, r,
         absl::DataLossError(absl::StrCat(
             "erasure-coded file ", *p.path, ": ", CellName(r.lost, r.g.k),
             " of row ", r.row,
             " rebuilt from its row does not match its CRC32C in the row's "
             "\".cells\" (a surviving cell's bytes are wrong; read with "
             "verification to find it)")));
    return;
  }
  if (r.check && !r.crc_known) counters_.unchecked_cells++;
  const bool hedge_won = r.hedge && !r.own_failed;
  End(b, r);  // before Fill, which may release b.mu
  Attempt* own_read = p.last;
  if (in_place != nullptr) {
    b.EndFill(r.piece, true);
  } else if (!b.Fill(r.piece, out, r.length)) {
    return;
  }
  if (own_read != nullptr && !own_read->finished) own_read->canceller.Cancel();
  counters_.reconstructed_bytes += r.length;
  counters_.helper_bytes_copied += copied;
  counters_.helper_bytes_in_place += taken;
  if (hedge_won) {
    counters_.parity_hedge_wins++;
  } else {
    counters_.degraded_reads++;
  }
}

void EcReads::UnmapCells(Batch& b, Rebuild& r, bool cut_off) {
  r.copy_only = true;
  for (int t = 0; t < r.g.k + r.g.m; ++t) {
    if (!Mapped(b, r, t)) continue;
    Cell& c = r.cells[t];
    PieceState& h = b.pieces[c.piece];
    // The object that shrank is mapped no more, by any call.
    if (cut_off) h.mapped_file->CheckShrunk();
    h.mapped = nullptr;
    h.mapped_file = nullptr;
    c.state = CellState::kIdle;
    c.piece = -1;
  }
}

void EcReads::End(Batch& b, Rebuild& r) {
  r.ended = true;
  for (Cell& c : r.cells) {
    if (c.state == CellState::kReading) Drop(b, b.pieces[c.piece]);
  }
  if (r.crc_piece >= 0) Drop(b, b.pieces[r.crc_piece]);
  if (b.remaining == 0) b.Notify();
}

void EcReads::Drop(Batch& b, PieceState& h) {
  if (h.done) return;
  if (h.last != nullptr && !h.last->finished) h.last->canceller.Cancel();
  // Claimed: an I/O thread is copying its bytes in without b.mu (or they
  // land in its buffer): that copy marks it done and counts it
  // (Batch::CopyIn, CompletedLocked). Counted here as well, the call
  // would end with one of its own pieces still open (issue 35: a healthy
  // scan's parity hedge, its helpers dropped as their bytes came in).
  if (h.claimed) return;
  h.done = true;
  b.remaining--;
}

void EcReads::Fail(Batch& b, Rebuild& r, const absl::Status& why) {
  End(b, r);
  r.failed = true;
  r.failure = why;
  const PieceState& p = b.pieces[r.piece];
  if (r.hedge && !r.own_failed) {
    // A parity hedge that gave up: the cell's own read may still answer.
    if (p.done || p.claimed || p.active > 0 || OwnFailureQueued(b, r.piece)) {
      return;
    }
    // Its own read ended while the hedge's decode held the piece's claim
    // (Batch::CompletedLocked drops its bytes or its failure then: the
    // claim's bytes usually win), and the decode failed (a survivor's
    // bytes wrong): nothing else would end the piece (issue 35: a call
    // asleep to its deadline with nothing in flight). An answer with the
    // bytes: the cell is read again; a failure: taken now, as Step takes
    // one (a rebuild of its own, with its fallback). The loop steps again
    // before it waits.
    const bool answered = p.last != nullptr && p.last->status.ok();
    RANGEFS_LOG(WARNING) << "erasure-coded read: " << *p.path << " bytes ["
                         << p.piece.offset << ", "
                         << p.piece.offset + p.piece.length
                         << "): a parity hedge failed (" << why.ToString()
                         << ") after the cell's own read ended unseen ("
                         << (answered ? "with its bytes" : "failed")
                         << "): " << (answered ? "read again" : "rebuilt");
    (answered ? reread_ : failed_).push_back(r.piece);
    b.self_woken = true;
    return;
  }
  // (Claimed: a late answer of its own read is being copied in, or lands
  // in the buffer itself. Not one given up on (abandoned): its failure is
  // never queued (Batch::CompletedLocked), so the piece would stay open.)
  const bool late_answer =
      p.claimed && (p.landing == nullptr || !p.landing->abandoned);
  if (!p.done && !late_answer) FailPiece(b, r.piece, why);
}

bool EcReads::OwnFailureQueued(const Batch& b, int i) const {
  const Attempt* own = b.pieces[i].last;
  return std::find(failed_.begin(), failed_.end(), i) != failed_.end() ||
         (own != nullptr &&
          std::find(b.failed.begin(), b.failed.end(), own) != b.failed.end());
}

void EcReads::FailPiece(Batch& b, int i, const absl::Status& why) {
  PieceState& p = b.pieces[i];
  p.done = true;
  p.status = why;
  if (--b.remaining == 0) b.Notify();
}

std::string EcReads::Describe(const Batch& b, int i) const {
  const PieceState& p = b.pieces[i];
  if (p.rebuild < 0 || p.rebuild >= static_cast<int>(rebuilds_.size())) {
    return std::string();
  }
  const Rebuild& r = *rebuilds_[p.rebuild];
  static constexpr char kStates[] = "iszrlo";  // CellState, in order
  std::string cells;
  for (const Cell& c : r.cells) {
    cells.push_back(kStates[static_cast<int>(c.state)]);
  }
  return absl::StrCat(
      "rebuild of piece ", r.piece, " (row ", r.row, ", cell ", r.lost,
      "): hedge=", r.hedge, " own_failed=", r.own_failed, " ended=", r.ended,
      " failed=", r.failed,
      r.failed ? absl::StrCat(" (", r.failure.ToString(), ")") : "",
      " fallback=", r.fallback, " self_patient=", r.self_patient,
      " check=", r.check, " crc_known=", r.crc_known,
      " crc_unavailable=", r.crc_unavailable, " crc_piece=", r.crc_piece,
      " cells=", cells);
}

std::string EcReads::TooFewCells(const Batch& b, const Rebuild& r) const {
  const PieceState& p = b.pieces[r.piece];
  const v1::FileLayout& l = *p.layout;
  std::vector<std::string> lost;
  int readable = 0;
  for (int t = 0; t < r.g.k + r.g.m; ++t) {
    const Cell& c = r.cells[t];
    const std::string where = absl::StrCat(CellName(t, r.g.k), " on node ",
                                           CellReplica(l, t, r.g.k).node_id());
    if (c.state == CellState::kSelf) {
      lost.push_back(absl::StrCat(
          where,
          p.reasons.empty() ? "" : absl::StrCat(" (", p.reasons.back(), ")")));
    } else if (c.state == CellState::kLost) {
      lost.push_back(absl::StrCat(where, " (", c.why, ")"));
    } else {
      ++readable;
    }
  }
  const uint64_t row_bytes = r.g.cell * static_cast<uint64_t>(r.g.k);
  return absl::StrCat("erasure-coded file ", *p.path, " (RS ", r.g.k, "+",
                      r.g.m, "): row ", r.row, " (file bytes [",
                      r.row * row_bytes, ", ",
                      std::min(r.g.size, (r.row + 1) * row_bytes), ")) has ",
                      lost.size(), " cells lost, more than its ", r.g.m,
                      " parity cells can rebuild; bytes [", p.piece.offset,
                      ", ", p.piece.offset + p.piece.length,
                      ") are lost: ", absl::StrJoin(lost, "; "));
}

}  // namespace client_internal
}  // namespace rangefs
