// Planted fault: never finishes (spins until the process is killed).
#include "tests/planted/planted_mla.hpp"

namespace {
__global__ void hang_kernel(volatile int* never_set) {
  while (*never_set == 0) {
  }
}
}  // namespace

static size_t workspace_bytes(const MlaDecodeConfig&) { return sizeof(int); }
static void launch(const MlaDecodeArgs& a) {
  // The flag lives in the workspace and is zeroed here; nothing ever sets it.
  if (hipMemsetAsync(a.workspace, 0, sizeof(int), nullptr) != hipSuccess) throw std::runtime_error("memset failed");
  hang_kernel<<<1, 1>>>(static_cast<volatile int*>(a.workspace));
  if (hipGetLastError() != hipSuccess) throw std::runtime_error("hang_kernel launch failed");
}
MLA_DECODE_VARIANT("planted_hang", gpu, "planted fault: spins forever", "q,kv_bf16,kv_indptr,qo_indptr",
                   ::harness::kVariantPlanted);
