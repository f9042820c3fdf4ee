// File: table.h
//
// What an admin command returns, formatted separately (3FS's OutputTable /
// Printer split): human-aligned columns by default, JSON for scripts.
#ifndef RANGEFS_ADMIN_TABLE_H_
#define RANGEFS_ADMIN_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace rangefs {
namespace admin {

// One cell as a command builds it: its human text, and for numbers the value
// --json prints (a JSON number, not the text). A plain string is a text
// cell: t.AddRow({id, Cell::Bytes(free), Cell::Int(n), Cell::Null()}).
struct Cell {
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: text cells
  Cell(const char* t) : text(t) {}             // NOLINT
  // "1.2 MiB" in tables, 1234567 in JSON.
  static Cell Bytes(uint64_t bytes);
  // "42" in tables, 42 in JSON.
  static Cell Int(int64_t n);
  // "-" in tables, null in JSON: a number that is not known.
  static Cell Null();

  std::string text;
  enum class Json { kText, kNumber, kNull } json = Json::kText;
  int64_t number = 0;  // for kNumber
};

struct Table {
  std::vector<std::string> columns;
  // Each cell's human text.
  std::vector<std::vector<std::string>> rows;
  // The cells AddRow got as numbers or nulls, by (row, column): --json
  // prints their value; every other cell is JSON text.
  std::map<std::pair<size_t, size_t>, Cell> typed;
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

  // Exit status of a command that ran but found problems (doctor's
  // failures and warnings); rangefs-admin prints the table, then exits
  // with it.
  int exit_code = 0;
  // The command wrote its own output to stdout (`file cat`): rangefs-admin
  // prints nothing more, not even with --json.
  bool raw_output = false;

  void AddRow(std::vector<Cell> row);
};

// Aligned columns (by display width: a UTF-8 character is one column, East
// Asian wide characters two, combining marks none), then the message.
std::string FormatHuman(const Table& t);
// `json` if set; else an array of objects keyed by column name
// (lower-cased, spaces and '/' as '_'; in column order; "kind" first when
// json_row_kind is set; Cell::Bytes/Int cells as numbers, Cell::Null as
// null), one key a line, then json_extra's objects (one
// that does not parse is left out); a message-only table gives
// {"message": ...}. Built with nlohmann-json.
std::string FormatJson(const Table& t);
// {"error": message, "code": "NOT_FOUND"} on one line: --json's form of a
// failed command.
std::string FormatJsonError(const absl::Status& s);

// Terminal columns `text` takes (see FormatHuman); invalid UTF-8 counts one
// column a byte.
size_t DisplayWidth(const std::string& text);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_TABLE_H_
