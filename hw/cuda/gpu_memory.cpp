#include "hw/cuda/gpu_memory.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#ifdef FABTWIN_CHECK_CUDA_H
#include <cuda.h>
#endif

namespace fabtwin::hw {

namespace {

// The few CUDA driver API types and constants used, declared here so that no CUDA header is
// needed (checked against cuda.h where it is at hand).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
constexpr CUresult kCudaSuccess = 0;
constexpr int kAttributeDmaBufSupported = 124;
constexpr int kRangeHandleDmaBufFd = 1;
constexpr std::size_t kAllocationGranularity = 64 * 1024;

#ifdef FABTWIN_CHECK_CUDA_H
static_assert(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED == kAttributeDmaBufSupported);
static_assert(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD == kRangeHandleDmaBufFd);
static_assert(CUDA_SUCCESS == kCudaSuccess);
static_assert(sizeof(::CUdeviceptr) == sizeof(CUdeviceptr));
#endif

struct CudaDriver {
  void* library = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_get_pci_bus_id)(char*, int, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*get_handle_for_address_range)(void*, CUdeviceptr, std::size_t, int,
                                           unsigned long long) = nullptr;
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  std::string load_error;
  CUresult init_result = kCudaSuccess;

  std::string error_text(CUresult r) const {
    const char* name = nullptr;
    if (get_error_name && get_error_name(r, &name) == kCudaSuccess && name)
      return std::string(name) + " (" + std::to_string(r) + ")";
    return "CUDA error " + std::to_string(r);
  }
};

template <class F>
bool bind(void* library, const char* symbol, F& target) {
  target = reinterpret_cast<F>(dlsym(library, symbol));
  return target != nullptr;
}

// The driver, loaded and initialised once; throws GpuError naming what is missing.
const CudaDriver& driver() {
  static CudaDriver d;
  static std::once_flag once;
  std::call_once(once, [] {
    d.library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.library) {
      const char* e = dlerror();
      d.load_error = "no libcuda: dlopen(libcuda.so.1) failed (" + std::string(e ? e : "unknown") +
                     "): the NVIDIA driver is not installed on this machine (nvidia-smi shows "
                     "whether it is)";
      return;
    }
    bool ok = bind(d.library, "cuInit", d.init) &&
              bind(d.library, "cuDriverGetVersion", d.driver_get_version) &&
              bind(d.library, "cuDeviceGetCount", d.device_get_count) &&
              bind(d.library, "cuDeviceGet", d.device_get) &&
              bind(d.library, "cuDeviceGetName", d.device_get_name) &&
              bind(d.library, "cuDeviceGetAttribute", d.device_get_attribute) &&
              bind(d.library, "cuDeviceGetPCIBusId", d.device_get_pci_bus_id) &&
              bind(d.library, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain) &&
              bind(d.library, "cuDevicePrimaryCtxRelease_v2", d.primary_ctx_release) &&
              bind(d.library, "cuCtxSetCurrent", d.ctx_set_current) &&
              bind(d.library, "cuMemAlloc_v2", d.mem_alloc) &&
              bind(d.library, "cuMemFree_v2", d.mem_free) &&
              bind(d.library, "cuMemcpyHtoD_v2", d.memcpy_htod) &&
              bind(d.library, "cuMemcpyDtoH_v2", d.memcpy_dtoh) &&
              bind(d.library, "cuGetErrorName", d.get_error_name);
    if (!ok) {
      d.load_error = "libcuda.so.1 lacks a driver API function fabtwin uses (driver too old)";
      return;
    }
    // Optional: CUDA 11.7 and later.
    bind(d.library, "cuMemGetHandleForAddressRange", d.get_handle_for_address_range);
    d.init_result = d.init(0);
    if (d.init_result != kCudaSuccess)
      d.load_error = "cuInit failed: " + d.error_text(d.init_result) +
                     (d.init_result == 100   ? ": no GPU (CUDA_ERROR_NO_DEVICE)"
                      : d.init_result == 34  ? ": libcuda.so.1 is the toolkit's stub, not the "
                                               "driver (remove the stubs folder from the library "
                                               "path)"
                      : d.init_result == 999 ? ": the driver is not working (dmesg, nvidia-smi)"
                                             : "");
  });
  if (!d.load_error.empty()) throw GpuError(d.load_error);
  return d;
}

