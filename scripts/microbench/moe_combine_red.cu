// Microbenchmark (measurement only, not a variant): the moe combine's traffic at E33 bs512 (shape 5 / 6 sizes),
// written as bf16 y rows + a combine kernel (what v50 does) against fp32 reductions into a [M, H] accumulator
// (red.global.add.f32 / .v4.f32) + a conversion kernel. Every timed kernel runs after a 1 GiB memset (the harness's
// flush: L2 full of dirty lines). Build: nvcc -O3 -arch=sm_90a -std=c++17 moe_combine_red.cu -o red
#include "moe_pairs.cuh"

__device__ __forceinline__ float val(int p, int h) { return float((p * 131 + h * 7) % 97) * 0.01f - 0.48f; }

// y[row(p)][h] = bf16(value), rows in the (token, slot) order, pairs visited in expert order (order[]).
__global__ void store_y(const int* order, __nv_bfloat16* y) {
  const int p = order[blockIdx.y];
  const int h = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (h >= H) return;
  __align__(16) __nv_bfloat16 v[8];
  for (int i = 0; i < 8; ++i) v[i] = __float2bfloat16(val(p, h + i));
  *reinterpret_cast<uint4*>(y + size_t(p) * H + h) = *reinterpret_cast<uint4*>(v);
}
template <int V>
__global__ void red_acc(const int* order, float* acc) {
  const int p = order[blockIdx.y], t = p / T;
  const int h = (blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (h >= H) return;
  float* d = acc + size_t(t) * H + h;
  if constexpr (V == 4) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(d), "f"(val(p, h)), "f"(val(p, h + 1)),
                 "f"(val(p, h + 2)), "f"(val(p, h + 3)) : "memory");
  } else if constexpr (V == 2) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(d), "f"(val(p, h)), "f"(val(p, h + 1)) : "memory");
  } else {
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(d), "f"(val(p, h)) : "memory");
  }
}
template <int V>
__global__ void red_acc_multi(const int* order, float* acc) {  // 4 red ops a thread (ILP), V = 4
  const int p = order[blockIdx.y], t = p / T;
  const int h0 = (blockIdx.x * blockDim.x * 4 + threadIdx.x) * V;
  for (int i = 0; i < 4; ++i) {
    const int h = h0 + i * blockDim.x * V;
    if (h >= H) return;
    float* d = acc + size_t(t) * H + h;
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(d), "f"(val(p, h)), "f"(val(p, h + 1)),
                 "f"(val(p, h + 2)), "f"(val(p, h + 3)) : "memory");
  }
}
__global__ void convert(const float* acc, __nv_bfloat16* out) {
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  if (i >= size_t(M) * H) return;
  const float4 a = __ldcs(reinterpret_cast<const float4*>(acc + i)), b = __ldcs(reinterpret_cast<const float4*>(acc + i + 4));
  __align__(16) __nv_bfloat16 o[8] = {__float2bfloat16(a.x), __float2bfloat16(a.y), __float2bfloat16(a.z), __float2bfloat16(a.w),
                                      __float2bfloat16(b.x), __float2bfloat16(b.y), __float2bfloat16(b.z), __float2bfloat16(b.w)};
  *reinterpret_cast<uint4*>(out + i) = *reinterpret_cast<uint4*>(o);
}

int main() {
  PairBuffers bufs;
  int* d_order = bufs.order;
  __nv_bfloat16 *y = bufs.y, *out = bufs.out;
  void* flush = bufs.flush;
  const size_t kFlush = PairBuffers::kFlush;
  float* acc;
  CK(cudaMalloc(&acc, size_t(M) * H * 4));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto timed = [&](const char* name, auto&& body) {
    std::vector<float> ms;
    for (int r = 0; r < 12; ++r) {
      CK(cudaMemsetAsync(flush, r, kFlush));
      CK(cudaEventRecord(e0));
      body();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaGetLastError());
      float x;
      CK(cudaEventElapsedTime(&x, e0, e1));
      if (r >= 2) ms.push_back(x * 1000.f);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-44s median %8.1f us  min %8.1f\n", name, ms[ms.size() / 2], ms[0]);
  };
  const dim3 gy((H / 8 + 127) / 128, P), gc((H / 8 + 127) / 128, M);
  timed("empty (events around nothing)", [&] {});
  timed("store_y bf16 (66 MB)", [&] { store_y<<<gy, 128>>>(d_order, y); });
  timed("combine (read y, write out)", [&] { combine<<<gc, 128>>>(y, out); });
  timed("store_y + combine", [&] { store_y<<<gy, 128>>>(d_order, y); combine<<<gc, 128>>>(y, out); });
  timed("memset acc (14.7 MB)", [&] { CK(cudaMemsetAsync(acc, 0, size_t(M) * H * 4)); });
  timed("red f32 scalar", [&] { red_acc<1><<<dim3((H + 255) / 256, P), 256>>>(d_order, acc); });
  timed("red v2.f32", [&] { red_acc<2><<<dim3((H / 2 + 255) / 256, P), 256>>>(d_order, acc); });
  timed("red v4.f32", [&] { red_acc<4><<<dim3((H / 4 + 255) / 256, P), 256>>>(d_order, acc); });
  timed("red v4.f32, 4 a thread", [&] { red_acc_multi<4><<<dim3((H / 16 + 127) / 128, P), 128>>>(d_order, acc); });
  timed("convert (read acc, write out)", [&] { convert<<<(M * H / 8 + 255) / 256, 256>>>(acc, out); });
  timed("memset + red v4 + convert", [&] {
    CK(cudaMemsetAsync(acc, 0, size_t(M) * H * 4));
    red_acc<4><<<dim3((H / 4 + 255) / 256, P), 256>>>(d_order, acc);
    convert<<<(M * H / 8 + 255) / 256, 256>>>(acc, out);
  });
  // sanity: acc after one zero + red pass equals the sum of the values
  CK(cudaMemset(acc, 0, size_t(M) * H * 4));
  red_acc<4><<<dim3((H / 4 + 255) / 256, P), 256>>>(d_order, acc);
  CK(cudaDeviceSynchronize());
  std::vector<float> h_acc(size_t(M) * H);
  CK(cudaMemcpy(h_acc.data(), acc, h_acc.size() * 4, cudaMemcpyDeviceToHost));
  double maxerr = 0;
  for (int t = 0; t < M; t += 37)
    for (int h = 0; h < H; h += 13) {
      double s = 0;
      for (int j = 0; j < T; ++j) { const int p = t * T + j; s += float((p * 131 + h * 7) % 97) * 0.01f - 0.48f; }
      maxerr = std::max(maxerr, std::abs(s - h_acc[size_t(t) * H + h]));
    }
  std::printf("check: max |acc - sum| = %.3g\n", maxerr);
  return maxerr < 1e-4 ? 0 : 1;
}
