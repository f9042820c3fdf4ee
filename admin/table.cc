#include "admin/table.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

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

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

std::string FormatJson(const Table& t) {
  if (!t.json.empty()) return t.json + "\n";
  if (t.columns.empty()) {
    return absl::StrCat("{\"message\": ", JsonQuote(t.message), "}\n");
  }
  std::string out = "[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out += r ? ",\n {" : "\n {";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      std::string key = absl::StrReplaceAll(absl::AsciiStrToLower(t.columns[c]),
                                            {{" ", "_"}, {"/", "_"}});
      absl::StrAppend(&out, c ? ", " : "", JsonQuote(key), ": ",
                      JsonQuote(c < t.rows[r].size() ? t.rows[r][c] : ""));
    }
    out += "}";
  }
  return out + (t.rows.empty() ? "]\n" : "\n]\n");
}

}  // namespace admin
}  // namespace rangefs
