// Planted wrong variant: every output 20% too large. Passes the loose official tolerance at these
// magnitudes (atol 0.1 vs outputs of ~0.05), so only the strict verdict can catch it.
#include "tests/planted/planted_mla.hpp"

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  planted::AttentionOptions o;
  o.out_scale = 1.2f;
  planted::launch_attention(a, o);
}
MLA_DECODE_VARIANT("planted_wrong", gpu, "planted: output off by +20%", "q,kv_bf16,kv_indptr,qo_indptr",
                   ::harness::kVariantPlanted);
