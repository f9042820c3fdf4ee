#include "admin/table.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "admin/args.h"
#include "nlohmann/json.hpp"

namespace rangefs {
namespace admin {
namespace {

// Decodes the UTF-8 sequence at s[*i] and advances *i; nullopt (and one
// byte) for an invalid one.
std::optional<char32_t> NextCodePoint(const std::string& s, size_t* i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(*i);
  size_t len = c < 0x80         ? 1
               : (c >> 5) == 6  ? 2
               : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4
                                : 0;
  if (len == 0 || *i + len > s.size()) {
    ++*i;
    return std::nullopt;
  }
  char32_t cp = len == 1 ? c : c & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((b(*i + k) & 0xc0) != 0x80) {
      ++*i;
      return std::nullopt;
    }
    cp = (cp << 6) | (b(*i + k) & 0x3f);
  }
  *i += len;
  return cp;
}

bool InRanges(char32_t cp,
              std::initializer_list<std::pair<char32_t, char32_t>> ranges) {
  for (const auto& [lo, hi] : ranges) {
    if (cp >= lo && cp <= hi) return true;
  }
  return false;
}

// Columns of one code point, as wcwidth(3) in a UTF-8 locale (the common
// ranges; what a terminal shows for names).
size_t CodePointWidth(char32_t cp) {
  if (InRanges(cp, {{0x0300, 0x036f},
                    {0x1ab0, 0x1aff},
                    {0x1dc0, 0x1dff},
                    {0x200b, 0x200f},
                    {0x20d0, 0x20ff},
                    {0xfe00, 0xfe0f},
                    {0xfe20, 0xfe2f}})) {
    return 0;
  }
  if (InRanges(cp, {{0x1100, 0x115f},
                    {0x2e80, 0x303e},
                    {0x3041, 0x33ff},
                    {0x3400, 0x4dbf},
                    {0x4e00, 0x9fff},
                    {0xa000, 0xa4cf},
                    {0xac00, 0xd7a3},
                    {0xf900, 0xfaff},
                    {0xfe30, 0xfe4f},
                    {0xff00, 0xff60},
                    {0xffe0, 0xffe6},
                    {0x1f300, 0x1f64f},
                    {0x1f900, 0x1f9ff},
                    {0x20000, 0x2fffd},
                    {0x30000, 0x3fffd}})) {
    return 2;
  }
  return 1;
}

nlohmann::ordered_json JsonValue(const Table& t, size_t row, size_t col) {
  auto it = t.typed.find({row, col});
  if (it != t.typed.end()) {
    if (it->second.json == Cell::Json::kNumber) return it->second.number;
    if (it->second.json == Cell::Json::kNull) return nullptr;
  }
  return col < t.rows[row].size() ? t.rows[row][col] : "";
}

}  // namespace

Cell Cell::Bytes(uint64_t bytes) {
  Cell c(HumanBytes(bytes));
  c.json = Json::kNumber;
  c.number = static_cast<int64_t>(bytes);
  return c;
}

Cell Cell::Int(int64_t n) {
  Cell c(absl::StrCat(n));
  c.json = Json::kNumber;
  c.number = n;
  return c;
}

Cell Cell::Null() {
  Cell c("-");
  c.json = Json::kNull;
  return c;
}

void Table::AddRow(std::vector<Cell> row) {
  std::vector<std::string> text;
  text.reserve(row.size());
  for (size_t c = 0; c < row.size(); ++c) {
    if (row[c].json != Cell::Json::kText)
      typed.emplace(std::make_pair(rows.size(), c), row[c]);
    text.push_back(std::move(row[c].text));
  }
  rows.push_back(std::move(text));
}

size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    std::optional<char32_t> cp = NextCodePoint(text, &i);
    width += cp ? CodePointWidth(*cp) : 1;
  }
  return width;
}

std::string FormatHuman(const Table& t) {
  std::string out;
  if (!t.columns.empty()) {
    std::vector<size_t> width(t.columns.size(), 0);
    for (size_t c = 0; c < t.columns.size(); ++c)
      width[c] = DisplayWidth(t.columns[c]);
    for (const auto& row : t.rows) {
      for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
        width[c] = std::max(width[c], DisplayWidth(row[c]));
      }
    }
    auto line = [&](const std::vector<std::string>& cells, bool upper) {
      std::string l;
      for (size_t c = 0; c < t.columns.size(); ++c) {
        std::string cell = c < cells.size() ? cells[c] : "";
        if (upper) cell = absl::AsciiStrToUpper(cell);
        if (c + 1 < t.columns.size()) {
          absl::StrAppend(&l, cell,
                          std::string(width[c] - DisplayWidth(cell) + 2, ' '));
        } else {
          absl::StrAppend(&l, cell);
        }
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      return l + "\n";
    };
    out += line(t.columns, true);
    for (const auto& row : t.rows) out += line(row, false);
  }
  if (!t.json.empty() && t.columns.empty()) absl::StrAppend(&out, t.json, "\n");
  if (!t.message.empty()) absl::StrAppend(&out, t.message, "\n");
  return out;
}

std::string FormatJson(const Table& t) {
  if (!t.json.empty()) return t.json + "\n";
  if (t.columns.empty()) {
    nlohmann::ordered_json doc = {{"message", t.message}};
    return doc.dump(1) + "\n";
  }
  std::vector<std::string> keys;
  for (const std::string& c : t.columns) {
    keys.push_back(absl::StrReplaceAll(absl::AsciiStrToLower(c),
                                       {{" ", "_"}, {"/", "_"}}));
  }
  nlohmann::ordered_json doc = nlohmann::ordered_json::array();
  for (size_t r = 0; r < t.rows.size(); ++r) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    if (!t.json_row_kind.empty()) obj["kind"] = t.json_row_kind;
    for (size_t c = 0; c < keys.size(); ++c) obj[keys[c]] = JsonValue(t, r, c);
    doc.push_back(std::move(obj));
  }
  for (const std::string& extra : t.json_extra) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::parse(
        extra, nullptr, /*allow_exceptions=*/false);
    if (obj.is_object()) doc.push_back(std::move(obj));
  }
  // Cells are text from etcd and agents: invalid UTF-8 is replaced (U+FFFD)
  // rather than aborting the dump.
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

std::string FormatJsonError(const absl::Status& s) {
  nlohmann::ordered_json doc = {{"error", std::string(s.message())},
                                {"code", absl::StatusCodeToString(s.code())}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

}  // namespace admin
}  // namespace rangefs
