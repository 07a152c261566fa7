// Planted fault: computes only the first half of the batches; the rest of the output is never written.
#include "tests/planted/planted_mla.hpp"

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  planted::AttentionOptions o;
  o.batch_end = (a.cfg.batch_size + 1) / 2;
  planted::launch_attention(a, o);
}
MLA_DECODE_VARIANT("planted_half_output", gpu, "planted fault: writes only the first half of the output",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantPlanted);
