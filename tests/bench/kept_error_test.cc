// rangefs-bench's KeptError: the error a Reader keeps after a short Read
// is taken by one more Read (or Next), not dropped with the Reader.
#include "tests/bench/kept_error.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace rangefs {
namespace bench {
namespace {

// A Reader whose window read failed after its first `have` bytes: it
// returns them, then the error (as PrefetchReader does).
class KeepingReader final : public Reader {
 public:
  explicit KeepingReader(size_t have) : have_(have) {}
  absl::StatusOr<size_t> Read(absl::Span<char> dst) override {
    ++calls;
    if (have_ == 0) return kept_;
    const size_t n = std::min(have_, dst.size());
    std::memset(dst.data(), 'x', n);
    have_ -= n;
    pos_ += n;
    return n;
  }
  absl::StatusOr<absl::Span<const char>> Next(size_t max) override {
    ++calls;
    if (have_ == 0) return kept_;
    const size_t n = std::min(have_, max);
    have_ -= n;
    pos_ += n;
    return absl::Span<const char>(window_.data(), n);
  }
  absl::Status Seek(uint64_t position) override {
    pos_ = position;
    return absl::OkStatus();
  }
  uint64_t position() const override { return pos_; }
  size_t readahead() const override { return 0; }

  int calls = 0;

 private:
  size_t have_;
  uint64_t pos_ = 0;
  std::string window_ = std::string(64, 'x');
  const absl::Status kept_ = absl::DeadlineExceededError(
      "read of /e/ec/f1 bytes [0, 4194304) not done by its deadline");
};

TEST(KeptErrorTest, ErrorKeptAfterAShortReadIsTaken) {
  for (const bool zero_copy : {false, true}) {
    KeepingReader r(10);
    std::string buf(64, '\0');
    absl::StatusOr<size_t> n =
        zero_copy ? absl::StatusOr<size_t>(r.Next(buf.size())->size())
                  : r.Read(absl::MakeSpan(buf));
    ASSERT_TRUE(n.ok());
    ASSERT_EQ(*n, 10u);  // short: the rest of the window failed
    const absl::Status kept =
        KeptError(r, *n < buf.size(), zero_copy, absl::MakeSpan(buf));
    EXPECT_TRUE(absl::IsDeadlineExceeded(kept)) << kept;
    EXPECT_EQ(r.calls, 2);
  }
}

TEST(KeptErrorTest, FullReadMakesNoOtherRead) {
  KeepingReader r(1000);
  std::string buf(64, '\0');
  ASSERT_EQ(*r.Read(absl::MakeSpan(buf)), 64u);
  EXPECT_TRUE(KeptError(r, false, false, absl::MakeSpan(buf)).ok());
  EXPECT_EQ(r.calls, 1);
}

}  // namespace
}  // namespace bench
}  // namespace rangefs
