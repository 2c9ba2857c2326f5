#include "hw/import/nccl_tests_log.h"

#include <cctype>

#include "hw/import/log_lines.h"

namespace fabtwin::hw {
namespace {

// The value after `key` among the words, as an integer ("iters:" "20"), or -1.
int64_t value_after(const std::vector<std::string>& words, const std::string& key) {
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == key) return to_integer(words[i + 1]).value_or(-1);
  }
  return -1;
}

// "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20"
void header_line(NcclTestsLog& log, const std::vector<std::string>& w) {
  log.threads = value_after(w, "nThread");
  log.gpus_per_thread = value_after(w, "nGpus");
  log.min_bytes = value_after(w, "minBytes");
  log.max_bytes = value_after(w, "maxBytes");
  for (size_t i = 0; i + 2 < w.size(); ++i) {
    if (w[i] == "warmup" && w[i + 1] == "iters:")
      log.warmup_iterations = to_integer(w[i + 2]).value_or(-1);
    if (w[i] == "agg" && w[i + 1] == "iters:")
      log.agg_iterations = to_integer(w[i + 2]).value_or(-1);
  }
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] == "iters:" && (i == 0 || (w[i - 1] != "warmup" && w[i - 1] != "agg"))) {
      log.iterations = to_integer(w[i + 1]).value_or(-1);
    }
  }
  log.validation = value_after(w, "validation:");
}

// "#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3"
// or, older, "#   Rank  0 Pid   9192 on pkb-2b6a393d-2 device  0 [0x00] Tesla K80".
std::optional<NcclTestsDevice> device_line(const std::vector<std::string>& w) {
  NcclTestsDevice d;
  size_t i = 1;
  const auto take = [&](const char* key) -> std::optional<std::string> {
    if (i + 1 >= w.size() || w[i] != key) return std::nullopt;
    i += 2;
    return w[i - 1];
  };
  const auto rank = take("Rank");
  if (!rank) return std::nullopt;
  d.rank = static_cast<int32_t>(to_integer(*rank).value_or(-1));
  if (i < w.size() && w[i] == "Group") {
    const auto group = take("Group");
    if (!group) return std::nullopt;  // a line cut after "Group"
    d.group = static_cast<int32_t>(to_integer(*group).value_or(-1));
  }
  const auto pid = take("Pid");
  const auto host = take("on");
  const auto device = take("device");
  if (!pid || !host || !device || i >= w.size()) return std::nullopt;
  d.pid = to_integer(*pid).value_or(-1);
  d.host = *host;
  d.device = static_cast<int32_t>(to_integer(*device).value_or(-1));
  std::string bus = w[i++];
  if (bus.size() >= 2 && bus.front() == '[' && bus.back() == ']')
    bus = bus.substr(1, bus.size() - 2);
  d.bus = bus;
  for (; i < w.size(); ++i) d.name += (d.name.empty() ? "" : " ") + w[i];
  if (d.rank < 0 || d.device < 0) return std::nullopt;
  return d;
}

// A program name among the words of a command line: ".../build/all_reduce_perf" -> all_reduce_perf.
std::string program_in(const std::vector<std::string>& words) {
  for (const std::string& w : words) {
    const std::string base = w.substr(w.rfind('/') == std::string::npos ? 0 : w.rfind('/') + 1);
    if (!nccl_tests_op(base).empty()) return base;
  }
  return "";
}

}  // namespace

