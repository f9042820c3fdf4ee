// Writes the seed inputs of the fuzz corpora (tests/fuzz/README.md):
//   make_seeds DIR   ->  DIR/data_port/seed-*, DIR/layout/seed-*
// Valid requests, replies, chunks and layouts (extents and striped forms),
// and the poisoned ones a hostile etcd or agent could send: stripe_unit 0,
// striped without targets, "../" and absolute object paths, extents short
// of the size, size 2^64-1, 10^6 extents, garbage bytes. Deterministic:
// running it again rewrites the same files.
//
//   bazel run --symlink_prefix=/ //tests/fuzz:make_seeds --
//   "$PWD/tests/fuzz/corpus"
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/crc32c.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/layout.pb.h"
#include "storage_node/data_port_wire.h"
#include "storage_node/read_chunk_codec.h"

namespace rangefs {
namespace fuzz {
namespace {

namespace fs = std::filesystem;
using node::PutLe16;
using node::PutLe32;
using node::PutLe64;

bool Write(const fs::path& dir, absl::string_view name,
           absl::string_view bytes) {
  const fs::path p = dir / absl::StrCat("seed-", name);
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) {
    std::fprintf(stderr, "make_seeds: cannot write %s\n", p.c_str());
    return false;
  }
  return true;
}

std::string U8(uint8_t v) { return std::string(1, static_cast<char>(v)); }
std::string U16(uint16_t v) {
  std::string s(2, '\0');
  PutLe16(&s[0], v);
  return s;
}
std::string U32(uint32_t v) {
  std::string s(4, '\0');
  PutLe32(&s[0], v);
  return s;
}
std::string U64(uint64_t v) {
  std::string s(8, '\0');
  PutLe64(&s[0], v);
  return s;
}

// ---- data_port corpus (format: tests/fuzz/data_port_fuzzer.cc) ----

std::string ReplyHeader(const absl::Status& s) {
  return U32(node::kDataPortReplyMagic) + node::EncodeDataPortStatusBody(s);
}
std::string Frame(absl::string_view data) {
  return absl::StrCat(U32(static_cast<uint32_t>(data.size())),
                      U32(Crc32c(data)), data);
}
std::string EndFrame() { return U32(0) + U32(0); }
std::string ErrorTrailer(const absl::Status& s) {
  return U32(node::kDataPortErrorFrame) + node::EncodeDataPortStatusBody(s);
}
// Mode 1 input: requested length, check_crc, offset, then the stream.
std::string Reply(uint16_t dst, bool check, absl::string_view stream) {
  return absl::StrCat(U8(1), U16(dst), U8(check ? 1 : 0), U32(4096), stream);
}
std::string Flatten(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!b.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}
// Mode 2 input: buffer size, flags (bit 0 check_crc, rest slices - 1).
std::string Chunk(uint16_t dst, uint8_t flags, absl::string_view wire) {
  return absl::StrCat(U8(2), U16(dst), U8(flags), wire);
}

bool DataPortSeeds(const fs::path& dir) {
  const std::string ok = ReplyHeader(absl::OkStatus());
  std::string bad_crc = Frame("hello");
  bad_crc.back() ^= 0x20;
  std::string bad_version = node::EncodeDataPortRequest("a", 0, 1, 0);
  bad_version[4] = 2;
  std::string long_path = node::EncodeDataPortRequest("a", 0, 1, 0);
  PutLe16(&long_path[6], node::kDataPortMaxPathBytes + 1);
  const std::string data = "0123456789abcdef";
  const grpc::Slice data_slice(data.data(), data.size());
  const std::string chunk =
      Flatten(node::EncodeReadRangeChunk(1 << 20, data_slice, Crc32c(data)));
  const std::pair<const char*, std::string> seeds[] = {
      {"request-verify",
       U8(0) + node::EncodeDataPortRequest("seg/0001", 4096, 1 << 20, 1)},
      {"request-plain", U8(0) + node::EncodeDataPortRequest("o", 0, 0, 0)},
      {"request-unknown-flags",
       U8(0) + node::EncodeDataPortRequest("o", 0, 1, 0x82)},
      {"request-bad-magic",
       U8(0) + std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"request-bad-version", U8(0) + bad_version},
      {"request-path-too-long", U8(0) + long_path},
      {"request-escaping-path",
       U8(0) + node::EncodeDataPortRequest("../../etc/shadow", 0, 4096, 0)},
      {"request-short", U8(0) + U32(node::kDataPortRequestMagic)},
      {"reply-two-frames",
       Reply(16, true, ok + Frame("hello ") + Frame("world") + EndFrame())},
      {"reply-empty", Reply(0, true, ok + EndFrame())},
      {"reply-not-found",
       Reply(8, true, ReplyHeader(absl::NotFoundError("no object o")))},
      {"reply-error-trailer",
       Reply(16, true,
             ok + Frame("abc") +
                 ErrorTrailer(absl::DataLossError("block 3 crc mismatch")))},
      {"reply-ok-error-trailer",
       Reply(16, true, ok + ErrorTrailer(absl::OkStatus()))},
      {"reply-frame-too-big", Reply(4, true, ok + Frame("hello") + EndFrame())},
      {"reply-bad-crc", Reply(8, true, ok + bad_crc + EndFrame())},
      {"reply-bad-crc-unchecked", Reply(8, false, ok + bad_crc + EndFrame())},
      {"reply-unknown-code",
       Reply(8, true, U32(node::kDataPortReplyMagic) + U32(1000) + U32(0))},
      {"reply-huge-message",
       Reply(8, true,
             U32(node::kDataPortReplyMagic) + U32(5) + U32(0xFFFFFFF0u))},
      {"reply-truncated", Reply(16, true, ok + Frame("hello").substr(0, 10))},
      {"chunk-valid", Chunk(64, 1, chunk)},
      {"chunk-sliced", Chunk(64, 1 | (5 << 1), chunk)},
      {"chunk-too-big-for-dst", Chunk(4, 1, chunk)},
      {"chunk-unknown-fields",
       Chunk(64, 1,
             absl::StrCat(std::string("\x20\x05\x29", 3), std::string(8, 'x'),
                          std::string("\x32\x02zz\x3d", 5), std::string(4, 'y'),
                          chunk))},
      {"chunk-repeated-data", Chunk(64, 0, chunk + chunk)},
      {"chunk-truncated-varint",
       Chunk(64, 0, std::string("\x08\xff\xff\xff", 4))},
      {"chunk-long-varint", Chunk(64, 0, "\x08" + std::string(11, '\xff'))},
      {"chunk-field-zero", Chunk(64, 0, std::string("\x00\x01", 2))},
      {"chunk-wire-type-7", Chunk(64, 0, std::string("\x0f\x01", 2))},
      {"chunk-length-past-end", Chunk(64, 0,
                                      std::string("\x12\x7f"
                                                  "ab"))},
  };
  for (const auto& [name, bytes] : seeds) {
    if (!Write(dir, name, bytes)) return false;
  }
  return true;
}

// ---- layout corpus (format: tests/fuzz/layout_fuzzer.cc) ----

constexpr char kFileKey[] = "/rangefs/v1/default/files/crawl/seg-0001";

// mode, u16 key length, key, u32 value length, value; no ranges (the
// fuzzer then uses its default ranges).
std::string Record(uint8_t mode, absl::string_view key,
                   absl::string_view value) {
  return absl::StrCat(U8(mode), U16(static_cast<uint16_t>(key.size())), key,
                      U32(static_cast<uint32_t>(value.size())), value);
}
std::string Layout(const v1::FileLayout& l) {
  return Record(0, kFileKey, l.SerializeAsString());
}

void AddReplica(google::protobuf::RepeatedPtrField<v1::Replica>* rs,
                const std::string& node, const std::string& object,
                uint64_t object_offset) {
  v1::Replica* r = rs->Add();
  r->set_node_id(node);
  r->set_object(object);
  r->set_object_offset(object_offset);
}

v1::FileLayout Extents(uint64_t size, const std::vector<uint64_t>& cuts,
                       const std::string& object = "crawl/seg-0001") {
  v1::FileLayout l;
  l.set_file_id(7);
  l.set_generation(1);
  l.set_size(size);
  l.set_state(v1::READY);
  uint64_t at = 0;
  for (size_t i = 0; size > 0 && i <= cuts.size(); ++i) {
    const uint64_t end = i < cuts.size() ? cuts[i] : size;
    v1::Extent* e = l.add_extents();
    e->set_offset(at);
    e->set_length(end - at);
    AddReplica(e->mutable_replicas(), "n1", object, at);
    AddReplica(e->mutable_replicas(), "n2", absl::StrCat(object, ".b"), 0);
    at = end;
  }
  return l;
}

v1::FileLayout Striped(uint64_t size, uint64_t unit, int width) {
  v1::FileLayout l;
  l.set_file_id(8);
  l.set_generation(3);
  l.set_size(size);
  l.set_state(v1::READY);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(4096);
  l.mutable_striped()->set_stripe_unit(unit);
  for (int t = 0; t < width; ++t) {
    v1::StripedLayout::Target* target = l.mutable_striped()->add_targets();
    AddReplica(target->mutable_replicas(), absl::StrCat("n", t),
               absl::StrCat("stripe/", t), 0);
    AddReplica(target->mutable_replicas(), absl::StrCat("n", t + width),
               absl::StrCat("stripe/", t), 1 << 20);
  }
  return l;
}

bool LayoutSeeds(const fs::path& dir) {
  v1::FileLayout unit0 = Striped(10000, 4096, 3);
  unit0.mutable_striped()->set_stripe_unit(0);
  v1::FileLayout no_targets = Striped(10000, 4096, 3);
  no_targets.mutable_striped()->clear_targets();
  v1::FileLayout short_extents = Extents(1000, {400});
  short_extents.set_size(2000);
  v1::FileLayout max_size = Extents(~uint64_t{0}, {});
  v1::FileLayout max_striped = Striped(~uint64_t{0}, 1 << 20, 4);
  v1::FileLayout both = Extents(10000, {});
  *both.mutable_striped() = Striped(10000, 4096, 2).striped();
  v1::FileLayout overflow = Extents(4096, {});
  overflow.mutable_extents(0)->mutable_replicas(0)->set_object_offset(
      ~uint64_t{0} - 10);
  v1::FileLayout many;  // 10^6 extents, each as small as the wire allows.
  many.set_size(1000000);
  for (int i = 0; i < 1000000; ++i) many.add_extents();
  v1::FileLayout over_cap;  // Fits in kMaxLayoutBytes, over kMaxExtents.
  over_cap.set_size(100001);
  for (int i = 0; i < 100001; ++i) over_cap.add_extents();
  v1::NodeRecord node;
  node.set_id("n1");
  node.add_addresses("127.0.0.1:7070");
  node.set_export_path("/srv/rangefs");
  node.set_admin_state(v1::ACTIVE);
  v1::NodeRecord bad_node = node;
  bad_node.set_id("../n1");
  bad_node.clear_addresses();
  bad_node.set_export_path("srv");
  v1::LiveRecord live;
  live.set_node_id("n1");
  live.set_health(v1::LiveRecord::HEALTHY);
  live.add_addresses("127.0.0.1:7070");
  live.set_inflight(3);
  v1::LiveRecord bad_live = live;
  bad_live.set_node_id("n2");  // Not the key's node.
  const std::string valid = Extents(10000, {4096, 8192}).SerializeAsString();
  std::string garbage;
  uint32_t x = 12345;
  for (int i = 0; i < 300; ++i) {
    x = x * 1103515245u + 12345u;
    garbage.push_back(static_cast<char>(x >> 16));
  }
  const std::pair<const char*, std::string> seeds[] = {
      {"extents-valid", Layout(Extents(10000, {4096, 8192}))},
      {"extents-one-byte", Layout(Extents(1, {}))},
      {"empty-file", Layout(Extents(0, {}))},
      {"striped-valid", Layout(Striped(10000, 4096, 3))},
      {"striped-wide", Layout(Striped(uint64_t{1} << 40, 1 << 20, 8))},
      {"with-ranges", Layout(Extents(10000, {4096, 8192})) + U8(3) + U64(4000) +
                          U64(300) + U32(64) + U8(0) + U64(9999) +
                          U64(~uint64_t{0}) + U32(0)},
      {"poison-stripe-unit-0", Layout(unit0)},
      {"poison-striped-no-targets", Layout(no_targets)},
      {"poison-dotdot-object", Layout(Extents(100, {}, "../../etc/passwd"))},
      {"poison-absolute-object", Layout(Extents(100, {}, "/etc/passwd"))},
      {"poison-extents-short-of-size", Layout(short_extents)},
      {"poison-size-max", Layout(max_size)},
      {"poison-striped-size-max", Layout(max_striped)},
      {"poison-extents-and-striped", Layout(both)},
      {"poison-object-offset-overflow", Layout(overflow)},
      {"poison-million-extents", Layout(many)},
      {"poison-100001-extents", Layout(over_cap)},
      {"poison-garbage", Record(0, kFileKey, garbage)},
      {"poison-truncated", Record(0, kFileKey, valid.substr(0, 25))},
      {"odd-key", Record(0, "/rangefs/v1/default/files/../x\n\x01", valid)},
      {"node-valid",
       Record(1, "/rangefs/v1/default/nodes/n1", node.SerializeAsString())},
      {"node-poisoned",
       Record(1, "/rangefs/v1/default/nodes/n1", bad_node.SerializeAsString())},
      {"node-garbage", Record(1, "/rangefs/v1/default/nodes/n1", garbage)},
      {"live-valid",
       Record(2, "/rangefs/v1/default/live/n1", live.SerializeAsString())},
      {"live-other-node",
       Record(2, "/rangefs/v1/default/live/n1", bad_live.SerializeAsString())},
      {"live-garbage", Record(2, "/rangefs/v1/default/live/n1", garbage)},
  };
  for (const auto& [name, bytes] : seeds) {
    if (!Write(dir, name, bytes)) return false;
  }
  return true;
}

}  // namespace
}  // namespace fuzz
}  // namespace rangefs

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  std::error_code ec;
  fs::create_directories(root / "data_port", ec);
  fs::create_directories(root / "layout", ec);
  if (ec) {
    std::fprintf(stderr, "make_seeds: cannot create dirs under %s: %s\n",
                 argv[1], ec.message().c_str());
    return 1;
  }
  if (!rangefs::fuzz::DataPortSeeds(root / "data_port") ||
      !rangefs::fuzz::LayoutSeeds(root / "layout")) {
    return 1;
  }
  std::printf("seeds written under %s\n", argv[1]);
  return 0;
}
