// 8-row MoE tiles (bs x k / routed experts <= 8) as v12/v13 run them (moe_wg8.h: f16 mma.sync gate_up,
// wgmma e4m3 down; same operands, same k order, so the output is v13's bit for bit), launched as a
// chain that overlaps the kernels' edges (launch8; options measured in docs/perf.md, section "moe_mxfp4 v15"):
//  - one prologue kernel: block 0 sorts the pairs (v12's 1024-thread route), blocks 1.. quantize the
//    hidden states (v12's branch-free quantizer, 1024 threads a block): one launch instead of two;
//  - DEP: gate_up / down / combine may be launched with programmatic dependent launch (launch
//    attribute 6): the blocks become resident while the previous kernel drains and wait for it with
//    griddepcontrol.wait; every kernel releases its dependent right after its own wait. v15 uses
//    gate_up (moe_wg8::gate_up_f16 with DEP) + combine; a dependent down measured slower;
//  - down_persist: a persistent down kernel (grid = resident blocks) walking work items
//    (tile, 256-row slice) round-robin with one continuous copy pipeline across items: the next item's
//    stages are in flight while the current item computes and writes y; it reads only the route's
//    output and the weights before its wait, so a dependent launch has its first weight stages in
//    flight while gate_up finishes.
// Measured and dropped (docs/perf.md, "moe_mxfp4 v15"; code in commit a8786a4): activation scales folded
// into the f16 activations, the combine fused into down_persist, gate_up's release after its mainloop.
// NVIDIA only (MOE_WG8_HOST); sm_90a for the wgmma down as in moe_wg8.h.
#pragma once
#include <cstring>
#include <utility>

#include "problems/common/moe_wg8.h"

namespace moe_rows8 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

#if defined(MOE_WG8_HOST)
using moe_wg8::kLanes;
using moe_wg8::kThreads;

using moe_wg8::dep_release;
using moe_wg8::dep_wait;

constexpr int kPrologueThreads = 1024;
// Block 0: moe_tiled::route_scan (tile_rows 8, 1024 threads); blocks 1..: moe_wg8::quantize_hidden8<
// F16Decode, 14> over 1024 threads a block.
__global__ __launch_bounds__(kPrologueThreads) void quantize_route(MoeArgs a, Workspace ws, int P, int E, int rows_max,
                                                                   int64_t n8) {
  dep_release();  // gate_up's blocks may be scheduled now; they wait for this grid's completion
  extern __shared__ int smem_route[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    constexpr int tile_rows = 8;
    moe_tiled::route_block(a, ws, P, E, tile_rows, rows_max, tid, smem_route, [](int) {}, [](int, int) {});
    return;
  }
  using D = moe_tile::F16Decode;
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  uint32_t out[4] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = D::position(k);
    const uint32_t h = D::encode(moe_wg8::e2m1_code(v[k], mul), s);  // f16 bits of the e2m1 value
    out[pos / 2] |= h << (16 * (pos % 2));
  }
  reinterpret_cast<uint4*>(ws.x8)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) reinterpret_cast<int32_t*>(ws.xs)[i / 4] = int32_t(uint32_t(s + 14) << 23);
}

