// gpu_upload_test.cpp: Index::add of host rows through the upload's kept pinned slots (pipeline/upload.cuh):
// chunk edges (batches that are no multiple of the chunk, one slot, chunks of a few rows), many chunks packed ahead
// of the copies (the ramp of small first and last chunks), strided rows with non-finite padding, several adds in a
// row, two threads adding at once, 8-bit rows converted on the device, the value facts and the NaN/Inf error of
// the device scan that replaced the host's scan, no pinned allocation by repeated adds, and rows in page-locked
// memory copied where they are; the upload timeline (gknn_upload_bench); Indexes added again after a free, their rows
// from gknn's device pool, and after the pool is trimmed. The uploads of >= 32 MiB (packed with
// streaming stores, or memcpy's into the cache-resident ring), the adds from page-locked rows (1-D copies of contiguous rows) and the ramp's small chunks that
// share a device slot are also read back from the device byte for byte (HostUpload run as an Index add runs it).
// Label gpu: skipped without a device. The inputs are small, except those of the 32 MiB tests: under
// GKNN_TEST_SANITIZE=1 (testing/sanitize.hpp) those run one upload per case and search none of their large bases.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/backend.hpp"
#include "core/validate.hpp"
#include "cuda/hooks.hpp"
#include "core/host_parallel.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/distance/distance.cuh"
#include "cuda/pipeline/query_bytes.cuh"
#include "cuda/pipeline/upload.cuh"
#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"
#include "testing/sanitize.hpp"

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

// ---- Uploads read back from the device ----------------------------------------------------------------------

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

/// `count` random bytes.
std::vector<uint8_t> random_bytes(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(count);
  for (size_t i = 0; i < count; i += 8) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, std::min<size_t>(8, count - i));
  }
  return out;
}

/// `rows` rows of `dim` bytes from `contiguous`, `stride` bytes apart, the padding 255.
std::vector<uint8_t> strided_bytes(const std::vector<uint8_t>& contiguous, int64_t rows, int64_t dim, int64_t stride) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * stride), 255);
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(out.data() + i * stride, contiguous.data() + i * dim, static_cast<size_t>(dim));
  return out;
}

/// 8-bit rows as floats (the oracle's base).
HostMatrix<float> as_floats(const std::vector<uint8_t>& bytes, int64_t rows, int64_t dim) {
  HostMatrix<float> m(rows, dim);
  for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = bytes[i];
  return m;
}

/// `rows` packed contiguously: what an upload must leave on the device.
std::vector<unsigned char> packed(const detail::HostRows& rows) {
  std::vector<unsigned char> out(static_cast<size_t>(rows.rows) * rows.row_bytes);
  for (int64_t r = 0; r < rows.rows; ++r)
    std::memcpy(out.data() + static_cast<size_t>(r) * rows.row_bytes,
                static_cast<const unsigned char*>(rows.data) + static_cast<size_t>(r) * rows.stride_bytes,
                rows.row_bytes);
  return out;
}

/// "" when `got` equals `want`, else the first byte that differs, its row and how many bytes differ (a message of
/// bounded length: tens of MB of bytes are compared).
std::string first_difference(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want,
                             size_t row_bytes) {
  if (got.size() != want.size())
    return "got " + std::to_string(got.size()) + " bytes, want " + std::to_string(want.size());
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return "";
  size_t first = 0, differing = 0;
  for (size_t i = got.size(); i-- > 0;)
    if (got[i] != want[i]) first = i, ++differing;
  return "byte " + std::to_string(first) + " (row " + std::to_string(first / row_bytes) + ", byte " +
         std::to_string(first % row_bytes) + ") is " + std::to_string(got[first]) + ", want " +
         std::to_string(want[first]) + "; " + std::to_string(differing) + " bytes differ";
}

/// What an upload left on the device, read back.
struct Landed {
  std::vector<unsigned char> bytes;
  detail::cuda::UploadTimes times;  ///< the upload's (streaming, chunks, early chunks)
  std::string handed;  ///< "" when on_chunk was handed consecutive runs covering every row once; else what went wrong
};

