#include "client_lib/internal/single_flight.h"

#include <algorithm>

#include "client_lib/internal/batch.h"

namespace rangefs {
namespace client_internal {

std::shared_ptr<Flight> FlightTable::JoinOrLead(
    const std::string& path, int64_t mod_revision, uint64_t file_id,
    uint64_t offset, uint64_t length, const std::shared_ptr<Batch>& batch,
    int piece) {
  const Key key(mod_revision, file_id);
  absl::MutexLock l(&mu_);
  std::vector<std::shared_ptr<Flight>>& list = flights_[key];
  for (const std::shared_ptr<Flight>& f : list) {
    if (f->path_ == path && f->offset_ <= offset &&
        offset + length <= f->offset_ + f->length_) {
      f->followers_.push_back({batch, piece, offset, length});
      waiting_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  auto f = std::make_shared<Flight>(shared_from_this(), path, offset, length);
  list.push_back(f);
  keys_.emplace(f.get(), key);
  return f;
}

std::vector<Flight::Follower> FlightTable::Take(Flight* f) {
  absl::MutexLock l(&mu_);
  if (f->ended_) return {};
  f->ended_ = true;
  auto k = keys_.find(f);
  if (k != keys_.end()) {
    auto it = flights_.find(k->second);
    if (it != flights_.end()) {
      std::vector<std::shared_ptr<Flight>>& list = it->second;
      list.erase(std::remove_if(list.begin(), list.end(),
                                [f](const std::shared_ptr<Flight>& x) {
                                  return x.get() == f;
                                }),
                 list.end());
      if (list.empty()) flights_.erase(it);
    }
    keys_.erase(k);
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
