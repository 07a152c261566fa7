// A small correct mla_decode computation (planted_mla.hip) that the planted, deliberately faulty
// variants build on. Test-only; not a submission.
#pragma once
#include <stdexcept>

#include "harness/gpu/runtime_api.hpp"
#include "problems/mla_decode/mla_api.h"

namespace planted {

struct AttentionOptions {
  int batch_begin = 0, batch_end = -1;  // batches to compute; -1: all
  float out_scale = 1.0f;               // multiplies the result (planted_wrong)
};

// Enqueues the attention on the given queue (nullptr: the default queue) and checks the launch.
void launch_attention(const MlaDecodeArgs& a, AttentionOptions o = {}, hipStream_t q = nullptr);

inline size_t no_workspace(const MlaDecodeConfig&) { return 0; }

}  // namespace planted
