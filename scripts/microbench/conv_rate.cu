// Microbenchmark (measurement only, not a variant): issue rates of the instructions the mla dims tile spends on its K
// conversions, in warp instructions an SM and clock: cvt.rn.f16x2.e4m3x2 (F2FP), the bit-move form of the same
// conversion (magnitude bits to bits 7-13, sign to bit 15: the f16 of 2^-8 the value; 2 LOP + 2 PRMT + 1 shift-add
// per f16x2; session 21's v28 in commit 4cccf07), prmt, lop3, mul.rn.f16x2, and mma.sync m16n8k16 with f16 and with
// f32 accumulators. Each thread runs 8 independent chains, 32 warps an SM.
// Build and run: nvcc -O3 -arch=sm_90a -std=c++17 conv_rate.cu -o conv_rate && ./conv_rate
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1); } } while (0)

constexpr int kChains = 8, kIters = 4096;

enum Op { kF2fp, kBits, kPrmt, kLop3, kHmul2, kHmma, kHmma32 };
const char* const kNames[] = {"cvt.rn.f16x2.e4m3x2 (F2FP)", "e4m3 -> f16x2 by bit moves", "prmt", "lop3",
                              "mul.rn.f16x2", "mma.sync m16n8k16 f16", "mma.sync m16n8k16 f32 acc"};

template <int OP>
__device__ __forceinline__ uint32_t step(uint32_t x) {
  uint32_t r;
  if constexpr (OP == kF2fp) {
    asm volatile("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "=r"(r) : "r"(x));
  } else if constexpr (OP == kBits) {
    r = (__byte_perm(x & 0x7F7F7F7Fu, 0u, 0x4140) << 7) + __byte_perm(x & 0x80808080u, 0u, 0x1404);
  } else if constexpr (OP == kPrmt) {
    asm volatile("prmt.b32 %0, %1, %1, 0x1032;" : "=r"(r) : "r"(x));
  } else if constexpr (OP == kLop3) {
    asm volatile("lop3.b32 %0, %1, 0x5a5a5a5a, %1, 0x96;" : "=r"(r) : "r"(x));
  } else if constexpr (OP == kHmul2) {
    asm volatile("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(0x3c013c01u));
  }
  return r;
}

template <int OP>
__global__ void run(uint32_t* out, uint32_t seed) {
  uint32_t x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = seed * (threadIdx.x + 1) + c * 0x01010101u;
  if constexpr (OP == kHmma) {
    uint32_t d[kChains][2] = {};
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
      for (int c = 0; c < kChains; ++c)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};\n"
                     : "+r"(d[c][0]), "+r"(d[c][1])
                     : "r"(x[c]), "r"(x[c]), "r"(x[c]), "r"(x[c]), "r"(x[c]), "r"(x[c]));
    }
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = d[c][0] ^ d[c][1];
  } else if constexpr (OP == kHmma32) {
    float d[kChains][4] = {};
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
      for (int c = 0; c < kChains; ++c)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                     : "r"(x[c]), "r"(x[c]), "r"(x[c]), "r"(x[c]), "r"(x[c]), "r"(x[c]));
    }
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = __float_as_uint(d[c][0] + d[c][1] + d[c][2] + d[c][3]);
  } else {
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) x[c] = step<OP>(x[c]);
    }
  }
  uint32_t acc = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc ^= x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

template <int OP>
void measure(int sms, int clock_khz, uint32_t* out) {
  const int blocks = sms * 4, threads = 256;  // 32 warps an SM
  run<OP><<<blocks, threads>>>(out, 3u);       // warm-up
  CK(cudaGetLastError());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  run<OP><<<blocks, threads>>>(out, 5u);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  const double warp_instr = double(blocks) * threads / 32 * kIters * kChains;  // ops of the chain (bits: one f16x2)
  const double per_sm_ns = warp_instr / sms / (ms * 1e6);
  std::printf("%-30s %8.3f ms  %7.3f warp ops / SM / ns  %6.3f / SM / clock at %d MHz\n", kNames[OP], ms, per_sm_ns,
              per_sm_ns / (clock_khz * 1e-6), clock_khz / 1000);
}

int main() {
  int dev = 0, sms = 0, clock_khz = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  uint32_t* out = nullptr;
  CK(cudaMalloc(&out, size_t(sms) * 4 * 256 * sizeof(uint32_t)));
  measure<kF2fp>(sms, clock_khz, out);
  measure<kBits>(sms, clock_khz, out);
  measure<kPrmt>(sms, clock_khz, out);
  measure<kLop3>(sms, clock_khz, out);
  measure<kHmul2>(sms, clock_khz, out);
  measure<kHmma>(sms, clock_khz, out);
  measure<kHmma32>(sms, clock_khz, out);
  CK(cudaFree(out));
  return 0;
}
