// gpu_bitonic_test.cu: the bitonic primitives (src/cuda/primitives/bitonic.cuh) against std::sort in the
// total order, at thread level (including non-power-of-two lengths), warp level (strided) and block level
// (blocked, with shared-memory strides), and the keep-smallest merges. Keys come from a small range so that
// ties are frequent and the index decides.
#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/common/buffer.cuh"
#include "cuda/primitives/bitonic.cuh"

namespace gknn::testing {
namespace {

using namespace gknn::detail::cuda;
using Pair = std::pair<float, int>;

std::vector<Pair> random_pairs(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> key(0, 9), idx(0, 1 << 20);
  std::vector<Pair> v(n);
  for (auto& p : v) p = {float(key(rng)), idx(rng)};
  return v;
}

std::vector<Pair> sorted(std::vector<Pair> v) {
  std::sort(v.begin(), v.end());  // lexicographic (key, index): the total order
  return v;
}

/// Device round trip: uploads pairs, runs kernel(keys, idx), downloads.
template <class Kernel>
std::vector<Pair> on_device(const std::vector<Pair>& in, Kernel kernel, int threads) {
  std::vector<float> k(in.size());
  std::vector<int> v(in.size());
  for (size_t i = 0; i < in.size(); ++i) k[i] = in[i].first, v[i] = in[i].second;
  DeviceBuffer<float> dk(k.size());
  DeviceBuffer<int> dv(v.size());
  GKNN_CUDA_TRY(cudaMemcpy(dk.data(), k.data(), k.size() * 4, cudaMemcpyHostToDevice));
  GKNN_CUDA_TRY(cudaMemcpy(dv.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  kernel<<<1, threads>>>(dk.data(), dv.data());
  GKNN_CUDA_TRY(cudaGetLastError());
  GKNN_CUDA_TRY(cudaMemcpy(k.data(), dk.data(), k.size() * 4, cudaMemcpyDeviceToHost));
  GKNN_CUDA_TRY(cudaMemcpy(v.data(), dv.data(), v.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<Pair> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = {k[i], v[i]};
  return out;
}

// Thread level: each thread sorts its own N pairs (thread t owns [t*N, t*N+N)).
template <int N>
__global__ void thread_sort_kernel(float* k, int* v) {
  float a[N];
  int b[N];
  for (int i = 0; i < N; ++i) a[i] = k[threadIdx.x * N + i], b[i] = v[threadIdx.x * N + i];
  bitonic::thread_sort<N>(a, b);
  for (int i = 0; i < N; ++i) k[threadIdx.x * N + i] = a[i], v[threadIdx.x * N + i] = b[i];
}

template <int N>
void check_thread_sort() {
  const auto in = random_pairs(32 * N, N);
  const auto out = on_device(in, thread_sort_kernel<N>, 32);
  for (int t = 0; t < 32; ++t) {
    std::vector<Pair> part(in.begin() + t * N, in.begin() + t * N + N);
    std::vector<Pair> got(out.begin() + t * N, out.begin() + t * N + N);
    ASSERT_EQ(sorted(part), got) << "N=" << N << " thread " << t;
  }
}

TEST(Bitonic, ThreadSortAnyLength) {
  check_thread_sort<1>();
  check_thread_sort<2>();
  check_thread_sort<3>();
  check_thread_sort<5>();
  check_thread_sort<8>();
  check_thread_sort<13>();
  check_thread_sort<16>();
}

// Thread keep-smallest: a (8) and b (5) sorted per thread, a := 8 smallest.
__global__ void thread_keep_kernel(float* k, int* v) {
  float a[8], bk[5];
  int av[8], bv[5];
  const int base = threadIdx.x * 13;
  for (int i = 0; i < 8; ++i) a[i] = k[base + i], av[i] = v[base + i];
  for (int i = 0; i < 5; ++i) bk[i] = k[base + 8 + i], bv[i] = v[base + 8 + i];
  bitonic::thread_sort<8>(a, av);
  bitonic::thread_sort<5>(bk, bv);
  bitonic::thread_merge_keep_smallest<8, 5>(a, av, bk, bv);
  for (int i = 0; i < 8; ++i) k[base + i] = a[i], v[base + i] = av[i];
}

TEST(Bitonic, ThreadMergeKeepSmallest) {
  const auto in = random_pairs(32 * 13, 77);
  const auto out = on_device(in, thread_keep_kernel, 32);
  for (int t = 0; t < 32; ++t) {
    auto all = sorted(std::vector<Pair>(in.begin() + t * 13, in.begin() + t * 13 + 13));
    all.resize(8);
    ASSERT_EQ(all, std::vector<Pair>(out.begin() + t * 13, out.begin() + t * 13 + 8)) << "thread " << t;
  }
}

// Warp level, strided: element e = s*32 + lane.
template <int N>
__global__ void warp_sort_kernel(float* k, int* v) {
  float a[N];
  int b[N];
  for (int s = 0; s < N; ++s) a[s] = k[s * 32 + threadIdx.x], b[s] = v[s * 32 + threadIdx.x];
  bitonic::warp_sort<N>(a, b);
  for (int s = 0; s < N; ++s) k[s * 32 + threadIdx.x] = a[s], v[s * 32 + threadIdx.x] = b[s];
}

template <int N>
void check_warp_sort() {
  const auto in = random_pairs(32 * N, 100 + N);
  ASSERT_EQ(sorted(in), on_device(in, warp_sort_kernel<N>, 32)) << "N=" << N;
}

TEST(Bitonic, WarpSortAnyLength) {
  check_warp_sort<1>();
  check_warp_sort<2>();
  check_warp_sort<3>();
  check_warp_sort<5>();
  check_warp_sort<8>();
  check_warp_sort<10>();
}

// Warp keep-smallest: a = 32*NA sorted, b = 32*NB sorted, a := 32*NA smallest of both.
template <int NA, int NB>
__global__ void warp_keep_kernel(float* k, int* v) {
  float a[NA], bk[NB];
  int av[NA], bv[NB];
  for (int s = 0; s < NA; ++s) a[s] = k[s * 32 + threadIdx.x], av[s] = v[s * 32 + threadIdx.x];
  for (int s = 0; s < NB; ++s) bk[s] = k[32 * NA + s * 32 + threadIdx.x], bv[s] = v[32 * NA + s * 32 + threadIdx.x];
  bitonic::warp_sort<NA>(a, av);
  bitonic::warp_sort<NB>(bk, bv);
  bitonic::warp_merge_keep_smallest<NA, NB>(a, av, bk, bv);
  for (int s = 0; s < NA; ++s) k[s * 32 + threadIdx.x] = a[s], v[s * 32 + threadIdx.x] = av[s];
}

template <int NA, int NB>
void check_warp_keep() {
  const auto in = random_pairs(32 * (NA + NB), 7 * NA + NB);
  auto want = sorted(in);
  want.resize(32 * NA);
  auto got = on_device(in, warp_keep_kernel<NA, NB>, 32);
  got.resize(32 * NA);
  ASSERT_EQ(want, got) << "NA=" << NA << " NB=" << NB;
}

TEST(Bitonic, WarpMergeKeepSmallest) {
  check_warp_keep<1, 1>();
  check_warp_keep<4, 3>();
  check_warp_keep<2, 7>();
  check_warp_keep<8, 8>();
}

// Block level, blocked: element e = t*T + i over MT threads; T*MT up to 4096 (shared-memory strides).
template <int T, int MT>
__global__ void block_sort_kernel(float* k, int* v) {
  __shared__ float sk[2 * MT];
  __shared__ int sv[2 * MT];
  float a[T];
  int b[T];
  const int t = threadIdx.x;
  for (int i = 0; i < T; ++i) a[i] = k[t * T + i], b[i] = v[t * T + i];
  bitonic::block_sort<T, MT, T * MT>(a, b, bitonic::Scratch<int>{sk, sv});
  for (int i = 0; i < T; ++i) k[t * T + i] = a[i], v[t * T + i] = b[i];
}

template <int T, int MT>
void check_block_sort() {
  const auto in = random_pairs(T * MT, 1000 + T * MT);
  ASSERT_EQ(sorted(in), on_device(in, block_sort_kernel<T, MT>, MT)) << "T=" << T << " MT=" << MT;
}

TEST(Bitonic, BlockSort) {
  check_block_sort<2, 32>();    // warp only
  check_block_sort<2, 256>();   // shared strides >= 64
  check_block_sort<4, 128>();
  check_block_sort<16, 256>();  // the bits k=2048 merge array
}

}  // namespace
}  // namespace gknn::testing
