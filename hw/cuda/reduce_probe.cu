#include "hw/cuda/reduce_probe.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

namespace fabtwin::hw {

namespace {

constexpr int kMaxInputs = 8;

struct Inputs {
  const float* in[kMaxInputs];
};

// Four floats per load and store where it can (cudaMalloc aligns every buffer to 256 bytes), as
// NCCL's reduction kernels move 16 bytes at a time; the last n % 4 elements one by one. The sum
// runs in the host's order (in_0 + in_1 + ...), so the result matches it exactly.
__global__ void sum_kernel(Inputs inputs, int count, float* out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t quads = n / 4;
  for (std::size_t i = first; i < quads; i += stride) {
    float4 sum = reinterpret_cast<const float4*>(inputs.in[0])[i];
    for (int k = 1; k < count; ++k) {
      const float4 v = reinterpret_cast<const float4*>(inputs.in[k])[i];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    reinterpret_cast<float4*>(out)[i] = sum;
  }
  for (std::size_t i = quads * 4 + first; i < n; i += stride) {
    float sum = inputs.in[0][i];
    for (int k = 1; k < count; ++k) sum += inputs.in[k][i];
    out[i] = sum;
  }
}

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw ReduceProbeError(std::string(call) + " failed: " + cudaGetErrorName(e) + " (" +
                           cudaGetErrorString(e) + ")");
}

}  // namespace

int reduce_probe_devices() {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  return count;
}

std::vector<ReduceMeasurement> run_reduce_probe(int device, const std::vector<std::size_t>& sizes,
                                                int inputs, int iterations) {
  if (inputs < 2 || inputs > kMaxInputs)
    throw ReduceProbeError("the probe sums 2 to " + std::to_string(kMaxInputs) + " buffers");
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::vector<ReduceMeasurement> results;
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (std::size_t bytes : sizes) {
    const std::size_t n = std::max<std::size_t>(bytes / sizeof(float), 1);
    std::vector<float*> buffers(inputs + 1, nullptr);
    for (float*& b : buffers) check(cudaMalloc(&b, n * sizeof(float)), "cudaMalloc");
    std::vector<std::vector<float>> host(inputs, std::vector<float>(n));
    for (int k = 0; k < inputs; ++k) {
      for (std::size_t i = 0; i < n; ++i)
        host[k][i] = static_cast<float>((i * (k + 3)) % 251) * 0.25f;
      check(cudaMemcpy(buffers[k], host[k].data(), n * sizeof(float), cudaMemcpyHostToDevice),
            "cudaMemcpy");
    }
    Inputs in{};
    for (int k = 0; k < inputs; ++k) in.in[k] = buffers[k];
    const int threads = 512;
    const int blocks = static_cast<int>(std::min<std::size_t>(
        std::max<std::size_t>((n / 4 + threads - 1) / threads, 1), prop.multiProcessorCount * 8));
    sum_kernel<<<blocks, threads>>>(in, inputs, buffers[inputs], n);
    check(cudaGetLastError(), "sum_kernel launch");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaEventRecord(start), "cudaEventRecord");
    for (int it = 0; it < iterations; ++it)
      sum_kernel<<<blocks, threads>>>(in, inputs, buffers[inputs], n);
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    std::vector<float> out(n);
    check(cudaMemcpy(out.data(), buffers[inputs], n * sizeof(float), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    ReduceMeasurement m;
    m.bytes = n * sizeof(float);
    m.inputs = inputs;
    m.iterations = iterations;
    m.seconds = ms / 1e3 / iterations;
    m.memory_gbps =
        m.seconds > 0 ? (inputs + 1) * static_cast<double>(m.bytes) / m.seconds / 1e9 : 0;
    for (std::size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int k = 0; k < inputs; ++k) sum += host[k][i];
      m.max_abs_error = std::max(m.max_abs_error, static_cast<double>(std::fabs(sum - out[i])));
    }
    for (float* b : buffers) cudaFree(b);
    results.push_back(m);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return results;
}

}  // namespace fabtwin::hw
