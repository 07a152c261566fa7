// Microbenchmark (measurement only, not a variant): how many thread-block clusters of each size 1..16 can be resident
// at once on this GPU (cudaOccupancyMaxActiveClusters), for a kernel that holds one 256-thread block an SM (~200 KB of
// dynamic shared memory, as the mla dims / cluster kernels do). The mla small path's plan model (mla_cluster::
// plan_cluster) reads the same numbers through the occupancy calculator; this prints them, together with the
// resident blocks (clusters x size) and the SMs a cluster shape leaves idle.
// Build and run: nvcc -O3 -arch=sm_90a -std=c++17 cluster_slots.cu -o cluster_slots && ./cluster_slots
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1); } } while (0)

__global__ void one_block_an_sm(int* out) {
  extern __shared__ int smem[];
  smem[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  if (out != nullptr && threadIdx.x == 0) out[blockIdx.x] = smem[1];
}

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int smem = 200 * 1024;
  CK(cudaFuncSetAttribute(one_block_an_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(one_block_an_sm, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  std::printf("%s: %d SMs; one 256-thread block an SM (%d KB dynamic shared memory)\n", prop.name,
              prop.multiProcessorCount, smem / 1024);
  std::printf("cluster size | resident clusters | resident blocks | idle SMs\n");
  for (int c = 1; c <= 16; ++c) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3(c * 64, 1, 1);
    cfg.blockDim = dim3(256, 1, 1);
    cfg.dynamicSmemBytes = smem;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = c;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    const cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, one_block_an_sm, &cfg);
    if (e != cudaSuccess) {
      std::printf("%12d | %s\n", c, cudaGetErrorString(e));
      (void)cudaGetLastError();
      continue;
    }
    std::printf("%12d | %17d | %15d | %8d\n", c, clusters, clusters * c, prop.multiProcessorCount - clusters * c);
  }
  return 0;
}
