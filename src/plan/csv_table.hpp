// csv_table.hpp: what the measured tables (plan_table.hpp: the search's, join_plan.hpp: the join's) share: the
// CSV lines after '#' comments and a header, fields, numbers, the table a process consults (an environment
// variable's file, else the one compiled in), and the log distance of the nearest-cell rules.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gknn/error.hpp"

namespace gknn::detail::plan {

/// The comma-separated fields of one line (empty ones kept).
std::vector<std::string_view> split_fields(std::string_view line);

/// One field as a number; throws gknn::Error(Format) naming `where` and what the field is.
template <class Number>
Number parse_number(std::string_view field, const char* what, const std::string& where) {
  Number value{};
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  GKNN_EXPECT(ec == std::errc() && end == field.data() + field.size(), ErrorCode::Format, where, ": ", what, " '",
              std::string(field), "' is not a number");
  return value;
}

/// Calls row(line, where, line_number) for every data line of `text`: lines that are empty or start with '#' are
/// skipped, the first other line must be `header` (Format naming `source` and the line otherwise); `where` is
/// "<source> line N", for row's errors.
void for_each_row(std::string_view text, const std::string& source, std::string_view header,
                  const std::function<void(std::string_view line, const std::string& where, int line_number)>& row);

/// The text of the table a process consults: the file $`env` names when it is set (Io naming it if unreadable),
/// else `built_in`; `source` receives the file's path or `built_in_source`.
std::string_view table_text(const char* env, std::string_view built_in, const std::string& built_in_source,
                            std::string& file_text, std::string& source);

/// The table Load() returns, loaded once per process (Load is the table's own loader, so each table has its own
/// once); a load that threw (a malformed file) throws again at every call, as the search or join that consults it.
template <class Table, Table (*Load)()>
const Table& load_once() {
  static std::once_flag once;
  static Table table;
  static std::exception_ptr error;
  std::call_once(once, [] {
    try {
      table = Load();
    } catch (...) {
      error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
  return table;
}

/// |log2 a - log2 b|: how far apart two sizes are for the nearest-cell rules.
inline double log_gap(int64_t a, int64_t b) { return std::fabs(std::log2(double(a)) - std::log2(double(b))); }

}  // namespace gknn::detail::plan
