#include "mount/read_batcher.h"

#include <string>
#include <utility>
#include <vector>

namespace rangefs {
namespace mount {

ReadBatcher::ReadBatcher(Client* client, ReadBatcherOptions options)
    : client_(client), options_(std::move(options)) {}

void ReadBatcher::Submit(BatchedRead read) {
  {
    absl::MutexLock l(&mu_);
    queue_.push_back(std::move(read));
    ++requests_;
    if (leaders_ >= options_.max_leaders) return;  // a leader will run it
    ++leaders_;
  }
  std::deque<BatchedRead> batch;
  while (true) {
    {
      absl::MutexLock l(&mu_);
      if (queue_.empty()) {
        --leaders_;
        return;
      }
      const size_t n = std::min(queue_.size(), options_.max_batch);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      ++batches_;
    }
    RunBatch(batch);
    batch.clear();
  }
}

void ReadBatcher::RunBatch(std::deque<BatchedRead>& batch) {
  static thread_local std::string buf;
  size_t total = 0;
  for (const BatchedRead& r : batch) total += r.size;
  if (buf.size() < total) buf.resize(total);
  std::vector<FileReadRange> ranges;
  ranges.reserve(batch.size());
  size_t at = 0;
  for (const BatchedRead& r : batch) {
    ranges.push_back({r.file, r.offset, absl::MakeSpan(&buf[at], r.size)});
    at += r.size;
  }
  std::vector<absl::StatusOr<size_t>> results =
      batch.size() == 1
          ? std::vector<absl::StatusOr<size_t>>{batch[0].file->Read(
                batch[0].offset, ranges[0].dst, options_.read)}
          : client_->ReadV(ranges, options_.read);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].done(std::move(results[i]), ranges[i].dst.data());
  }
}

uint64_t ReadBatcher::batches() const {
  absl::MutexLock l(&mu_);
  return batches_;
}

uint64_t ReadBatcher::requests() const {
  absl::MutexLock l(&mu_);
  return requests_;
}

}  // namespace mount
}  // namespace rangefs
