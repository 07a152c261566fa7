// Microbenchmark (measurement only, not a variant): can the moe down's bf16 y (66 MB at E33 bs512) stay in L2 for the
// combine while the down reads its weights (121 MB at d_expert 512)? A kernel stores y rows (pairs in expert order)
// while reading a weight buffer, then the combine reads y by token; L2 policies: default, y stores evict_last,
// weight loads evict_first, both. Each timed pair runs after a 1 GiB memset (the harness's flush).
// Build: nvcc -O3 -arch=sm_90a -std=c++17 moe_y_l2.cu -o y_l2
#include "moe_pairs.cuh"
constexpr size_t kWBytes = size_t(121) << 20;

__device__ __forceinline__ uint64_t policy(bool last, float frac) {
  uint64_t p;
  if (last) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, %1;" : "=l"(p) : "f"(frac));
  else asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, %1;" : "=l"(p) : "f"(frac));
  return p;
}
// Block (x, y): pair order[y], 8 columns a thread; every thread also reads 16 bytes of the weight buffer per
// 16 bytes stored (121 MB against 66 MB: ~1.8 loads a store, rounded to 2).
template <int YPOL, int WPOL>
__global__ void down_like(const int* order, __nv_bfloat16* y, const uint4* wbuf, float frac, unsigned* sink) {
  const int p = order[blockIdx.y];
  const int h = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (h >= H) return;
  const size_t wi = (size_t(blockIdx.y) * gridDim.x * blockDim.x + blockIdx.x * blockDim.x + threadIdx.x) * 2 % (kWBytes / 16);
  uint4 a, b;
  if (WPOL) {
    const uint64_t pol = policy(false, 1.0f);
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(a.x), "=r"(a.y), "=r"(a.z), "=r"(a.w) : "l"(wbuf + wi), "l"(pol));
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w) : "l"(wbuf + wi + 1), "l"(pol));
  } else {
    a = wbuf[wi];
    b = wbuf[wi + 1];
  }
  __align__(16) __nv_bfloat16 v[8];
  for (int i = 0; i < 8; ++i) v[i] = __float2bfloat16(float((p * 131 + (h + i) * 7) % 97) * 0.01f - 0.48f);
  uint4 s = *reinterpret_cast<uint4*>(v);
  s.x ^= (a.x ^ b.y) & 0x00010000u;  // keep the loads alive (perturbs one low bit, no matter here)
  uint4* dst = reinterpret_cast<uint4*>(y + size_t(p) * H + h);
  if (YPOL) {
    const uint64_t pol = policy(true, frac);
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" ::"l"(dst), "r"(s.x), "r"(s.y), "r"(s.z), "r"(s.w), "l"(pol) : "memory");
  } else {
    *dst = s;
  }
  if (a.w == 0x12345678u && b.z == 0x9abcdef0u) atomicAdd(sink, 1u);
}

int main() {
  PairBuffers bufs;
  int* d_order = bufs.order;
  __nv_bfloat16 *y = bufs.y, *out = bufs.out;
  void* flush = bufs.flush;
  const size_t kFlush = PairBuffers::kFlush;
  uint4* wbuf;
  unsigned* sink;
  CK(cudaMalloc(&wbuf, kWBytes + 64));
  CK(cudaMemset(wbuf, 1, kWBytes + 64));
  CK(cudaMalloc(&sink, 4));
  cudaEvent_t e0, e1, e2;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventCreate(&e2));
  const dim3 gy((H / 8 + 127) / 128, P), gc((H / 8 + 127) / 128, M);
  auto run = [&](const char* name, auto kern, float frac) {
    std::vector<float> a, b;
    for (int r = 0; r < 12; ++r) {
      CK(cudaMemsetAsync(flush, r, kFlush));
      CK(cudaEventRecord(e0));
      kern<<<gy, 128>>>(d_order, y, wbuf, frac, sink);
      CK(cudaEventRecord(e1));
      combine<<<gc, 128>>>(y, out);
      CK(cudaEventRecord(e2));
      CK(cudaEventSynchronize(e2));
      CK(cudaGetLastError());
      float x, z;
      CK(cudaEventElapsedTime(&x, e0, e1));
      CK(cudaEventElapsedTime(&z, e1, e2));
      if (r >= 2) { a.push_back(x * 1000.f); b.push_back(z * 1000.f); }
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::printf("%-40s down-like %7.1f us  combine %6.1f us  sum %7.1f\n", name, a[a.size() / 2], b[b.size() / 2],
                a[a.size() / 2] + b[b.size() / 2]);
  };
  run("default", down_like<0, 0>, 1.0f);
  run("y evict_last 1.0", down_like<1, 0>, 1.0f);
  run("y evict_last 0.5", down_like<1, 0>, 0.5f);
  run("weights evict_first", down_like<0, 1>, 1.0f);
  run("y evict_last 1.0 + weights evict_first", down_like<1, 1>, 1.0f);
  run("y evict_last 0.5 + weights evict_first", down_like<1, 1>, 0.5f);
  run("default (again)", down_like<0, 0>, 1.0f);
  return 0;
}
