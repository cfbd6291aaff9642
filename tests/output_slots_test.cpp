// output_slots_test: how many finalised tiles a CUDA search keeps in flight to a host destination
// (cuda/pipeline/output_slots.hpp; plain C++, so tested without a GPU).
#include <gtest/gtest.h>

#include "cuda/pipeline/output_slots.hpp"

namespace gknn::detail::cuda {
namespace {

constexpr size_t MiB = size_t(1) << 20;

TEST(OutputSlots, TwoWhenThereAreAtMostTwoTiles) {
  EXPECT_EQ(output_slots_in_flight(1, MiB, size_t(1) << 40), 2);
  EXPECT_EQ(output_slots_in_flight(2, MiB, size_t(1) << 40), 2);
  EXPECT_EQ(output_slots_in_flight(3, MiB, size_t(1) << 40), 3);
}

TEST(OutputSlots, AllSlotsForTheSift1mShape) {
  // 10k queries in 8 tiles of 1250: k = 1000 (15 MB a tile) and k = 2048 (30.7 MB) keep four in flight.
  EXPECT_EQ(output_slots_in_flight(8, 1250 * 1000 * 12, size_t(40) << 30), kOutputSlots);
  EXPECT_EQ(output_slots_in_flight(8, 1250 * 2048 * 12, size_t(40) << 30), kOutputSlots);
}

TEST(OutputSlots, PinnedCapLimitsLargeTiles) {
  // k = 16384: 245 MB a tile; a third slot would exceed the pinned cap.
  EXPECT_EQ(output_slots_in_flight(8, size_t(1250) * 16384 * 12, size_t(40) << 30), 2);
  EXPECT_EQ(output_slots_in_flight(8, kOutputSlotPinnedBytes / 3, size_t(40) << 30), 3);
}

TEST(OutputSlots, BudgetLimitsExtraSlots) {
  EXPECT_EQ(output_slots_in_flight(8, 10 * MiB, 0), 2);
  EXPECT_EQ(output_slots_in_flight(8, 10 * MiB, 15 * MiB), 3);
  EXPECT_EQ(output_slots_in_flight(8, 10 * MiB, 20 * MiB), 4);
}

}  // namespace
}  // namespace gknn::detail::cuda
