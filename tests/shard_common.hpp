// shard_common.hpp: what the sharded and MPI tests share: metrics, cuts of a base into shards (balanced,
// uneven, empty shards, shards with fewer than k rows), the single search they are compared with, and the
// bit-for-bit comparison.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gknn/index.hpp"
#include "gknn/types.hpp"

namespace gknn::testing {

inline std::vector<Metric> every_metric() {
  return {Metric::SquaredL2, Metric::L2,   Metric::InnerProduct, Metric::Cosine,
          Metric::L1,        Metric::Linf, Metric::Lp};
}

/// Ways to cut n rows into `parts` shards: balanced, everything on the last shard, uneven with empty shards,
/// and tiny shards (1 row each, rest on shard 0) so that most hold fewer than k rows.
inline std::vector<std::vector<int64_t>> shard_cuts(int64_t n, int parts) {
  const auto count = static_cast<size_t>(parts);
  std::vector<int64_t> balanced(count), last(count, 0), uneven(count, 0), tiny(count, 0);
  for (int s = 0; s < parts; ++s) balanced[size_t(s)] = n / parts + (s < n % parts ? 1 : 0);
  last.back() = n;
  int64_t left = n;
  for (int s = 0; s < parts; ++s) {  // 0, 60% of the rest, 0, 60% of the rest, ... last takes what is left
    const int64_t take = s + 1 == parts ? left : (s % 2 == 0 ? 0 : left * 3 / 5);
    uneven[size_t(s)] = take;
    left -= take;
  }
  left = n;
  for (int s = parts - 1; s > 0; --s) tiny[size_t(s)] = left > 1 ? 1 : 0, left -= tiny[size_t(s)];
  tiny[0] = left;
  return {balanced, last, uneven, tiny};
}

inline std::string cut_name(const std::vector<int64_t>& cut) {
  std::string s;
  for (int64_t c : cut) s += (s.empty() ? "" : "+") + std::to_string(c);
  return s;
}

/// The single-index search the shards must reproduce (same backend, algorithms and parameters).
inline Result single_search(FloatView base, FloatView queries, const SearchParams& params) {
  Index index(base.cols, params.metric, params.backend);
  index.set_p(params.p);
  index.add(base);
  return index.search(queries, params);
}

/// Same shape, same indices and the same float bits (so -0.0 vs 0.0 or a last-ulp difference fails).
inline void expect_identical(const Result& got, const Result& want) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.k, want.k);
  ASSERT_EQ(got.indices, want.indices);
  ASSERT_EQ(got.distances.size(), want.distances.size());
  for (size_t i = 0; i < want.distances.size(); ++i) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, &got.distances[i], 4);
    std::memcpy(&b, &want.distances[i], 4);
    ASSERT_EQ(a, b) << "entry " << i << ": " << got.distances[i] << " vs " << want.distances[i];
  }
}

}  // namespace gknn::testing
