#include "storage_node/ec_staging.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/errno_status.h"
#include "base/status_macros.h"

namespace rangefs {
namespace node {
namespace {

// The record: a header (magic, the key), then from kRowsOffset one entry
// per row: kWritten (or anything else: not written) and k + m CRCs, each
// a native-endian uint32 (the file never leaves this host).
constexpr char kMagic[8] = {'R', 'F', 'S', 'E', 'C', 'R', 'W', '1'};
constexpr uint64_t kRowsOffset = 8192;  // > header + kMaxPathBytes
constexpr uint32_t kWritten = 0x4b52414d;
constexpr uint64_t kRowsPerPiece = 16384;
constexpr char kRecordSuffix[] = ".rows";

template <typename T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

std::string Header(const EcStagingKey& key) {
  std::string h(kMagic, sizeof(kMagic));
  Put<uint32_t>(h, static_cast<uint32_t>(key.g.k));
  Put<uint32_t>(h, static_cast<uint32_t>(key.g.m));
  Put<uint32_t>(h, static_cast<uint32_t>(key.column));
  Put<uint32_t>(h, static_cast<uint32_t>(key.path.size()));
  Put<uint64_t>(h, key.g.cell);
  Put<uint64_t>(h, key.g.size);
  Put<uint64_t>(h, key.rebuild_id);
  h += key.path;
  return h;
}

uint64_t EntryBytes(const ns::EcGeometry& g) {
  return 4 * static_cast<uint64_t>(g.k + g.m + 1);
}

absl::Status PwriteFull(int fd, const char* p, size_t n, uint64_t off,
                        absl::string_view what) {
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("pwrite ", what, " at ", off));
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

// Reads up to n bytes at off; what lies past EOF is left zero.
absl::Status PreadUpTo(int fd, char* p, size_t n, uint64_t off,
                       absl::string_view what) {
  std::memset(p, 0, n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, p + got, n - got, static_cast<off_t>(off + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("pread ", what, " at ", off));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::Status Sync(int fd, absl::string_view what) {
  if (fdatasync(fd) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fdatasync ", what));
  }
  return absl::OkStatus();
}

}  // namespace

std::string EcStagingName(absl::string_view path) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (char c : path) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return absl::StrCat("ec-", absl::Hex(h, absl::kZeroPad16));
}

namespace {

// The staging name `file` belongs to (itself or without the record
// suffix); "" when it is not one.
std::string StagingNameOf(absl::string_view file) {
  absl::string_view name = file;
  absl::ConsumeSuffix(&name, kRecordSuffix);
  constexpr size_t kHexDigits = 16;
  if (!absl::ConsumePrefix(&name, "ec-") || name.size() != kHexDigits ||
      !std::all_of(name.begin(), name.end(), [](char c) {
        return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
      })) {
    return "";
  }
  return absl::StrCat("ec-", name);
}

}  // namespace

absl::StatusOr<EcStagingFiles> StatEcStaging(const ExportRoot& root,
                                             const std::string& name) {
  EcStagingFiles f{.name = name, .last_write = absl::InfinitePast()};
  bool found = false;
  for (const std::string& file : {name, name + kRecordSuffix}) {
    absl::StatusOr<struct stat> st = root.StatTemp(file);
    if (absl::IsNotFound(st.status())) continue;
    if (!st.ok()) return st.status();
    found = true;
    f.last_write = std::max(f.last_write, absl::TimeFromTimespec(st->st_mtim));
    f.bytes += static_cast<uint64_t>(st->st_blocks) * 512;
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat(
        "staging ", name, " in the temp dir of ", root.root_dir()));
  }
  return f;
}

absl::StatusOr<std::vector<EcStagingFiles>> ListEcStaging(
    const ExportRoot& root) {
  RANGEFS_ASSIGN_OR_RETURN(std::vector<std::string> files, root.ListTemp());
  std::set<std::string> names;
  for (const std::string& file : files) {
    std::string name = StagingNameOf(file);
    if (!name.empty()) names.insert(std::move(name));
  }
  std::vector<EcStagingFiles> out;
  for (const std::string& name : names) {
    absl::StatusOr<EcStagingFiles> f = StatEcStaging(root, name);
    if (absl::IsNotFound(f.status())) continue;  // removed meanwhile
    if (!f.ok()) return f.status();
    out.push_back(*std::move(f));
  }
  return out;
}

absl::Status RemoveEcStaging(const ExportRoot& root, const std::string& name) {
  // The record first: a crash in between leaves an object without marks.
  RANGEFS_RETURN_IF_ERROR(root.RemoveTemp(name + kRecordSuffix));
  return root.RemoveTemp(name);
}

EcStaging::EcStaging(const ExportRoot* root, EcStagingKey key, ScopedFd data,
                     ScopedFd record)
    : root_(root),
      key_(std::move(key)),
      name_(EcStagingName(key_.path)),
      data_(std::move(data)),
      record_(std::move(record)) {}

absl::StatusOr<std::unique_ptr<EcStaging>> EcStaging::Open(
    const ExportRoot* root, EcStagingKey key, bool fresh) {
  const std::string name = EcStagingName(key.path);
  const std::string what = absl::StrCat("staging of ", key.path);
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd data, root->OpenNamedTemp(name));
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd record,
                           root->OpenNamedTemp(name + kRecordSuffix));
  const std::string want = Header(key);
  std::string have(want.size(), '\0');
  RANGEFS_RETURN_IF_ERROR(
      PreadUpTo(record.get(), have.data(), have.size(), 0, what));
  if (fresh || have != want) {
    // Marks first: a crash in between leaves fewer marks, never stale ones.
    if (ftruncate(record.get(), 0) != 0 || ftruncate(data.get(), 0) != 0) {
      return ErrnoStatus(errno, absl::StrCat("truncate ", what));
    }
    RANGEFS_RETURN_IF_ERROR(
        PwriteFull(record.get(), want.data(), want.size(), 0, what));
    RANGEFS_RETURN_IF_ERROR(Sync(record.get(), what));
  }
  return std::unique_ptr<EcStaging>(
      new EcStaging(root, std::move(key), std::move(data), std::move(record)));
}

