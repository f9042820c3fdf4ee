#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "client_lib/file.h"

namespace rangefs {

Reader::Reader(File* file, ReaderOptions options)
    : file_(file),
      options_(options),
      window_(std::max<size_t>(1, options.initial_readahead)) {}

absl::Status Reader::Seek(uint64_t position) {
  if (position > file_->size()) {
    return absl::OutOfRangeError(absl::StrCat("seek to ", position, " past ",
                                              file_->path(), " size ",
                                              file_->size()));
  }
  position_ = position;
  return absl::OkStatus();
}

absl::StatusOr<size_t> Reader::Read(absl::Span<char> dst) {
  size_t done = 0;
  while (done < dst.size() && position_ < file_->size()) {
    if (position_ >= buffer_offset_ &&
        position_ < buffer_offset_ + buffer_len_) {
      size_t at = static_cast<size_t>(position_ - buffer_offset_);
      size_t n = std::min(dst.size() - done, buffer_len_ - at);
      memcpy(dst.data() + done, buffer_.data() + at, n);
      done += n;
      position_ += n;
      continue;
    }
    // Refill. Sequential continuation grows the window; a seek resets it.
    if (position_ == next_expected_ && buffer_len_ > 0) {
      window_ = std::min(options_.max_readahead, window_ * 2);
    } else if (position_ != next_expected_) {
      window_ = std::max<size_t>(1, options_.initial_readahead);
    }
    size_t want = std::max(window_, dst.size() - done);
    // Big caller reads go straight to the caller's buffer.
    if (dst.size() - done >= window_) {
      absl::StatusOr<size_t> n =
          file_->Read(position_, dst.subspan(done), options_.read);
      if (!n.ok()) return n.status();
      done += *n;
      position_ += *n;
      next_expected_ = position_;
      buffer_len_ = 0;
      if (*n == 0) break;
      continue;
    }
    if (buffer_.size() < want) buffer_.resize(want);
    absl::StatusOr<size_t> n = file_->Read(
        position_, absl::MakeSpan(&buffer_[0], want), options_.read);
    if (!n.ok()) return n.status();
    buffer_offset_ = position_;
    buffer_len_ = *n;
    next_expected_ = position_ + *n;
    if (*n == 0) break;
  }
  return done;
}

}  // namespace rangefs
