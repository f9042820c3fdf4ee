#include "keeper/ec_rebuild.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "namespace/ec_layout.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace keeper {
namespace {

// Writes `object` on `node` from `read`, replacing what is there.
absl::StatusOr<uint64_t> Write(
    ingest::Agents& agents, const std::string& node, const std::string& object,
    uint64_t cell, uint64_t bytes, absl::Duration timeout,
    const std::function<absl::StatusOr<size_t>(absl::Span<char>)>& read) {
  absl::StatusOr<node::WriteObjectResponse> r =
      absl::UnavailableError("not asked");
  absl::Status s = agents.Call(node, [&](node::NodeClient& nc) {
    r = nc.WriteObject(object, read,
                       {.deadline = absl::Now() + timeout,
                        .overwrite = true,
                        .block_size = static_cast<uint32_t>(cell),
                        .expected_size = static_cast<int64_t>(bytes)});
    return r.status();
  });
  RANGEFS_RETURN_IF_ERROR(s);
  if (r->size() != bytes) {
    return absl::InternalError(absl::StrCat("wrote ", object, " on ", node,
                                            ": ", r->size(), " bytes, not ",
                                            bytes));
  }
  return r->size();
}

}  // namespace

ObjectReader AgentReader(ingest::Agents& agents, absl::Duration call_timeout) {
  return [&agents, call_timeout](
             const std::string& node, const std::string& object,
             uint64_t offset, absl::Span<char> dst) -> absl::StatusOr<size_t> {
    absl::StatusOr<size_t> r = absl::UnavailableError("not asked");
    absl::Status s = agents.Call(node, [&](node::NodeClient& c) {
      r = c.ReadRange(
          object, offset, dst,
          {.deadline = absl::Now() + call_timeout, .verify_on_server = true});
      return r.status();
    });
    if (!s.ok()) return s;
    return r;
  };
}

absl::StatusOr<RebuildResult> RebuildColumn(ingest::Agents& agents,
                                            const ec::Codec& codec,
                                            const v1::FileLayout& layout,
                                            const CellCrcTable& crcs,
                                            const EcColumnRepair& c,
                                            const std::set<int>& unusable,
                                            const RebuildOptions& options) {
  if (crcs.empty()) {
    return absl::FailedPreconditionError(
        "no readable .cells object: rebuilt cells could not be checked");
  }
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  const ObjectReader read = AgentReader(agents, options.call_timeout);
  RebuildResult result;
  // The column, streamed row by row into WriteObject; row r + 1 is rebuilt
  // (its survivors read and decoded) while row r is written.
  std::atomic<uint64_t> bytes_read{0};
  auto rebuild = [&](uint64_t r) {
    return std::async(
        std::launch::async, [&, r]() -> absl::StatusOr<std::string> {
          uint64_t n = 0;
          absl::StatusOr<std::string> cell =
              RebuildCell(read, codec, layout, crcs, r, c.column, unusable, &n);
          bytes_read.fetch_add(n);
          return cell;
        });
  };
  std::future<absl::StatusOr<std::string>> pending;
  if (g.rows > 0) pending = rebuild(0);
  uint64_t row = 0;
  std::string cell;  // the current row's rebuilt cell
  size_t at = 0;     // bytes of `cell` handed out
  const absl::Time start = absl::Now();
  auto next = [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
    while (at == cell.size()) {
      if (row == g.rows) return size_t{0};
      RANGEFS_ASSIGN_OR_RETURN(cell, pending.get());
      ++row;
      if (row < g.rows) pending = rebuild(row);
      at = 0;
    }
    const size_t n = std::min(dst.size(), cell.size() - at);
    std::memcpy(dst.data(), cell.data() + at, n);
    at += n;
    result.bytes_written += n;
    if (options.bytes_per_sec > 0) {
      // Pacing (a rate, not a wait for an event): as many bytes so far as
      // the rate allows since the start.
      const absl::Time due =
          start + absl::Seconds(static_cast<double>(result.bytes_written) /
                                static_cast<double>(options.bytes_per_sec));
      const absl::Duration ahead = due - absl::Now();
      if (ahead > absl::ZeroDuration()) absl::SleepFor(ahead);
    }
    return n;
  };
  absl::Status written = Write(agents, c.target_node, c.object, g.cell, c.bytes,
                               options.write_timeout, next)
                             .status();
  if (pending.valid()) pending.wait();  // a row still being rebuilt
  result.bytes_read = bytes_read.load();
  RANGEFS_RETURN_IF_ERROR(written);
  if (c.column >= g.k) {
    const std::string bytes = CellsObjectBytes(crcs);
    size_t off = 0;
    auto cells = [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
      const size_t n = std::min(dst.size(), bytes.size() - off);
      std::memcpy(dst.data(), bytes.data() + off, n);
      off += n;
      return n;
    };
    RANGEFS_ASSIGN_OR_RETURN(
        uint64_t n, Write(agents, c.target_node, ns::EcCellsObject(c.object),
                          g.cell, bytes.size(), options.call_timeout, cells));
    result.bytes_written += n;
  }
  return result;
}

}  // namespace keeper
}  // namespace rangefs
