// TEST ONLY: v18 (all f16 paths, V18_64 2) with the bf16 fallback forced on every stage and every activation
// block stored raw with its exponent byte (checks the fallback on the benchmark data; slow).
#define V18_64 2
#define V18_FORCE 2
#define V18_NAME "v18f"
#define V18_DESC "TEST ONLY: v18's f16 paths with the fallback forced (FORCE 2)"
#include "problems/moe_mxfp4/v18.hip"
