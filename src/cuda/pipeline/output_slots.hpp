// output_slots.hpp: how many finalised query tiles a search keeps in flight towards a host destination (plain C++,
// tested on the CPU by tests/output_slots_test.cpp).
//
// A tile's pinned slot is reused only after the host has copied the tile into the caller's memory. With two slots
// the device stops after two tiles until the first copy-out, which itself waits for the destination (a large
// Result is allocated, its pages zeroed, on a helper thread: tens of ms for 10k x 1000 entries): on the H100 the
// device waited for the host. More slots let the device run further ahead, at the price of pinned and device
// memory per slot, so they are used only while they are cheap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gknn::detail::cuda {

/// Output slots a Pipeline holds (the most a search uses).
constexpr int kOutputSlots = 4;
/// Pinned bytes the output slots of one search may take beyond the two it always has.
constexpr size_t kOutputSlotPinnedBytes = size_t(128) << 20;

/// Slots in flight for `tiles` query tiles of `slot_bytes` each (values + indices of one tile), when
/// `spare_device_bytes` of the budget are left after the plan (which counted two slots): two, or up to
/// kOutputSlots when there are more than two tiles and the extra slots fit both the pinned cap and the budget.
constexpr int output_slots_in_flight(int64_t tiles, size_t slot_bytes, size_t spare_device_bytes) {
  int slots = 2;
  while (slots < kOutputSlots && tiles > slots && static_cast<size_t>(slots + 1) * slot_bytes <= kOutputSlotPinnedBytes &&
         static_cast<size_t>(slots - 1) * slot_bytes <= spare_device_bytes)
    ++slots;
  return slots;
}

}  // namespace gknn::detail::cuda