void check(CUresult r, const std::string& call) {
  if (r != kCudaSuccess) throw GpuError(call + " failed: " + driver().error_text(r));
}

}  // namespace

int gpu_count() {
  const CudaDriver& d = driver();
  int count = 0;
  check(d.device_get_count(&count), "cuDeviceGetCount");
  if (count == 0) throw GpuError("no GPU: the CUDA driver is loaded but sees no device");
  return count;
}

int cuda_driver_version() {
  int version = 0;
  check(driver().driver_get_version(&version), "cuDriverGetVersion");
  return version;
}

PeerMemoryStatus detect_peer_memory(const std::filesystem::path& sysfs_root) {
  const std::filesystem::path candidates[] = {
      sysfs_root / "kernel/mm/memory_peers/nv_mem/version",
      sysfs_root / "kernel/mm/memory_peers/nv_mem_nc/version",
      sysfs_root / "module/nvidia_peermem/version"};
  PeerMemoryStatus status;
  std::string looked;
  for (const auto& file : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(file, ec)) {
      status.available = true;
      status.evidence = file.string();
      return status;
    }
    looked += (looked.empty() ? "" : ", ") + file.string();
  }
  status.evidence = "none of " + looked + " exists (nvidia-peermem is not loaded)";
  return status;
}

DmabufProbe probe_dmabuf(ProtectionDomain& pd) {
  DmabufProbe probe;
  try {
    pd.register_dmabuf(0, 0, 0, -1, 0);
    probe.supported = true;
    probe.detail = "ibv_reg_dmabuf_mr accepted the probe";
  } catch (const VerbsError& e) {
    probe.error = e.error();
    probe.supported = e.error() != EOPNOTSUPP && e.error() != EPROTONOSUPPORT;
    probe.detail = std::string("ibv_reg_dmabuf_mr(fd -1) failed with ") + std::strerror(e.error()) +
                   (probe.supported ? " (the call is implemented: dma-buf supported)"
                                    : " (not supported by this kernel, library or NIC)");
  }
  return probe;
}

GpuBuffer::GpuBuffer(int device, std::size_t bytes) : device_(device) {
  const CudaDriver& d = driver();
  const int count = gpu_count();
  if (device < 0 || device >= count)
    throw GpuError("no GPU " + std::to_string(device) + ": the driver sees " +
                   std::to_string(count));
  check(d.device_get(&handle_, device), "cuDeviceGet(" + std::to_string(device) + ")");
  check(d.primary_ctx_retain(&context_, handle_), "cuDevicePrimaryCtxRetain");
  size_ = (std::max<std::size_t>(bytes, 1) + kAllocationGranularity - 1) / kAllocationGranularity *
          kAllocationGranularity;
  make_current();
  CUdeviceptr pointer = 0;
  const CUresult r = d.mem_alloc(&pointer, size_);
  if (r != kCudaSuccess) {
    d.primary_ctx_release(handle_);
    throw GpuError("cuMemAlloc(" + std::to_string(size_) + " bytes) on GPU " +
                   std::to_string(device) + " failed: " + d.error_text(r));
  }
  pointer_ = pointer;
}

GpuBuffer::~GpuBuffer() {
  const CudaDriver& d = driver();
  d.ctx_set_current(context_);
  d.mem_free(pointer_);
  d.primary_ctx_release(handle_);
}

void GpuBuffer::make_current() const {
  check(driver().ctx_set_current(context_), "cuCtxSetCurrent");
}

std::string GpuBuffer::device_name() const {
  char name[256] = {};
  check(driver().device_get_name(name, sizeof name, handle_), "cuDeviceGetName");
  return name;
}

