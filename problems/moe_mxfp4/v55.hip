// v55 (session 16): v54 with the staged y tile's copy-out (moe_tiled::store_weighted_rows_staged, the 64-row down and
// the E257 bs512 plan's 32-row down) reading MOE_Y_COPY_UNROLL 16-byte pieces a thread from shared memory before any
// of their stores: the session-15 timeline put that phase at ~3 us a 64-row down block (3k of 12.6k SM-us on E33 bs512).
// Same bytes to the same addresses as v54. docs/perf.md, section "Session 16".
#ifndef MOE_Y_COPY_UNROLL
#define MOE_Y_COPY_UNROLL 4
#endif
#ifndef V55_FORCE
#define V55_FORCE 0
#endif
#define V54_FORCE V55_FORCE
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V55_FORCE && !defined(V55_BASE_ONLY)
MOE_MXFP4_VARIANT("v55", gpu, "v54 with the staged y copy-out loading four pieces a thread before storing them",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
