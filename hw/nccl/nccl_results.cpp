#include "hw/nccl/nccl_results.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "hw/import/log_lines.h"
#include "sim/cli/record_columns.h"

namespace fabtwin::hw {

const char* nccl_function_name(nccl::Op op) {
  switch (op) {
    case nccl::Op::AllReduce:
      return "AllReduce";
    case nccl::Op::AllGather:
      return "AllGather";
    case nccl::Op::ReduceScatter:
      return "ReduceScatter";
    case nccl::Op::Broadcast:
      return "Broadcast";
    case nccl::Op::Reduce:
      return "Reduce";
    case nccl::Op::AllToAll:
    case nccl::Op::SendRecv:
      return "SendRecv";
  }
  return "?";
}

NcclDebugCapture read_nccl_debug_text(std::string_view text) {
  NcclDebugCapture c;
  for (const LogLine& l : split_lines(text)) {
    const std::string_view t = trim(l.text);
    if (t.find("NCCL INFO") == std::string_view::npos &&
        t.find("NCCL WARN") == std::string_view::npos) {
      continue;
    }
    c.log.info.push_back({static_cast<uint32_t>(l.number), std::string(t.substr(0, 256))});
    read_nccl_debug_line(c.log, t);
    if (auto choice = read_nccl_tuning_line(t)) c.choices.push_back(std::move(*choice));
  }
  return c;
}

CollectiveRow nccl_result_row(const CollectiveSpec& spec, int64_t size,
                              const std::vector<double>& rank_time_us,
                              const std::vector<NcclTuningChoice>& choices) {
  const int ranks = static_cast<int>(rank_time_us.size());
  CollectiveRow r;
  r.generator = spec.generator;
  r.op = nccl::name(spec.op);
  r.size = size;
  r.count = nccl::element_count(spec.op, size, spec.type_bytes, ranks);
  r.type = spec.type;
  r.redop = spec.redop;
  const bool rooted = spec.op == nccl::Op::Broadcast || spec.op == nccl::Op::Reduce;
  r.root = rooted ? spec.root : -1;
  r.ranks = ranks;
  r.gpus.resize(static_cast<size_t>(ranks));  // rank -> its row of /collectives/gpus
  std::iota(r.gpus.begin(), r.gpus.end(), 0u);
  r.iterations = spec.iterations;
  r.time_us =
      ranks == 0 ? 0 : std::accumulate(rank_time_us.begin(), rank_time_us.end(), 0.0) / ranks;
  r.algbw = r.time_us > 0 ? static_cast<double>(size) / (r.time_us * 1e-6) / 1e9 : 0;
  r.busbw = r.algbw * nccl::bus_factor(spec.op, ranks);
  r.algorithm = "unknown";
  r.protocol = "unknown";
  if (spec.op == nccl::Op::AllToAll || spec.op == nccl::Op::SendRecv) {
    r.algorithm = "p2p";
    r.protocol = "Simple";
  }
  const std::string function = nccl_function_name(spec.op);
  for (const NcclTuningChoice& c : choices) {
    if (c.function != function || c.bytes != size) continue;
    r.algorithm = c.algorithm;
    std::transform(r.algorithm.begin(), r.algorithm.end(), r.algorithm.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    r.protocol = c.protocol;
    r.channels = static_cast<int>(c.channels);
  }
  r.start = Time{-1};
  r.end = Time{-1};
  return r;
}

NcclCallCounts nccl_call_counts(nccl::Op op, int64_t size, int type_bytes, int ranks) {
  const int64_t total = size / type_bytes;  // nccl-tests' size: the larger buffer
  switch (op) {
    case nccl::Op::AllGather:
      return {total / ranks, total / ranks * ranks, total / ranks};
    case nccl::Op::ReduceScatter:
      return {total / ranks * ranks, total / ranks, total / ranks};
    case nccl::Op::AllToAll:
      return {total / ranks * ranks, total / ranks * ranks, total / ranks};
    case nccl::Op::AllReduce:
    case nccl::Op::Broadcast:
    case nccl::Op::Reduce:
    case nccl::Op::SendRecv:
      return {total, total, total};
  }
  return {total, total, total};
}

nlohmann::json CollectiveMeasurement::to_json() const {
  nlohmann::json j;
  const auto table = [&](const char* name, const auto& rows) {
    using R = typename std::decay_t<decltype(rows)>::value_type;
    const auto columns = columns_of<R>();
    nlohmann::json list = nlohmann::json::array();
    for (const R& r : rows) list.push_back(record_json(columns, r));
    j[name] = list;
  };
  table("collectives/results", rows);
  table("hw/nccl_rank_times", rank_times);
  j["nccl_version"] = nccl_version;
  j["network"] = network;
  return j;
}

}  // namespace fabtwin::hw
