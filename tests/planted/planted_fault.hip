// Planted fault: writes through an invalid device address (an illegal-address fault).
#include "tests/planted/planted_mla.hpp"

namespace {
__global__ void fault_kernel(uint16_t* bad) { bad[threadIdx.x] = 1; }
}  // namespace

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  (void)a;
  fault_kernel<<<1, 32>>>(reinterpret_cast<uint16_t*>(uintptr_t{0x10}));
  if (hipGetLastError() != hipSuccess) throw std::runtime_error("fault_kernel launch failed");
}
MLA_DECODE_VARIANT("planted_fault", gpu, "planted fault: illegal address", "q,kv_bf16,kv_indptr,qo_indptr",
                   ::harness::kVariantPlanted);
