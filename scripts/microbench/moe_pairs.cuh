// Shared by the moe microbenchmarks (measurement only): E33 bs512 sizes, the pairs in expert order (each token picks
// 8 of 32 routed experts plus the shared one, fixed seed), bf16 y rows summed per token by the combine.
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1); } } while (0)

constexpr int M = 512, T = 9, H = 7168, P = M * T;

// Pair indices (token * T + slot) sorted by expert, as the route visits them.
inline std::vector<int> pairs_in_expert_order() {
  std::vector<int> tok_exp(P);
  std::mt19937 rng(1);
  for (int t = 0; t < M; ++t) {
    std::vector<int> e(32);
    std::iota(e.begin(), e.end(), 0);
    std::shuffle(e.begin(), e.end(), rng);
    for (int j = 0; j < 8; ++j) tok_exp[t * T + j] = e[j];
    tok_exp[t * T + 8] = 32;
  }
  std::vector<int> order(P);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return tok_exp[a] < tok_exp[b]; });
  return order;
}

// out[t] = bf16 of the sum of y's T rows of token t, 8 columns a thread.
__global__ void combine(const __nv_bfloat16* y, __nv_bfloat16* out) {
  const int t = blockIdx.y, h = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (h >= H) return;
  float s[8] = {};
  uint4 r[T];
  for (int j = 0; j < T; ++j) r[j] = __ldcs(reinterpret_cast<const uint4*>(y + (size_t(t) * T + j) * H + h));
  for (int j = 0; j < T; ++j) {
    const __nv_bfloat16* b = reinterpret_cast<const __nv_bfloat16*>(&r[j]);
    for (int i = 0; i < 8; ++i) s[i] += __bfloat162float(b[i]);
  }
  __align__(16) __nv_bfloat16 o[8];
  for (int i = 0; i < 8; ++i) o[i] = __float2bfloat16(s[i]);
  *reinterpret_cast<uint4*>(out + size_t(t) * H + h) = *reinterpret_cast<uint4*>(o);
}

// The device buffers both benchmarks time: the pair order, y (P rows), out (M rows) and the 1 GiB flush buffer.
struct PairBuffers {
  static constexpr size_t kFlush = size_t(1) << 30;
  int* order = nullptr;
  __nv_bfloat16 *y = nullptr, *out = nullptr;
  void* flush = nullptr;
  PairBuffers() {
    const std::vector<int> host_order = pairs_in_expert_order();
    CK(cudaMalloc(&order, P * sizeof(int)));
    CK(cudaMemcpy(order, host_order.data(), P * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&y, size_t(P) * H * 2));
    CK(cudaMalloc(&out, size_t(M) * H * 2));
    CK(cudaMalloc(&flush, kFlush));
  }
};