void read_nccl_debug_line(NcclTestsLog& log, std::string_view text) {
  const std::vector<std::string> w = fields_of(text);
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == "version" && i > 0 && w[i - 1] == "NCCL" && i + 1 < w.size())
      log.nccl_version = w[i + 1];
    if (w[i] == "Using" && i + 2 < w.size() && w[i + 1] == "network") log.network = w[i + 2];
    if ((w[i] == "nRanks" || w[i] == "nranks") && i + 1 < w.size()) {
      if (const auto n = to_integer(w[i + 1])) log.nranks = *n;
    }
    if (w[i] == "nNodes" && i + 1 < w.size()) {
      if (const auto n = to_integer(w[i + 1])) log.nnodes = *n;
    }
    // "NCCL_ALGO set by environment to Ring"
    if (w[i] == "to" && i >= 4 && w[i - 1] == "environment" && i + 1 < w.size()) {
      std::string value = w[i + 1];
      for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (w[i - 4] == "NCCL_ALGO") log.algorithm = value;
      if (w[i - 4] == "NCCL_PROTO") log.protocol = value;
    }
    // "Channel 00/16 :" names the channel count after the slash.
    if (w[i] == "Channel" && i + 1 < w.size()) {
      const size_t slash = w[i + 1].find('/');
      if (slash != std::string::npos) {
        if (const auto n = to_integer(std::string_view(w[i + 1]).substr(slash + 1))) {
          log.channels = std::max(log.channels, *n);
        }
      }
    }
    // "4 coll channels, ..."
    if (w[i] == "coll" && i > 0 && i + 1 < w.size() && w[i + 1].starts_with("channels")) {
      if (const auto n = to_integer(w[i - 1])) log.channels = std::max(log.channels, *n);
    }
  }
}

std::optional<NcclTuningChoice> read_nccl_tuning_line(std::string_view text) {
  const std::vector<std::string> w = fields_of(text);
  for (size_t i = 1; i + 7 < w.size(); ++i) {
    // FUNC: BYTES Bytes -> Algo A proto P channel{Lo..Hi}={LO..HI}
    if (w[i + 1] != "Bytes" || w[i + 2] != "->" || w[i + 3] != "Algo" || w[i + 5] != "proto" ||
        !w[i - 1].ends_with(":") || !w[i + 7].starts_with("channel{Lo..Hi}={")) {
      continue;
    }
    const std::optional<int64_t> bytes = to_integer(w[i]);
    std::string_view range =
        std::string_view(w[i + 7]).substr(std::string_view("channel{Lo..Hi}={").size());
    const size_t dots = range.find("..");
    if (!bytes || dots == std::string_view::npos || !range.ends_with("}")) return std::nullopt;
    const std::optional<int64_t> lo = to_integer(range.substr(0, dots));
    const std::optional<int64_t> hi = to_integer(range.substr(dots + 2, range.size() - dots - 3));
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    return NcclTuningChoice{w[i - 1].substr(0, w[i - 1].size() - 1), *bytes, w[i + 4], w[i + 6],
                            *hi - *lo + 1};
  }
  return std::nullopt;
}

namespace {

// mpirun --tag-output puts "[1,0]<stdout>:" before each line of each rank.
std::string_view without_mpi_tag(std::string_view line) {
  if (!starts_with(line, "[")) return line;
  const size_t close = line.find("]<stdout>:");
  if (close == std::string_view::npos) return line;
  for (const char c : line.substr(1, close - 1)) {
    if (c != ',' && (c < '0' || c > '9')) return line;
  }
  return line.substr(close + std::string_view("]<stdout>:").size());
}

bool is_nccl_debug(std::string_view t) {
  return t.find("NCCL INFO") != std::string_view::npos ||
         t.find("NCCL WARN") != std::string_view::npos;
}

}  // namespace

std::string nccl_tests_op(const std::string& program) {
  if (!program.ends_with("_perf") || program.size() <= 5) return "";
  const std::string op = program.substr(0, program.size() - 5);
  if (op == "alltoall") return "all_to_all";
  if (op == "sendrecv") return "send_recv";
  for (const char* known : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                            "gather", "scatter", "hypercube", "alltoallv"}) {
    if (op == known) return op;
  }
  return "";
}

