// gpu_upload_test.cpp: Index::add of host rows through the upload's kept pinned slots (pipeline/upload.cuh):
// chunk edges (batches that are no multiple of the chunk, one slot, chunks of a few rows), many chunks packed ahead
// of the copies (the ramp of small first and last chunks), strided rows with non-finite padding, several adds in a
// row, two threads adding at once, 8-bit rows converted on the device, the value facts and the NaN/Inf error of
// the device scan that replaced the host's scan, no pinned allocation by repeated adds, and rows in page-locked
// memory copied where they are. Label gpu: skipped without a device. The inputs are small (sanitizer-sized
// already).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/backend.hpp"
#include "core/validate.hpp"
#include "cuda/hooks.hpp"
#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

using detail::cuda::UploadOverride;

/// Resets the upload's chunking when a test ends, even when it fails.
struct UploadGuard {
  ~UploadGuard() { detail::cuda::set_upload_override({}); }
};

CheckOptions exact() {
  CheckOptions o;
  o.exact_indices = true;
  return o;
}

/// `m`'s rows `stride` floats apart, the padding NaN: a pack that read it would store NaN or fail the scan.
std::vector<float> strided_copy(const HostMatrix<float>& m, int64_t stride) {
  std::vector<float> out(static_cast<size_t>(m.rows * stride), NAN);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) out[size_t(i * stride + j)] = m.row(i)[j];
  return out;
}

/// The chunkings the tests run: the defaults, chunks of 20 rows of 12 floats (1000 bytes rounded down to rows)
/// through one slot (pack and copy in turn) and three, and chunks of 7 rows through five slots.
const std::vector<UploadOverride> kChunkings{{0, 0, false}, {1000, 1, false}, {1000, 3, false}, {48 * 7, 5, false}};

TEST(GpuUpload, EveryChunkingStoresTheSameRows) {
  UploadGuard guard;
  const int64_t dim = 12, stride = 17;
  const HostMatrix<float> base = integer_matrix(2600, dim, -4, 4, 40), queries = integer_matrix(21, dim, -4, 4, 41);
  const std::vector<float> padded = strided_copy(base, stride);
  Index reference(dim, Metric::SquaredL2, Backend::Cuda);
  reference.add(base.view());
  const Result want = reference.search(queries.view(), 30);
  ASSERT_EQ("", check_search(want, base.view(), queries.view(), params_for(Backend::Cuda, 30), exact()));
  for (const UploadOverride& chunking : kChunkings) {
    detail::cuda::set_upload_override(chunking);
    for (bool strided : {false, true}) {
      SCOPED_TRACE("chunk bytes " + std::to_string(chunking.chunk_bytes) + ", slots " +
                   std::to_string(chunking.slots) + (strided ? ", strided" : ""));
      Index index(dim, Metric::SquaredL2, Backend::Cuda);
      int64_t added = 0;
      for (int64_t batch : {int64_t(1), int64_t(100), int64_t(1500), int64_t(999)}) {  // grows past the capacity
        index.add(strided ? FloatView{padded.data() + added * stride, batch, dim, stride}
                          : FloatView{base.row(added), batch, dim, 0});
        added += batch;
      }
      ASSERT_EQ(added, index.size());
      const Result got = index.search(queries.view(), 30);
      EXPECT_EQ(want.indices, got.indices);
      EXPECT_EQ(want.distances, got.distances);
    }
  }
}

/// An add of many chunks: chunks of 2 MiB that start and end with smaller ones (512 KiB, 1 MiB: the ramp), packed
/// ahead of the copies by the async team through one slot (each chunk waits for the last one's copy) and three, the
/// first chunks (as many as the device slots hold: the ramp's two in the first) copied into device slots while the
/// index grows its rows on the overlap helper, as floats (those moved into place, the others landed in place) and as
/// bytes (each chunk converted from its slot).
TEST(GpuUpload, ManyChunksPackedAheadOfTheCopies) {
  UploadGuard guard;
  const int64_t dim = 128, rows = 20000, stride = 131;  // 10 MB of floats: 2 x (1.5 + 2) MiB and more
  const HostMatrix<float> base = integer_matrix(rows, dim, 0, 255, 44), queries = integer_matrix(9, dim, 0, 255, 45);
  const std::vector<float> padded = strided_copy(base, stride);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * dim));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(base.data[i]);
  const SearchParams p = params_for(Backend::Cuda, 10);
  const int64_t two_mib = int64_t(2) << 20;
  for (const UploadOverride& chunking : {UploadOverride{two_mib, 1, false}, UploadOverride{two_mib, 3, false}}) {
    detail::cuda::set_upload_override(chunking);
    SCOPED_TRACE("slots " + std::to_string(chunking.slots));
    Index floats(dim, Metric::SquaredL2, Backend::Cuda), strided(dim, Metric::SquaredL2, Backend::Cuda),
        from_bytes(dim, Metric::SquaredL2, Backend::Cuda);
    floats.add(base.view());
    strided.add(FloatView{padded.data(), rows, dim, stride});
    from_bytes.add(ByteView{bytes.data(), rows, dim, 0});
    const Result want = floats.search(queries.view(), 10);
    EXPECT_EQ("", check_search(want, base.view(), queries.view(), p, exact()));
    for (const Index* index : {&strided, &from_bytes}) {
      const Result got = index->search(queries.view(), 10);
      EXPECT_EQ(want.indices, got.indices);
      EXPECT_EQ(want.distances, got.distances);
    }
    // A one-shot search uploads its base into a known destination: its chunks ramp up from 512 KiB too.
    EXPECT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact()));
  }
}

