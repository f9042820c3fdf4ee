#include "admin/table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"

namespace rangefs {
namespace admin {

std::string FormatHuman(const Table& t) {
  std::string out;
  if (!t.columns.empty()) {
    std::vector<size_t> width(t.columns.size(), 0);
    for (size_t c = 0; c < t.columns.size(); ++c)
      width[c] = t.columns[c].size();
    for (const auto& row : t.rows) {
      for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
        width[c] = std::max(width[c], row[c].size());
      }
    }
    auto line = [&](const std::vector<std::string>& cells, bool upper) {
      std::string l;
      for (size_t c = 0; c < t.columns.size(); ++c) {
        std::string cell = c < cells.size() ? cells[c] : "";
        if (upper) cell = absl::AsciiStrToUpper(cell);
        if (c + 1 < t.columns.size()) {
          absl::StrAppend(&l, absl::StrFormat("%-*s  ", width[c], cell));
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
  for (const auto& row : t.rows) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    if (!t.json_row_kind.empty()) obj["kind"] = t.json_row_kind;
    for (size_t c = 0; c < keys.size(); ++c) {
      obj[keys[c]] = c < row.size() ? row[c] : "";
    }
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
