#include "ec/rs_codec.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace ec {
namespace {

const unsigned char* Bytes(const char* p) {
  return reinterpret_cast<const unsigned char*>(p);
}
unsigned char* Bytes(char* p) { return reinterpret_cast<unsigned char*>(p); }

absl::Status CheckLength(size_t len) {
  if (len > kMaxCellBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "erasure code: cell of ", len, " bytes, at most ", kMaxCellBytes));
  }
  return absl::OkStatus();
}

}  // namespace

RsCodec::RsCodec(const CodecSpec& spec)
    : k_(spec.k), m_(spec.m), cache_(kDecodeCacheEntries) {}

absl::Status RsCodec::Encode(absl::Span<const absl::Span<const char>> data,
                             absl::Span<const absl::Span<char>> parity) const {
  if (data.size() != static_cast<size_t>(k_) ||
      parity.size() != static_cast<size_t>(m_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("erasure code encode: ", data.size(), " data and ",
                     parity.size(), " parity cells for RS(", k_, ",", m_, ")"));
  }
  const size_t len = data[0].size();
  RANGEFS_RETURN_IF_ERROR(CheckLength(len));
  std::vector<const unsigned char*> in(k_);
  std::vector<unsigned char*> out(m_);
  for (int i = 0; i < k_ + m_; ++i) {
    const size_t size = i < k_ ? data[i].size() : parity[i - k_].size();
    if (size != len) {
      return absl::InvalidArgumentError(
          absl::StrCat("erasure code encode: cell ", i, " has ", size,
                       " bytes, cell 0 has ", len));
    }
    if (i < k_) {
      in[i] = Bytes(data[i].data());
    } else {
      out[i - k_] = Bytes(parity[i - k_].data());
    }
  }
  if (len > 0) EncodeCells(len, in.data(), out.data());
  return absl::OkStatus();
}

absl::Status RsCodec::Decode(absl::Span<const char* const> cells,
                             absl::Span<const int> wanted,
                             absl::Span<char* const> out, size_t len,
                             PassRunner run) const {
  const int n = k_ + m_;
  if (cells.size() != static_cast<size_t>(n) || out.size() != wanted.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("erasure code decode: ", cells.size(), " cells (RS(", k_,
                     ",", m_, ") has ", n, "), ", wanted.size(), " wanted, ",
                     out.size(), " outputs"));
  }
  RANGEFS_RETURN_IF_ERROR(CheckLength(len));
  // The pattern: the first k present cells are read; wanted cells are
  // rebuilt in ascending order (the cache key does not depend on the order
  // the caller lists them in).
  std::vector<int> sources;
  std::vector<const unsigned char*> source_ptrs;
  for (int i = 0; i < n && static_cast<int>(sources.size()) < k_; ++i) {
    if (cells[i] != nullptr) {
      sources.push_back(i);
      source_ptrs.push_back(Bytes(cells[i]));
    }
  }
  if (static_cast<int>(sources.size()) < k_) {
    return absl::InvalidArgumentError(
        absl::StrCat("erasure code decode: ", sources.size(),
                     " cells present, RS(", k_, ",", m_, ") needs ", k_));
  }
  std::vector<std::pair<int, unsigned char*>> targets;
  uint32_t wanted_mask = 0;
  for (size_t j = 0; j < wanted.size(); ++j) {
    const int w = wanted[j];
    if (w < 0 || w >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "erasure code decode: wanted cell ", w, " not in [0, ", n, ")"));
    }
    if (cells[w] != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("erasure code decode: wanted cell ", w, " is present"));
    }
    if (wanted_mask & (uint32_t{1} << w)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "erasure code decode: wanted cell ", w, " listed twice"));
    }
    if (out[j] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("erasure code decode: no output for wanted cell ", w));
    }
    wanted_mask |= uint32_t{1} << w;
    targets.emplace_back(w, Bytes(out[j]));
  }
  if (targets.empty() || len == 0) return absl::OkStatus();
  std::sort(targets.begin(), targets.end());
  std::vector<int> wanted_sorted;
  std::vector<unsigned char*> out_sorted;
  for (const auto& [w, ptr] : targets) {
    wanted_sorted.push_back(w);
    out_sorted.push_back(ptr);
  }
  uint32_t source_mask = 0;
  for (int s : sources) source_mask |= uint32_t{1} << s;
  const uint64_t key = (uint64_t{source_mask} << 32) | wanted_mask;
  RANGEFS_ASSIGN_OR_RETURN(DecodeCache::Tables tables,
                           cache_.GetOrBuild(key, [&] {
                             return BuildDecodeTables(sources, wanted_sorted);
                           }));
  auto pass = [&] {
    DecodeCells(*tables, len, source_ptrs.data(),
                static_cast<int>(out_sorted.size()), out_sorted.data());
  };
  if (run == nullptr) {
    pass();
  } else if (!run(pass)) {
    return absl::DataLossError(
        "erasure code decode: the pass over the cells' bytes was cut off (a "
        "source cell's bytes went away while read)");
  }
  return absl::OkStatus();
}

}  // namespace ec
}  // namespace rangefs
