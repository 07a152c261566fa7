// GPU generator for moe_mxfp4: the same per-element functions as the host generator (generate.h),
// so the device inputs are bit-identical to Problem::generate. The weight kernel quantizes one
// 32-block per thread and writes it to both layouts (raw and shuffled) directly: each block is 16
// contiguous bytes in either layout, so no separate shuffle pass is needed.
#include <stdexcept>
#include <string>

#include "harness/gpu/check.hpp"
#include "harness/gpu/device_generators.hpp"
#include "problems/moe_mxfp4/generate.h"
#include "problems/moe_mxfp4/task.hpp"

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (1 << 20) ? (blocks > 0 ? blocks : 1) : (1 << 20));
}

__device__ inline int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void hidden_kernel(uint64_t seed, int64_t n, uint16_t* out) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = moe_gen::hidden_bits(seed, static_cast<uint64_t>(i));
}

__global__ void router_kernel(uint64_t seed, int64_t n, float inv_sqrt_dh, uint16_t* out) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = moe_gen::router_bits(seed, static_cast<uint64_t>(i), inv_sqrt_dh);
}

// One thread per (token, routed expert).
__global__ void logits_kernel(const uint16_t* hidden, const uint16_t* router, int bs, int n_routed, int d_hidden,
                              double* logits) {
  const int64_t n = int64_t{bs} * n_routed;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t t = i / n_routed, e = i % n_routed;
    logits[i] = moe_gen::routing_logit(hidden + t * d_hidden, router + e * d_hidden, d_hidden);
  }
}

// One thread per token.
__global__ void route_kernel(const double* logits, int bs, int n_routed, int k, float* weights, int32_t* ids) {
  const int total = k + 1;
  for (int64_t t = first_index(); t < bs; t += grid_stride())
    moe_gen::route_token(logits + t * n_routed, n_routed, k, weights + t * total, ids + t * total);
}

