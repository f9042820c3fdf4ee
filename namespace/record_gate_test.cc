#include "namespace/record_gate.h"

#include <string>
#include <tuple>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"

namespace rangefs {
namespace ns {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kKey[] = "/rangefs/v1/c/files/d/f";

v1::FileLayout OneExtent(uint64_t size) {
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY);
  v1::Extent* e = l.add_extents();
  e->set_length(size);
  v1::Replica* r = e->add_replicas();
  r->set_node_id("n1");
  r->set_object("d/f");
  return l;
}

v1::FileLayout Striped(uint64_t size, uint64_t unit, int targets) {
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY);
  l.mutable_striped()->set_stripe_unit(unit);
  for (int t = 0; t < targets; ++t) {
    v1::Replica* r = l.mutable_striped()->add_targets()->add_replicas();
    r->set_node_id("n" + std::to_string(t));
    r->set_object("s/" + std::to_string(t));
  }
  return l;
}

// Expects DATA_LOSS naming the key and containing `rule`.
void ExpectRejected(const v1::FileLayout& l, const std::string& rule) {
  EXPECT_THAT(DecodeFileLayout(kKey, l.SerializeAsString()).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(kKey), HasSubstr(rule))));
}

TEST(RecordGateTest, AcceptsValidLayouts) {
  EXPECT_THAT(DecodeFileLayout(kKey, OneExtent(100).SerializeAsString()),
              IsOk());
  EXPECT_THAT(DecodeFileLayout(kKey, Striped(1000, 64, 3).SerializeAsString()),
              IsOk());
}

TEST(RecordGateTest, RejectsPoisonedLayouts) {
  ExpectRejected(Striped(1000, 0, 3), "stripe_unit is 0");
  ExpectRejected(Striped(1000, 64, 0), "no targets");
  ExpectRejected(Striped(1000, uint64_t{1} << 60, 2), "stripe_unit");
  v1::FileLayout up = OneExtent(10);
  up.mutable_extents(0)->mutable_replicas(0)->set_object("../../../../tmp/x");
  ExpectRejected(up, "\"..\"");
  v1::FileLayout abs = OneExtent(10);
  abs.mutable_extents(0)->mutable_replicas(0)->set_object("/etc/passwd");
  ExpectRejected(abs, "absolute");
  v1::FileLayout shortl = OneExtent(10);
  shortl.set_size(20);
  ExpectRejected(shortl, "have no extent");
  v1::FileLayout huge = OneExtent(10);
  huge.set_size(UINT64_MAX);
  ExpectRejected(huge, "exceeds the maximum file size");
  v1::FileLayout dup = OneExtent(10);
  *dup.mutable_extents(0)->add_replicas() = dup.extents(0).replicas(0);
  ExpectRejected(dup, "distinct nodes");
  v1::FileLayout badnode = OneExtent(10);
  badnode.mutable_extents(0)->mutable_replicas(0)->set_node_id("a/b");
  ExpectRejected(badnode, "node id");
}

// A valid RS(k+m) layout: columns on nodes n0 .. n(k+m-1).
v1::FileLayout ErasureCoded(uint64_t size, uint64_t unit, int k, int m) {
  v1::FileLayout l = Striped(size, unit, k + m);
  l.set_state(v1::READY_EC);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(static_cast<uint32_t>(unit));
  v1::ErasureCode* e = l.mutable_striped()->mutable_erasure();
  e->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  e->set_data_columns(static_cast<uint32_t>(k));
  e->set_parity_columns(static_cast<uint32_t>(m));
  return l;
}

TEST(RecordGateTest, AcceptsErasureCodedLayouts) {
  EXPECT_THAT(
      DecodeFileLayout(kKey, ErasureCoded(1000, 64, 6, 3).SerializeAsString()),
      IsOk());
  EXPECT_THAT(
      DecodeFileLayout(
          kKey,
          ErasureCoded(1, 64, kMaxEcCellsPerRow - 4, 4).SerializeAsString()),
      IsOk());
  EXPECT_THAT(
      DecodeFileLayout(kKey, ErasureCoded(1, 64, 1, 1).SerializeAsString()),
      IsOk());
}

