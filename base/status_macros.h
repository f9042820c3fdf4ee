// File: status_macros.h
//
// Early-return helpers for absl::Status / absl::StatusOr (Abseil 20220623 has
// none of its own).
//
//   absl::Status Load(Foo& foo) {
//     RANGEFS_RETURN_IF_ERROR(foo.Check());
//     RANGEFS_ASSIGN_OR_RETURN(std::string data, ReadAll(path));
//     RANGEFS_ASSIGN_OR_RETURN(auto n, Parse(data));
//     ...
//   }
#ifndef RANGEFS_BASE_STATUS_MACROS_H_
#define RANGEFS_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// if it is not OK.
#define RANGEFS_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::absl::Status rangefs_status_ = (expr);           \
    if (!rangefs_status_.ok()) return rangefs_status_; \
  } while (0)

#define RANGEFS_STATUS_CONCAT_INNER_(a, b) a##b
#define RANGEFS_STATUS_CONCAT_(a, b) RANGEFS_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); returns its status if not OK,
// else move-assigns its value to `lhs` (a declaration or an lvalue).
#define RANGEFS_ASSIGN_OR_RETURN(lhs, rexpr) \
  RANGEFS_ASSIGN_OR_RETURN_IMPL_(            \
      RANGEFS_STATUS_CONCAT_(rangefs_statusor_, __LINE__), lhs, rexpr)

#define RANGEFS_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()

#endif  // RANGEFS_BASE_STATUS_MACROS_H_