/// Uploads `rows` as an Index add does (pipeline/resident.cu: HostUpload made, so packing starts, then run with a
/// `prepare` that the overlap helper runs while the first chunks are copied into device slots) and reads the device
/// bytes back. `in_place`: prepare returns the destination, as for a float add (the early chunks are moved there
/// from their device slots, the later ones land there); else it returns null, as for an 8-bit add, and each chunk is
/// handed in its device slot (the early ones, several to a slot, after the copy of the last of them), copied out
/// by the consumer stream here where an 8-bit add converts it.
Landed upload_and_read_back(const detail::HostRows& rows, bool in_place) {
  struct Resources {
    unsigned char* dst = nullptr;
    cudaStream_t copy = nullptr, consumer = nullptr;
    ~Resources() {
      if (consumer) cudaStreamSynchronize(consumer);
      if (copy) cudaStreamSynchronize(copy);
      if (consumer) cudaStreamDestroy(consumer);
      if (copy) cudaStreamDestroy(copy);
      if (dst) cudaFree(dst);
    }
  } r;
  const size_t bytes = static_cast<size_t>(rows.rows) * rows.row_bytes;
  cuda_check(cudaMalloc(reinterpret_cast<void**>(&r.dst), bytes), "cudaMalloc");
  cuda_check(cudaMemset(r.dst, 0xA5, bytes), "cudaMemset");  // what no copy wrote shows
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // before the copies on the non-blocking streams
  cuda_check(cudaStreamCreateWithFlags(&r.copy, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaStreamCreateWithFlags(&r.consumer, cudaStreamNonBlocking), "cudaStreamCreate");
  Landed out;
  int64_t next = 0;  // the first row not handed yet
  {
    detail::cuda::HostUpload upload(rows);
    upload.run(
        nullptr, r.copy, r.consumer,
        [&](const detail::cuda::UploadChunk& c) {
          if (out.handed.empty() && (c.first_row != next || c.rows < 1))
            out.handed = "rows " + std::to_string(c.first_row) + "+" + std::to_string(c.rows) + " handed after row " +
                         std::to_string(next);
          next = c.first_row + c.rows;
          unsigned char* at = r.dst + static_cast<size_t>(c.first_row) * rows.row_bytes;
          if (in_place) {
            if (out.handed.empty() && c.device != at)
              out.handed = "rows from " + std::to_string(c.first_row) + " handed out of place";
          } else {
            cuda_check(cudaMemcpyAsync(at, c.device, static_cast<size_t>(c.rows) * rows.row_bytes,
                                       cudaMemcpyDeviceToDevice, r.consumer),
                       "cudaMemcpyAsync");
          }
        },
        [&]() -> void* { return in_place ? r.dst : nullptr; });
  }
  if (out.handed.empty() && next != rows.rows)
    out.handed = "rows handed up to " + std::to_string(next) + " of " + std::to_string(rows.rows);
  cuda_check(cudaStreamSynchronize(r.consumer), "cudaStreamSynchronize");  // every copy, every copy out
  out.times = detail::cuda::last_upload_times();
  out.bytes.resize(bytes);
  cuda_check(cudaMemcpy(out.bytes.data(), r.dst, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return out;
}

/// One upload to read back: its rows, whether they are a large upload's (>= 32 MiB: streaming stores, or memcpy's
/// into the cache-resident ring), and how an Index add lands them.
struct UploadCase {
  std::string name;
  detail::HostRows rows;
  bool large = false;
  bool in_place = false;  ///< as an add of floats (else as one of bytes)
  int64_t early = 0;      ///< at least this many chunks copied into device slots beside prepare (both ways)
};

/// Each case uploaded and read back under each chunking, landed both ways (sanitized run: the first chunking, landed
/// as the Index lands it), its bytes and streaming checked.
void expect_landed_byte_for_byte(const std::vector<UploadCase>& cases, const std::vector<UploadOverride>& chunkings) {
  for (const UploadOverride& chunking : chunkings) {
    detail::cuda::set_upload_override(chunking);
    for (const UploadCase& c : cases) {
      const std::vector<unsigned char> want = packed(c.rows);
      for (bool in_place : {c.in_place, !c.in_place}) {
        SCOPED_TRACE(c.name + ", chunk bytes " + std::to_string(chunking.chunk_bytes) + ", slots " +
                     std::to_string(chunking.slots) + ", ramp " + std::to_string(chunking.ramp) +
                     (in_place ? ", in place" : ", in device slots"));
        const Landed got = upload_and_read_back(c.rows, in_place);
        EXPECT_EQ("", got.handed);
        EXPECT_EQ("", first_difference(got.bytes, want, c.rows.row_bytes));
        // A large upload streams under a forced chunking, and under the default one unless this host packs large
        // uploads into its cache-resident ring (memcpy's stores): both kinds of pack land byte for byte.
        const bool by_default = chunking.chunk_bytes == 0 && chunking.slots == 0;
        EXPECT_EQ(c.large && !(by_default && detail::cuda::upload_cached_ring()), got.times.streaming);
        EXPECT_GE(got.times.chunks, 2);
        EXPECT_GE(got.times.early_chunks, c.early);
        if (sanitize_mode()) break;
      }
    }
    if (sanitize_mode()) break;
  }
}

TEST(GpuUpload, EveryChunkingStoresTheSameRows) {
  UploadGuard guard;
  const int64_t dim = 12, stride = 17;
  const HostMatrix<float> base = integer_matrix(2600, dim, -4, 4, 40), queries = integer_matrix(21, dim, -4, 4, 41);
  const std::vector<float> padded = strided_copy(base, stride);
  Index reference(dim, Metric::SquaredL2, Backend::Cuda);
  reference.add(base.view());
  const Result want = reference.search(queries.view(), 30);
  ASSERT_EQ("", check_search(want, base.view(), queries.view(), params_for(Backend::Cuda, 30), exact()));
  for (size_t c = 0; c < kChunkings.size(); ++c) {
    const UploadOverride& chunking = kChunkings[c];
    detail::cuda::set_upload_override(chunking);
    for (bool strided : {false, true}) {
      // Sanitized run: each chunking once, contiguous and strided in turn (its adds cost a call per chunk).
      if (sanitize_mode() && strided != (c % 2 == 1)) continue;
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
    if (sanitize_mode() && chunking.slots == 1) continue;  // one slot: EveryChunkingStoresTheSameRows' 1000 x 1
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
    // Sanitized run: one slot here; RampedChunksSharingADeviceSlotLandByteForByte lands 2 MiB x 3.
    if (sanitize_mode() && slots == 3) continue;
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
      // Sanitized run: squared L2 and cosine (the normalised rows); the conversion is the metric's in no other way.
      if (sanitize_mode() && (metric == Metric::InnerProduct || metric == Metric::L1)) continue;
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

/// Host queries whose values are integers of a byte's range go up as bytes (query_bytes.cuh): the host packs them
/// and the device widens them back to the same floats, for every byte value, signed and unsigned, from strided rows,
/// an odd count (the kernel's tail) and an unaligned source (its byte loads). The decision takes bytes only for a
/// path exact on 8-bit data and facts inside the byte's range.
TEST(GpuUpload, QueryBytesWidenToTheSameFloats) {
  const int64_t rows = 7, cols = 37, stride = 41;  // 259 values: every byte value at least once
  uint8_t* bytes = nullptr;
  float* widened = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&bytes, size_t(rows * cols + 1)));
  ASSERT_EQ(cudaSuccess, cudaMalloc(&widened, size_t(rows * cols) * sizeof(float)));
  for (bool is_signed : {false, true}) {
    SCOPED_TRACE(is_signed ? "int8" : "uint8");
    std::vector<float> host(size_t(rows * stride), 1000.f);  // the padding is never read
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int v = int((r * cols + c) % 256);
        host[size_t(r * stride + c)] = float(is_signed ? v - 128 : v);
      }
    std::vector<unsigned char> packed(size_t(rows * cols + 1), 0);
    detail::pack_rows_as_bytes(host.data(), stride, rows, cols, is_signed, packed.data() + 1);
    ASSERT_EQ(cudaSuccess, cudaMemcpy(bytes, packed.data(), packed.size(), cudaMemcpyHostToDevice));
    detail::cuda::widen_bytes(bytes + 1, rows * cols, is_signed, widened, nullptr);
    std::vector<float> back(size_t(rows * cols));
    ASSERT_EQ(cudaSuccess, cudaMemcpy(back.data(), widened, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(host[size_t(r * stride + c)], back[size_t(r * cols + c)]) << r << " " << c;
  }
  cudaFree(bytes);
  cudaFree(widened);

  using detail::cuda::DataFacts;
  const detail::cuda::DistanceEntry* fused = detail::cuda::find_distance(DistanceAlgorithm::Fused);
  const detail::cuda::DistanceEntry* cublas = detail::cuda::find_distance(DistanceAlgorithm::Cublas);
  ASSERT_TRUE(fused && cublas);
  const DataFacts u8{detail::ValueStats{true, true, 255.f}, 128}, s8{detail::ValueStats{true, false, 127.f}, 128},
      wide{detail::ValueStats{true, true, 256.f}, 128}, fractions{detail::ValueStats{false, true, 1.f}, 128},
      unknown{detail::ValueStats{true, true, 9.f, false}, 128};
  EXPECT_EQ(std::optional<bool>(false), detail::cuda::query_byte_form(*fused, u8));
  EXPECT_EQ(std::optional<bool>(true), detail::cuda::query_byte_form(*fused, s8));
  for (const DataFacts* f : {&wide, &fractions, &unknown})
    EXPECT_EQ(std::nullopt, detail::cuda::query_byte_form(*fused, *f)) << f->values.max_abs;
  EXPECT_EQ(std::nullopt, detail::cuda::query_byte_form(*cublas, u8)) << "float32 paths read the floats";
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
    // Sanitized run: the default chunks only (4096-byte chunks are 8750 chunks a 35 MB add: under every tool the
    // job ran past its 110 s, H100, 2026-11-27); its 32 MiB scan runs still hold the bad rows in the first and second.
    if (sanitize_mode() && chunking.chunk_bytes != 0) continue;
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

/// Uploads of >= 32 MiB pack with streaming stores (core/chunk_pack.hpp stream_copy) or, under the default chunking on
/// a host with a large last-level cache, with memcpy's into 8 MiB chunks (upload_cached_ring); smaller ones with
/// memcpy's:
/// 8-bit rows of 128 bytes (300007 rows, 38.4 MB: 16 MiB chunks of 131072 rows, the ramp's small ones at either end,
/// a partial one), contiguous and 131 bytes apart (strided rows gathered, then streamed), and float rows just above
/// 32 MiB (83887 rows of 100 floats, 368 bytes above it: 16 MiB chunks of 41943 rows), contiguous and 103 floats
/// apart with NaN padding, and one row fewer (memcpy's); each landed in place and in device slots, read back byte for
/// byte, under the default chunking, the ramp at the end only, no ramp, and 4 MiB chunks through 3 slots. Sanitized
/// run: the default chunking, each case landed once, as an Index add lands it.
TEST(GpuUpload, LargeUploadsPackWithStreamingStoresByteForByte) {
  UploadGuard guard;
  const int64_t byte_rows = 300007, byte_dim = 128, byte_stride = 131;
  const int64_t float_rows = 83887, float_dim = 100, float_stride = 103;
  const size_t float_bytes = float_dim * sizeof(float);
  ASSERT_GE(float_rows * int64_t(float_bytes), int64_t(32) << 20);
  ASSERT_LT((float_rows - 1) * int64_t(float_bytes), int64_t(32) << 20);
  const std::vector<uint8_t> bytes = random_bytes(static_cast<size_t>(byte_rows * byte_dim), 100);
  const std::vector<uint8_t> strided = strided_bytes(bytes, byte_rows, byte_dim, byte_stride);
  const HostMatrix<float> floats = random_matrix(float_rows, float_dim, 101);
  const std::vector<float> padded = strided_copy(floats, float_stride);
  const std::vector<UploadCase> cases{
      {"uint8 rows", {bytes.data(), byte_rows, size_t(byte_dim), size_t(byte_dim)}, true, false},
      {"strided uint8 rows", {strided.data(), byte_rows, size_t(byte_dim), size_t(byte_stride)}, true, false},
      {"float rows", {floats.data.data(), float_rows, float_bytes, float_bytes}, true, true},
      {"strided float rows", {padded.data(), float_rows, float_bytes, float_stride * sizeof(float)}, true, true},
      {"float rows below 32 MiB", {floats.data.data(), float_rows - 1, float_bytes, float_bytes}, false, true}};
  expect_landed_byte_for_byte(cases, {UploadOverride{}, UploadOverride{0, 0, false, 1},
                                      UploadOverride{0, 0, false, 2}, UploadOverride{int64_t(4) << 20, 3, false}});
}

/// Index adds of >= 32 MiB of pageable rows (streaming stores, or the cache-resident ring's memcpy): 8-bit rows (300007 x 128, converted from the device
/// slots that the ramp's first chunks share) and strided float rows (83887 x 100, 103 apart), checked by the oracle
/// on five queries. Sanitized run: the adds without the searches.
TEST(GpuUpload, LargeIndexAddsPackWithStreamingStores) {
  UploadGuard guard;
  const int64_t byte_rows = 300007, byte_dim = 128, float_rows = 83887, float_dim = 100, float_stride = 103;
  const SearchParams p = params_for(Backend::Cuda, 10);
  {
    const std::vector<uint8_t> bytes = random_bytes(static_cast<size_t>(byte_rows * byte_dim), 102);
    Index index(byte_dim, Metric::SquaredL2, Backend::Cuda);
    index.add(ByteView{bytes.data(), byte_rows, byte_dim, 0});
    EXPECT_EQ(!detail::cuda::upload_cached_ring(), detail::cuda::last_upload_times().streaming);
    ASSERT_EQ(byte_rows, index.size());
    if (!sanitize_mode()) {
      const HostMatrix<float> queries = integer_matrix(5, byte_dim, 0, 255, 103);
      const HostMatrix<float> base = as_floats(bytes, byte_rows, byte_dim);
      EXPECT_EQ("", check_search(index.search(queries.view(), 10), base.view(), queries.view(), p, exact()));
    }
  }
  const HostMatrix<float> floats = integer_matrix(float_rows, float_dim, -50, 50, 104);
  const std::vector<float> padded = strided_copy(floats, float_stride);
  Index index(float_dim, Metric::SquaredL2, Backend::Cuda);
  index.add(FloatView{padded.data(), float_rows, float_dim, float_stride});
  EXPECT_EQ(!detail::cuda::upload_cached_ring(), detail::cuda::last_upload_times().streaming);
  ASSERT_EQ(float_rows, index.size());
  if (!sanitize_mode()) {
    const HostMatrix<float> queries = integer_matrix(5, float_dim, -50, 50, 105);
    EXPECT_EQ("", check_search(index.search(queries.view(), 10), floats.view(), queries.view(), p, exact()));
  }
}

/// Rows in page-locked memory go up where they are (no pack, no streaming stores, no pinned slots made, no ramp up):
/// contiguous ones in one 1-D copy a chunk, strided ones in 2-D copies of their rows. cudaHostAlloc'd floats (83887
/// x 100, above 32 MiB; contiguous and 103 apart) and cudaHostRegister'ed bytes (100003 x 128; contiguous and 131
/// apart), read back byte for byte (the default chunking, no ramp, 1 MiB chunks through 2 slots), then Index adds
/// from them (contiguous floats, strided bytes) checked by the oracle on five queries. Sanitized run: the default
/// chunking, each case landed once, the adds without the searches.
TEST(GpuUpload, PageLockedRowsLandByteForByte) {
  UploadGuard guard;
  const int64_t float_rows = 83887, float_dim = 100, float_stride = 103;
  const int64_t byte_rows = 100003, byte_dim = 128, byte_stride = 131;
  const size_t float_bytes = float_dim * sizeof(float);
  const HostMatrix<float> floats = integer_matrix(float_rows, float_dim, -50, 50, 110);
  const std::vector<float> padded = strided_copy(floats, float_stride);
  struct PageLocked {  // freed and unregistered however the test ends
    float* pinned = nullptr;
    std::vector<void*> registered;
    ~PageLocked() {
      for (void* p : registered) cudaHostUnregister(p);
      if (pinned) cudaFreeHost(pinned);
    }
  } locked;
  const size_t contiguous = floats.data.size();
  ASSERT_EQ(cudaSuccess, cudaHostAlloc(reinterpret_cast<void**>(&locked.pinned),
                                       (contiguous + padded.size()) * sizeof(float), cudaHostAllocDefault));
  float* const pinned = locked.pinned;  // the contiguous floats, then the strided ones
  std::copy(floats.data.begin(), floats.data.end(), pinned);
  std::copy(padded.begin(), padded.end(), pinned + contiguous);
  std::vector<uint8_t> bytes = random_bytes(static_cast<size_t>(byte_rows * byte_dim), 111);
  std::vector<uint8_t> strided = strided_bytes(bytes, byte_rows, byte_dim, byte_stride);
  for (std::vector<uint8_t>* v : {&bytes, &strided}) {
    ASSERT_EQ(cudaSuccess, cudaHostRegister(v->data(), v->size(), cudaHostRegisterDefault));
    locked.registered.push_back(v->data());
  }
  const int64_t allocations = detail::cuda::upload_pinned_allocations();
  const std::vector<UploadCase> cases{
      {"pinned float rows", {pinned, float_rows, float_bytes, float_bytes}, false, true},
      {"pinned strided float rows", {pinned + contiguous, float_rows, float_bytes, float_stride * sizeof(float)}, false,
       true},
      {"registered uint8 rows", {bytes.data(), byte_rows, size_t(byte_dim), size_t(byte_dim)}, false, false},
      {"registered strided uint8 rows", {strided.data(), byte_rows, size_t(byte_dim), size_t(byte_stride)}, false,
       false}};
  expect_landed_byte_for_byte(
      cases, {UploadOverride{}, UploadOverride{0, 0, false, 2}, UploadOverride{int64_t(1) << 20, 2, false}});
  detail::cuda::set_upload_override({});
  Index from_floats(float_dim, Metric::SquaredL2, Backend::Cuda), from_bytes(byte_dim, Metric::SquaredL2, Backend::Cuda);
  from_floats.add(FloatView{pinned, float_rows, float_dim, 0});
  EXPECT_FALSE(detail::cuda::last_upload_times().streaming);
  from_bytes.add(ByteView{strided.data(), byte_rows, byte_dim, byte_stride});
  EXPECT_FALSE(detail::cuda::last_upload_times().streaming);
  EXPECT_EQ(allocations, detail::cuda::upload_pinned_allocations());
  ASSERT_EQ(float_rows, from_floats.size());
  ASSERT_EQ(byte_rows, from_bytes.size());
  if (!sanitize_mode()) {
    const SearchParams p = params_for(Backend::Cuda, 10);
    const HostMatrix<float> float_queries = integer_matrix(5, float_dim, -50, 50, 112);
    EXPECT_EQ("", check_search(from_floats.search(float_queries.view(), 10), floats.view(), float_queries.view(), p,
                               exact()));
    const HostMatrix<float> byte_queries = integer_matrix(5, byte_dim, 0, 255, 113);
    const HostMatrix<float> base = as_floats(bytes, byte_rows, byte_dim);
    EXPECT_EQ("", check_search(from_bytes.search(byte_queries.view(), 10), base.view(), byte_queries.view(), p,
                               exact()));
  }
}

/// The ramp's first chunks share a device slot (8-bit rows of 37 bytes in 2 MiB chunks: 512 KiB, then 1 MiB at a
/// 256-byte boundary after it) and are handed after the copy of the last of them: read back from the device slots
/// (as an 8-bit add converts them) and moved in place, byte for byte, through 3 slots and 1. Sanitized run: 3 slots,
/// from the device slots.
TEST(GpuUpload, RampedChunksSharingADeviceSlotLandByteForByte) {
  UploadGuard guard;
  const int64_t dim = 37, rows = 200000;  // 7.4 MB
  const std::vector<uint8_t> bytes = random_bytes(static_cast<size_t>(rows * dim), 120);
  const int64_t two_mib = int64_t(2) << 20;
  expect_landed_byte_for_byte({{"37-byte rows", {bytes.data(), rows, size_t(dim), size_t(dim)}, false, false, 2}},
                              {UploadOverride{two_mib, 3, false}, UploadOverride{two_mib, 1, false}});
}

/// The upload timeline (gknn_upload_bench's per-chunk table): off, nothing is recorded; on, an add's timeline has
/// every chunk (its rows and bytes, in order), copies that start after the previous one ended and end after they
/// start, the device work of every chunk, and the host phases in order. Float rows (in place, the first chunks in
/// device slots beside the destination's cudaMalloc) and 8-bit rows (converted from device slots), 1 MiB chunks.
TEST(GpuUpload, TimelineRecordsEveryChunk) {
  UploadGuard guard;
  struct Off {  // however the test ends
    ~Off() { detail::cuda::set_upload_timeline(false); }
  } off;
  // 5 MiB either way: 1 MiB chunks give the ramp's first ones and more than four in all.
  const int64_t float_rows = 20000, byte_rows = 4 * float_rows, dim = 64;
  const HostMatrix<float> floats = integer_matrix(float_rows, dim, -9, 9, 130);
  const std::vector<uint8_t> bytes = random_bytes(static_cast<size_t>(byte_rows * dim), 131);
  detail::cuda::set_upload_override({int64_t(1) << 20, 4, false});
  {
    Index index(dim, Metric::SquaredL2, Backend::Cuda);
    index.add(floats.view());
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    EXPECT_FALSE(detail::cuda::take_upload_timeline().valid);
  }
  detail::cuda::set_upload_timeline(true);
  for (bool as_bytes : {false, true}) {
    SCOPED_TRACE(as_bytes ? "uint8 rows" : "float rows");
    Index index(dim, Metric::SquaredL2, Backend::Cuda);
    const int64_t rows = as_bytes ? byte_rows : float_rows;
    if (as_bytes) index.add(ByteView{bytes.data(), rows, dim, 0});
    else index.add(floats.view());
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    const detail::cuda::UploadTimeline t = detail::cuda::take_upload_timeline();
    ASSERT_TRUE(t.valid);
    const detail::cuda::UploadTimes times = detail::cuda::last_upload_times();
    ASSERT_EQ(times.chunks, static_cast<int64_t>(t.chunks.size()));
    ASSERT_GT(t.chunks.size(), 4u);
    const size_t row_bytes = static_cast<size_t>(dim) * (as_bytes ? 1 : sizeof(float));
    int64_t next_row = 0;
    std::vector<bool> worked(t.chunks.size(), false);
    for (const detail::cuda::UploadTimeline::Work& w : t.work) {
      EXPECT_LE(w.start, w.end);
      if (!w.move)
        for (int64_t c = w.first_chunk; c <= w.last_chunk; ++c) worked[static_cast<size_t>(c)] = true;
    }
    for (size_t c = 0; c < t.chunks.size(); ++c) {
      const detail::cuda::UploadTimeline::Chunk& k = t.chunks[c];
      EXPECT_EQ(next_row, k.first_row) << "chunk " << c;
      EXPECT_EQ(static_cast<int64_t>(static_cast<size_t>(k.rows) * row_bytes), k.bytes) << "chunk " << c;
      next_row += k.rows;
      EXPECT_GE(k.copy_start, 0.0) << "chunk " << c;
      EXPECT_LE(k.copy_start, k.copy_end) << "chunk " << c;
      if (c > 0) {
        EXPECT_GE(k.copy_start, t.chunks[c - 1].copy_end) << "chunk " << c;  // one stream, in order
      }
      EXPECT_LE(k.ready, k.issued) << "chunk " << c;
      EXPECT_TRUE(worked[c]) << "chunk " << c;
      if (as_bytes) {
        EXPECT_TRUE(k.in_slot) << "chunk " << c;
      }
    }
    EXPECT_EQ(rows, next_row);
    EXPECT_LE(t.made, t.constructed);
    EXPECT_LE(t.constructed, t.run_start);
    EXPECT_LE(t.run_start, t.origin);
    EXPECT_LE(t.last_issued, t.run_end);
    EXPECT_LE(t.run_end, t.commit_start);
    EXPECT_LE(t.commit_start, t.commit_end);
    EXPECT_FALSE(detail::cuda::take_upload_timeline().valid);  // taken once
  }
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

// ---- Index rows from gknn's device pool (common/buffer.cuh PooledDeviceMemory) ---------------------------------

/// Bytes of the blocks gknn keeps for device 0 (freed Index rows, kept for the next add), once every free has run.
size_t pool_idle_bytes() {
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return detail::cuda::pooled_idle_bytes(0);
}

/// A float and an 8-bit Index of the same rows (integers 0..255) and their answers to `queries`; both Indexes are
/// freed when it returns (their rows and operand copies go back to the pool).
struct PoolAnswers {
  Result floats, bytes;
};
PoolAnswers add_search_and_free(const HostMatrix<float>& floats, const std::vector<uint8_t>& bytes,
                                const HostMatrix<float>& queries, int64_t k) {
  Index from_floats(floats.cols, Metric::SquaredL2, Backend::Cuda), from_bytes(floats.cols, Metric::SquaredL2,
                                                                               Backend::Cuda);
  from_floats.add(floats.view());
  from_bytes.add(ByteView{bytes.data(), floats.rows, floats.cols, floats.cols});
  return {from_floats.search(queries.view(), k), from_bytes.search(queries.view(), k)};
}

/// `got` answers as `want` does, bit for bit.
void expect_same_answers(const Result& want, const Result& got) {
  EXPECT_EQ(want.indices, got.indices);
  EXPECT_EQ(want.distances, got.distances);
}

/// The pool's test data: `rows` x 64 integers 0..255 as floats and as bytes, and 17 queries.
struct PoolData {
  static constexpr int64_t kDim = 64, kK = 10;
  HostMatrix<float> floats, queries;
  std::vector<uint8_t> bytes;
  explicit PoolData(int64_t rows)
      : floats(integer_matrix(rows, kDim, 0, 255, 90)), queries(integer_matrix(17, kDim, 0, 255, 91)) {
    for (float v : floats.data) bytes.push_back(static_cast<uint8_t>(v));  // the integers as bytes
  }
  PoolAnswers answers() const { return add_search_and_free(floats, bytes, queries, kK); }
  void expect_oracle(const PoolAnswers& a) const {
    EXPECT_EQ("", check_search(a.floats, floats.view(), queries.view(), params_for(Backend::Cuda, kK), exact()));
    expect_same_answers(a.floats, a.bytes);
  }
};

/// Adds after a freed Index, as gknn_upload_bench times them: with the pool on (the default), the freed rows stay in
/// the pool and the next Index's rows (and operand copies) are taken from them; the answers are those of the oracle
/// and of the first add, bit for bit, round after round. GKNN_INDEX_POOL=0 (gpu_upload_no_pool): cudaMalloc, the
/// same answers.
TEST(GpuUpload, IndexAddedAgainAfterAFreeFromThePool) {
  const PoolData data(sanitize_mode() ? 3000 : 40000);  // 10 MB of floats
  const size_t row_bytes = static_cast<size_t>(data.floats.rows * PoolData::kDim) * sizeof(float);
  const PoolAnswers first = data.answers();
  data.expect_oracle(first);
  if (detail::cuda::index_pool_enabled()) {
    EXPECT_GE(pool_idle_bytes(), 2 * row_bytes);  // both Indexes' rows kept
  }
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const PoolAnswers again = data.answers();
    expect_same_answers(first.floats, again.floats);
    expect_same_answers(first.bytes, again.bytes);
  }
}

/// gknn's release call (release_upload_slots, part of release_cached_device_resources) trims the pool: its idle
/// blocks go back to the device, an Index alive across the trim keeps its rows, and the next adds take new blocks;
/// every answer is the first add's.
TEST(GpuUpload, IndexAddedAgainAfterThePoolIsTrimmed) {
  const PoolData data(sanitize_mode() ? 3000 : 40000);
  const PoolAnswers first = data.answers();
  data.expect_oracle(first);
  detail::cuda::release_upload_slots();
  EXPECT_EQ(0u, pool_idle_bytes());  // nothing pooled is alive: nothing is kept
  {
    Index kept(PoolData::kDim, Metric::SquaredL2, Backend::Cuda);
    kept.add(data.floats.view());
    detail::cuda::release_upload_slots();  // trims around the live rows
    expect_same_answers(first.floats, kept.search(data.queries.view(), PoolData::kK));
  }
  const PoolAnswers again = data.answers();
  expect_same_answers(first.floats, again.floats);
  expect_same_answers(first.bytes, again.bytes);
  detail::cuda::release_upload_slots();
  EXPECT_EQ(0u, pool_idle_bytes());
}

}  // namespace
}  // namespace gknn::testing
