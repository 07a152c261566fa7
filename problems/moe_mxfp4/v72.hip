// v72 (session 18): v54 with the 32-row downs zero-filling their tiles' padding rows of activations (cp.async with a
// source size of 0) instead of reading rows no gate_up block writes: compute-sanitizer's initcheck reported those
// reads on E257 bs512 and E33 bs128 (docs/perf.md, session 18, calls 5-7). Same outputs: the padding rows' products
// went to output columns the down never stores.
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v72", gpu, "v54 with the 32-row downs' padding rows zero-filled instead of read",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