// The wgmma down mainloop over a sequence of work items (moe_wg8::mainloop's stage, copies and
// compute; the items' stages form one pipeline). Item j of this block: info[j] = (weight base offset
// of the slice, scale base offset, first sorted row); each item is KB / KS stages. Weights of the
// first STAGES - 1 stages are issued before dep_wait(), everything the previous kernel writes after.
// epi(j, acc) is called after item j's last stage.
template <class C, class Pre, class Epi>
__device__ inline void mainloop_items(const uint8_t* wglob, const uint8_t* sglob, const uint8_t* a8, const uint8_t* as,
                                      const int4* info, int n_items, int k_bytes, int KB, uint8_t* smem, Pre&& pre,
                                      Epi&& epi) {
#if defined(MOE_WG8_DEVICE)
  using namespace moe_wg8;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes;
  const int t = lane % 4;
  const int nk = KB / C::KS;
  const int n_stages = n_items * nk;
  const uint32_t rg_bytes = uint32_t(k_bytes / 32) * 512u;
  float acc[C::MT][4];
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;

  constexpr int kWChunks = C::BM * C::KS;
  constexpr int kWPer = kWChunks / kThreads;
  uint32_t woff[kWPer];  // relative to the slice's first 16-row group
#pragma unroll
  for (int j = 0; j < kWPer; ++j) {
    const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[j] = uint32_t(r) * rg_bytes + ch * 16;
  }
  constexpr int kSPer = (C::BM + kThreads - 1) / kThreads;
  uint32_t soff[kSPer];  // relative to the slice's first row
#pragma unroll
  for (int j = 0; j < kSPer; ++j) soff[j] = uint32_t((tid + kThreads * j) % C::BM) * uint32_t(KB);
  constexpr int kXChunks = C::BN * C::KS * 2;
  const int xc = tid / (C::KS * 2), xch = tid % (C::KS * 2);
  const uint32_t xoff = uint32_t(xc) * uint32_t(KB * 32) + xch * 16;  // + row0 * I
  const int xdst = C::kX + xch * 128 + xc * 16;
  constexpr int kXsChunks = C::BN * C::KS / 4;
  const int sc_c = tid / (C::KS / 4), sc_ch = tid % (C::KS / 4);
  const uint32_t xsoff = uint32_t(sc_c) * uint32_t(KB * 4) + sc_ch * 16;
  const int xsdst = C::kXs + sc_c * C::KS * 4 + sc_ch * 16;
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  auto load_w = [&](int g) {
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int4 it = info[g / nk];
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = wglob + (int64_t(uint32_t(it.x)) << 4) + kb0 * 256;
#pragma unroll
    for (int j = 0; j < kWPer; ++j) {
      const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
      moe_tile::cp_async<16>(st + C::kW + r * C::KS * 256 + ch * 16, wb + woff[j]);
    }
    const uint8_t* sb = sglob + (int64_t(uint32_t(it.y)) << 4) + kb0;
#pragma unroll
    for (int j = 0; j < kSPer; ++j)
      if (tid + kThreads * j < C::BM) moe_tile::cp_async<C::KS>(st + C::kWs + (tid + kThreads * j) * C::KS, sb + soff[j]);
  };
  auto load_x = [&](int g) {
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int row0 = info[g / nk].z;
    uint8_t* st = smem + slot * C::kStageBytes;
    if (tid < kXChunks) moe_tile::cp_async<16>(st + xdst, a8 + int64_t(row0) * (KB * 32) + xoff + kb0 * 32);
    if (tid < kXsChunks) moe_tile::cp_async<16>(st + xsdst, as + int64_t(row0) * (KB * 4) + xsoff + kb0 * 4);
  };

  const int a_off = C::kW + warp * C::KS * 256 + 4 * lane;
  const int ws_off = C::kWs + (warp * 16 + lane / 4) * C::KS;
  const int xs_off = C::kXs + 2 * t * C::KS * 4;

  auto compute = [&](int slot) { down_stage<C>(smem, smem_s, slot, a_off, ws_off, xs_off, acc); };

#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s)
    if (s < n_stages) load_w(s);
  pre();  // while the first weight copies are in flight
  moe_rows8::dep_wait();  // the activations are the previous kernel's output
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < n_stages) load_x(s);
    moe_tile::cp_commit();
  }
  for (int gs = 0; gs < n_stages; ++gs) {
    moe_tile::cp_wait<C::STAGES - 2>();
    proxy_fence();
    __syncthreads();
    const int next = gs + C::STAGES - 1;
    if (next < n_stages) {
      load_w(next);
      load_x(next);
    }
    moe_tile::cp_commit();
    compute(gs % C::STAGES);
    if (gs % nk == nk - 1) {
      epi(gs / nk, acc);
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;
    }
  }
  moe_tile::cp_wait<0>();
