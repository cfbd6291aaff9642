// join_plan.hpp: the join's measured plan table (src/plan/join_plan_table.csv): for a device and a point set's size,
// dimension and k, the mode (and the GPU's rings) that was fastest on the seed's uniform and exponential sets. The
// join's Auto consults it when a CUDA device is visible, before its rule; `gknn_join_bench --plan-out FILE` writes
// one on a new machine, and $GKNN_JOIN_PLAN_TABLE points a process at another file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gknn/join.hpp"

namespace gknn::detail::plan {

struct JoinRow {
  std::string device;  ///< a substring of the CUDA device name ("H200")
  int64_t n = 0, d = 0, k = 0;
  JoinMode mode = JoinMode::Gpu;  ///< never Auto
  int rings = 0;                  ///< JoinParams::rings: 0 automatic, 1 the seed's
  double seconds = 0;             ///< the measured time of the mode (mean over the sets measured)
  int line = 0;                   ///< in the source, for the reason Auto gives
};

struct JoinTable {
  std::vector<JoinRow> rows;
  std::string source;  ///< "src/plan/join_plan_table.csv (built in)" or the file's path
};

/// The header line every join table starts with (after '#' comment lines).
inline constexpr std::string_view kJoinHeader = "device,n,d,k,mode,rings,seconds";

/// Parses a table; throws gknn::Error(Format) naming `source` and the line of the first malformed row.
JoinTable parse_join_table(std::string_view text, const std::string& source);
/// One CSV line of a row (no newline), as parse_join_table reads it back.
std::string format_join_row(const JoinRow& row);
/// The table Auto consults: $GKNN_JOIN_PLAN_TABLE's file when set (read once), else the one compiled in.
const JoinTable& active_join_table();

/// The measured row for a join of n points in d dimensions with k neighbours on `device`: the same dimension (the
/// grid visits 3^d cells), n within a factor 4 and k within 4 of it; among those, the nearest in log2 distance.
const JoinRow* nearest_join(const JoinTable& table, std::string_view device, int64_t n, int64_t d, int64_t k);
/// "measured fastest at n=..., d=..., k=... on H200 (0.93 s; <source> line 9)".
std::string describe_join(const JoinRow& row, const JoinTable& table);

}  // namespace gknn::detail::plan
