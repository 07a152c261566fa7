// Microbenchmark (measurement only, not a variant): can a kernel bring its own code into L2 with data prefetches,
// and what does a cold instruction fetch cost after an L2 flush? The harness's cold-cache mode evicts L2 before
// every timed call, so a kernel's code comes from DRAM: ncu puts 15-20% of the small mla kernels' stall samples on
// instruction fetch (docs/perf.md, session 24 call 3), most at the first instruction after a jump over code
// warps 1-7 never ran.
//   1. Addresses: a __global__ function's and a __noinline__ __device__ function's address taken in device code,
//      and the first words loaded from them (compare with cuobjdump -sass of this binary).
//   2. Timing: `body` is a long straight-line kernel run once a block after a 256 MB write (the harness's flush);
//      `pf` first issues prefetch.global.L2 over [its own address, + span) from one warp.
// Build and run: nvcc -O3 -arch=sm_90a -std=c++17 code_prefetch.cu -o code_prefetch && ./code_prefetch
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1); } } while (0)

__device__ __noinline__ float anchor_fn(float x) { return x * 3.f + 1.f; }

// A long chain of dependent but varied arithmetic, fully unrolled: roughly 16 bytes an instruction.
// A function's address as a plain integer in a register: ptxas refuses a function symbol as a load's operand.
__device__ __forceinline__ const char* code_addr(const void* fn) {
  unsigned long long v;
  asm volatile("mov.b64 %0, %1;" : "=l"(v) : "l"(reinterpret_cast<unsigned long long>(fn)));
  return reinterpret_cast<const char*>(v);
}

template <int N>
__device__ __forceinline__ float chain(float x, float y) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    x = fmaf(x, y, float(i & 7) * 0.001f);
    y = y * 0.9999f + float(i % 5) * 1e-4f;
    if ((i & 63) == 63) x = __sinf(x);
  }
  return x + y;
}

constexpr int kChain = 3000;  // ~6k instructions, ~96 KB of code

template <bool PF>
__global__ void __launch_bounds__(256) body(float* out, const float* in, int span) {
  if constexpr (PF) {
    if (threadIdx.x >= 224) {  // the last warp: prefetch the kernel's own code into L2
      const char* base = code_addr(reinterpret_cast<const void*>(&body<PF>));
      for (int off = (threadIdx.x - 224) * 128; off < span; off += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(base + off));
    }
  }
  const float x = in[blockIdx.x * 256 + threadIdx.x];
  out[blockIdx.x * 256 + threadIdx.x] = chain<kChain>(x, 1.0001f);
}

__global__ void probe(unsigned long long* out, bool load) {
  const auto* k = reinterpret_cast<const unsigned long long*>(code_addr(reinterpret_cast<const void*>(&body<false>)));
  const auto* f = reinterpret_cast<const unsigned long long*>(code_addr(reinterpret_cast<const void*>(&anchor_fn)));
  out[0] = reinterpret_cast<unsigned long long>(k);
  out[1] = reinterpret_cast<unsigned long long>(f);
  for (int i = 0; load && i < 4; ++i) {
    out[2 + i] = k[i];
    out[6 + i] = f[i];
  }
}

int main(int argc, char** argv) {
  const bool load = argc > 1 && argv[1][0] == 'l';  // "load": read the code words (faults on the H200)
  unsigned long long* d;
  CK(cudaMalloc(&d, 16 * sizeof(unsigned long long)));
  CK(cudaMemset(d, 0, 16 * sizeof(unsigned long long)));
  probe<<<1, 1>>>(d, load);
  CK(cudaGetLastError());
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("probe: %s (code not readable as data)\n", cudaGetErrorString(e));
    return 1;
  }
  unsigned long long h[16];
  CK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
  std::printf("body<false> at %#llx: %016llx %016llx %016llx %016llx\n", h[0], h[2], h[3], h[4], h[5]);
  std::printf("anchor_fn   at %#llx: %016llx %016llx %016llx %016llx\n", h[1], h[6], h[7], h[8], h[9]);

  const size_t flush_bytes = size_t(256) << 20;
  char* flush;
  float *in, *out;
  const int blocks = 132;
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMalloc(&in, blocks * 256 * sizeof(float)));
  CK(cudaMalloc(&out, blocks * 256 * sizeof(float)));
  CK(cudaMemset(in, 0, blocks * 256 * sizeof(float)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto timed = [&](auto kern, int span, bool flush_first) {
    float best = 1e9f, sum = 0.f;
    const int reps = 50;
    for (int r = 0; r < reps; ++r) {
      if (flush_first) CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes));
      CK(cudaEventRecord(e0));
      kern<<<blocks, 256>>>(out, in, span);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaGetLastError());
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      best = ms < best ? ms : best;
      sum += ms;
    }
    return std::make_pair(best * 1e3f, sum / reps * 1e3f);
  };
  cudaFuncAttributes fa{};
  CK(cudaFuncGetAttributes(&fa, body<false>));
  std::printf("body: %d registers\n", fa.numRegs);
  for (bool fl : {false, true}) {
    const auto a = timed(body<false>, 0, fl);
    std::printf("%s no prefetch           : min %7.2f us  mean %7.2f us\n", fl ? "flushed" : "hot    ", a.first, a.second);
    for (int span : {32 << 10, 64 << 10, 128 << 10}) {
      const auto b = timed(body<true>, span, fl);
      std::printf("%s prefetch %4d KB of code: min %7.2f us  mean %7.2f us\n", fl ? "flushed" : "hot    ", span >> 10,
                  b.first, b.second);
    }
  }
  return 0;
}
