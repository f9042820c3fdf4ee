// Fuzz target over what the namespace reads from etcd: untrusted record
// bytes -> the record gate (namespace/record_gate.h) -> for valid layouts,
// ns::MapRange over ranges and piece caps taken from the input, and
// ns::ReferencedNodes. Checks that the gate's answers are consistent and
// that every mapped piece is sane (inside [0, size), contiguous, within one
// extent / stripe unit, replicas present, object offsets without
// overflow); aborts (FUZZ_CHECK) on a violation; ASan/UBSan catch the rest.
//
// Input: u8 mode (0 file layout, 1 node record, 2 live record; mod 3),
// u16 key length, key, u32 value length, value, then ranges of 21 bytes
// each: u8 kind, u64 a, u64 b, u32 max_piece. kind bit 0: offset = a mod
// (size + 1), else a; bit 1: length = b mod (size - offset + 1), else b.
// Without ranges a fixed set is used (whole file, first and last byte,
// past the end). Corpus: tests/fuzz/corpus/layout (tests/fuzz/README.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/stubs/logging.h"
#include "namespace/keys.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"
#include "proto/layout.pb.h"
#include "tests/fuzz/byte_reader.h"
#include "tests/fuzz/fuzz_check.h"

namespace rangefs {
namespace fuzz {
namespace {

namespace v1 = ::rangefs::v1;

// Keeps protobuf's parse-error log lines (e.g. invalid UTF-8 in a string
// field) off stderr: one per rejected input would swamp the fuzzer.
const bool kProtobufQuiet = [] {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}();

// Bounds the pieces one range may produce (MapRange returns one per piece;
// a caller's range is bounded by its buffer).
constexpr uint64_t kMaxPieces = 4096;

struct Range {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t max_piece = 0;
};

std::vector<Range> Ranges(ByteReader& in, uint64_t size) {
  std::vector<Range> out;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  while (in.remaining() >= 21) {
    const uint8_t kind = in.U8();
    Range r;
    r.offset = in.U64();
    if (kind & 1) r.offset %= size + 1;  // size + 1 == 0 only for size max.
    r.length = in.U64();
    if ((kind & 2) && r.offset <= size) r.length %= size - r.offset + 1;
    r.max_piece = in.U32();
    out.push_back(r);
  }
  if (out.empty()) {
    out = {{0, kMax, 0},
           {0, 1, 0},
           {size / 2, size, 4096},
           {size - 1, 1, 0},
           {size, 1, 0},
           {kMax, kMax, 1},
           {size / 3, kMax, 1 << 20}};
  }
  return out;
}

// Raises r.max_piece / lowers r.length so that MapRange makes at most
// about kMaxPieces pieces.
void Bound(Range& r, const v1::FileLayout& l) {
  if (r.offset >= l.size()) return;
  uint64_t len = std::min(r.length, l.size() - r.offset);
  if (l.has_striped()) {
    const uint64_t unit = l.striped().stripe_unit();
    if (len / unit > kMaxPieces) len = unit * kMaxPieces;
  }
  r.length = len;
  if (r.max_piece != 0 && len / r.max_piece > kMaxPieces) {
    r.max_piece = len / kMaxPieces + 1;
  }
}

bool AddOverflows(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum);
}

void CheckPieces(const v1::FileLayout& l, const Range& r,
                 const std::vector<ns::Piece>& pieces,
                 const std::vector<std::string>& nodes) {
  const uint64_t size = l.size();
  if (r.offset >= size || r.length == 0) {
    FUZZ_CHECK(pieces.empty()) << pieces.size() << " pieces for an empty range";
    return;
  }
  const uint64_t end = r.offset + std::min(r.length, size - r.offset);
  uint64_t pos = r.offset;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ns::Piece& p = pieces[i];
    FUZZ_CHECK(p.offset == pos)
        << "piece " << i << " at " << p.offset << ", expected " << pos;
    FUZZ_CHECK(p.length > 0) << "empty piece " << i;
    FUZZ_CHECK(p.length <= end - p.offset) << "piece " << i << " past " << end;
    FUZZ_CHECK(r.max_piece == 0 || p.length <= r.max_piece) << p.length;
    FUZZ_CHECK(p.replicas != nullptr && !p.replicas->empty()) << "piece " << i;
    FUZZ_CHECK(p.replicas->size() <= ns::kMaxReplicas) << p.replicas->size();
    if (l.has_striped()) {
      const v1::StripedLayout& s = l.striped();
      const uint64_t unit = s.stripe_unit();
      const uint64_t k = p.offset / unit;
      FUZZ_CHECK((p.offset + p.length - 1) / unit == k)
          << "piece " << i << " spans stripe units";
      FUZZ_CHECK(p.unit == k % static_cast<uint64_t>(s.targets_size()));
      FUZZ_CHECK(p.replicas == &s.targets(static_cast<int>(p.unit)).replicas());
    } else {
      FUZZ_CHECK(p.unit < static_cast<uint32_t>(l.extents_size())) << p.unit;
      const v1::Extent& e = l.extents(static_cast<int>(p.unit));
      FUZZ_CHECK(p.offset >= e.offset() &&
                 p.length <= e.offset() + e.length() - p.offset)
          << "piece " << i << " outside extent " << p.unit;
      FUZZ_CHECK(p.object_delta == p.offset - e.offset());
      FUZZ_CHECK(p.replicas == &e.replicas());
    }
    for (const v1::Replica& rep : *p.replicas) {
      FUZZ_CHECK(!AddOverflows(rep.object_offset(), p.object_delta) &&
                 !AddOverflows(p.ObjectOffset(rep), p.length))
          << "object offset overflows: " << rep.object_offset() << " + "
          << p.object_delta << " + " << p.length;
      FUZZ_CHECK(std::binary_search(nodes.begin(), nodes.end(), rep.node_id()))
          << "node " << rep.node_id() << " not in ReferencedNodes";
    }
    pos += p.length;
  }
  FUZZ_CHECK(pos == end) << "pieces end at " << pos << ", range at " << end;
}

void CheckGateError(const absl::Status& s, absl::string_view key) {
  FUZZ_CHECK(absl::IsDataLoss(s)) << s;
  FUZZ_CHECK(absl::StrContains(s.message(), absl::CEscape(key))) << s;
}

void FuzzLayout(absl::string_view key, absl::string_view value,
                ByteReader& in) {
  absl::StatusOr<v1::FileLayout> l = ns::DecodeFileLayout(key, value);
  if (!l.ok()) {
    CheckGateError(l.status(), key);
    return;
  }
  FUZZ_CHECK(value.size() <= ns::kMaxLayoutBytes) << value.size();
  FUZZ_CHECK(ns::ValidateLayout(*l).ok()) << "gate passed an invalid layout";
  const std::vector<std::string> nodes = ns::ReferencedNodes(*l);
  FUZZ_CHECK(std::is_sorted(nodes.begin(), nodes.end()) &&
             std::adjacent_find(nodes.begin(), nodes.end()) == nodes.end())
      << "ReferencedNodes not sorted and unique";
  FUZZ_CHECK(l->size() == 0 || !nodes.empty()) << "bytes on no node";
  for (Range r : Ranges(in, l->size())) {
    Bound(r, *l);
    CheckPieces(*l, r, ns::MapRange(*l, r.offset, r.length, r.max_piece),
                nodes);
  }
}

void FuzzNode(absl::string_view key, absl::string_view value) {
  std::string key_id;
  if (!ns::Keys().ParseNode(key, &key_id)) key_id.clear();
  absl::StatusOr<v1::NodeRecord> n = ns::DecodeNodeRecord(key, key_id, value);
  if (!n.ok()) {
    CheckGateError(n.status(), key);
    return;
  }
  FUZZ_CHECK(ns::ValidateNode(*n).ok());
  FUZZ_CHECK(key_id.empty() || n->id() == key_id) << n->id();
  FUZZ_CHECK(n->addresses_size() <= ns::kMaxNodeAddresses);
}

void FuzzLive(absl::string_view key, absl::string_view value) {
  std::string key_id;
  if (!ns::Keys().ParseLive(key, &key_id)) key_id.clear();
  absl::StatusOr<v1::LiveRecord> r = ns::DecodeLiveRecord(key, key_id, value);
  if (!r.ok()) {
    CheckGateError(r.status(), key);
    return;
  }
  FUZZ_CHECK(ns::ValidateNodeId(r->node_id()).ok());
  FUZZ_CHECK(key_id.empty() || r->node_id() == key_id) << r->node_id();
  FUZZ_CHECK(r->addresses_size() <= ns::kMaxNodeAddresses);
  FUZZ_CHECK(r->corrupt_objects_size() <= ns::kMaxListedObjects);
}

}  // namespace
}  // namespace fuzz
}  // namespace rangefs

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rangefs::fuzz::ByteReader in(data, size);
  const uint8_t mode = in.U8() % 3;
  const absl::string_view key = in.Bytes(in.U16());
  const absl::string_view value = in.Bytes(in.U32());
  switch (mode) {
    case 0:
      rangefs::fuzz::FuzzLayout(key, value, in);
      break;
    case 1:
      rangefs::fuzz::FuzzNode(key, value);
      break;
    default:
      rangefs::fuzz::FuzzLive(key, value);
      break;
  }
  return 0;
}
