// The sorted-by-expert pipeline shared by the grouped-GEMM variants (v2, v3):
//   quantize hidden (dynamic MXFP4, kept as e4m3 bytes of the e2m1 values + e8m0 scales)
//   -> route: token-expert pairs sorted by expert into padded tiles of `tile_rows` rows (on the GPU)
//   -> [variant] stage 1: gate_up GEMM + SwiGLU + requantization of a (same e4m3 + e8m0 form)
//   -> [variant] stage 2: down GEMM times the routing weight into y [P, H] fp32 (bf16 with MOE_Y_BF16; row = pair)
//   -> combine: out = bf16(sum of the token's pairs in slot order), deterministic.
#pragma once
#include <stdexcept>
#include <string>

#include "problems/common/mxfp4_decode.h"
#include "problems/moe_mxfp4/moe_api.h"

namespace moe_pipeline {
// Unnamed: each variant file gets its own copy of these kernels (no cross-file symbol clashes).
namespace {

inline void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw std::runtime_error(std::string("moe_mxfp4: ") + what + ": " + hipGetErrorString(e));
}

inline size_t align256(size_t b) { return (b + 255) & ~size_t{255}; }

struct Tile {
  int expert;
  int row0;  // first sorted row
};

// y's element type. fp32 by default; a variant file that defines MOE_Y_BF16 before its includes stores the
// weighted value rounded once to bf16 (RNE) and combines in fp32 in slot order as before (docs/perf.md, section
// "moe_mxfp4 v34").
// YBf16 holds the bf16 bits; the stores keep their fp32 form (y[i] = w * v: the assignment rounds), and it has no
// conversion to float, so a read of y that a combine did not convert fails to compile. Combines load kYVec
// consecutive outputs (16 bytes of bf16) a slot.
struct YBf16 {
  uint16_t bits;
  __device__ __forceinline__ YBf16& operator=(float v) {
#if defined(MOE_Y_BF16_CVT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // (v34c) one cvt instead of the integer rounding: the same bits for every non-NaN value
    uint16_t b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(v));
    bits = b;
#else
    bits = numerics::f32_to_bf16(v);
#endif
    return *this;
  }
};
#if defined(MOE_Y_BF16)
using YElem = YBf16;
constexpr int kYVec = 8;  // outputs a combine thread sums (one 16-byte load a slot)
#else
using YElem = float;
constexpr int kYVec = 1;
#endif

// Scratch of the pipeline, carved from args.workspace.
struct Workspace {
  uint8_t* x8;          // [M, H] e4m3 bytes of the e2m1 codes of the quantized hidden states
  uint8_t* xs;          // [M, H/32] e8m0
  int32_t* sorted_pair; // [rows_max] pair index (token * total_top_k + slot) or -1 for padding
  Tile* tiles;          // [tiles_max]
  int32_t* n_tiles;     // [1]
  uint8_t* a8;          // [rows_max, I] requantized SwiGLU output, e4m3 bytes of e2m1 codes
  uint8_t* as;          // [rows_max, I/32] e8m0
  YElem* y;             // [P, H] weighted expert outputs (fp32, or bf16 with MOE_Y_BF16)
};

struct Sizes {
  int64_t M, P, E, H, I, rows_max, tiles_max;
};

inline Sizes sizes_of(const MoeConfig& c, int tile_rows) {
  Sizes s;
  s.M = c.bs;
  s.P = int64_t(c.bs) * c.total_top_k;
  s.E = int64_t(c.n_routed_experts) + c.n_shared_experts;
  s.H = c.d_hidden;
  s.I = c.d_expert;
  s.rows_max = s.P + s.E * (tile_rows - 1);
  s.tiles_max = (s.P + tile_rows - 1) / tile_rows + s.E;
  return s;
}