/// 8-bit rows of 37 bytes in 2 MiB chunks that ramp up: the first two chunks land in the first device slot while the
/// index grows its rows, the second one at a 256-byte boundary after the first (its unaligned end would break the
/// conversion's 4-byte loads), then the others in turn.
TEST(GpuUpload, RampedByteChunksShareADeviceSlot) {
  UploadGuard guard;
  const int64_t dim = 37, rows = 200000;  // 7.4 MB: 512 KiB, 1 MiB, 2 MiB chunks ..., 1 MiB, 512 KiB
  const HostMatrix<float> floats = integer_matrix(rows, dim, 0, 255, 46), queries = integer_matrix(5, dim, 0, 255, 47);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * dim));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(floats.data[i]);
  Index from_floats(dim, Metric::SquaredL2, Backend::Cuda);
  from_floats.add(floats.view());
  const Result want = from_floats.search(queries.view(), 10);
  for (int slots : {1, 3}) {
    detail::cuda::set_upload_override({int64_t(2) << 20, slots, false});
    SCOPED_TRACE("slots " + std::to_string(slots));
    Index from_bytes(dim, Metric::SquaredL2, Backend::Cuda);
    from_bytes.add(ByteView{bytes.data(), rows, dim, 0});
    const Result got = from_bytes.search(queries.view(), 10);
    EXPECT_EQ(want.indices, got.indices);
    EXPECT_EQ(want.distances, got.distances);
  }
}

TEST(GpuUpload, ByteRowsEqualTheirFloats) {
  UploadGuard guard;
  // Dimension 37: the converted rows of a chunk start at any float alignment; stride 45 with padding 255.
  const int64_t dim = 37, stride = 45, rows = 3001;
  const HostMatrix<float> floats = integer_matrix(rows, dim, 0, 255, 42), queries = integer_matrix(13, dim, 0, 255, 43);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * stride), 255);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < dim; ++j) bytes[size_t(i * stride + j)] = static_cast<uint8_t>(floats.row(i)[j]);
  std::vector<int64_t> ids(static_cast<size_t>(rows));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 3 * int64_t(i) + 7;
  for (const UploadOverride& chunking : {UploadOverride{}, UploadOverride{1000, 3, false}}) {
    detail::cuda::set_upload_override(chunking);
    for (Metric metric : {Metric::SquaredL2, Metric::InnerProduct, Metric::L1, Metric::Cosine}) {
      SCOPED_TRACE(std::string(to_string(metric)) + ", chunk bytes " + std::to_string(chunking.chunk_bytes));
      Index from_floats(dim, metric, Backend::Cuda), from_bytes(dim, metric, Backend::Cuda);
      from_floats.add(floats.view());
      from_bytes.add(ByteView{bytes.data(), 1234, dim, stride});
      from_bytes.add(ByteView{bytes.data() + 1234 * stride, rows - 1234, dim, stride});
      ASSERT_EQ(rows, from_bytes.size());
      const Result want = from_floats.search(queries.view(), 25), got = from_bytes.search(queries.view(), 25);
      EXPECT_EQ(want.indices, got.indices);
      EXPECT_EQ(want.distances, got.distances);
      if (metric == Metric::SquaredL2) {
        EXPECT_EQ("", check_search(got, floats.view(), queries.view(), params_for(Backend::Cuda, 25), exact()));
      }
    }
    Index with_ids(dim, Metric::SquaredL2, Backend::Cuda);
    with_ids.add_with_ids(ByteView{bytes.data(), rows, dim, stride}, ids.data());
    const Result plain = search(floats.view(), queries.view(), params_for(Backend::Cuda, 25));
    const Result got = with_ids.search(queries.view(), 25);
    ASSERT_EQ(plain.indices.size(), got.indices.size());
    for (size_t i = 0; i < got.indices.size(); ++i) {
      EXPECT_EQ(ids[size_t(plain.indices[i])], got.indices[i]);
      EXPECT_EQ(plain.distances[i], got.distances[i]);
    }
  }
}

