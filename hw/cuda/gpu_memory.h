// GPU memory for RDMA through the CUDA driver API. libcuda is loaded at run time (dlopen, as
// perftest and NCCL do), so fabtwin-hw builds and runs where no NVIDIA driver is installed and
// says what is missing when GPU memory is asked for: no libcuda, cuInit failing, no GPU.
//
// A NIC reaches GPU memory one of two ways (docs/hardware.md, "RDMA and GPU memory"):
// - dma-buf: the GPU exports the range as a dma-buf file descriptor
//   (cuMemGetHandleForAddressRange, needs CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) and the NIC
//   registers it (ibv_reg_dmabuf_mr). Probed like NCCL: ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0)
//   failing with EOPNOTSUPP or EPROTONOSUPPORT means the kernel or NIC cannot; EBADF (the fd -1
//   refused) means it can.
// - peer memory: ibv_reg_mr on the device pointer, which works only with the nvidia-peermem
//   module loaded; present when /sys/kernel/mm/memory_peers/nv_mem/version,
//   .../nv_mem_nc/version or /sys/module/nvidia_peermem/version exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "hw/verbs/verbs_api.h"

namespace fabtwin::hw {

// GPU memory cannot be had: names what is missing.
class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How many GPUs the driver sees; throws GpuError naming what is missing (no libcuda, cuInit's
// error, no GPU).
int gpu_count();
// The loaded driver's version (e.g. 13000), or throws GpuError.
int cuda_driver_version();

struct PeerMemoryStatus {
  bool available = false;
  std::string evidence;  // the file found, or the files looked for
};
PeerMemoryStatus detect_peer_memory(const std::filesystem::path& sysfs_root = "/sys");

struct DmabufProbe {
  bool supported = false;
  int error = 0;  // the probe registration's errno
  std::string detail;
};
// NCCL's probe on `pd`'s device.
DmabufProbe probe_dmabuf(ProtectionDomain& pd);

// Device memory on one GPU (cuMemAlloc), its size rounded up to 64 KiB (as perftest does), in
// the device's primary context.
class GpuBuffer {
 public:
  GpuBuffer(int device, std::size_t bytes);
  ~GpuBuffer();
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;

  uint64_t device_pointer() const { return pointer_; }
  std::size_t size() const { return size_; }
  int device() const { return device_; }
  std::string device_name() const;
  std::string pci_bus_id() const;
  bool dmabuf_supported() const;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  // A dma-buf file descriptor for the whole buffer (the caller closes it); throws GpuError.
  int export_dmabuf() const;
  void copy_from_host(const void* source, std::size_t bytes, std::size_t offset = 0);
  void copy_to_host(void* target, std::size_t bytes, std::size_t offset = 0) const;

 private:
  void make_current() const;
  int device_ = 0;
  int handle_ = 0;  // CUdevice
  void* context_ = nullptr;
  uint64_t pointer_ = 0;
  std::size_t size_ = 0;
};

enum class GpuRegistrationPath { Auto, DmaBuf, PeerMemory };
GpuRegistrationPath parse_gpu_registration_path(const std::string& text);  // auto|dmabuf|peermem

struct GpuRegistration {
  std::unique_ptr<MemoryRegistration> registration;
  std::string path;  // "dmabuf" or "peermem"
  std::string why;   // what the probes found
};

// Registers `buffer` with `pd` by dma-buf or peer memory (Auto: dma-buf when both the GPU and the
// NIC support it, else peer memory when nvidia-peermem is loaded). Throws GpuError naming what is
// missing when neither path exists.
GpuRegistration register_gpu_buffer(ProtectionDomain& pd, GpuBuffer& buffer, uint32_t access,
                                    GpuRegistrationPath path,
                                    const std::filesystem::path& sysfs_root = "/sys");

}  // namespace fabtwin::hw
