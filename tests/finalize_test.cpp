// finalize_test.cpp: the key -> value step keeps the total order when rounding merges distinct keys.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "core/finalize.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {
namespace {

TEST(Finalize, EqualValuesAfterRootAreOrderedByIndex) {
  // Two adjacent floats whose cube roots round to the same float, selected in key order (7 before 3).
  const float a = std::nextafter(5.5f, 10.f), b = std::nextafter(a, 10.f);
  ASSERT_EQ(static_cast<float>(std::pow(double(a), 1 / 3.0)), static_cast<float>(std::pow(double(b), 1 / 3.0)));
  KeyResult keys{1, 3, {1.f, a, b}, {9, 7, 3}};
  const Result r = finalize(keys, Metric::Lp, 3.0, 4);
  EXPECT_EQ(r.index(0, 0), 9);
  EXPECT_EQ(r.index(0, 1), 3);
  EXPECT_EQ(r.index(0, 2), 7);
  EXPECT_EQ(r.index(0, 3), -1);
  EXPECT_EQ(r.distance(0, 3), INFINITY);
}

TEST(Finalize, DistinctValuesKeepTheirOrder) {
  KeyResult keys{1, 3, {-5.f, -2.f, -2.f}, {4, 1, 8}};
  const Result r = finalize(keys, Metric::InnerProduct, 2.0, 3);
  EXPECT_EQ(r.distance(0, 0), 5.f);
  EXPECT_EQ(r.index(0, 0), 4);
  EXPECT_EQ(r.index(0, 1), 1);
  EXPECT_EQ(r.index(0, 2), 8);
}

TEST(Finalize, InPlaceEqualsIntoANewResult) {
  // k = the keys' k finalises in place; k + 2 into a new, padded result: the same first k entries.
  const float a = std::nextafter(5.5f, 10.f), b = std::nextafter(a, 10.f);
  const KeyResult keys{2, 4, {1.f, a, b, 9.f, 0.f, 0.f, 2.f, 2.f}, {9, 7, 3, 1, 6, 2, 8, 5}};
  for (Metric m : {Metric::Lp, Metric::L2, Metric::InnerProduct, Metric::SquaredL2}) {
    const Result same = finalize(keys, m, 3.0, 4), padded = finalize(keys, m, 3.0, 6);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        EXPECT_EQ(same.distance(i, j), padded.distance(i, j)) << i << "," << j;
        EXPECT_EQ(same.index(i, j), padded.index(i, j)) << i << "," << j;
      }
  }
  const Result lp = finalize(keys, Metric::Lp, 3.0, 4);
  EXPECT_EQ(lp.index(0, 1), 3);  // the tie made by the root is re-ordered by index in place too
  EXPECT_EQ(lp.index(0, 2), 7);
  EXPECT_EQ(lp.index(1, 0), 2);
  EXPECT_EQ(lp.index(1, 1), 6);
}

TEST(Finalize, HugeKIsANamedOutOfMemory) {
  KeyResult keys{1000, 1, std::vector<float>(1000, 0.f), std::vector<int64_t>(1000, 0)};
  try {
    finalize(keys, Metric::SquaredL2, 2.0, int64_t(1) << 60);
    FAIL() << "expected gknn::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
    EXPECT_NE(std::string(e.what()).find("k ="), std::string::npos);
  }
}

}  // namespace
}  // namespace gknn::detail
