// plan_table.hpp: the measured plan table (src/plan/plan_table.csv) that Auto consults before its rules: for a
// device, metric class and data kind, the fastest (distance, select) pair measured on grid cells (n, q, d, k).
// `gknn bench --sweep --out FILE` writes one; $GKNN_PLAN_TABLE points a process at another file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gknn/types.hpp"

namespace gknn::detail::plan {

/// Metrics whose algorithms rank the same way share a row: the dot-product family (squared L2, L2, inner product,
/// cosine: GEMM-able), and L1, L-infinity and Lp each apart.
enum class MetricClass { Dot, L1, Linf, Lp };
MetricClass metric_class(Metric metric);
const char* to_string(MetricClass c);

struct Cell {
  int64_t n = 0, q = 0, d = 0, k = 0;
};

/// log2 of a cell's n, q, d and k: nearest() compares cells by their differences.
struct LogCell {
  double n = 0, q = 0, d = 0, k = 0;
};
LogCell log2_of(const Cell& cell);

struct Row {
  std::string device;  ///< a substring of the device name ("H100")
  MetricClass metric = MetricClass::Dot;
  bool integer = false;  ///< measured on integer-valued data
  Cell cell;
  /// log2_of(cell), set with it when the row is parsed: an Auto search looks the table up before it starts, and
  /// the logs of every row there took ~2 us a lookup (118 rows; x86 host, 2026-11-29).
  LogCell log_cell;
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  SelectAlgorithm select = SelectAlgorithm::Auto;
  double ms = 0;
  int line = 0;  ///< in the source, for the reason Auto prints
};

struct Table {
  std::vector<Row> rows;
  std::string source;  ///< "src/plan/plan_table.csv (built in)" or the file's path
};

/// The header line every table starts with (after '#' comment lines).
inline constexpr std::string_view kHeader = "device,metric,data,n,q,d,k,distance,select,ms";

/// Parses a table; throws gknn::Error(Format) naming `source` and the line of the first malformed row.
Table parse_table(std::string_view text, const std::string& source);
/// One CSV line of a row (no newline), as parse_table reads it back.
std::string format_row(const Row& row);
/// The table Auto consults: the file $GKNN_PLAN_TABLE names when it is set (read once; a malformed file is an
/// error of the search that consults it), else the table compiled into the library.
const Table& active_table();

/// How far a measured cell may be from the search for its choice to stand: within a factor 2 in d and k (the
/// algorithms' costs turn on them) and 4 in n and q. Among those, the nearest in log2 distance wins.
/// `usable(row)` filters out rows whose algorithms cannot run this search (not built, metric, k, data).
const Row* nearest(const Table& table, std::string_view device, MetricClass metric, bool integer, const Cell& cell,
                   const std::function<bool(const Row&)>& usable);
/// A row's distance and selection were measured as a pair: it fills an Auto half of a request only where the other
/// half is Auto too or the row's own (a row whose selection is `auto`, the fused kernel's, pairs with any). (A
/// selection measured behind the fused kernel, which keeps its top k itself, says nothing about another distance:
/// handed to one, `insertion` at k = 1000 took minutes where bits takes 1 ms.)
bool pairs_with(const Row& row, DistanceAlgorithm distance, SelectAlgorithm select);
/// "measured: fastest at n=..., q=..., d=..., k=... on H100 (12.3 ms; <source> line 9)".
std::string describe(const Row& row, const Table& table);

}  // namespace gknn::detail::plan