// Carves the workspace; with base == nullptr it only measures (returns the byte count).
// act_bytes: bytes per activation value in x8 and a8 (1: e4m3; 2: f16, for kernels that want it).
inline size_t carve(const MoeConfig& c, int tile_rows, void* base, Workspace* w, int act_bytes = 1) {
  const Sizes s = sizes_of(c, tile_rows);
  size_t off = 0;
  auto take = [&](size_t bytes) {
    void* p = base ? static_cast<char*>(base) + off : nullptr;
    off += align256(bytes);
    return p;
  };
  Workspace t;
  t.x8 = static_cast<uint8_t*>(take(s.M * s.H * act_bytes));
  t.xs = static_cast<uint8_t*>(take(s.M * s.H / 32));
  t.sorted_pair = static_cast<int32_t*>(take(s.rows_max * sizeof(int32_t)));
  t.tiles = static_cast<Tile*>(take(s.tiles_max * sizeof(Tile)));
  t.n_tiles = static_cast<int32_t*>(take(sizeof(int32_t)));
  t.a8 = static_cast<uint8_t*>(take(s.rows_max * s.I * act_bytes));
  t.as = static_cast<uint8_t*>(take(s.rows_max * s.I / 32));
  t.y = static_cast<YElem*>(take(s.P * s.H * sizeof(YElem)));
  if (w) *w = t;
  return off;
}

// One thread per element; the 32 lanes of a block reduce the amax with xor shuffles inside their
// aligned group of 32 (valid for any warp size that is a multiple of 32).
__global__ void quantize_hidden(const uint16_t* hidden, int64_t n, uint8_t* x8, uint8_t* xs) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // n is a multiple of blockDim.x
  const float v = numerics::bf16_to_f32(hidden[i < n ? i : 0]);
  float amax = mxfp4::abs_for_amax(v);
  for (int o = mxfp4::kBlock / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor(amax, o));
  const int s = numerics::mxfp4_dynamic_scale_exp(amax);
  if (i >= n) return;
  x8[i] = static_cast<uint8_t>(mxfp4::e2m1_to_e4m3(mxfp4::quantize_dynamic_code(v, s)));
  if (i % mxfp4::kBlock == 0) xs[i / mxfp4::kBlock] = static_cast<uint8_t>(s + 127);
}

// One block: counts per expert, padded offsets, the tile list and the sorted pair list. The order of
// pairs inside an expert depends on atomics, which changes no value: every GEMM row is computed
// independently of the other rows of its tile.
__global__ void route(const int32_t* topk_ids, int P, int E, int tile_rows, int rows_max, int32_t* sorted_pair,
                      Tile* tiles, int32_t* n_tiles) {
  extern __shared__ int smem_route[];
  int* count = smem_route;      // [E]
  int* offset = smem_route + E; // [E]
  for (int e = threadIdx.x; e < E; e += blockDim.x) count[e] = 0;
  for (int r = threadIdx.x; r < rows_max; r += blockDim.x) sorted_pair[r] = -1;
  __syncthreads();
  for (int p = threadIdx.x; p < P; p += blockDim.x) {
    const int e = topk_ids[p];
    if (e >= 0 && e < E) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int rows = 0, t = 0;
    for (int e = 0; e < E; ++e) {
      offset[e] = rows;
      for (int r = 0; r < count[e]; r += tile_rows) tiles[t++] = Tile{e, rows + r};
      rows += (count[e] + tile_rows - 1) / tile_rows * tile_rows;
    }
    *n_tiles = t;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (int p = threadIdx.x; p < P; p += blockDim.x) {
    const int e = topk_ids[p];
    if (e >= 0 && e < E) sorted_pair[offset[e] + atomicAdd(&count[e], 1)] = p;
  }
}

// out[token, n] = sum over the token's slots of y[token, slot, n], in slot order; one thread an output.
__device__ __forceinline__ void combine_rows(const float* y, int64_t M, int H, int total_top_k, uint16_t* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M * H) return;
  const int64_t token = i / H, n = i % H;
  const float* yt = y + token * total_top_k * H + n;
  float sum = 0.0f;
  for (int j = 0; j < total_top_k; ++j) sum += yt[int64_t(j) * H];
  out[i] = numerics::f32_to_bf16(sum);
}

