#include "storage_node/data_port_wire.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::HasSubstr;

// Serves `wire` to ReadDataPortReply; past its end, UNAVAILABLE as for a
// closed connection.
class Wire {
 public:
  explicit Wire(std::string wire) : wire_(std::move(wire)) {}
  DataPortReply Read(absl::Span<char> dst, bool check_crc = true) {
    return ReadDataPortReply(
        [this](char* p, size_t n, absl::string_view what) {
          if (n > wire_.size() - pos_) {
            return absl::UnavailableError(absl::StrCat("closed while ", what));
          }
          wire_.copy(p, n, pos_);
          pos_ += n;
          return absl::OkStatus();
        },
        dst, check_crc, /*offset=*/0);
  }
  size_t left() const { return wire_.size() - pos_; }

 private:
  std::string wire_;
  size_t pos_ = 0;
};

std::string Header(absl::StatusCode code, absl::string_view msg) {
  std::string out(4, '\0');
  PutLe32(&out[0], kDataPortReplyMagic);
  return out + EncodeDataPortStatusBody(absl::Status(code, msg));
}

std::string Frame(absl::string_view data) {
  std::string out(kDataPortFrameHeaderBytes, '\0');
  PutLe32(&out[0], static_cast<uint32_t>(data.size()));
  PutLe32(&out[4], Crc32c(data));
  return absl::StrCat(out, data);
}

const std::string kEnd(kDataPortFrameHeaderBytes, '\0');

TEST(DataPortWireTest, RequestRoundTrips) {
  const std::string req = EncodeDataPortRequest("seg/1", 7, 1 << 20, 1);
  auto h = DecodeDataPortRequestHeader(req);
  ASSERT_THAT(h, IsOk());
  EXPECT_EQ(h->flags, 1);
  EXPECT_EQ(h->path_len, 5u);
  EXPECT_EQ(h->offset, 7u);
  EXPECT_EQ(h->length, 1u << 20);
  EXPECT_EQ(req.substr(kDataPortRequestHeaderBytes), "seg/1");
}

TEST(DataPortWireTest, RequestRejectsShortBadMagicVersionAndLongPath) {
  const std::string good = EncodeDataPortRequest("a", 0, 1, 0);
  EXPECT_THAT(DecodeDataPortRequestHeader(good.substr(0, 23)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::string bad = good;
  bad[0] ^= 1;
  EXPECT_THAT(DecodeDataPortRequestHeader(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("magic")));
  bad = good;
  bad[4] = 2;
  EXPECT_THAT(
      DecodeDataPortRequestHeader(bad),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version")));
  bad = good;
  PutLe16(&bad[6], kDataPortMaxPathBytes + 1);
  EXPECT_THAT(DecodeDataPortRequestHeader(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4097")));
  EXPECT_THAT(CheckDataPortRequestFlags(4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0x4")));
  EXPECT_THAT(CheckDataPortRequestFlags(kDataPortFlagVerify), IsOk());
  EXPECT_THAT(
      CheckDataPortRequestFlags(kDataPortFlagVerify | kDataPortFlagBackground),
      IsOk());
}

TEST(DataPortWireTest, ReadsFramesToTheEnd) {
  Wire w(Header(absl::StatusCode::kOk, "") + Frame("abc") + Frame("de") + kEnd);
  std::string dst(8, 'z');
  DataPortReply r = w.Read(absl::MakeSpan(dst));
  ASSERT_THAT(r.status, IsOk());
  EXPECT_EQ(r.got, 5u);
  EXPECT_EQ(dst, "abcdezzz");
  EXPECT_TRUE(r.reusable);
  EXPECT_EQ(w.left(), 0u);
}

TEST(DataPortWireTest, AgentAnswerIsRefusedAndReusable) {
  Wire w(Header(absl::StatusCode::kNotFound, "no such object"));
  std::string dst(8, 'z');
  DataPortReply r = w.Read(absl::MakeSpan(dst));
  EXPECT_THAT(r.status,
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no such")));
  EXPECT_TRUE(r.refused);
  EXPECT_TRUE(r.reusable);
}

// Found by the fuzzer: a reply cut inside its status message was taken for
// the agent's answer (UNAVAILABLE, "reusable"), so the connection went back
// to the pool in the middle of a message.
TEST(DataPortWireTest, StatusMessageCutShortIsATransportError) {
  const std::string full = Header(absl::StatusCode::kNotFound, "no such");
  Wire w(full.substr(0, full.size() - 2));
  std::string dst(8, 'z');
  DataPortReply r = w.Read(absl::MakeSpan(dst));
  EXPECT_THAT(r.status, StatusIs(absl::StatusCode::kUnavailable,
                                 HasSubstr("reading the status")));
  EXPECT_FALSE(r.refused);
  EXPECT_FALSE(r.reusable);
}

TEST(DataPortWireTest, ErrorTrailerCutShortIsNotReusable) {
  std::string trailer(4, '\0');
  PutLe32(&trailer[0], kDataPortErrorFrame);
  trailer += EncodeDataPortStatusBody(absl::DataLossError("bad block"));
  Wire w(Header(absl::StatusCode::kOk, "") + Frame("ab") +
         trailer.substr(0, trailer.size() - 1));
  std::string dst(8, 'z');
  DataPortReply r = w.Read(absl::MakeSpan(dst));
  EXPECT_THAT(r.status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(r.got, 2u);
  EXPECT_FALSE(r.reusable);
}

TEST(DataPortWireTest, ErrorTrailerIsTheAgentsAnswer) {
  std::string trailer(4, '\0');
  PutLe32(&trailer[0], kDataPortErrorFrame);
  trailer += EncodeDataPortStatusBody(absl::DataLossError("bad block"));
  Wire w(Header(absl::StatusCode::kOk, "") + Frame("ab") + trailer);
  std::string dst(8, 'z');
  DataPortReply r = w.Read(absl::MakeSpan(dst));
  EXPECT_THAT(r.status,
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad block")));
  EXPECT_FALSE(r.refused);
  EXPECT_TRUE(r.reusable);
}

TEST(DataPortWireTest, RejectsOversizedFrameUnknownCodeAndBadCrc) {
  std::string dst(4, 'z');
  DataPortReply r =
      Wire(Header(absl::StatusCode::kOk, "") + Frame("abcde") + kEnd)
          .Read(absl::MakeSpan(dst));
  EXPECT_THAT(r.status, StatusIs(absl::StatusCode::kInternal,
                                 HasSubstr("frame of 5 bytes")));
  EXPECT_EQ(dst, "zzzz");

  std::string unknown = Header(absl::StatusCode::kOk, "");
  PutLe32(&unknown[4], 99);
  r = Wire(unknown).Read(absl::MakeSpan(dst));
  EXPECT_THAT(r.status, StatusIs(absl::StatusCode::kInternal,
                                 HasSubstr("unknown status code 99")));
  EXPECT_FALSE(r.reusable);

  std::string corrupt = Frame("ab");
  corrupt.back() ^= 1;
  r = Wire(Header(absl::StatusCode::kOk, "") + corrupt + kEnd)
          .Read(absl::MakeSpan(dst));
  EXPECT_THAT(r.status, StatusIs(absl::StatusCode::kDataLoss));
  r = Wire(Header(absl::StatusCode::kOk, "") + corrupt + kEnd)
          .Read(absl::MakeSpan(dst), /*check_crc=*/false);
  EXPECT_THAT(r.status, IsOk());
}

}  // namespace
}  // namespace node
}  // namespace rangefs