NcclTestsLog parse_nccl_tests_log(std::string_view text, const std::string& name) {
  NcclTestsLog log;
  const std::vector<LogLine> lines = split_lines(text);
  size_t header_width = 0;  // the table header's columns, when it was printed
  bool footer = false;
  for (const LogLine& l : lines) {
    const std::string_view t = trim(without_mpi_tag(l.text));
    const std::vector<std::string> words = fields_of(t);
    if (is_nccl_debug(t) || starts_with(t, "NCCL version ")) {
      log.info.push_back({static_cast<uint32_t>(l.number), std::string(t.substr(0, 256))});
      read_nccl_debug_line(log, t);
      continue;
    }
    if (starts_with(t, "#")) {
      if (words.size() >= 4 && words[1] == "Collective" && words[2] == "test" &&
          words[3] == "starting:" && words.size() >= 5) {
        log.program = words[4];
      } else if (words.size() >= 4 && words[1] == "nccl-tests" && words[2] == "version") {
        log.tests_version = words[3];
      } else if (words.size() >= 2 && words[1] == "nThread") {
        if (!log.rows.empty())
          fail_at(name, l.number, "one nccl-tests run per log (this line starts another)", l.text);
        header_line(log, words);
      } else if (words.size() >= 2 && words[1] == "Rank") {
        const std::optional<NcclTestsDevice> d = device_line(words);
        if (!d)
          fail_at(name, l.number,
                  "a device line ('#  Rank N [Group G] Pid P on HOST device D [BUS] NAME')",
                  l.text);
        log.devices.push_back(*d);
      } else if (words.size() >= 3 && words[1] == "size" && words[2] == "count") {
        header_width = words.size() - 1;
        if (header_width < 11 || header_width > 13)
          fail_at(name, l.number,
                  "a table header of 11 to 13 columns (size count type [redop [root]] and time "
                  "algbw busbw #wrong twice)",
                  l.text);
      } else if (starts_with(t, "# Out of bounds values")) {
        const size_t colon = t.find(':');
        log.out_of_bounds = std::string(trim(t.substr(colon + 1)));
        footer = true;
      } else if (starts_with(t, "# Avg bus bandwidth")) {
        const size_t colon = t.find(':');
        const std::vector<std::string> v = fields_of(t.substr(colon + 1));
        const std::optional<double> avg = v.empty() ? std::nullopt : to_number(v[0]);
        if (!avg) fail_at(name, l.number, "a number after '# Avg bus bandwidth :'", l.text);
        log.avg_bus_bandwidth = avg;
        footer = true;
      }
      continue;
    }
    const bool in_table = !log.rows.empty() && !footer;
    const bool looks_like_row = !words.empty() && to_integer(words[0]).has_value();
    if (!looks_like_row || footer) {
      if (in_table)
        fail_at(name, l.number, "a result row or the '# Out of bounds values' footer", l.text);
      if (log.program.empty()) log.program = program_in(words);
      continue;
    }
    // A result row: size count type [redop [root]] then time algbw busbw wrong, twice.
    const size_t width = words.size();
    const std::string expected =
        header_width != 0
            ? "a result row of " + std::to_string(header_width) + " columns, as the table header"
            : "a result row of 11, 12 or 13 columns";
    if ((header_width != 0 && width != header_width) || width < 11 || width > 13) {
      fail_at(name, l.number, expected, l.text);
    }
    NcclTestsRow row;
    row.line = l.number;
    const auto integer = [&](size_t i, const char* what) {
      const std::optional<int64_t> v = to_integer(words[i]);
      if (!v)
        fail_at(name, l.number,
                std::string("a whole number (") + what + ") in column " + std::to_string(i + 1),
                l.text);
      return *v;
    };
    const auto number = [&](size_t i, const char* what) {
      const std::optional<double> v = to_number(words[i]);
      if (!v || *v < 0)
        fail_at(name, l.number,
                std::string("a number (") + what + ") in column " + std::to_string(i + 1), l.text);
      return *v;
    };
    row.size = integer(0, "size");
    row.count = integer(1, "count");
    row.type = words[2];
    size_t k = 3;
    if (width >= 12) row.redop = words[k++];
    if (width == 13) row.root = static_cast<int32_t>(integer(k++, "root"));
    row.time_us = number(k, "time");
    row.algbw = number(k + 1, "algbw");
    row.busbw = number(k + 2, "busbw");
    row.wrong = words[k + 3];
    row.in_place_time_us = number(k + 4, "in-place time");
    row.in_place_algbw = number(k + 5, "in-place algbw");
    row.in_place_busbw = number(k + 6, "in-place busbw");
    row.in_place_wrong = words[k + 7];
    log.rows.push_back(row);
  }
  if (log.rows.empty()) {
    fail_at_end(name, static_cast<int>(lines.size()) + 1,
                "an nccl-tests result table (rows of size, count, type, ..., time, algbw, busbw)");
  }
  return log;
}

}  // namespace fabtwin::hw
