// The interface every mla_decode variant implements. Inlined into exported submissions.
//
// A variant file defines
//   static size_t workspace_bytes(const MlaDecodeConfig& cfg);
//   static void launch(const MlaDecodeArgs& a);   // enqueue on the default queue, no host sync
// and registers them with MLA_DECODE_VARIANT(name, backend, description, reads, flags).
#pragma once
#include "problems/common/portability.h"

struct MlaDecodeConfig {
  int batch_size;
  int num_heads;         // 16
  int num_kv_heads;      // 1
  int qk_head_dim;       // 576
  int kv_lora_rank;      // 512
  int qk_rope_head_dim;  // 64
  int v_head_dim;        // 512
  int q_seq_len;         // 1
  int kv_seq_len;
  float sm_scale;        // 1/sqrt(576)
};

// Pointers have the official layouts; bf16 tensors are passed as their 16-bit patterns.
struct MlaDecodeArgs {
  MlaDecodeConfig cfg;
  const uint16_t* q;              // (total_q, 16, 576) bf16
  const uint16_t* kv_bf16;        // (total_kv, 1, 576) bf16
  const uint8_t* kv_fp8;          // (total_kv, 1, 576) fp8 e4m3fn
  const float* kv_fp8_scale;      // (1,) fp32, in the same memory space as the tensors
  const uint8_t* kv_mxfp4;        // (total_kv, 1, 288) e2m1 x2, low nibble = even element
  const uint8_t* kv_mxfp4_scale;  // (pad256(total_kv), stride) e8m0, first 18 columns valid
  int64_t kv_mxfp4_scale_stride;  // bytes per scale row (24 in the official layout)
  const int32_t* qo_indptr;       // (bs+1,)
  const int32_t* kv_indptr;       // (bs+1,)
  uint16_t* out;                  // (total_q, 16, 512) bf16
  void* workspace;                // workspace_bytes(cfg) bytes, handed over by the harness
  size_t workspace_size;
};

#ifndef HARNESS_SUBMISSION
#include "harness/variant_registry.hpp"
#define MLA_DECODE_VARIANT(NAME, BACKEND, DESC, READS, FLAGS)                                     \
  HARNESS_REGISTER_VARIANT("mla_decode", MlaDecodeConfig, MlaDecodeArgs, NAME, ::harness::Backend::BACKEND, \
                           DESC, READS, workspace_bytes, launch, FLAGS)
#else
#define MLA_DECODE_VARIANT(NAME, BACKEND, DESC, READS, FLAGS)
#endif
