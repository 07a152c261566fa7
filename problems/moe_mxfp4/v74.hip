// v74 (session 19): v72 with the fp8 mainloops' weight copies (the 32- and 64-row gate_up and down) as one bulk copy
// (TMA engine, cp.async.bulk) a 16-row group and stage, completing on a per-slot mbarrier, instead of 4 cp.async a
// thread and stage (MOE_BULK_W). The shuffled layout's stage slice of a group is 1 KB contiguous in global and shared
// memory alike. Same bytes, same k order: outputs identical to v72's.
#define MOE_BULK_W 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v74", gpu, "v72 with the fp8 mainloops' weight copies as one bulk copy a 16-row group and stage",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
