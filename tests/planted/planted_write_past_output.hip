// Planted fault: correct output, plus 64 bytes written just past the end of the output.
#include "tests/planted/planted_mla.hpp"

namespace {
__global__ void overrun_kernel(uint8_t* end_of_out) {
  if (threadIdx.x < 64) end_of_out[threadIdx.x] = 0x42;
}
}  // namespace

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  planted::launch_attention(a);
  const size_t out_bytes = static_cast<size_t>(a.cfg.batch_size) * a.cfg.q_seq_len * a.cfg.num_heads * a.cfg.v_head_dim * 2;
  overrun_kernel<<<1, 64>>>(reinterpret_cast<uint8_t*>(a.out) + out_bytes);
  if (hipGetLastError() != hipSuccess) throw std::runtime_error("overrun_kernel launch failed");
}
MLA_DECODE_VARIANT("planted_write_past_output", gpu, "planted fault: correct output, writes 64 bytes past its end",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantPlanted);
