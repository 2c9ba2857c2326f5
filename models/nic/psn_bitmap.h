// A fixed window of PSNs, one bit each, as a ring: the out-of-order receiver's map of the
// packets it has placed past the expected PSN, and the selective-repeat requester's map of the
// packets the responder has SACKed. Sized once when the queue pair is set up; the per-packet
// operations allocate nothing.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace fabtwin {

class PsnBitmap {
 public:
  // Room for `psns` PSNs (rounded up to a power of two, at least 64); all clear.
  void reset(uint32_t psns) {
    const uint32_t bits = std::bit_ceil(psns < 64 ? 64u : psns);
    words_.assign(bits / 64, 0);
    mask_ = bits - 1;
  }
  uint32_t capacity() const { return mask_ + 1; }
  bool test(uint32_t psn) const { return words_[word(psn)] >> (psn & 63) & 1; }
  void set(uint32_t psn) { words_[word(psn)] |= uint64_t{1} << (psn & 63); }
  void clear(uint32_t psn) { words_[word(psn)] &= ~(uint64_t{1} << (psn & 63)); }

 private:
  uint32_t word(uint32_t psn) const { return (psn & mask_) >> 6; }
  std::vector<uint64_t> words_;
  uint32_t mask_ = 0;
};

}  // namespace fabtwin
