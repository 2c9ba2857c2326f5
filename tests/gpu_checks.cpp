// The checks that need a GPU, one per ctest entry (label gpu): GPU memory through the driver API,
// its dma-buf export (and registration with a real RDMA device where there is one), and the
// reduction-kernel throughput probe. Without a GPU each exits 77 (ctest: skipped) and says why.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hw/cuda/gpu_memory.h"
#include "hw/verbs/ibverbs_device.h"
#ifdef FABTWIN_HAVE_REDUCE_PROBE
#include "hw/cuda/reduce_probe.h"
#endif

using namespace fabtwin::hw;

namespace {

constexpr int kSkip = 77;

int skip(const std::string& why) {
  std::printf("SKIPPED: %s\n", why.c_str());
  return kSkip;
}

bool have_gpu(std::string& why) {
  try {
    return gpu_count() > 0;
  } catch (const GpuError& e) {
    why = e.what();
    return false;
  }
}

int check_memory() {
  std::string why;
  if (!have_gpu(why)) return skip(why);
  GpuBuffer buffer(0, 3 << 20);
  std::printf("GPU 0: %s at %s, driver %d, %zu bytes allocated\n", buffer.device_name().c_str(),
              buffer.pci_bus_id().c_str(), cuda_driver_version(), buffer.size());
  std::vector<unsigned char> out(buffer.size()), back(buffer.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(i * 13 + 5);
  buffer.copy_from_host(out.data(), out.size());
  buffer.copy_to_host(back.data(), back.size());
  if (out != back) {
    std::printf("FAILED: the bytes read back from GPU memory differ\n");
    return 1;
  }
  const PeerMemoryStatus peer = detect_peer_memory();
  std::printf("dma-buf attribute: %d; peer memory: %s\n", buffer.dmabuf_supported() ? 1 : 0,
              peer.evidence.c_str());
  return 0;
}

int check_dmabuf_export() {
  std::string why;
  if (!have_gpu(why)) return skip(why);
  GpuBuffer buffer(0, 1 << 20);
  if (!buffer.dmabuf_supported())
    return skip("GPU 0 reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0");
  const int fd = buffer.export_dmabuf();
  struct stat st {};
  const off_t end = lseek(fd, 0, SEEK_END);
  if (fd < 0 || fstat(fd, &st) != 0 || end < static_cast<off_t>(buffer.size())) {
    std::printf("FAILED: dma-buf fd %d, size %lld for %zu bytes\n", fd, static_cast<long long>(end),
                buffer.size());
    return 1;
  }
  std::printf("dma-buf fd of %lld bytes exported\n", static_cast<long long>(end));
  ::close(fd);
  auto provider = make_ibverbs_provider();
  if (provider->device_names().empty()) {
    std::printf("no RDMA device: registration with a NIC not tried\n");
    return 0;
  }
  auto device = provider->open("");
  auto pd = device->allocate_pd();
  const GpuRegistration r = register_gpu_buffer(*pd, buffer, kAccessLocalWrite | kAccessRemoteWrite,
                                                GpuRegistrationPath::DmaBuf);
  std::printf("registered with %s by %s: lkey 0x%x (%s)\n", device->info().name.c_str(),
              r.path.c_str(), r.registration->lkey(), r.why.c_str());
  return 0;
}

int check_reduce_probe() {
#ifdef FABTWIN_HAVE_REDUCE_PROBE
  int devices = 0;
  try {
    devices = reduce_probe_devices();
  } catch (const ReduceProbeError& e) {
    return skip(e.what());
  }
  if (devices == 0) return skip("the CUDA runtime sees no GPU");
  // 1 MiB + 12 bytes: three floats past the last whole float4, for the kernel's tail.
  const auto results =
      run_reduce_probe(0, {(1 << 20) + 12, 1 << 20, 16 << 20, 64 << 20, 256 << 20});
  std::printf("%12s %8s %12s %12s\n", "bytes", "inputs", "time_us", "GB/s");
  for (const ReduceMeasurement& m : results) {
    std::printf("%12zu %8d %12.2f %12.1f\n", m.bytes, m.inputs, m.seconds * 1e6, m.memory_gbps);
    if (m.max_abs_error != 0 || !(m.memory_gbps > 0)) {
      std::printf("FAILED: error %g, %g GB/s\n", m.max_abs_error, m.memory_gbps);
      return 1;
    }
  }
  return 0;
#else
  return skip("built without CUDA kernels (no working nvcc at configure time)");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::string check = argc > 1 ? argv[1] : "";
  try {
    if (check == "memory") return check_memory();
    if (check == "dmabuf_export") return check_dmabuf_export();
    if (check == "reduce_probe") return check_reduce_probe();
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: fabtwin_gpu_checks memory|dmabuf_export|reduce_probe\n");
  return 2;
}
