// vector_add.cu: a real CUDA program annotated with the dftrace tree, for the GPU test and
// the overhead figure: per iteration, inside one compute.forward region, a memset, two
// host-to-device copies, a vector-add kernel, a device-to-device copy, a device-to-host copy
// and a stream synchronisation, all on the default stream (so their order is fixed).
// Usage: gpu_vector_add [iterations] [elements]. Exit 77 when no GPU can be used.
#include <cuda_runtime.h>
#include <dftrace/dftrace.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(int argc, char **argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  const int n = argc > 2 ? std::atoi(argv[2]) : (1 << 20);
  // Tracing starts before CUDA does, as in an application that initialises dftrace first
  // (with DFTRACE_ENABLE unset it stays off: the "without dftrace" run of the overhead figure).
  dftrace_init(nullptr);
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("SKIP: no usable CUDA device (%s)\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 77;
  }
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.0f * i;
  }
  float *da, *db, *dc, *dt;
  CHECK(cudaMalloc(&da, bytes));
  CHECK(cudaMalloc(&db, bytes));
  CHECK(cudaMalloc(&dc, bytes));
  CHECK(cudaMalloc(&dt, bytes));
  const int block = 256, grid = (n + block - 1) / block;

  dftrace_node_t *forward = dftrace_node_find("compute.forward");
  const auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iterations; ++it) {
    dftrace_node_update_int(dftrace_node_root(), "step", it);
    const dftrace_region_t r = dftrace_region_begin(forward);
    CHECK(cudaMemset(dc, 0, bytes));
    CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
    vector_add<<<grid, block>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(dt, dc, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(c.data(), dt, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaStreamSynchronize(0));
    dftrace_region_end(r);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < n; ++i)
    if (c[i] != 3.0f * i) {
      std::fprintf(stderr, "wrong result at %d: %f\n", i, c[i]);
      return 1;
    }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dt);
  std::printf("iterations=%d elements=%d grid=%d block=%d bytes=%zu loop_seconds=%.6f\n",
              iterations, n, grid, block, bytes, seconds);
  return 0;
}
