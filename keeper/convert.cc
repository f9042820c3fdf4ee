#include "keeper/convert.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "ec/codec.h"
#include "keeper/convert_rows.h"
#include "namespace/ec_layout.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace keeper {
namespace {

// A fresh object prefix, like ingest's ("f/<16 hex>").
std::string FreshPrefix() {
  absl::BitGen gen;
  return absl::StrFormat("f/%016x", absl::Uniform<uint64_t>(gen));
}

// How `l` is protected now, for the log.
std::string ShapeOf(const v1::FileLayout& l) {
  if (ns::IsErasureCoded(l)) {
    const ns::EcGeometry g = ns::EcGeometryOf(l);
    return absl::StrCat("ec=", g.k, "+", g.m);
  }
  int lo = 1 << 30, hi = 0;
  for (int s = 0; s < SlotCount(l); ++s) {
    lo = std::min(lo, SlotReplicas(l, s).size());
    hi = std::max(hi, SlotReplicas(l, s).size());
  }
  return lo == hi ? absl::StrCat("replicas=", hi)
                  : absl::StrCat("replicas=", lo, "..", hi);
}

// Paces a stream to `rate` bytes/s since `start` (a rate, not a wait for
// an event).
void Pace(uint64_t rate, absl::Time start, uint64_t done) {
  if (rate == 0) return;
  const absl::Time due = start + absl::Seconds(static_cast<double>(done) /
                                               static_cast<double>(rate));
  const absl::Duration ahead = due - absl::Now();
  if (ahead > absl::ZeroDuration()) absl::SleepFor(ahead);
}

// Reads file bytes [offset, offset + n) of `layout` (replicated, or the
// data columns of an erasure-coded one) into dst, piece by piece, each
// piece from the first replica of its slot that answers (`prefer`'s node
// first when it has one), verified by its agent.
absl::Status ReadFileBytes(ingest::Agents& agents, const v1::FileLayout& l,
                           uint64_t offset, absl::Span<char> dst,
                           const std::vector<v1::Replica>& prefer,
                           absl::Duration timeout) {
  size_t done = 0;
  while (done < dst.size()) {
    const uint64_t at = offset + done;
    int slot = -1;
    uint64_t in_slot = 0, len = 0;
    if (l.extents_size() > 0) {
      for (int e = 0; e < l.extents_size(); ++e) {
        const v1::Extent& x = l.extents(e);
        if (at >= x.offset() && at < x.offset() + x.length()) {
          slot = e;
          in_slot = at - x.offset();
          len = x.offset() + x.length() - at;
          break;
        }
      }
    } else {
      const uint64_t unit = l.striped().stripe_unit();
      const uint64_t width =
          static_cast<uint64_t>(ns::DataColumnCount(l.striped()));
      const uint64_t u = at / unit;
      slot = static_cast<int>(u % width);
      in_slot = (u / width) * unit + at % unit;
      len = unit - at % unit;
    }
    if (slot < 0) {
      return absl::DataLossError(absl::StrCat("no extent holds byte ", at));
    }
    len = std::min<uint64_t>(len, dst.size() - done);
    std::vector<v1::Replica> order;
    if (static_cast<size_t>(slot) < prefer.size()) {
      order.push_back(prefer[static_cast<size_t>(slot)]);
    }
    for (const v1::Replica& r : SlotReplicas(l, slot)) order.push_back(r);
    absl::Status last = absl::DataLossError("no replica");
    bool got = false;
    for (const v1::Replica& r : order) {
      absl::StatusOr<size_t> n = absl::UnavailableError("not asked");
      last = agents.Call(r.node_id(), [&](node::NodeClient& c) {
        n = c.ReadRange(
            r.object(), r.object_offset() + in_slot, dst.subspan(done, len),
            {.deadline = absl::Now() + timeout, .verify_on_server = true});
        return n.status();
      });
      if (last.ok() && *n != len) {
        last = absl::DataLossError(
            absl::StrCat(r.object(), " on ", r.node_id(), " is short"));
      }
      if (last.ok()) {
        got = true;
        break;
      }
    }
    if (!got) {
      return absl::Status(
          last.code(), absl::StrCat("reading byte ", at, ": ", last.message()));
    }
    done += len;
  }
  return absl::OkStatus();
}

// Writes `object` on `node` from `read` (expected `bytes`), replacing an
// earlier attempt there.
absl::Status WriteObject(
    ingest::Agents& agents, const std::string& node, const std::string& object,
    uint64_t cell, uint64_t bytes, absl::Duration timeout,
    const std::function<absl::StatusOr<size_t>(absl::Span<char>)>& read) {
  absl::StatusOr<node::WriteObjectResponse> r =
      absl::UnavailableError("not asked");
  RANGEFS_RETURN_IF_ERROR(agents.Call(node, [&](node::NodeClient& nc) {
    r = nc.WriteObject(object, read,
                       {.deadline = absl::Now() + timeout,
                        .overwrite = true,
                        .block_size = static_cast<uint32_t>(cell),
                        .expected_size = static_cast<int64_t>(bytes)});
    return r.status();
  }));
  if (r->size() != bytes) {
    return absl::InternalError(absl::StrCat("wrote ", object, " on ", node,
                                            ": ", r->size(), " bytes, not ",
                                            bytes));
  }
  return absl::OkStatus();
}

struct NewObject {
  std::string node, object;
};

class Converter {
 public:
  Converter(ConvertContext& ctx, const Conversion& c, const ConvertOptions& o)
      : ctx_(ctx), c_(c), o_(o), what_(DescribeConversion(c)) {}

