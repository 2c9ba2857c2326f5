// Sorting networks: a fixed sequence of compare-exchanges that sorts any input of its size,
// branch free (each compare-exchange is a compare and two conditional moves). For the small
// arrays the event queue sorts once per time bucket, they avoid the mispredicted branch that
// ends each step of an insertion sort.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace fabtwin {

// Batcher's odd-even merge sort (docs/references.md §13.1) for n keys: the network for the
// next power of two without the comparators that reach past n (as if the places past n held
// keys larger than any other, which those comparators would leave where they are). Calls
// `f(a, b)`, a < b, for each comparator in order.
template <class F>
constexpr void for_each_batcher_comparator(size_t n, F f) {
  size_t size = 1;
  while (size < n) size += size;
  for (size_t p = 1; p < size; p += p) {
    for (size_t k = p; k > 0; k /= 2) {
      for (size_t j = k % p; j + k < n; j += k + k) {
        for (size_t i = 0; i < k && i + j + k < n; ++i) {
          if ((i + j) / (p + p) == (i + j + k) / (p + p)) f(i + j, i + j + k);
        }
      }
    }
  }
}

template <size_t N>
consteval size_t batcher_comparator_count() {
  size_t count = 0;
  for_each_batcher_comparator(N, [&](size_t, size_t) { ++count; });
  return count;
}

template <size_t N>
consteval auto batcher_comparators() {
  std::array<std::pair<uint8_t, uint8_t>, batcher_comparator_count<N>()> pairs{};
  size_t at = 0;
  for_each_batcher_comparator(N, [&](size_t a, size_t b) {
    pairs[at++] = {static_cast<uint8_t>(a), static_cast<uint8_t>(b)};
  });
  return pairs;
}

[[gnu::always_inline]] inline void compare_exchange(uint64_t& a, uint64_t& b) {
  const uint64_t x = a;
  const uint64_t y = b;
  a = x < y ? x : y;
  b = x < y ? y : x;
}

template <size_t N, size_t Size, size_t... I>
[[gnu::always_inline]] inline void apply_batcher_comparators(std::array<uint64_t, Size>& v,
                                                             std::index_sequence<I...>) {
  static constexpr auto kComparators = batcher_comparators<N>();
  (compare_exchange(v[kComparators[I].first], v[kComparators[I].second]), ...);
}

// Sorts the first N keys of `v` ascending with the network for N (at most 256), fully unrolled.
template <size_t N, size_t Size>
[[gnu::always_inline]] inline void sort_by_network(std::array<uint64_t, Size>& v) {
  static_assert(N > 1 && N <= 256 && N <= Size);
  apply_batcher_comparators<N>(v, std::make_index_sequence<batcher_comparator_count<N>()>{});
}

}  // namespace fabtwin