/// The store's device scan of uploaded rows gives what validate_matrix's host scan gives (the facts decide the
/// exact lower-precision paths, so a base must get the same plan however it was added).
TEST(GpuUpload, DeviceScanGivesTheHostFacts) {
  UploadGuard guard;
  detail::cuda::set_upload_override({1000, 3, false});  // several chunks, each with its part of the facts
  const int64_t dim = 10;
  auto with = [&](std::vector<std::pair<int64_t, float>> values, uint64_t seed) {
    HostMatrix<float> m = integer_matrix(700, dim, 0, 9, seed);
    for (const auto& [at, v] : values) m.data[size_t(at)] = v;
    return m;
  };
  const std::vector<HostMatrix<float>> cases{
      with({}, 50),                                 // small nonnegative integers
      with({{6543, -3.f}}, 51),                     // a negative value in a late chunk
      with({{12, 0.5f}}, 52),                       // a fraction in the first chunk
      with({{5000, -0.f}}, 53),                     // -0.0 is nonnegative
      with({{3333, 16777216.f}, {77, -8388609.f}}, 54),  // large integers, the largest |v| negative
      with({{6999, 1e30f}, {2, 2.5e-7f}}, 55)};
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE("case " + std::to_string(c));
    for (bool strided : {false, true}) {
      const std::vector<float> padded = strided_copy(cases[c], dim + 3);
      const FloatView rows = strided ? FloatView{padded.data(), 700, dim, dim + 3} : cases[c].view();
      const detail::ValueStats want = detail::validate_matrix(rows, "rows", true);
      const std::unique_ptr<detail::ResidentStore> store = detail::cuda::make_store(dim, 0);
      const detail::ValueStats got = store->append_unscanned(rows, "rows");
      EXPECT_EQ(want.integral, got.integral);
      EXPECT_EQ(want.nonnegative, got.nonnegative);
      EXPECT_EQ(want.max_abs, got.max_abs);
      EXPECT_EQ(want.known, got.known);
      EXPECT_EQ(700, store->size());
      EXPECT_EQ(want.max_abs, store->facts().max_abs);
    }
  }
  std::vector<uint8_t> bytes(700 * dim);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((i * 37) % 201);
  const std::unique_ptr<detail::ResidentStore> store = detail::cuda::make_store(dim, 0);
  const detail::ValueStats got = store->append_bytes(ByteView{bytes.data(), 700, dim, 0}, "rows");
  EXPECT_TRUE(got.integral);
  EXPECT_TRUE(got.nonnegative);
  EXPECT_EQ(200.f, got.max_abs);
}

/// NaN or Inf in a host batch: the device scan names the first bad row and column as the host scan does, and the
/// index keeps only the rows it had; the next add overwrites the rejected rows. 70000 rows of 512 bytes: the scan
/// runs per 32 MiB run of chunks (65536 rows), so the bad rows sit in the first and in the second run.
TEST(GpuUpload, NonFiniteRowIsNamedAndNothingIsStored) {
  UploadGuard guard;
  const int64_t dim = 128, rows = 70000;
  const HostMatrix<float> base = integer_matrix(rows, dim, -5, 5, 60);
  const HostMatrix<float> queries = integer_matrix(7, dim, -5, 5, 61);
  for (const UploadOverride& chunking : {UploadOverride{}, UploadOverride{4096, 2, false}}) {
    detail::cuda::set_upload_override(chunking);  // 4096 bytes: 8 rows a chunk
    for (int64_t early : {int64_t(-1), int64_t(1000)}) {
      SCOPED_TRACE("chunk bytes " + std::to_string(chunking.chunk_bytes) + ", bad row " + std::to_string(early));
      Index index(dim, Metric::SquaredL2, Backend::Cuda);
      index.add(FloatView{base.row(0), 10, dim, 0});
      HostMatrix<float> bad = base;
      bad.row(69000)[3] = INFINITY;
      bad.row(66000)[99] = NAN;
      bad.row(66000)[42] = -INFINITY;
      if (early >= 0) bad.row(early)[0] = NAN;
      try {
        index.add(bad.view());
        FAIL() << "a non-finite row was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(ErrorCode::InvalidArgument, e.code());
        const std::string want = early >= 0 ? "Index::add vectors row 1000 column 0 is nan"
                                            : "Index::add vectors row 66000 column 42 is -inf";
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      }
      ASSERT_EQ(10, index.size());
      const FloatView first{base.row(0), 10, dim, 0};
      ASSERT_EQ("", check_search(index.search(queries.view(), 5), first, queries.view(),
                                 params_for(Backend::Cuda, 5), exact()));
      if (early >= 0) continue;
      index.add(FloatView{base.row(10), rows - 10, dim, 0});
      ASSERT_EQ(rows, index.size());
      ASSERT_EQ("", check_search(index.search(queries.view(), 5), base.view(), queries.view(),
                                 params_for(Backend::Cuda, 5), exact()));
    }
  }
}