absl::Status EcStaging::WriteCell(uint64_t row, absl::string_view bytes) {
  return PwriteFull(data_.get(), bytes.data(), bytes.size(), row * key_.g.cell,
                    absl::StrCat("staging of ", key_.path));
}

absl::Status EcStaging::Record(uint64_t first_row,
                               absl::Span<const uint32_t> crcs) {
  const std::string what = absl::StrCat("staging of ", key_.path);
  const size_t n = static_cast<size_t>(key_.g.k + key_.g.m);
  RANGEFS_RETURN_IF_ERROR(Sync(data_.get(), what));
  std::string entries;
  entries.reserve(crcs.size() / n * EntryBytes(key_.g));
  for (size_t i = 0; i < crcs.size(); i += n) {
    Put<uint32_t>(entries, kWritten);
    for (size_t j = 0; j < n; ++j) Put<uint32_t>(entries, crcs[i + j]);
  }
  RANGEFS_RETURN_IF_ERROR(PwriteFull(
      record_.get(), entries.data(), entries.size(),
      kRowsOffset + first_row * EntryBytes(key_.g), what + " (record)"));
  return Sync(record_.get(), what + " (record)");
}

absl::Status EcStaging::ForEachRecordedRow(
    const std::function<absl::Status(uint64_t, absl::Span<const uint32_t>)>&
        fn) {
  const size_t n = static_cast<size_t>(key_.g.k + key_.g.m);
  const uint64_t entry = EntryBytes(key_.g);
  std::string buf;
  std::vector<uint32_t> crcs;
  for (uint64_t first = 0; first < key_.g.rows; first += kRowsPerPiece) {
    const uint64_t rows = std::min(kRowsPerPiece, key_.g.rows - first);
    buf.resize(rows * entry);
    RANGEFS_RETURN_IF_ERROR(PreadUpTo(
        record_.get(), buf.data(), buf.size(), kRowsOffset + first * entry,
        absl::StrCat("record of the staging of ", key_.path)));
    crcs.clear();
    for (uint64_t r = 0; r < rows; ++r) {
      uint32_t e[1 + 32];
      std::memcpy(e, buf.data() + r * entry, entry);
      if (e[0] != kWritten) {
        return absl::FailedPreconditionError(absl::StrCat(
            "staging of ", key_.path, " (rebuild_id ", key_.rebuild_id,
            "): row ", first + r, " of ", key_.g.rows,
            " was not rebuilt (a range missing, or the agent restarted or "
            "swept the staging after it sat idle): "
            "send the rows from there, then the final range again"));
      }
      crcs.insert(crcs.end(), e + 1, e + 1 + n);
    }
    RANGEFS_RETURN_IF_ERROR(fn(first, crcs));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> EcStaging::RecordedColumnCrcs() {
  const size_t n = static_cast<size_t>(key_.g.k + key_.g.m);
  std::vector<uint32_t> out;
  out.reserve(key_.g.rows);
  RANGEFS_RETURN_IF_ERROR(
      ForEachRecordedRow([&](uint64_t, absl::Span<const uint32_t> crcs) {
        for (size_t i = static_cast<size_t>(key_.column); i < crcs.size();
             i += n) {
          out.push_back(crcs[i]);
        }
        return absl::OkStatus();
      }));
  return out;
}

absl::Status EcStaging::AppendCellsTable(ObjectWriter& out) {
  return ForEachRecordedRow([&](uint64_t, absl::Span<const uint32_t> crcs) {
    const std::string bytes = ns::EncodeEcCellCrcs(crcs);
    return out.Append(bytes.data(), bytes.size());
  });
}

absl::Status EcStaging::Remove() { return RemoveEcStaging(*root_, name_); }

absl::StatusOr<Checksums> EcStaging::Commit(bool overwrite) {
  const std::string what = absl::StrCat("staging of ", key_.path);
  RANGEFS_ASSIGN_OR_RETURN(std::vector<uint32_t> want, RecordedColumnCrcs());
  struct stat st;
  if (fstat(data_.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat ", what));
  }
  const uint64_t size = ns::EcColumnBytes(key_.g, key_.column);
  if (static_cast<uint64_t>(st.st_size) != size) {
    return absl::DataLossError(
        absl::StrCat(what, " holds ", st.st_size, " bytes; column ",
                     key_.column, " has ", size, "; nothing written"));
  }
  const uint32_t block = static_cast<uint32_t>(key_.g.cell);
  RANGEFS_ASSIGN_OR_RETURN(Checksums c,
                           ComputeChecksums(data_.get(), block, what));
  for (size_t row = 0; row < c.block_crc32c.size(); ++row) {
    if (c.block_crc32c[row] != want[row]) {
      return absl::DataLossError(
          absl::StrCat(what, ": row ", row, " reads back with CRC-32C ",
                       absl::Hex(c.block_crc32c[row]), ", rebuilt as ",
                       absl::Hex(want[row]), "; nothing written"));
    }
  }
  RANGEFS_ASSIGN_OR_RETURN(TempFile side, root_->CreateTemp());
  const std::string encoded = EncodeSidecar(c);
  absl::Status s =
      PwriteFull(side.fd.get(), encoded.data(), encoded.size(), 0, what);
  if (s.ok()) s = Sync(side.fd.get(), absl::StrCat("sidecar of ", what));
  if (s.ok()) s = Sync(data_.get(), what);
  if (s.ok()) s = root_->CommitObject(name_, side.name, key_.path, overwrite);
  if (!s.ok()) {
    root_->RemoveTemp(side.name).IgnoreError();
    return s;
  }
  RANGEFS_RETURN_IF_ERROR(root_->RemoveTemp(name_ + kRecordSuffix));
  return c;
}

}  // namespace node
}  // namespace rangefs
