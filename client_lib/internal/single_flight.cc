#include "client_lib/internal/single_flight.h"

#include <algorithm>

#include "client_lib/internal/batch.h"

namespace rangefs {
namespace client_internal {

void FlightTable::JoinOrLead(const std::shared_ptr<Batch>& batch,
                             uint64_t min_bytes, std::vector<int>& lead) {
  const int n = static_cast<int>(batch->pieces.size());
  bool any = false;
  for (const PieceState& p : batch->pieces) any |= p.piece.length >= min_bytes;
  if (!any) {  // small reads only: no table, no lock
    for (int i = n - 1; i >= 0; --i) lead.push_back(i);
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  for (int i = n - 1; i >= 0; --i) {
    PieceState& p = batch->pieces[i];
    if (p.piece.length < min_bytes) {
      lead.push_back(i);
      continue;
    }
    const Key key(p.mod_revision, p.file_id);
    const uint64_t offset = p.piece.offset;
    const uint64_t length = p.piece.length;
    std::vector<std::shared_ptr<Flight>>& list = flights_[key];
    bool joined = false;
    for (const std::shared_ptr<Flight>& f : list) {
      if (f->offset_ <= offset && offset + length <= f->offset_ + f->length_ &&
          (f->path_ == p.path || *f->path_ == *p.path)) {
        f->followers_.push_back({batch, i, offset, length});
        waiting_.fetch_add(1, std::memory_order_relaxed);
        joined = true;
        break;
      }
    }
    if (joined) continue;
    p.flight = std::make_shared<Flight>(shared_from_this(), key, p.path, offset,
                                        length);
    list.push_back(p.flight);
    lead.push_back(i);
  }
}

std::vector<Flight::Follower> FlightTable::Take(Flight* f) {
  std::lock_guard<std::mutex> l(mu_);
  if (f->ended_) return {};
  f->ended_ = true;
  auto it = flights_.find(f->key_);
  if (it != flights_.end()) {
    std::vector<std::shared_ptr<Flight>>& list = it->second;
    for (size_t k = 0; k < list.size(); ++k) {
      if (list[k].get() == f) {
        list[k] = std::move(list.back());
        list.pop_back();
        break;
      }
    }
    if (list.empty()) flights_.erase(it);
  }
  waiting_.fetch_sub(static_cast<int64_t>(f->followers_.size()),
                     std::memory_order_relaxed);
  return std::move(f->followers_);
}

FlightStats FlightTable::stats() const {
  FlightStats s;
  s.shared_pieces = shared_pieces_.load();
  s.shared_bytes = shared_bytes_.load();
  s.released = released_.load();
  s.waiting = waiting_.load();
  return s;
}

void Flight::Publish(const char* bytes) {
  for (const Follower& f : table_->Take(this)) {
    if (f.batch->Deliver(f.piece, bytes + (f.offset - offset_), f.length)) {
      table_->shared_pieces_.fetch_add(1, std::memory_order_relaxed);
      table_->shared_bytes_.fetch_add(f.length, std::memory_order_relaxed);
    }
  }
}

void Flight::Abandon() {
  for (const Follower& f : table_->Take(this)) {
    table_->released_.fetch_add(1, std::memory_order_relaxed);
    f.batch->Release(f.piece);
  }
}

}  // namespace client_internal
}  // namespace rangefs
