// Huge pages: blocks mapped on their own, and the heap advised as a whole.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/huge_pages.h"

using namespace fabtwin;

namespace {

// The VmFlags of the mapping that holds `address`, from /proc/self/smaps ("" if none does).
std::string mapping_flags(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t from = 0;
    uintptr_t to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-' &&
        line.find(' ') != std::string::npos && line.find(':') > line.find(' ')) {
      inside = from <= at && at < to;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool advised(const void* address) {
  return mapping_flags(address).find(" hg") != std::string::npos;
}

bool kernel_has_huge_pages() {
  return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled");
}

}  // namespace

TEST_CASE("huge-page blocks are aligned, zeroed and advised", "[huge_pages]") {
  const size_t bytes = 2 * kHugePageBytes;
  auto* block = static_cast<unsigned char*>(map_huge_pages(bytes));
  CHECK(reinterpret_cast<uintptr_t>(block) % kHugePageBytes == 0);
  CHECK(block[0] == 0);
  CHECK(block[bytes - 1] == 0);
  block[bytes - 1] = 7;
  CHECK(block[bytes - 1] == 7);
  if (kernel_has_huge_pages()) {
    CHECK(advised(block));
    CHECK(advised(block + bytes - 1));
  }
  CHECK_FALSE(mapping_flags(block).empty());
  unmap_huge_pages(block, bytes);
}

TEST_CASE("the heap is advised for huge pages, unless the environment says no", "[huge_pages]") {
  if (!kernel_has_huge_pages()) {
    WARN("this kernel has no transparent huge pages: nothing to advise");
    CHECK(advise_heap_huge_pages(size_t{64} << 20) == 0);
    return;
  }
  if (!allocations_come_from_glibc_heap()) {
    WARN("malloc is not glibc's here (a sanitizer build, or valgrind): its heap is not advised");
    CHECK(advise_heap_huge_pages(size_t{64} << 20) == 0);
    return;
  }
  setenv("FABTWIN_HUGE_PAGES", "0", 1);
  CHECK(advise_heap_huge_pages(size_t{64} << 20) == 0);
  unsetenv("FABTWIN_HUGE_PAGES");
  const size_t reserve = size_t{64} << 20;
  const auto heap_end = reinterpret_cast<uintptr_t>(sbrk(0));
  const size_t done = advise_heap_huge_pages(reserve);
  REQUIRE(done > reserve - 2 * kHugePageBytes);
  CHECK(done <= reserve + kHugePageBytes);
  // A later allocation larger than glibc's mapping threshold comes from the advised range, not
  // from a mapping of its own. The advice starts at the first huge page boundary after the
  // heap's end before it; the allocation may start lower, on the free top of the heap from
  // before, by as much as that free top held (where the heap ends depends on where the
  // process's heap was placed, so a fixed offset into the allocation is not always advised).
  const uintptr_t first_advised = (heap_end + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const size_t bytes = size_t{8} << 20;
  auto* large = static_cast<char*>(std::malloc(bytes));
  REQUIRE(large != nullptr);
  const auto start = reinterpret_cast<uintptr_t>(large);
  REQUIRE(first_advised < start + bytes);
  CHECK(advised(reinterpret_cast<const char*>(std::max(start, first_advised))));
  CHECK(advised(large + bytes - 1));
  std::free(large);
}

TEST_CASE("a quarter of the machine is reserved for the heap", "[huge_pages]") {
  const size_t reserve = default_heap_reserve();
  const size_t memory =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  CHECK(reserve % kHugePageBytes == 0);
  CHECK(reserve <= memory / 4);
  CHECK(reserve + kHugePageBytes > memory / 4);
}