#else
  (void)wglob, (void)sglob, (void)a8, (void)as, (void)info, (void)n_items, (void)k_bytes, (void)KB, (void)smem, (void)pre, (void)epi;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to
#endif
#endif
}

// Stage 2 over work items (tile, BM-row slice of H): item = blockIdx.x + j * gridDim.x (all of a
// tile's slices are consecutive items, so the resident blocks read one expert's rows together).
// kMaxItems bounds the items of one block (the host sizes the grid so).
constexpr int kMaxItems = 64;
template <class C>
__global__ __launch_bounds__(kThreads, C::kMinBlocks) void down_persist(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem_rows8[];
  __shared__ int4 info[kMaxItems];       // (weight offset / 16, scale offset / 16, row0, H column n0)
  __shared__ int pair_s[kMaxItems][8];
  __shared__ float weight_s[kMaxItems][8];
  dep_release();  // combine's blocks may be scheduled; they wait for this grid's completion
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int NS = H / C::BM;
  // The route's output is complete: this grid starts only after every gate_up block passed its wait.
  const int n_all = __ldcg(ws.n_tiles) * NS;
  const int G = gridDim.x;
  const int n_items = n_all > int(blockIdx.x) ? (n_all - int(blockIdx.x) + G - 1) / G : 0;
  if (n_items == 0) return;
  for (int j = threadIdx.x; j < n_items; j += kThreads) {
    const int item = int(blockIdx.x) + j * G, ti = item / NS, n0 = (item % NS) * C::BM;
    const int2 tv = __ldcg(reinterpret_cast<const int2*>(ws.tiles) + ti);  // (expert, row0)
    const int64_t wo = int64_t(tv.x) * H * (I / 2) + int64_t(n0) * (I / 2);  // 16-row groups: 16 * I / 2 bytes
    const int64_t so = int64_t(tv.x) * H * KB + int64_t(n0) * KB;
    info[j] = make_int4(int(wo >> 4), int(so >> 4), tv.y, n0);
  }
  __syncthreads();
  // The pair list of every item: read while the first weight stages are in flight; the main loop's
  // stage barrier orders it before the first epilogue.
  auto pre = [&] {
    for (int idx = threadIdx.x; idx < n_items * 8; idx += kThreads) {
      const int j = idx / 8, c = idx % 8;
      const int p = __ldcg(ws.sorted_pair + info[j].z + c);
      pair_s[j][c] = p;
      weight_s[j][c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    }
  };
  const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
  const int r0 = warp * 16 + lane / 4, c0 = 2 * (lane % 4);
  auto epi = [&](int j, float (&acc)[C::MT][4]) {
    const int n0 = info[j].w;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = c0 + h, p = pair_s[j][c];
      if (p < 0) continue;
      const float wt = weight_s[j][c];
      moe_pipeline::YElem* dst = ws.y + int64_t(p) * H + n0;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        dst[64 * m + r0] = wt * acc[m][h];
        dst[64 * m + r0 + 8] = wt * acc[m][h + 2];
      }
    }
  };
  mainloop_items<C>(a.down_weight_shuffled, a.down_weight_scale, ws.a8, ws.as, info, n_items, I / 2, KB,
                    smem_rows8, pre, epi);
}

// moe_pipeline::combine after the dependent-launch wait.
__global__ void combine(const moe_pipeline::YElem* y, int64_t M, int H, int total_top_k, uint16_t* out) {
  dep_wait();
  moe_pipeline::combine_rows(y, M, H, total_top_k, out);
}

// Host: cudaLaunchKernelEx with attribute 6 (programmatic dependent launch; the enumerator's name
// holds a word these files avoid) when dep is set.
template <class... P, class... Args>
void launch_ex(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, bool dep, const char* what, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  std::memset(attr, 0, sizeof(attr));
  attr[0].id = static_cast<cudaLaunchAttributeID>(6);
  const int one = 1;
  std::memcpy(&attr[0].val, &one, sizeof(one));
  cfg.attrs = attr;
  cfg.numAttrs = dep ? 1 : 0;
  moe_pipeline::check(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...), what);
}