TEST(GpuUpload, RepeatedAddsAllocateNoPinnedMemory) {
  const HostMatrix<float> base = integer_matrix(20000, 64, 0, 255, 70);  // 5 MB: 4 chunks of 1.25 MB
  Index first(64, Metric::SquaredL2, Backend::Cuda);
  first.add(base.view());
  const int64_t allocations = detail::cuda::upload_pinned_allocations();
  for (int round = 0; round < 3; ++round) {
    Index index(64, Metric::SquaredL2, Backend::Cuda);
    index.add(base.view());
    index.add(FloatView{base.row(0), 5000, 64, 0});  // smaller: the kept slots serve it
    first.add(FloatView{base.row(0), 1, 64, 0});
  }
  EXPECT_EQ(allocations, detail::cuda::upload_pinned_allocations());
}

/// Rows in page-locked memory (cudaHostAlloc, cudaHostRegister) are copied from where they are, without the pack
/// (and without pinned slots of the upload's own); the index is the same.
TEST(GpuUpload, PageLockedRowsAreCopiedWhereTheyAre) {
  UploadGuard guard;
  const int64_t dim = 12, stride = 17, rows = 2600;
  const HostMatrix<float> base = integer_matrix(rows, dim, 0, 200, 90), queries = integer_matrix(11, dim, 0, 200, 91);
  const std::vector<float> padded = strided_copy(base, stride);
  float* pinned = nullptr;
  ASSERT_EQ(cudaSuccess, cudaHostAlloc(reinterpret_cast<void**>(&pinned), padded.size() * sizeof(float), 0));
  std::copy(padded.begin(), padded.end(), pinned);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * dim));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(base.data[i]);
  ASSERT_EQ(cudaSuccess, cudaHostRegister(bytes.data(), bytes.size(), cudaHostRegisterDefault));
  Index reference(dim, Metric::SquaredL2, Backend::Cuda);
  reference.add(base.view());
  const Result want = reference.search(queries.view(), 20);
  for (const UploadOverride& chunking : {UploadOverride{}, UploadOverride{1000, 2, false}}) {
    detail::cuda::set_upload_override(chunking);
    SCOPED_TRACE("chunk bytes " + std::to_string(chunking.chunk_bytes));
    const int64_t allocations = detail::cuda::upload_pinned_allocations();
    Index from_pinned(dim, Metric::SquaredL2, Backend::Cuda), from_bytes(dim, Metric::SquaredL2, Backend::Cuda);
    from_pinned.add(FloatView{pinned, 1000, dim, stride});
    from_pinned.add(FloatView{pinned + 1000 * stride, rows - 1000, dim, stride});
    from_bytes.add(ByteView{bytes.data(), rows, dim, 0});
    EXPECT_EQ(allocations, detail::cuda::upload_pinned_allocations());
    for (const Index* index : {&from_pinned, &from_bytes}) {
      const Result got = index->search(queries.view(), 20);
      EXPECT_EQ(want.indices, got.indices);
      EXPECT_EQ(want.distances, got.distances);
    }
  }
  EXPECT_EQ(cudaSuccess, cudaHostUnregister(bytes.data()));
  EXPECT_EQ(cudaSuccess, cudaFreeHost(pinned));
}

/// Two threads add to two indexes at once: each upload leases its own slots.
TEST(GpuUpload, ConcurrentAddsToTwoIndexes) {
  UploadGuard guard;
  detail::cuda::set_upload_override({4096, 3, false});
  const HostMatrix<float> a = integer_matrix(4000, 16, -9, 9, 80), b = integer_matrix(3000, 16, -9, 9, 81),
                          queries = integer_matrix(9, 16, -9, 9, 82);
  Index ia(16, Metric::SquaredL2, Backend::Cuda), ib(16, Metric::SquaredL2, Backend::Cuda);
  auto add_in_batches = [](Index& index, const HostMatrix<float>& m) {
    for (int64_t at = 0; at < m.rows; at += 333)
      index.add(FloatView{m.row(at), std::min<int64_t>(333, m.rows - at), m.cols, 0});
  };
  std::thread other([&] { add_in_batches(ib, b); });
  add_in_batches(ia, a);
  other.join();
  const SearchParams p = params_for(Backend::Cuda, 12);
  EXPECT_EQ("", check_search(ia.search(queries.view(), 12), a.view(), queries.view(), p, exact()));
  EXPECT_EQ("", check_search(ib.search(queries.view(), 12), b.view(), queries.view(), p, exact()));
}

}  // namespace
}  // namespace gknn::testing