#if defined(MOE_Y_BF16)
// s[e] += the e-th bf16 of 16 bytes of y (8 consecutive outputs of one slot).
__device__ __forceinline__ void add_bf16x8(float (&s)[8], const uint4& u) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    s[2 * e] += numerics::bits_f32(w[e] << 16);
    s[2 * e + 1] += numerics::bits_f32(w[e] & 0xFFFF0000u);
  }
}
// 8 sums as 8 bf16 outputs (16 bytes).
__device__ __forceinline__ uint4 bf16x8_of(const float (&s)[8]) {
  uint32_t o[4];
#pragma unroll
  for (int e = 0; e < 4; ++e)
    o[e] = uint32_t(numerics::f32_to_bf16(s[2 * e])) | (uint32_t(numerics::f32_to_bf16(s[2 * e + 1])) << 16);
  return make_uint4(o[0], o[1], o[2], o[3]);
}

// The same sums from bf16 y: one thread per 8 consecutive outputs (H % 8 == 0; grid over M * H / kYVec threads),
// every slot's 16 bytes loaded (first kMaxT slots) before the sums; each output's sum in slot order from 0.0f.
__device__ __forceinline__ void combine_rows(const YBf16* y, int64_t M, int H, int total_top_k, uint16_t* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M * H / 8) return;
  const int64_t token = 8 * i / H, n = 8 * i % H;
  const YBf16* yt = y + token * total_top_k * H + n;
  constexpr int kMaxT = 12;
  uint4 v[kMaxT];
#pragma unroll
  for (int j = 0; j < kMaxT; ++j)
    if (j < total_top_k) v[j] = *reinterpret_cast<const uint4*>(yt + int64_t(j) * H);
  float s[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) s[e] = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxT; ++j)
    if (j < total_top_k) add_bf16x8(s, v[j]);
  for (int j = kMaxT; j < total_top_k; ++j) add_bf16x8(s, *reinterpret_cast<const uint4*>(yt + int64_t(j) * H));
  *reinterpret_cast<uint4*>(out + 8 * i) = bf16x8_of(s);
}
#endif

__global__ void combine(const YElem* y, int64_t M, int H, int total_top_k, uint16_t* out) {
  combine_rows(y, M, H, total_top_k, out);
}

// Steps before the expert GEMMs: quantize the hidden states and sort the pairs.
inline void launch_prologue(const MoeArgs& a, const Workspace& w, int tile_rows) {
  const Sizes s = sizes_of(a.cfg, tile_rows);
  constexpr int kThreads = 256;
  const int64_t n = s.M * s.H;
  quantize_hidden<<<unsigned((n + kThreads - 1) / kThreads), kThreads>>>(a.hidden_states, n, w.x8, w.xs);
  check(hipGetLastError(), "quantize hidden");
  route<<<1, 1024, size_t(2 * s.E) * sizeof(int)>>>(a.topk_ids, int(s.P), int(s.E), tile_rows, int(s.rows_max),
                                                   w.sorted_pair, w.tiles, w.n_tiles);
  check(hipGetLastError(), "route");
}

inline void launch_combine(const MoeArgs& a, const Workspace& w) {
  constexpr int kThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden / kYVec;
  combine<<<unsigned((n + kThreads - 1) / kThreads), kThreads>>>(w.y, a.cfg.bs, a.cfg.d_hidden, a.cfg.total_top_k,
                                                               a.out);
  check(hipGetLastError(), "combine");
}

inline void require_workspace(const MoeArgs& a, int tile_rows, int act_bytes = 1) {
  if (a.workspace_size < carve(a.cfg, tile_rows, nullptr, nullptr, act_bytes))
    throw std::invalid_argument("moe_mxfp4: workspace too small");
}

}  // namespace
}  // namespace moe_pipeline
