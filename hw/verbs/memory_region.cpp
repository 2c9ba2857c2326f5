#include "hw/verbs/memory_region.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fabtwin::hw {

std::size_t page_size() {
  const long size = sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<std::size_t>(size) : 4096;
}

std::size_t round_up(std::size_t bytes, std::size_t alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

HostBuffer::HostBuffer(std::size_t bytes) : size_(round_up(bytes == 0 ? 1 : bytes, page_size())) {
  data_ = static_cast<unsigned char*>(std::aligned_alloc(page_size(), size_));
  if (!data_)
    throw std::runtime_error("cannot allocate " + std::to_string(size_) +
                             " bytes of host memory for RDMA buffers");
  std::memset(data_, 0, size_);
}

HostBuffer::~HostBuffer() {
  std::free(data_);
}

std::unique_ptr<MemoryRegistration> register_host_buffer(ProtectionDomain& pd, HostBuffer& buffer,
                                                         uint32_t access) {
  return pd.register_memory(buffer.data(), buffer.size(), access);
}

}  // namespace fabtwin::hw
