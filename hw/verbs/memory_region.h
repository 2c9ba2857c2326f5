// Host memory for RDMA: a page-aligned, zeroed buffer (the NIC reads and writes it by DMA, so it
// stays put for its life) and its registration with a protection domain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hw/verbs/verbs_api.h"

namespace fabtwin::hw {

class HostBuffer {
 public:
  // `bytes` rounded up to whole pages; throws std::runtime_error when it cannot be had.
  explicit HostBuffer(std::size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

std::size_t page_size();
// `bytes` rounded up to a multiple of `alignment` (a power of two).
std::size_t round_up(std::size_t bytes, std::size_t alignment);

// Registers all of `buffer` with `access`.
std::unique_ptr<MemoryRegistration> register_host_buffer(ProtectionDomain& pd, HostBuffer& buffer,
                                                         uint32_t access);

}  // namespace fabtwin::hw
