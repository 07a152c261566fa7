// Float64 attention for mla_decode: the exact maths over one KV format, multi-threaded over
// (q row, head). Output: (total_q, 16, 512) doubles, row-major.
//
// Batch b's query rows are [qo_indptr[b], qo_indptr[b+1]) and its KV rows
// [kv_indptr[b], kv_indptr[b+1]); every query row attends to all of its batch's KV rows
// (decode: q_seq_len 1, no mask).
#pragma once
#include <cstdint>
#include <vector>

#include "problems/mla_decode/mla_api.h"

namespace mla {

// Over the bf16 q and bf16 KV: the problem's oracle.
std::vector<double> oracle_bf16(const MlaDecodeConfig& cfg, const uint16_t* q, const uint16_t* kv_bf16,
                                const int32_t* qo_indptr, const int32_t* kv_indptr);

// Over the bf16 q and the dequantized fp8 KV (code * scale).
std::vector<double> oracle_fp8(const MlaDecodeConfig& cfg, const uint16_t* q, const uint8_t* kv_fp8, float kv_fp8_scale,
                               const int32_t* qo_indptr, const int32_t* kv_indptr);

// Over the bf16 q and the dequantized MXFP4 KV (e2m1 value * 2^(scale byte - 127)).
std::vector<double> oracle_mxfp4(const MlaDecodeConfig& cfg, const uint16_t* q, const uint8_t* kv_mxfp4,
                                 const uint8_t* kv_mxfp4_scale, int64_t scale_stride, const int32_t* qo_indptr,
                                 const int32_t* kv_indptr);

// The same three with q given as float values (for example a dequantized fp8 or MXFP4 q: every
// such value is exact in float), to measure what quantizing q costs.
std::vector<double> oracle_bf16(const MlaDecodeConfig& cfg, const float* q, const uint16_t* kv_bf16,
                                const int32_t* qo_indptr, const int32_t* kv_indptr);
std::vector<double> oracle_fp8(const MlaDecodeConfig& cfg, const float* q, const uint8_t* kv_fp8, float kv_fp8_scale,
                               const int32_t* qo_indptr, const int32_t* kv_indptr);
std::vector<double> oracle_mxfp4(const MlaDecodeConfig& cfg, const float* q, const uint8_t* kv_mxfp4,
                                 const uint8_t* kv_mxfp4_scale, int64_t scale_stride, const int32_t* qo_indptr,
                                 const int32_t* kv_indptr);

}  // namespace mla