__device__ inline uint4 pack16(const uint8_t* b) {
  uint32_t w[4];
  for (int j = 0; j < 4; ++j)
    w[j] = uint32_t{b[4 * j]} | (uint32_t{b[4 * j + 1]} << 8) | (uint32_t{b[4 * j + 2]} << 16) |
           (uint32_t{b[4 * j + 3]} << 24);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// One thread per 32-element block of a [E, N, K] weight tensor (blocks along K).
struct WeightOut {
  uint8_t* packed;
  uint8_t* scales;
  uint8_t* packed_shuffled;
  uint8_t* scales_shuffled;
};

__global__ void weight_kernel(uint64_t seed, uint32_t tensor_id, int64_t n_rows_per_expert, int64_t k,
                              int64_t total_rows, int64_t scale_padded_cols, float inv_sqrt_k, WeightOut out) {
  const int64_t blocks_per_row = k / 32, k_bytes = k / 2;
  const int64_t n_blocks = total_rows * blocks_per_row;
  for (int64_t b = first_index(); b < n_blocks; b += grid_stride()) {
    uint8_t packed[16], scale;
    moe_gen::weight_block(seed, tensor_id, static_cast<uint64_t>(b), inv_sqrt_k, packed, &scale);
    const uint4 v = pack16(packed);
    const int64_t row = b / blocks_per_row, col = b % blocks_per_row;
    const int64_t e = row / n_rows_per_expert, n = row % n_rows_per_expert;
    *reinterpret_cast<uint4*>(out.packed + b * 16) = v;
    *reinterpret_cast<uint4*>(out.packed_shuffled + e * n_rows_per_expert * k_bytes +
                              moe_gen::shuffled_weight_offset(n, col * 16, k_bytes)) = v;
    out.scales[b] = scale;
    out.scales_shuffled[moe_gen::shuffled_scale_offset(row, col, scale_padded_cols)] = scale;
  }
}

// Frees on scope exit (also when a check throws).
struct DeviceScratch {
  void* p = nullptr;
  explicit DeviceScratch(size_t bytes) { HARNESS_GPU_CHECK(hipMalloc(&p, bytes)); }
  ~DeviceScratch() { if (p) (void)hipFree(p); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
};

void* need(const harness::TensorPtrs& dst, const char* name) {
  const auto it = dst.find(name);
  if (it == dst.end() || !it->second) throw std::out_of_range(std::string("moe_mxfp4 generator: no buffer for ") + name);
  return it->second;
}

void generate_weights(const MoeConfig& c, uint64_t seed, const harness::TensorPtrs& dst) {
  const int64_t E = moe_task::num_experts(c), H = c.d_hidden, I = c.d_expert;
  struct W { const char* name; uint32_t id; int64_t n, k; };
  for (const W& w : {W{"gate_up_weight", moe_gen::kGateUp, 2 * I, H}, W{"down_weight", moe_gen::kDown, H, I}}) {
    const std::string name = w.name;
    const int64_t rows = E * w.n, cols = w.k / 32;
    const int64_t padded_rows = moe_task::pad_to(rows, 256), padded_cols = moe_task::pad_to(cols, 8);
    WeightOut out{static_cast<uint8_t*>(need(dst, w.name)), static_cast<uint8_t*>(need(dst, (name + "_scale").c_str())),
                  static_cast<uint8_t*>(need(dst, (name + "_shuffled").c_str())),
                  static_cast<uint8_t*>(need(dst, (name + "_scale_shuffled").c_str()))};
    if (padded_rows != rows || padded_cols != cols)
      HARNESS_GPU_CHECK(hipMemset(out.scales_shuffled, 0, static_cast<size_t>(padded_rows * padded_cols)));
    weight_kernel<<<grid_for(rows * cols), kThreads>>>(seed, w.id, w.n, w.k, rows, padded_cols,
                                                       moe_gen::inv_sqrt_f32(static_cast<int>(w.k)), out);
    HARNESS_GPU_CHECK_LAUNCH("moe_mxfp4 weight_kernel");
  }
}

void generate_moe_mxfp4(const harness::ShapeCase& s, uint64_t seed, const harness::TensorPtrs& dst) {
  const MoeConfig c = moe_task::config_of(s);
  const int64_t M = c.bs, H = c.d_hidden, R = c.n_routed_experts;
  auto* hidden = static_cast<uint16_t*>(need(dst, "hidden_states"));

  hidden_kernel<<<grid_for(M * H), kThreads>>>(seed, M * H, hidden);
  HARNESS_GPU_CHECK_LAUNCH("moe_mxfp4 hidden_kernel");

  DeviceScratch router(static_cast<size_t>(R * H) * sizeof(uint16_t));
  DeviceScratch logits(static_cast<size_t>(M * R) * sizeof(double));
  router_kernel<<<grid_for(R * H), kThreads>>>(seed, R * H, moe_gen::inv_sqrt_f32(c.d_hidden),
                                               static_cast<uint16_t*>(router.p));
  HARNESS_GPU_CHECK_LAUNCH("moe_mxfp4 router_kernel");
  logits_kernel<<<grid_for(M * R), kThreads>>>(hidden, static_cast<const uint16_t*>(router.p), c.bs, c.n_routed_experts,
                                               c.d_hidden, static_cast<double*>(logits.p));
  HARNESS_GPU_CHECK_LAUNCH("moe_mxfp4 logits_kernel");
  route_kernel<<<grid_for(M), kThreads>>>(static_cast<const double*>(logits.p), c.bs, c.n_routed_experts,
                                          c.n_experts_per_token, static_cast<float*>(need(dst, "topk_weights")),
                                          static_cast<int32_t*>(need(dst, "topk_ids")));
  HARNESS_GPU_CHECK_LAUNCH("moe_mxfp4 route_kernel");

  generate_weights(c, seed, dst);
  // The scratch buffers are freed on return; finish (and surface any fault) first.
  HARNESS_GPU_CHECK(hipDeviceSynchronize());
}

}  // namespace

HARNESS_REGISTER_DEVICE_GENERATOR("moe_mxfp4", generate_moe_mxfp4);
