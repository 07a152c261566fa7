// v11: v8's fp8 pipeline with Q converted bf16 -> f16 once per block into shared memory
// (problems/common/mla_fp8_wide.h), three block shapes chosen from the split plan:
//   short blocks (v8's plan gives <= 256 tokens a block, i.e. <= 4 of its 64-token tiles):
//     16 warps, 128-token tiles, 2-stage ring, Q read from shared memory at every tile;
//   more than one wave at one block per SM but fewer with two, and blocks of <= 1024 tokens:
//     two 8-warp blocks per SM (64-token tiles, 2-stage ring each, Q from shared memory);
//   otherwise v8's block (8 warps, 64-token tiles, 5-stage ring) with its Q fragments loaded into
//     registers from the block's shared f16 copy.
// Each kernel is the template instance measured on its own in docs/perf.md (mla-kernels4).
// AMD builds run v6's kernel, as v8 does (the pipeline assumes NVIDIA's mma.sync lane layout).
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_wide.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using Wide16 = mla_wide::Wide<16, 128, 2, 1, false, 1>;  // short blocks
using Two8 = mla_wide::Wide<8, 64, 2, 2, false, 1>;      // two blocks per SM
using Regs8 = mla_wide::Wide<8, 64, 5, 1, true, 1>;      // v8's block shape

enum class Path { wide16, two8, regs8 };

Path pick(const MlaDecodeConfig& c) {
  const mla_kernels::SplitPlan one = Regs8::plan(c);
  if (one.tokens_per_split <= 4 * 64) return Path::wide16;
  const int64_t cu = current_device_shape().compute_units;
  const mla_kernels::SplitPlan two = Two8::plan(c);
  const int64_t waves1 = (int64_t(c.batch_size) * one.splits + cu - 1) / cu;
  const int64_t waves2 = (int64_t(c.batch_size) * two.splits + 2 * cu - 1) / (2 * cu);
  if (one.tokens_per_split <= 1024 && waves2 < waves1) return Path::two8;
  return Path::regs8;
}

size_t workspace_bytes(const MlaDecodeConfig& c) {
  switch (pick(c)) {
    case Path::wide16: return Wide16::workspace_bytes(c);
    case Path::two8: return Two8::workspace_bytes(c);
    default: return Regs8::workspace_bytes(c);
  }
}
void launch(const MlaDecodeArgs& a) {
  switch (pick(a.cfg)) {
    case Path::wide16: Wide16::launch(a, "mla_fp8_wide_kernel<16, 128, 2, 1, false, 1>"); break;
    case Path::two8: Two8::launch(a, "mla_fp8_wide_kernel<8, 64, 2, 2, false, 1>"); break;
    default: Regs8::launch(a, "mla_fp8_wide_kernel<8, 64, 5, 1, true, 1>"); break;
  }
}
#endif

}  // namespace

MLA_DECODE_VARIANT("v11", gpu,
                   "split-KV flash decoding on fp8 KV, Q f16 once per block in shared memory; by split plan: 16 warps "
                   "with 128-token tiles (short blocks), two 8-warp blocks per SM (one wave instead of two), else "
                   "v8's block with Q registers",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