TEST(RecordGateTest, RejectsEveryInvalidErasureCodedShape) {
  v1::FileLayout l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_erasure()->set_data_columns(0);
  ExpectRejected(l, "data_columns is 0");
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_erasure()->set_parity_columns(0);
  ExpectRejected(l, "parity_columns is 0");
  l = ErasureCoded(1000, 64, kMaxEcCellsPerRow - 2, 3);
  ExpectRejected(l, "(30+3): k + m is above the codec's cap of 32");
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_erasure()->set_parity_columns(4000000000u);
  ExpectRejected(l, "k + m is above the codec's cap");
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_erasure()->set_codec(
      v1::ErasureCode::CODEC_UNSPECIFIED);
  ExpectRejected(l, "codec 0 is unknown");
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_erasure()->set_codec(
      static_cast<v1::ErasureCode::Codec>(7));
  ExpectRejected(l, "codec 7 is unknown");
  // Targets: k + m exactly.
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_targets()->RemoveLast();
  ExpectRejected(l, "has 8 targets, needs 9");
  l = ErasureCoded(1000, 64, 6, 3);
  v1::Replica* extra = l.mutable_striped()->add_targets()->add_replicas();
  extra->set_node_id("n99");
  extra->set_object("s/99");
  ExpectRejected(l, "has 10 targets, needs 9");
  // One replica per column.
  l = ErasureCoded(1000, 64, 6, 3);
  v1::Replica* second = l.mutable_striped()->mutable_targets(7)->add_replicas();
  second->set_node_id("n42");
  second->set_object("s/42");
  ExpectRejected(l, "column 7 has 2 replicas");
  // k + m distinct nodes (data and parity on one node).
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_targets(8)->mutable_replicas(0)->set_node_id(
      "n2");
  ExpectRejected(l, "node \"n2\" holds more than one column");
  // A cell is one checksum block.
  l = ErasureCoded(1000, 64, 6, 3);
  l.set_checksum_block_size(128);
  ExpectRejected(l, "stripe_unit 64 must equal checksum_block_size 128");
  l = ErasureCoded(1000, 64, 6, 3);
  l.set_checksum(v1::CHECKSUM_NONE);
  ExpectRejected(l, "with crc32c sidecars");
  // The state old binaries refuse, both ways.
  l = ErasureCoded(1000, 64, 6, 3);
  l.set_state(v1::READY);
  ExpectRejected(l, "must be ready (erasure-coded)");
  l = ErasureCoded(1000, 64, 6, 3);
  l.set_state(v1::IMPORTING);
  ExpectRejected(l, "must be ready (erasure-coded)");
  l = Striped(1000, 64, 3);
  l.set_state(v1::READY_EC);
  ExpectRejected(l, "has no striped layout with an erasure code");
  l = OneExtent(100);
  l.set_state(v1::READY_EC);
  ExpectRejected(l, "has no striped layout with an erasure code");
  // No moves of coded columns.
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_targets(0)->mutable_replicas(0)->set_leaving(
      true);
  ExpectRejected(l, "column 0 is marked leaving");
  // The derived cell-checksum object must be a valid name.
  l = ErasureCoded(1000, 64, 6, 3);
  l.mutable_striped()->mutable_targets(6)->mutable_replicas(0)->set_object(
      std::string(251, 'p'));
  ExpectRejected(l, "parity column 6 cell checksums");
}

TEST(RecordGateTest, RejectsTooManyExtentsBeforeWalkingThem) {
  v1::FileLayout l;
  l.set_size(kMaxExtents + 1);
  l.set_state(v1::READY);
  for (int i = 0; i <= kMaxExtents; ++i) {
    v1::Extent* e = l.add_extents();
    e->set_offset(static_cast<uint64_t>(i));
    e->set_length(1);
  }
  ExpectRejected(l, "extents (max");
}

