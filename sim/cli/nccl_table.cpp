#include "sim/cli/nccl_table.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace fabtwin {

std::string nccl_float_text(double value, int width) {
  // util.cu getFloatStr: `power` is the number of digits before the decimal point (0 below 1).
  // The cap only guards the loop against infinities; 10^30 already takes the exponent branch.
  int power = 0;
  for (double val = 1; value >= val && power < 30; val *= 10) ++power;
  char buf[64];
  if (power < width - 2) {
    std::snprintf(buf, sizeof buf, "%*.2f", width, value);
  } else if (power < width - 1) {
    std::snprintf(buf, sizeof buf, "%*.1f", width, value);
  } else if (power < width + 1) {
    std::snprintf(buf, sizeof buf, "%*.0f", width, value);
  } else if (width >= 7) {
    std::snprintf(buf, sizeof buf, "%*.1e", width, value);
  } else {
    std::snprintf(buf, sizeof buf, "%*.0e", width, value);
  }
  return buf;
}

std::string nccl_perf_program(const std::string& op) {
  if (op == "all_to_all") return "alltoall_perf";
  if (op == "send_recv") return "sendrecv_perf";
  return op + "_perf";
}

namespace {

// The distinct values of one column, in row order: "ring", or "tree,ring" when sizes differ.
template <typename Get>
std::string distinct_text(const std::vector<const CollectiveRow*>& rows, Get get) {
  std::vector<std::string> seen;
  for (const CollectiveRow* row : rows) {
    std::string v = get(*row);
    if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(std::move(v));
  }
  std::string text;
  for (const std::string& v : seen) text += (text.empty() ? "" : ",") + v;
  return text;
}

// A number that may differ between sizes: "16", or "2..16" like NCCL's channel{Lo..Hi}.
std::string range_text(const std::vector<int64_t>& values) {
  if (values.empty()) return "?";
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return *lo == *hi ? std::to_string(*lo) : std::to_string(*lo) + ".." + std::to_string(*hi);
}

// Warm-up iterations of each row: the step and transfer records number warm-up iterations first,
// so those past the timed ones are the warm-up. Rows with no records are left out.
std::vector<int64_t> warmup_iterations(const RunResult& r,
                                       const std::vector<uint32_t>& row_indices) {
  std::vector<int64_t> warmups;
  for (uint32_t index : row_indices) {
    int64_t seen = -1;
    for (const CollectiveStepRecord& s : r.collective_steps) {
      if (s.row == index) seen = std::max<int64_t>(seen, s.iteration);
    }
    for (const CollectiveTransferRecord& t : r.collective_transfers) {
      if (t.row == index) seen = std::max<int64_t>(seen, t.iteration);
    }
    if (seen >= 0) {
      warmups.push_back(std::max<int64_t>(0, seen + 1 - r.collectives[index].iterations));
    }
  }
  return warmups;
}

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

std::string nccl_tests_table(const RunResult& r, uint32_t generator) {
  std::vector<const CollectiveRow*> rows;
  std::vector<uint32_t> indices;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    if (r.collectives[i].generator != generator) continue;
    rows.push_back(&r.collectives[i]);
    indices.push_back(static_cast<uint32_t>(i));
  }
  std::ostringstream out;
  if (rows.empty()) return {};

  std::vector<int64_t> ranks, channels, iterations;
  for (const CollectiveRow* row : rows) {
    ranks.push_back(row->ranks);
    channels.push_back(row->channels);
    iterations.push_back(row->iterations);
  }
  out << "# fabtwin simulated "
      << distinct_text(rows, [](const CollectiveRow& c) { return nccl_perf_program(c.op); })
      << "  (NCCL tuning model " << kNcclTuningModelVersion << ", protocol "
      << distinct_text(rows, [](const CollectiveRow& c) { return c.protocol; }) << ")\n";
  out << "# nRanks " << range_text(ranks) << "  algorithm "
      << distinct_text(rows, [](const CollectiveRow& c) { return c.algorithm; }) << "  channels "
      << range_text(channels) << "  iters " << range_text(iterations);
  const std::vector<int64_t> warmups = warmup_iterations(r, indices);
  if (!warmups.empty()) out << "  warmup " << range_text(warmups);
  out << "\n";

  // util.cu writeResultHeader, without timestamps (tsPad 0 leaves the trailing space).
  out << "#\n";
  out << format(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place"
      "          \n",
      "", "", "", "", "");
  out << format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong", 0, "");
  out << format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "", 0, "");

  double busbw_sum = 0;
  for (const CollectiveRow* row : rows) {
    // writeBenchmarkLinePreamble, then writeBenchmarkLineBody with reportErrors off: the
    // simulator moves no data, so there is nothing to check and #wrong is "N/A" as under -c 0.
    // In-place is not simulated (it would be the same traffic): all four of its fields are N/A.
    const std::string root = format("%6i", row->root);
    out << format("%12li  %12li  %8s  %6s  %6s", static_cast<long>(row->size),
                  static_cast<long>(row->count), row->type.c_str(),
                  nccl_redop_text(row->op, row->redop).c_str(), root.c_str());
    out << format("  %7s  %6s  %6s    N/A", nccl_float_text(row->time_us, 7).c_str(),
                  nccl_float_text(row->algbw, 6).c_str(), nccl_float_text(row->busbw, 6).c_str());
    out << format("  %7s  %6s  %6s    N/A", "N/A", "N/A", "N/A");
    out << "\n";
    busbw_sum += row->busbw;
  }
  // writeResultFooter. Its first line, "# Out of bounds values : %d %s", counts rows whose data
  // check failed; with no data there is no check, and a "0 OK" would claim one passed, so it is
  // left out. The average is over the out-of-place rows, the only ones run.
  out << format("# %-20s : %g %s\n", "Avg bus bandwidth",
                busbw_sum / static_cast<double>(rows.size()), "");
  return out.str();
}

void print_collectives(const RunResult& r, std::ostream& out) {
  std::vector<uint32_t> generators;
  for (const CollectiveRow& row : r.collectives) {
    if (std::find(generators.begin(), generators.end(), row.generator) == generators.end()) {
      generators.push_back(row.generator);
    }
  }
  std::sort(generators.begin(), generators.end());
  for (uint32_t g : generators) {
    const auto first = std::find_if(r.collectives.begin(), r.collectives.end(),
                                    [g](const CollectiveRow& row) { return row.generator == g; });
    const auto sizes = std::count_if(r.collectives.begin(), r.collectives.end(),
                                     [g](const CollectiveRow& row) { return row.generator == g; });
    out << "\ncollective  traffic[" << g << "]: " << first->op << " on " << first->ranks
        << (first->ranks == 1 ? " GPU, " : " GPUs, ") << sizes
        << (sizes == 1 ? " size\n" : " sizes\n");
    out << nccl_tests_table(r, g);
    const auto unfinished = std::count_if(
        r.collectives.begin(), r.collectives.end(),
        [g](const CollectiveRow& row) { return row.generator == g && row.time_us <= 0; });
    if (unfinished > 0) {
      out << "WARNING: " << unfinished << (unfinished == 1 ? " size" : " sizes")
          << " did not finish before run.end; their rows show 0 (raise run.end)\n";
    }
  }
}

}  // namespace fabtwin
