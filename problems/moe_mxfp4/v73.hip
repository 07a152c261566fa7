// v73 (session 19): v72 with gate_up's k order transposed within each stage of 4 k-blocks (MOE_X8_KT): the prologue
// stores the hidden states' e4m3 words interleaved (moe_fp8r::x8_word), so that thread t of a wgmma k-step holds 8
// values of k-block t of the stage, and over the stage's 4 steps all 32 values of one weight row and k-block. The
// mainloop then loads a row's stage slice in one 16-byte shared load and builds its scale's decode table once a stage
// (4 tables a thread instead of 16; the 10 decode ops a word unchanged). gate_up copies the raw weight rows, whose 4
// chunks of a stage are contiguous, instead of the shuffled ones (forms that rearranged the shuffled layout's lines in
// shared memory ran the 32-row gate_up 41% slower: docs/perf.md, session 19). Same products; each wgmma step sums other
// k (4 scale blocks instead of 1), so the fp32 sums differ from v72's in rounding only.
#define MOE_X8_KT 1
#define MOE_DOWN_ZERO_PAD 1
#ifndef V73_FORCE
#define V73_FORCE 0
#endif
#define V54_FORCE V73_FORCE
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V73_FORCE
MOE_MXFP4_VARIANT("v73", gpu, "v72 with gate_up's k order transposed within each 4-k-block stage (one decode table a "
                  "row and stage)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