TEST(RecordGateTest, RejectsGarbageAndOversizedValues) {
  EXPECT_THAT(DecodeFileLayout(kKey, "\xff\xff\xff\xff garbage").status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(kKey), HasSubstr("not a decodable"))));
  std::string big(kMaxLayoutBytes + 1, '\0');
  EXPECT_THAT(DecodeFileLayout(kKey, big).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bytes (max")));
}

v1::NodeRecord Node(const std::string& id) {
  v1::NodeRecord n;
  n.set_id(id);
  n.add_addresses("127.0.0.1:7070");
  n.set_export_path("/srv/rangefs");
  n.set_admin_state(v1::ACTIVE);
  return n;
}

TEST(RecordGateTest, NodeRecords) {
  const std::string key = "/rangefs/v1/c/nodes/n1";
  EXPECT_THAT(DecodeNodeRecord(key, "n1", Node("n1").SerializeAsString()),
              IsOk());
  EXPECT_THAT(
      DecodeNodeRecord(key, "n1", Node("n2").SerializeAsString()).status(),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("its key names")));
  v1::NodeRecord bad = Node("n1");
  bad.set_addresses(0, "evil host;rm -rf:7070");
  EXPECT_THAT(DecodeNodeRecord(key, "n1", bad.SerializeAsString()).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("address 0")));
  bad = Node("n1");
  bad.set_addresses(0, "127.0.0.1:99999");
  EXPECT_THAT(DecodeNodeRecord(key, "n1", bad.SerializeAsString()).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("host:port")));
  bad = Node("n1");
  bad.set_mount_path("/mnt/../etc");
  EXPECT_THAT(DecodeNodeRecord(key, "n1", bad.SerializeAsString()).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("mount path")));
  EXPECT_THAT(DecodeNodeRecord(key, "n1", "\x0a\xff").status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(key)));
}

TEST(RecordGateTest, LiveRecords) {
  const std::string key = "/rangefs/v1/c/live/n1";
  v1::LiveRecord l;
  l.set_node_id("n1");
  l.set_health(v1::LiveRecord::HEALTHY);
  l.add_addresses("[::1]:7070");
  EXPECT_THAT(DecodeLiveRecord(key, "n1", l.SerializeAsString()), IsOk());
  EXPECT_THAT(DecodeLiveRecord(key, "n1", "garbage\xff\xff").status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(key)));
  v1::LiveRecord bad = l;
  bad.set_health(static_cast<v1::LiveRecord::Health>(99));
  EXPECT_THAT(DecodeLiveRecord(key, "n1", bad.SerializeAsString()).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("health 99")));
  bad = l;
  bad.set_node_id("n2");
  EXPECT_THAT(DecodeLiveRecord(key, "n1", bad.SerializeAsString()).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("its key")));
}

TEST(RecordGateTest, LiveRecordNfsExport) {
  const std::string key = "/rangefs/v1/c/live/n1";
  v1::LiveRecord l;
  l.set_node_id("n1");
  l.set_health(v1::LiveRecord::HEALTHY);
  l.mutable_nfs_export()->set_url("nfs://10.0.0.1:2049/srv/n1");
  l.mutable_nfs_export()->set_version("4.1");
  l.mutable_nfs_export()->set_refused("forged by a writer");
  absl::StatusOr<v1::LiveRecord> r =
      DecodeLiveRecord(key, "n1", l.SerializeAsString());
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->nfs_export().url(), "nfs://10.0.0.1:2049/srv/n1");
  EXPECT_EQ(r->nfs_export().version(), "4.1");
  EXPECT_EQ(r->nfs_export().refused(), "");

  // A bad URL or version costs the export only, with the reason kept.
  for (auto [url, version, why] :
       {std::tuple{"http://10.0.0.1/srv/n1", "4.1", "scheme"},
        std::tuple{"nfs://10.0.0.1/srv/../etc", "3", "normalized"},
        std::tuple{"nfs://10.0.0.1/srv/n1", "2", "not 3, 4 or 4.1"}}) {
    v1::LiveRecord bad = l;
    bad.mutable_nfs_export()->set_url(url);
    bad.mutable_nfs_export()->set_version(version);
    r = DecodeLiveRecord(key, "n1", bad.SerializeAsString());
    ASSERT_THAT(r, IsOk()) << url;
    EXPECT_EQ(r->health(), v1::LiveRecord::HEALTHY);
    EXPECT_EQ(r->nfs_export().url(), "") << url;
    EXPECT_EQ(r->nfs_export().version(), "") << url;
    EXPECT_THAT(r->nfs_export().refused(),
                AllOf(HasSubstr(key), HasSubstr(why), HasSubstr("not used")));
  }
  // No export: nothing refused.
  l.clear_nfs_export();
  r = DecodeLiveRecord(key, "n1", l.SerializeAsString());
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->has_nfs_export());
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