std::string GpuBuffer::pci_bus_id() const {
  char id[64] = {};
  check(driver().device_get_pci_bus_id(id, sizeof id, handle_), "cuDeviceGetPCIBusId");
  return id;
}

bool GpuBuffer::dmabuf_supported() const {
  int value = 0;
  check(driver().device_get_attribute(&value, kAttributeDmaBufSupported, handle_),
        "cuDeviceGetAttribute(DMA_BUF_SUPPORTED)");
  return value != 0;
}

int GpuBuffer::export_dmabuf() const {
  const CudaDriver& d = driver();
  if (!d.get_handle_for_address_range)
    throw GpuError("no dma-buf: the driver lacks cuMemGetHandleForAddressRange (CUDA 11.7+)");
  if (!dmabuf_supported())
    throw GpuError("no dma-buf: GPU " + std::to_string(device_) +
                   " reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0 (needs the open GPU "
                   "kernel modules and a kernel with dma-buf support)");
  make_current();
  int fd = -1;
  check(d.get_handle_for_address_range(&fd, pointer_, size_, kRangeHandleDmaBufFd, 0),
        "cuMemGetHandleForAddressRange(DMA_BUF_FD)");
  return fd;
}

void GpuBuffer::copy_from_host(const void* source, std::size_t bytes, std::size_t offset) {
  if (offset > size_ || bytes > size_ - offset) throw GpuError("copy beyond the GPU buffer");
  make_current();
  check(driver().memcpy_htod(pointer_ + offset, source, bytes), "cuMemcpyHtoD");
}

void GpuBuffer::copy_to_host(void* target, std::size_t bytes, std::size_t offset) const {
  if (offset > size_ || bytes > size_ - offset) throw GpuError("copy beyond the GPU buffer");
  make_current();
  check(driver().memcpy_dtoh(target, pointer_ + offset, bytes), "cuMemcpyDtoH");
}

GpuRegistrationPath parse_gpu_registration_path(const std::string& text) {
  if (text == "auto") return GpuRegistrationPath::Auto;
  if (text == "dmabuf") return GpuRegistrationPath::DmaBuf;
  if (text == "peermem") return GpuRegistrationPath::PeerMemory;
  throw std::invalid_argument("GPU registration '" + text +
                              "': expected 'auto', 'dmabuf' or 'peermem'");
}

GpuRegistration register_gpu_buffer(ProtectionDomain& pd, GpuBuffer& buffer, uint32_t access,
                                    GpuRegistrationPath path,
                                    const std::filesystem::path& sysfs_root) {
  const DmabufProbe nic = probe_dmabuf(pd);
  const bool gpu_dmabuf = buffer.dmabuf_supported();
  const PeerMemoryStatus peer = detect_peer_memory(sysfs_root);
  const std::string why = std::string("dma-buf: GPU ") + (gpu_dmabuf ? "supports it" : "does not") +
                          ", NIC: " + nic.detail + "; peer memory: " + peer.evidence;
  const bool use_dmabuf = gpu_dmabuf && nic.supported;
  GpuRegistration result;
  result.why = why;
  if (path == GpuRegistrationPath::DmaBuf || (path == GpuRegistrationPath::Auto && use_dmabuf)) {
    if (!use_dmabuf) throw GpuError("no dma-buf path to GPU memory (" + why + ")");
    const int fd = buffer.export_dmabuf();
    try {
      result.registration =
          pd.register_dmabuf(0, buffer.size(), buffer.device_pointer(), fd, access);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    result.path = "dmabuf";
    return result;
  }
  if (!peer.available)
    throw GpuError("no peer-memory path to GPU memory: " + why +
                   " (load nvidia-peermem, or use a GPU driver and kernel with dma-buf)");
  result.registration =
      pd.register_memory(reinterpret_cast<void*>(buffer.device_pointer()), buffer.size(), access);
  result.path = "peermem";
  return result;
}

}  // namespace fabtwin::hw
