// Memory in 2 MiB pages. A large fabric reads its ports, queues and packets all over a working
// set of tens to hundreds of megabytes; with 4 KiB pages nearly every such read also misses the
// TLB. Where the kernel grants transparent huge pages only on request (`madvise` mode, the
// default of many distributions), the process has to ask for them.
#pragma once

#include <cstddef>

namespace fabtwin {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` (a multiple of kHugePageBytes) of zeroed memory aligned to a huge page, mapped on its
// own and advised for huge pages. Throws std::bad_alloc when the system has no memory to map.
void* map_huge_pages(size_t bytes);
void unmap_huge_pages(void* memory, size_t bytes);

// Whether malloc is glibc's, growing its heap with the program break: not under valgrind (whose
// heap is a few megabytes: the growth would fail loudly) or AddressSanitizer or ThreadSanitizer
// (whose allocators map memory of their own).
bool allocations_come_from_glibc_heap();

// Grows the heap of the process (glibc's main arena) by `reserve` bytes of address space at
// once and advises all of it for huge pages, so that what the program allocates afterwards is
// served from 2 MiB pages as it is touched: no memory is taken before then. Trimming is turned
// off: the range stays in the heap as free memory. Threads that allocate while a run goes on
// keep arenas of their own (a single arena measured no faster). Returns the bytes advised: 0
// where it cannot be done (allocations not from glibc's heap, no huge pages in the kernel, a
// heap that cannot grow in one piece, or the environment says FABTWIN_HUGE_PAGES=0). Meant to be
// called once, first thing in main().
size_t advise_heap_huge_pages(size_t reserve);

// The reserve main() asks for: a quarter of the machine's physical memory (address space only).
size_t default_heap_reserve();

}  // namespace fabtwin
