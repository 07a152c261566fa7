// The interface every moe_mxfp4 variant implements. Inlined into exported submissions.
//
// A variant file defines
//   static size_t workspace_bytes(const MoeConfig& cfg);
//   static void launch(const MoeArgs& a);   // enqueue on the default queue, no host sync
// and registers them with MOE_MXFP4_VARIANT(name, backend, description, reads, flags).
#pragma once
#include "problems/common/portability.h"

struct MoeConfig {
  int d_hidden;
  int d_expert;
  int d_hidden_pad;
  int d_expert_pad;
  int n_routed_experts;
  int n_shared_experts;     // 1
  int n_experts_per_token;  // k (routed)
  int total_top_k;          // k + n_shared
  int bs;                   // M, tokens
};

// Official layouts (moe_mxfp4.md); E = n_routed + n_shared; bf16 as 16-bit patterns.
struct MoeArgs {
  MoeConfig cfg;
  const uint16_t* hidden_states;                  // [M, d_hidden] bf16
  const uint8_t* gate_up_weight;                  // [E, 2*d_expert, d_hidden/2] e2m1 x2
  const uint8_t* down_weight;                     // [E, d_hidden, d_expert/2] e2m1 x2
  const uint8_t* gate_up_weight_scale;            // [E*2*d_expert, d_hidden/32] e8m0
  const uint8_t* down_weight_scale;               // [E*d_hidden, d_expert/32] e8m0
  const uint8_t* gate_up_weight_shuffled;         // as gate_up_weight, 16x16-tile shuffled
  const uint8_t* down_weight_shuffled;            // as down_weight, shuffled
  const uint8_t* gate_up_weight_scale_shuffled;   // [pad256(rows), pad8(cols)] shuffled
  const uint8_t* down_weight_scale_shuffled;      // [pad256(rows), pad8(cols)] shuffled
  const float* topk_weights;                      // [M, total_top_k]
  const int32_t* topk_ids;                        // [M, total_top_k]
  uint16_t* out;                                  // [M, d_hidden] bf16
  void* workspace;
  size_t workspace_size;
};

#ifndef HARNESS_SUBMISSION
#include "harness/variant_registry.hpp"
#define MOE_MXFP4_VARIANT(NAME, BACKEND, DESC, READS, FLAGS)                                  \
  HARNESS_REGISTER_VARIANT("moe_mxfp4", MoeConfig, MoeArgs, NAME, ::harness::Backend::BACKEND, \
                           DESC, READS, workspace_bytes, launch, FLAGS)
#else
#define MOE_MXFP4_VARIANT(NAME, BACKEND, DESC, READS, FLAGS)
#endif