// Resident blocks of down_persist<G2> (occupancy calculator, once per instance).
template <class G2>
int persist_slots(int sm2) {
  static const int n = [sm2] {
    int dev = 0, sms = 0, per = 0;
    moe_pipeline::check(hipGetDevice(&dev), "device");
    moe_pipeline::check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev), "SM count");
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, down_persist<G2>, kThreads, sm2) != cudaSuccess || per < 1) {
      (void)cudaGetLastError();
      per = 1;
    }
    return sms * per;
  }();
  return n;
}

// The workspace: moe_wg8::carve with f16 activations.
inline size_t workspace8(const MoeConfig& c) { return moe_wg8::carve(c, nullptr, nullptr, 2); }

// The 8-row chain: prologue (route + quantize), gate_up_f16 (FC, MINB), persistent down (G2), combine.
// DEP: which launches are dependent (1 gate_up, 2 down, 4 combine). PERSIST: 0 = moe_wg8::down (v13's
// grid), 1 = down_persist, -1 = down_persist when the grid's work items (tiles_max x H / 256) are >= 8
// per resident block, else moe_wg8::down.
template <class FC, int MINB, class G2, int DEP, int PERSIST = 1>
void launch8(const MoeArgs& a) {
  if (a.workspace_size < workspace8(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (s.I % 32 || s.H % G2::BM || (s.H / 32) % FC::KS_ || (s.I / 32) % G2::KS || s.E > kPrologueThreads)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  launch_ex(quantize_route, dim3(1 + qblocks), dim3(kPrologueThreads), size_t(2 * s.E + kPrologueThreads) * sizeof(int),
            false, "quantize + route", a, ws, int(s.P), int(s.E), int(s.rows_max), n8);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  constexpr bool kDepGateUp = (DEP & 1) != 0;
  moe_wg8::allow_smem(moe_wg8::gate_up_f16<FC, MINB, kDepGateUp>, sm1);
  launch_ex(moe_wg8::gate_up_f16<FC, MINB, kDepGateUp>, dim3(unsigned(s.tiles_max), unsigned(s.I / 32)), dim3(kThreads),
            sm1, kDepGateUp, "f16 gate_up", a, ws);
  const int64_t items_max = s.tiles_max * (s.H / G2::BM);
  bool persist = PERSIST != 0;
  if constexpr (PERSIST != 0) moe_wg8::allow_smem(down_persist<G2>, sm2);
  if constexpr (PERSIST < 0) persist = items_max >= 8 * int64_t(persist_slots<G2>(sm2));
  if (persist) {
    if constexpr (PERSIST != 0) {
      int64_t grid = persist_slots<G2>(sm2);
      grid = std::max<int64_t>(grid, (items_max + kMaxItems - 1) / kMaxItems);
      grid = std::min<int64_t>(grid, items_max);
      launch_ex(down_persist<G2>, dim3(unsigned(grid)), dim3(kThreads), sm2, (DEP & 2) != 0, "wgmma down", a, ws);
    }
  } else {  // moe_wg8::down (no dependent-launch wait: launched plainly)
    static_assert((DEP & 2) == 0 || PERSIST > 0, "moe_wg8::down has no dependent-launch wait");
    moe_wg8::allow_smem(moe_wg8::down<G2>, sm2);
    launch_ex(moe_wg8::down<G2>, dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), dim3(kThreads), sm2, false,
              "wgmma down", a, ws);
  }
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  launch_ex(combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)), dim3(kCombineThreads), 0, (DEP & 4) != 0,
            "combine", static_cast<const moe_pipeline::YElem*>(ws.y), int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k),
            a.out);
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_rows8
