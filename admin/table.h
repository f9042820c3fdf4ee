// File: table.h
//
// What an admin command returns, formatted separately (3FS's OutputTable /
// Printer split): human-aligned columns by default, JSON for scripts.
#ifndef RANGEFS_ADMIN_TABLE_H_
#define RANGEFS_ADMIN_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace rangefs {
namespace admin {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  // A one-line human summary ("node n1 drained"); printed after the rows.
  std::string message;
  // When set, --json prints this document instead of the rows, and the
  // human form prints it too (layouts, dumps).
  std::string json;
  // --json only (rows, no `json`): every row object starts with
  // "kind": json_row_kind when set, and `json_extra` (each a JSON object)
  // follows the rows, e.g. `status`'s keeper row. The human form shows
  // neither.
  std::string json_row_kind;
  std::vector<std::string> json_extra;

  void AddRow(std::vector<std::string> row) { rows.push_back(std::move(row)); }
};

// Aligned columns, then the message.
std::string FormatHuman(const Table& t);
// `json` if set; else an array of objects keyed by column name
// (lower-cased, spaces and '/' as '_'; in column order; "kind" first when
// json_row_kind is set), one key a line, then json_extra's objects (one
// that does not parse is left out); a message-only table gives
// {"message": ...}. Built with nlohmann-json.
std::string FormatJson(const Table& t);
// {"error": message, "code": "NOT_FOUND"} on one line: --json's form of a
// failed command.
std::string FormatJsonError(const absl::Status& s);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_TABLE_H_
