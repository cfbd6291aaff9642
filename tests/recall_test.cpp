// recall_test.cpp: both recall definitions on hand-made results, including ties at the k-th distance,
// padding and duplicates.
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "gknn/recall.hpp"
#include "testing/expect_error.hpp"

namespace gknn {
namespace {

using testing::expect_error;

Result result(int64_t rows, int64_t k, std::vector<int64_t> ids, std::vector<float> distances) {
  Result r;
  r.rows = rows;
  r.k = k;
  r.indices = std::move(ids);
  r.distances = std::move(distances);
  return r;
}

template <class T>
HostMatrix<T> matrix(int64_t rows, int64_t cols, std::vector<T> values) {
  HostMatrix<T> m(rows, cols);
  m.data = std::move(values);
  return m;
}

TEST(RecallIds, OverlapAveragedOverQueries) {
  Result r = result(2, 3, {1, 2, 3, 5, 6, 7}, {0, 0, 0, 0, 0, 0});
  auto truth = matrix<int64_t>(2, 3, {3, 2, 9, 7, 5, 6});  // order inside the top k does not matter
  EXPECT_DOUBLE_EQ(recall_ids(r, truth, 3), (2.0 / 3 + 1.0) / 2);
}

TEST(RecallIds, UsesOnlyTheFirstKOfBoth) {
  Result r = result(1, 4, {1, 2, 3, 4}, {0, 0, 0, 0});
  auto truth = matrix<int64_t>(1, 5, {9, 2, 1, 4, 3});
  EXPECT_DOUBLE_EQ(recall_ids(r, truth, 2), 1.0 / 2);  // {1,2} vs {9,2}
  EXPECT_DOUBLE_EQ(recall_ids(r, truth, 3), 2.0 / 3);  // {1,2,3} vs {9,2,1}: truth's 3 is beyond k
}

TEST(RecallIds, TieAtTheKthDistanceCountsAgainstADifferentId) {
  // True neighbours 0, 1, 2 at distances 1, 2, 2; point 3 is also at distance 2. Picking 3 instead of 1 is
  // an equally good answer, but not the same ids.
  Result r = result(1, 3, {0, 2, 3}, {1.f, 2.f, 2.f});
  auto truth_ids = matrix<int64_t>(1, 3, {0, 1, 2});
  auto truth_distances = matrix<float>(1, 3, {1.f, 2.f, 2.f});
  EXPECT_DOUBLE_EQ(recall_ids(r, truth_ids, 3), 2.0 / 3);
  EXPECT_DOUBLE_EQ(recall_distance(r, truth_distances, 3), 1.0);
}

TEST(RecallIds, PaddingAndDuplicatesNeverCount) {
  Result padded = result(1, 3, {4, -1, -1}, {1.f, INFINITY, INFINITY});
  auto truth = matrix<int64_t>(1, 3, {4, -1, -1});
  EXPECT_DOUBLE_EQ(recall_ids(padded, truth, 3), 1.0 / 3);
  Result repeated = result(1, 3, {4, 4, 4}, {1.f, 1.f, 1.f});
  EXPECT_DOUBLE_EQ(recall_ids(repeated, matrix<int64_t>(1, 3, {4, 5, 6}), 3), 1.0 / 3);
}

TEST(RecallDistance, ThresholdIsKthTrueDistancePlusEpsilon) {
  auto truth = matrix<float>(1, 3, {1.f, 2.f, 3.f});
  Result r = result(1, 3, {7, 8, 9}, {1.f, 2.f, 3.0005f});
  EXPECT_DOUBLE_EQ(recall_distance(r, truth, 3, 1e-3), 1.0);
  EXPECT_DOUBLE_EQ(recall_distance(r, truth, 3, 1e-4), 2.0 / 3);
  // With k = 2 the threshold is the second true distance, and only the first two results are looked at.
  EXPECT_DOUBLE_EQ(recall_distance(r, truth, 2), 1.0);
  Result worse = result(1, 3, {7, 8, 9}, {2.5f, 2.6f, 2.7f});
  EXPECT_DOUBLE_EQ(recall_distance(worse, truth, 2), 0.0);
}

TEST(RecallDistance, SimilarityUsesTheOtherDirection) {
  auto truth = matrix<float>(1, 3, {0.9f, 0.8f, 0.7f});
  Result r = result(1, 3, {1, 2, 3}, {0.9f, 0.8f, 0.69f});
  EXPECT_DOUBLE_EQ(recall_distance(r, truth, 3, 1e-3, true), 2.0 / 3);
  EXPECT_DOUBLE_EQ(recall_distance(r, truth, 3, 0.02, true), 1.0);
}

TEST(RecallDistance, PaddingNeverCountsEvenAgainstPaddedTruth) {
  auto truth = matrix<float>(1, 3, {1.f, INFINITY, INFINITY});
  Result r = result(1, 3, {4, -1, -1}, {1.f, INFINITY, INFINITY});
  EXPECT_DOUBLE_EQ(recall_distance(r, truth, 3), 1.0 / 3);
}

TEST(Recall, ShapeErrorsAreInvalidArgument) {
  Result r = result(2, 3, {0, 1, 2, 0, 1, 2}, {0, 0, 0, 0, 0, 0});
  auto ids = matrix<int64_t>(2, 3, {0, 1, 2, 0, 1, 2});
  auto distances = matrix<float>(2, 3, {0, 0, 0, 0, 0, 0});
  expect_error([&] { recall_ids(r, ids, 0); }, ErrorCode::InvalidArgument, {"k must be >= 1"});
  expect_error([&] { recall_ids(r, ids, 4); }, ErrorCode::InvalidArgument, {"k = 4", "3 columns"});
  expect_error([&] { recall_ids(r, matrix<int64_t>(1, 3, {0, 1, 2}), 3); }, ErrorCode::InvalidArgument,
               {"1 rows", "2"});
  expect_error([&] { recall_ids(r, matrix<int64_t>(2, 2, {0, 1, 0, 1}), 3); }, ErrorCode::InvalidArgument,
               {"k = 3", "2"});
  expect_error([&] { recall_distance(r, matrix<float>(2, 2, {0, 1, 0, 1}), 3); }, ErrorCode::InvalidArgument,
               {"k = 3", "2"});
  expect_error([&] { recall_ids(result(0, 3, {}, {}), HostMatrix<int64_t>(0, 3), 3); }, ErrorCode::InvalidArgument,
               {"no rows"});
  Result broken = result(2, 3, {0, 1}, {});
  expect_error([&] { recall_ids(broken, ids, 3); }, ErrorCode::InvalidArgument, {"shape"});
  Result no_distances = result(2, 3, {0, 1, 2, 0, 1, 2}, {});
  expect_error([&] { recall_distance(no_distances, distances, 3); }, ErrorCode::InvalidArgument, {"distances"});
}

}  // namespace
}  // namespace gknn