  ConvertResult Run() {
    RANGEFS_LOG(INFO) << "keeper: " << what_ << ": " << c_.bytes_to_write
                      << " bytes to write; raw bytes " << c_.raw_before
                      << " -> " << c_.raw_after;
    const bool ec = c_.kind == ConversionKind::kEcInPlace ||
                    c_.kind == ConversionKind::kEcRewrite;
    const absl::Status written = ec ? WriteColumns() : CopyReplicas();
    if (!written.ok()) {
      RANGEFS_LOG(WARNING) << "keeper: " << what_ << ": " << written
                           << "; retried next round";
      for (const NewObject& n : written_) {
        ctx_.TrashUnused(what_, c_.path, n.node, n.object);
      }
      return result_;
    }
    Step(2);
    Swap();
    return result_;
  }

 private:
  void Step(int n) {
    if (o_.at_step) o_.at_step(n, c_);
  }
  void Wrote(const std::string& node, const std::string& object,
             uint64_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    written_.push_back({node, object});
    result_.bytes_written += bytes;
    if (written_.size() == 1) Step(1);
  }

  // kEcInPlace: the m parity columns; kEcRewrite: all k + m columns. Then
  // the parity columns' .cells objects.
  absl::Status WriteColumns() {
    ns::EcGeometry g;
    g.k = c_.goal.ec_k;
    g.m = c_.goal.ec_m;
    g.cell = c_.cell;
    g.size = c_.size;
    const uint64_t row_bytes = static_cast<uint64_t>(g.k) * g.cell;
    g.rows = (g.size + row_bytes - 1) / row_bytes;
    RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<ec::Codec> codec,
                             ec::NewCodec({.k = g.k, .m = g.m}));
    const bool in_place = c_.kind == ConversionKind::kEcInPlace;
    ingest::Agents& agents = ctx_.agents();
    const std::vector<v1::Replica> prefer =
        in_place ? c_.data : std::vector<v1::Replica>();
    DataCellReader read = [&](uint64_t row,
                              int col) -> absl::StatusOr<std::string> {
      std::string cell(ns::DataCellBytes(g, row, col), '\0');
      const uint64_t at =
          (row * static_cast<uint64_t>(g.k) + static_cast<uint64_t>(col)) *
          g.cell;
      RANGEFS_RETURN_IF_ERROR(ReadFileBytes(agents, c_.planned, at,
                                            absl::MakeSpan(cell), prefer,
                                            o_.call_timeout));
      return cell;
    };
    ConvertRows rows(g, *codec, read);
    const std::string prefix = FreshPrefix();
    const int first = in_place ? g.k : 0;
    const int n = g.k + g.m - first;
    for (int t = first; t < g.k + g.m; ++t) {
      objects_.push_back(absl::StrCat(prefix, "/c", t));
    }
    // Every column at once, each paced at its share of the rate.
    // At least 1 B/s: a rate below n B/s must not round down to 0
    // (unthrottled).
    const uint64_t rate =
        o_.bytes_per_sec == 0
            ? 0
            : std::max<uint64_t>(1,
                                 o_.bytes_per_sec / static_cast<uint64_t>(n));
    std::vector<absl::Status> st(static_cast<size_t>(n));
    const absl::Time start = absl::Now();
    ingest::ParallelFor(static_cast<size_t>(n), n, [&](size_t i) {
      const int t = first + static_cast<int>(i);
      const std::string& node = c_.new_nodes[i];
      ColumnStream s(rows, t);
      uint64_t done = 0;
      auto next = [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
        if (!ctx_.MayAct()) {
          return absl::CancelledError("no longer the active keeper");
        }
        RANGEFS_ASSIGN_OR_RETURN(size_t got, s.Read(dst));
        done += got;
        Pace(rate, start, done);
        return got;
      };
      const uint64_t bytes = ns::EcColumnBytes(g, t);
      st[i] = WriteObject(agents, node, objects_[i], g.cell, bytes,
                          o_.write_timeout, next);
      if (st[i].ok()) Wrote(node, objects_[i], bytes);
    });
    for (size_t i = 0; i < st.size(); ++i) {
      if (!st[i].ok()) {
        return absl::Status(
            st[i].code(), absl::StrCat("writing column ", first + i, " on ",
                                       c_.new_nodes[i], ": ", st[i].message()));
      }
    }
    RANGEFS_ASSIGN_OR_RETURN(const std::string cells, rows.CellsObject());
    for (int j = 0; j < g.m; ++j) {
      const size_t i = static_cast<size_t>(g.k + j - first);
      const std::string name = ns::EcCellsObject(objects_[i]);
      size_t off = 0;
      auto next = [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
        const size_t k = std::min(dst.size(), cells.size() - off);
        std::memcpy(dst.data(), cells.data() + off, k);
        off += k;
        return k;
      };
      absl::Status s = WriteObject(agents, c_.new_nodes[i], name, g.cell,
                                   cells.size(), o_.call_timeout, next);
      if (!s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("writing ", name, " on ", c_.new_nodes[i],
                                   ": ", s.message()));
      }
      Wrote(c_.new_nodes[i], name, cells.size());
    }
    RANGEFS_LOG(INFO) << "keeper: " << what_ << ": " << n
                      << " column(s) written in " << (absl::Now() - start)
                      << " (" << rows.bytes_read() << " bytes read)";
    return absl::OkStatus();
  }

  // kEcToReplicas, kReplicas: the new replicas, copied agent to agent.
  absl::Status CopyReplicas() {
    const uint64_t rate = o_.bytes_per_sec;
    for (const NewReplica& a : c_.adds) {
      if (!ctx_.MayAct()) {
        return absl::CancelledError("no longer the active keeper");
      }
      if (!ctx_.Copy(what_, a.object, a.source_node, a.target_node, rate)) {
        return absl::UnavailableError(absl::StrCat("copying ", a.object, " to ",
                                                   a.target_node, " failed"));
      }
      Wrote(a.target_node, a.object, a.bytes);
    }
    return absl::OkStatus();
  }

  // Steps 2-4: trash records, one compare-and-swap, dated trash records.
  void Swap() {
    std::vector<std::string> data, parity;
    if (c_.kind == ConversionKind::kEcRewrite) {
      data.assign(objects_.begin(), objects_.begin() + c_.goal.ec_k);
      parity.assign(objects_.begin() + c_.goal.ec_k, objects_.end());
    } else if (c_.kind == ConversionKind::kEcInPlace) {
      parity = objects_;
    }
    std::vector<OldReplica> leaving;
    absl::StatusOr<ns::FileEntry> r = ctx_.CasLayout(
        what_, c_.path,
        [&](const ns::FileEntry& f) -> absl::StatusOr<v1::FileLayout> {
          RANGEFS_ASSIGN_OR_RETURN(
              v1::FileLayout next,
              ConvertedLayout(f.layout, c_, data, parity, &leaving));
          for (const OldReplica& o : leaving) {
            RANGEFS_RETURN_IF_ERROR(
                ctx_.TrashBeforeSwap(c_.path, o.node, o.object));
          }
          Step(3);
          return next;
        });
    if (absl::IsNotFound(r.status()) ||
        absl::IsFailedPrecondition(r.status())) {
      RANGEFS_LOG(INFO) << "keeper: " << what_ << ": "
                        << (absl::IsNotFound(r.status())
                                ? std::string("file gone")
                                : std::string(r.status().message()))
                        << "; abandoned";
      for (const NewObject& n : written_) {
        ctx_.DeleteUnused(c_.path, n.node, n.object);
      }
      result_.outcome = ConvertOutcome::kAbandoned;
      return;
    }
    if (!r.ok()) {
      RANGEFS_LOG(WARNING) << "keeper: " << what_
                           << ": swapping the layout: " << r.status()
                           << "; the new objects are left unreferenced";
      for (const NewObject& n : written_) {
        ctx_.TrashUnused(what_, c_.path, n.node, n.object);
      }
      return;
    }
    Step(4);
    for (const OldReplica& o : leaving) {
      ctx_.TrashDropped(what_, c_.path, o.node, o.object, r->mod_revision);
    }
    result_.outcome = ConvertOutcome::kDone;
    result_.revision = r->mod_revision;
    RANGEFS_LOG(INFO) << "keeper: " << what_ << ": layout swapped (revision "
                      << r->mod_revision << "), " << leaving.size()
                      << " object(s) to the trash";
  }

  ConvertContext& ctx_;
  const Conversion& c_;
  const ConvertOptions& o_;
  const std::string what_;
  std::vector<std::string> objects_;  // kEc*: the new columns, in order
  std::mutex mu_;
  std::vector<NewObject> written_;
  ConvertResult result_;
};

}  // namespace

std::string DescribeConversion(const Conversion& c) {
  return absl::StrCat(ConversionKindName(c.kind), " conversion of ", c.path,
                      " (", ShapeOf(c.planned), " -> ", c.goal.ToString(),
                      ", policy ", c.policy, ")");
}

ConvertResult RunConversion(ConvertContext& ctx, const Conversion& c,
                            const ConvertOptions& options) {
  if (!ctx.MayAct()) return {};
  return Converter(ctx, c, options).Run();
}

}  // namespace keeper
}  // namespace rangefs
