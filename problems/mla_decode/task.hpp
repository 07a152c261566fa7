// mla_decode host-side helpers shared by the task, the oracle, the cpu variant and the tests.
#pragma once
#include <cstdint>
#include <functional>

#include "harness/problem.hpp"
#include "problems/mla_decode/mla_api.h"

namespace mla {

constexpr int kHeads = 16;
constexpr int kQkDim = 576;
constexpr int kVDim = 512;
constexpr int kRopeDim = 64;
constexpr int kScaleStride = 24;

// The config of a (bs, kv) shape with the spec's constants (q_seq_len 1).
MlaDecodeConfig make_config(int64_t batch_size, int64_t kv_seq_len);
MlaDecodeConfig config_for(const harness::ShapeCase& s);

// The derived KV formats of the spec from kv_bf16 (total_kv rows of 576): the fp8 tensor and its
// per-tensor scale, the MXFP4 codes and their scales (row stride kScaleStride; other bytes untouched).
void quantize_kv(const uint16_t* kv_bf16, int64_t total_kv, uint8_t* kv_fp8, float* kv_fp8_scale, uint8_t* kv_mxfp4,
                 uint8_t* kv_mxfp4_scale);

// Runs fn(begin, end) over [0, n) split into contiguous chunks on hardware_concurrency threads.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace mla
