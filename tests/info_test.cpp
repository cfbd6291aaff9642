// info_test.cpp: build and machine descriptions are consistent with what the build actually contains.
#include <string>

#include <gtest/gtest.h>

#include "gknn/info.hpp"
#include "gknn/io.hpp"
#include "gknn/search.hpp"

namespace gknn {
namespace {

TEST(Info, BuildInfoMatchesTheBuild) {
  BuildInfo b = build_info();
  EXPECT_FALSE(b.version.empty());
  EXPECT_NE(b.version, "unknown");
  EXPECT_NE(b.compiler, "unknown");
  EXPECT_TRUE(b.blas);
  EXPECT_EQ(b.hdf5, hdf5_supported());
#ifdef GKNN_HAS_CUDA
  EXPECT_TRUE(b.cuda);
  EXPECT_FALSE(b.cuda_archs.empty());
#else
  EXPECT_FALSE(b.cuda);
  EXPECT_TRUE(b.cuda_archs.empty());
  EXPECT_TRUE(cuda_devices().empty());
#endif
}

TEST(Info, CpuDescriptionNamesThreadsAndSimd) {
  std::string d = cpu_description();
  EXPECT_NE(d.find("hardware threads"), std::string::npos) << d;
  EXPECT_NE(d.find("SIMD: "), std::string::npos) << d;
#if defined(__x86_64__)
  EXPECT_NE(d.find("sse4_2"), std::string::npos) << d;  // every x86-64 CPU gknn targets has SSE4.2
#endif
}

TEST(Info, DevicesAreWellFormed) {
  for (const DeviceInfo& dev : cuda_devices()) {
    EXPECT_FALSE(dev.name.empty());
    EXPECT_GT(dev.multiprocessors, 0);
    EXPECT_GT(dev.global_memory, 0u);
    EXPECT_LE(dev.free_memory, dev.global_memory);
    EXPECT_GE(dev.major, 1);
  }
}

// The compiled tables are what `gknn info` lists: a CUDA build must show its algorithms without a device.
TEST(Info, CompiledAlgorithmsDoNotNeedADevice) {
  EXPECT_TRUE(backend_compiled(Backend::Cpu));
  EXPECT_EQ(backend_compiled(Backend::Cuda), build_info().cuda);
  for (Backend b : {Backend::Cpu, Backend::Cuda}) {
    const bool listed = backend_compiled(b);
    EXPECT_EQ(!compiled_distance_algorithms(b, Metric::SquaredL2).empty(), listed) << to_string(b);
    EXPECT_EQ(!compiled_distance_algorithms(b, Metric::Lp).empty(), listed) << to_string(b);
    EXPECT_EQ(!compiled_select_algorithms(b).empty(), listed) << to_string(b);
    // Where the backend can run, the run-time lists are the compiled ones; where it cannot, they are empty.
    EXPECT_EQ(select_algorithms(b).size(), backend_available(b) ? compiled_select_algorithms(b).size() : 0u);
    EXPECT_EQ(distance_algorithms(b, Metric::L1), backend_available(b) ? compiled_distance_algorithms(b, Metric::L1)
                                                                       : std::vector<DistanceAlgorithm>{});
  }
}

}  // namespace
}  // namespace gknn
