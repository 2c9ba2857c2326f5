// libFuzzer target over the log importers (`fabtwin import perftest|nccl-tests`): any bytes, read
// as a perftest log and as an nccl-tests log, must either parse or be refused with a
// LogFormatError naming the line. Anything else (a crash, a sanitizer report, another exception,
// a hang, memory beyond libFuzzer's limits) is a finding. Seeds: the logs in tests/data/logs and
// tests/data/observe.
#include <cstdint>
#include <string_view>

#include "hw/import/log_lines.h"
#include "hw/import/nccl_tests_log.h"
#include "hw/import/perftest_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)fabtwin::hw::parse_perftest_log(text, "fuzz.log");
  } catch (const fabtwin::hw::LogFormatError&) {
  }
  try {
    (void)fabtwin::hw::parse_nccl_tests_log(text, "fuzz.log");
  } catch (const fabtwin::hw::LogFormatError&) {
  }
  return 0;
}
