// registry_test: the one list of algorithms (gknn/algorithms.def) and the backends' registries agree.
// Every enum value has a unique name that parses back; every backend the list names registers an entry for it;
// no backend registers an algorithm the list does not give it. In a CPU-only build the CUDA half is not compiled
// (there is no CUDA registry to check); in a CUDA build it runs without a device (the registries are host data).
#include <iterator>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/backend.hpp"
#include "gknn/error.hpp"
#include "gknn/types.hpp"

namespace gknn {
namespace {

constexpr Metric kMetrics[] = {Metric::SquaredL2, Metric::L2, Metric::InnerProduct, Metric::Cosine,
                               Metric::L1,        Metric::Linf, Metric::Lp};

/// Distance algorithms a backend registers for at least one metric.
template <class ListFn>
std::set<DistanceAlgorithm> registered_distances(ListFn list) {
  std::set<DistanceAlgorithm> out;
  for (Metric m : kMetrics)
    for (DistanceAlgorithm a : list(m)) out.insert(a);
  return out;
}

std::set<SelectAlgorithm> registered_selects(const std::vector<SelectCapability>& caps) {
  std::set<SelectAlgorithm> out;
  for (const SelectCapability& c : caps) {
    EXPECT_GE(c.max_k, 1) << to_string(c.algorithm);
    out.insert(c.algorithm);
  }
  return out;
}

/// The registry of `backend` holds exactly the algorithms the catalogue gives it.
void expect_registry_matches(unsigned backend, const char* backend_name, const std::set<DistanceAlgorithm>& distances,
                             const std::set<SelectAlgorithm>& selects) {
  for (const catalogue::DistanceInfo& d : catalogue::kDistances)
    EXPECT_EQ((d.backends & backend) != 0, distances.count(d.algorithm) == 1)
        << "distance " << d.name << ": algorithms.def and the " << backend_name << " registry disagree";
  for (const catalogue::SelectInfo& s : catalogue::kSelects)
    EXPECT_EQ((s.backends & backend) != 0, selects.count(s.algorithm) == 1)
        << "select " << s.name << ": algorithms.def and the " << backend_name << " registry disagree";
  EXPECT_EQ(distances.count(DistanceAlgorithm::Auto), 0u);
  EXPECT_EQ(selects.count(SelectAlgorithm::Auto), 0u);
}

TEST(Registry, EveryDistanceAlgorithmHasOneNameAndABackend) {
  std::set<std::string> names{"auto"};
  int expected_value = 1;  // the enum is dense after Auto, in the list's order
  for (const catalogue::DistanceInfo& d : catalogue::kDistances) {
    EXPECT_EQ(static_cast<int>(d.algorithm), expected_value++) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate name " << d.name;
    EXPECT_EQ(to_string(d.algorithm), d.name);
    EXPECT_EQ(parse_distance(d.name), d.algorithm);
    EXPECT_NE(d.backends & (catalogue::cpu | catalogue::cuda), 0u) << d.name << " names no backend";
    EXPECT_FALSE(std::string(d.summary).empty()) << d.name;
  }
  EXPECT_EQ(all_distance_algorithms().size(), std::size(catalogue::kDistances));
}

TEST(Registry, EverySelectAlgorithmHasOneNameAndABackend) {
  std::set<std::string> names{"auto"};
  int expected_value = 1;
  for (const catalogue::SelectInfo& s : catalogue::kSelects) {
    EXPECT_EQ(static_cast<int>(s.algorithm), expected_value++) << s.name;
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate name " << s.name;
    EXPECT_EQ(to_string(s.algorithm), s.name);
    EXPECT_EQ(parse_select(s.name), s.algorithm);
    EXPECT_NE(s.backends & (catalogue::cpu | catalogue::cuda), 0u) << s.name << " names no backend";
    EXPECT_FALSE(std::string(s.summary).empty()) << s.name;
    if (catalogue::takes_tang_flags(s.algorithm)) {
      EXPECT_EQ(parse_select(std::string(s.name) + "+aligned+hp"), s.algorithm);
    } else {
      EXPECT_THROW(parse_select(std::string(s.name) + "+aligned"), Error) << s.name;
    }
  }
  EXPECT_EQ(all_select_algorithms().size(), std::size(catalogue::kSelects));
}

TEST(Registry, CpuRegistersExactlyWhatTheListGivesIt) {
  expect_registry_matches(catalogue::cpu, "cpu", registered_distances(detail::cpu::distance_algorithms),
                          registered_selects(detail::cpu::select_algorithms()));
}

#ifdef GKNN_HAS_CUDA
TEST(Registry, CudaRegistersExactlyWhatTheListGivesIt) {
  expect_registry_matches(catalogue::cuda, "cuda", registered_distances(detail::cuda::distance_algorithms),
                          registered_selects(detail::cuda::select_algorithms()));
}
#endif

}  // namespace
}  // namespace gknn
