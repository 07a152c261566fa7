// Planted fault: correct output, but the call also changes one element of an input (q).
#include "tests/planted/planted_mla.hpp"

namespace {
__global__ void flip_q_kernel(uint16_t* q) { q[0] ^= 0x0100; }
}  // namespace

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  planted::launch_attention(a);
  flip_q_kernel<<<1, 1>>>(const_cast<uint16_t*>(a.q));
  if (hipGetLastError() != hipSuccess) throw std::runtime_error("flip_q_kernel launch failed");
}
MLA_DECODE_VARIANT("planted_mutate_input", gpu, "planted fault: correct output, modifies q",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantPlanted);
