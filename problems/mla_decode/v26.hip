// v26 (mla-large5, session 10): v25 (v24 with f16 split partials) with
//   - the two 32-tile shapes (bs 32 / kv 8192: 4 splits merged in the kernel; bs 256 / kv 1024: one split) on
//     mla_dims5::DirPath with a 2-stage KV ring (v25: 3) and the merge's arrival fenced once by thread 0,
//     grid-sync style (fLf);
//   - the clustered split shape (bs 64 / kv 8192) on v23's mla_dims4::ClusterPath with 2 stages (v25: 3);
//   - the other shapes on v24 / v25's paths exactly.
// Two stages: fewer KV bytes in flight, hence fewer of the cache flush's dirty L2 lines written back at the start
// (KV copies carry evict_first: later copies replace earlier KV lines, clean). Measurements: docs/perf.md, section
// "mla_decode v26". AMD builds run v6's kernel, as v8, v11-v25 do.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT("v26", gpu,
                   "v25 with 2-stage KV rings on bs 32 / kv 8192, bs 256 / kv 1024 and bs 64 / kv 8192 (fewer of the "
                   "flush's dirty L2 lines written back) and bs 32 / kv 8192's merge arrival fenced once",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
