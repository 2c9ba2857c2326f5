#include "sim/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif

// A sanitizer's allocator in this build: gcc says so with __SANITIZE_*__, clang (up to 15 at
// least) only through __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FABTWIN_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FABTWIN_SANITIZER_ALLOCATOR 1
#endif
#endif

namespace fabtwin {

namespace {

uintptr_t round_up(uintptr_t x) {
  return (x + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}
uintptr_t round_down(uintptr_t x) {
  return x & ~(kHugePageBytes - 1);
}

}  // namespace

bool allocations_come_from_glibc_heap() {
#if !defined(__GLIBC__) || defined(FABTWIN_SANITIZER_ALLOCATOR)
  return false;
#elif defined(RUNNING_ON_VALGRIND)
  return RUNNING_ON_VALGRIND == 0;
#else
  return true;
#endif
}

void* map_huge_pages(size_t bytes) {
  // Map one huge page more than asked and cut the mapping back to an aligned range.
  const size_t span = bytes + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t tail = aligned + bytes;
  const uintptr_t end = start + span;
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  void* memory = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(memory, bytes, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
#endif
  return memory;
}

void unmap_huge_pages(void* memory, size_t bytes) {
  if (memory != nullptr) munmap(memory, bytes);
}

size_t advise_heap_huge_pages(size_t reserve) {
  const char* setting = std::getenv("FABTWIN_HUGE_PAGES");
  if (setting != nullptr && std::strcmp(setting, "0") == 0) return 0;
  if (!allocations_come_from_glibc_heap()) return 0;
#if defined(__GLIBC__) && defined(M_TOP_PAD) && defined(MADV_HUGEPAGE)
  // No trimming (mallopt(3): -1 turns it off): the advised range stays in the heap once freed,
  // rather than being returned and grown again without the advice.
  mallopt(M_TRIM_THRESHOLD, -1);
  // With mapped chunks barred for a moment, a request larger than anything free grows the heap
  // by itself; freed, it becomes the free top that later requests of any size are carved from.
  mallopt(M_MMAP_MAX, 0);
  const uintptr_t before = reinterpret_cast<uintptr_t>(sbrk(0));
  void* probe = std::malloc(reserve);
  const uintptr_t after = reinterpret_cast<uintptr_t>(sbrk(0));
  mallopt(M_MMAP_MAX, 65536);  // glibc's default
  if (probe == nullptr) return 0;
  static_cast<volatile char*>(probe)[0] = 0;  // a use, so that the pair is not optimised away
  std::free(probe);
  // The break moved only if the heap grew in one piece; otherwise the probe came from free
  // memory or from a mapping of its own.
  const uintptr_t first = round_up(before);
  const uintptr_t last = round_down(after);
  if (after == before || last <= first) return 0;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) != 0) return 0;
  return last - first;
#else
  (void)reserve;
  return 0;
#endif
}

size_t default_heap_reserve() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{1} << 30;
  return round_down(static_cast<size_t>(pages) * static_cast<size_t>(page) / 4);
}

}  // namespace fabtwin
