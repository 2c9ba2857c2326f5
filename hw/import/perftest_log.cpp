#include "hw/import/perftest_log.h"

#include <array>
#include <cmath>
#include <optional>

#include "hw/import/log_lines.h"

namespace fabtwin::hw {
namespace {

// The columns perftest prints, by the label of its table header.
enum class Column {
  Bytes,
  Sl,
  Iterations,
  BwPeak,
  BwAverage,
  MsgRate,
  PortBw,
  PortMsgRate,
  TMin,
  TMax,
  TTypical,
  TAvg,
  TStdev,
  P99,
  P999,
  Tps,
  CpuUtil
};

struct Label {
  const char* text;
  Column column;
};

// Longest first where one label begins another.
constexpr std::array kLabels{
    Label{"#bytes", Column::Bytes},
    Label{"#sl", Column::Sl},
    Label{"#iterations", Column::Iterations},
    Label{"BW peak[MB/sec]", Column::BwPeak},
    Label{"BW peak[MiB/sec]", Column::BwPeak},
    Label{"BW peak[Gb/sec]", Column::BwPeak},
    Label{"BW average[MB/sec]", Column::BwAverage},
    Label{"BW average[MiB/sec]", Column::BwAverage},
    Label{"BW average[Gb/sec]", Column::BwAverage},
    Label{"MsgRate[Mpps]", Column::MsgRate},
    Label{"BW Port1[MB/sec]", Column::PortBw},
    Label{"BW Port1[MiB/sec]", Column::PortBw},
    Label{"BW Port1[Gb/sec]", Column::PortBw},
    Label{"BW Port2[MB/sec]", Column::PortBw},
    Label{"BW Port2[MiB/sec]", Column::PortBw},
    Label{"BW Port2[Gb/sec]", Column::PortBw},
    Label{"MsgRate Port1[Mpps]", Column::PortMsgRate},
    Label{"MsgRate Port2[Mpps]", Column::PortMsgRate},
    Label{"t_min[usec]", Column::TMin},
    Label{"t_max[usec]", Column::TMax},
    Label{"t_typical[usec]", Column::TTypical},
    Label{"t_avg[usec]", Column::TAvg},
    Label{"t_stdev[usec]", Column::TStdev},
    Label{"99.9% percentile[usec]", Column::P999},
    Label{"99% percentile[usec]", Column::P99},
    Label{"tps average", Column::Tps},
    Label{"CPU_Util[%]", Column::CpuUtil},
};

bool is_separator(std::string_view line) {
  const std::string_view t = trim(line);
  return t.size() >= 20 && t.find_first_not_of('-') == std::string_view::npos;
}

// A table header: its columns, or nothing when the line is not one.
std::optional<std::vector<Column>> table_header(std::string_view line, std::string& unit) {
  std::string_view rest = trim(line);
  if (!starts_with(rest, "#bytes")) return std::nullopt;
  std::vector<Column> columns;
  while (!rest.empty()) {
    bool found = false;
    for (const Label& l : kLabels) {
      if (starts_with(rest, l.text)) {
        columns.push_back(l.column);
        const std::string_view label = l.text;
        if (const size_t open = label.find('[');
            open != std::string_view::npos && (l.column == Column::BwAverage)) {
          unit = std::string(label.substr(open + 1, label.size() - open - 2));
        }
        rest = trim(rest.substr(label.size()));
        found = true;
        break;
      }
    }
    if (!found) return std::nullopt;
  }
  return columns;
}

// Perftest's own remarks between or after result rows.
bool is_remark(std::string_view line) {
  const std::string_view t = trim(line);
  return starts_with(t, "Conflicting CPU frequency") || starts_with(t, "WARNING") ||
         starts_with(t, "Warning");
}

// "RDMA_Write BW Test" and the like: the test it names, or nothing.
std::optional<PerftestRun> title(std::string_view line) {
  const std::string_view t = trim(line);
  const bool bw = t.ends_with(" BW Test"), lat = t.ends_with(" Latency Test");
  if (!bw && !lat) return std::nullopt;
  std::string verb;
  if (starts_with(t, "RDMA_Write")) verb = "write";
  if (starts_with(t, "RDMA_Read")) verb = "read";
  if (starts_with(t, "Send")) verb = "send";
  if (starts_with(t, "Atomic")) verb = "atomic";
  if (verb.empty()) return std::nullopt;
  PerftestRun run;
  run.title = std::string(t);
  run.test = "ib_" + verb + (bw ? "_bw" : "_lat");
  run.bidirectional = t.find("Bidirectional") != std::string_view::npos;
  return run;
}

// A number at the start of a setting's value: "4096[B]" -> 4096.
int64_t leading_integer(const std::string& value) {
  size_t n = 0;
  while (n < value.size() && value[n] >= '0' && value[n] <= '9') ++n;
  return n == 0 ? -1 : to_integer(std::string_view(value).substr(0, n)).value_or(-1);
}

void apply_setting(PerftestRun& run, const std::string& key, const std::string& value) {
  run.settings.emplace_back(key, value);
  if (key == "Device") run.device = value;
  if (key == "Link type") run.link_type = value;
  if (key == "Transport type") run.transport = value;
  if (key == "Connection type") run.connection = value;
  if (key == "Mtu") run.mtu_bytes = leading_integer(value);
  if (key == "GID index") run.gid_index = leading_integer(value);
  if (key == "Number of qps") run.qps = leading_integer(value);
  if (key == "TX depth") run.tx_depth = leading_integer(value);
  if (key == "Max inline data") run.inline_bytes = leading_integer(value);
  if (key == "CQ Moderation") run.cq_moderation = leading_integer(value);
  if (key == "Post List") run.post_list = leading_integer(value);
  if (key == "Outstand reads") run.outstanding_reads = leading_integer(value);
  if (key == "rdma_cm QPs") run.rdma_cm = value;
  if (key == "Data ex. method") run.data_exchange = value;
}

// " Dual-port       : OFF\t\tDevice         : mlx5_0": every "name : value" pair on the line
// (values are single words). False when the line holds none.
bool settings_line(PerftestRun& run, std::string_view line) {
  if (line.find(':') == std::string_view::npos) return false;
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t colon; (colon = line.find(':', start)) != std::string_view::npos;) {
    parts.push_back(line.substr(start, colon - start));
    start = colon + 1;
  }
  parts.push_back(line.substr(start));
  std::string key(trim(parts[0]));
  if (key.empty()) return false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::vector<std::string> words = fields_of(parts[i]);
    if (words.empty()) return false;
    const bool last = i + 1 == parts.size();
    if (last && words.size() != 1) return false;
    apply_setting(run, key, words[0]);
    const std::string_view after = trim(parts[i]).substr(words[0].size());
    key = std::string(trim(after));
    if (!last && key.empty()) return false;
  }
  return true;
}

// " local address: LID 0000 QPN 0x0108 PSN 0x63ad7d RKey 0x17eedf VAddr 0x007f760c947000"
void address_line(PerftestAddress& a, const std::vector<std::string>& words) {
  for (size_t i = 2; i + 1 < words.size(); i += 2) {
    const std::string& k = words[i];
    std::string v = words[i + 1];
    if (v.ends_with(',')) v.pop_back();  // older perftest: "LID 0x02, QPN 0x70004b, ..."
    if (k == "LID") a.lid = v;
    if (k == "QPN") a.qpn = v;
    if (k == "PSN") a.psn = v;
    if (k == "RKey") a.rkey = v;
    if (k == "VAddr") a.vaddr = v;
  }
}

double bits_per_second(double value, const std::string& unit) {
  return unit == "Gb/sec" ? value * 1e9 : value * 1048576.0 * 8;
}

int64_t picoseconds(double us) {
  return std::llround(us * 1e6);
}

// One row of a result table, its words checked against the table's columns.
struct TableRow {
  const std::string& log;
  const LogLine& line;
  const std::vector<std::string>& words;
  const std::string& expected;

  double number(size_t i) const {
    const std::optional<double> v = to_number(words[i]);
    if (!v || *v < 0) fail_at(log, line.number, expected, line.text);
    return *v;
  }
  int64_t integer(size_t i) const {
    number(i);
    const std::optional<int64_t> v = to_integer(words[i]);
    if (!v)
      fail_at(log, line.number, "a whole number in column " + std::to_string(i + 1), line.text);
    return *v;
  }
};

PerftestBandwidthRow bandwidth_row(const TableRow& r, const std::vector<Column>& columns,
                                   const std::string& unit, const std::string& test, uint32_t run) {
  PerftestBandwidthRow row;
  row.run = run;
  row.test = test;
  row.line = r.line.number;
  for (size_t i = 0; i < columns.size(); ++i) {
    const double value = r.number(i);
    switch (columns[i]) {
      case Column::Bytes:
        row.bytes = r.integer(i);
        break;
      case Column::Sl:
        row.sl = static_cast<int32_t>(r.integer(i));
        break;
      case Column::Iterations:
        row.iterations = r.integer(i);
        break;
      case Column::BwPeak:
        row.peak_bps = bits_per_second(value, unit);
        break;
      case Column::BwAverage:
        row.average_bps = bits_per_second(value, unit);
        break;
      case Column::MsgRate:
        row.msg_rate_mpps = value;
        break;
      default:
        break;  // per-port columns, CPU utilization
    }
  }
  return row;
}

PerftestLatencyRow latency_row(const TableRow& r, const std::vector<Column>& columns,
                               const std::string& test, uint32_t run) {
  PerftestLatencyRow row;
  row.run = run;
  row.test = test;
  row.line = r.line.number;
  for (size_t i = 0; i < columns.size(); ++i) {
    const int64_t ps = picoseconds(r.number(i));
    switch (columns[i]) {
      case Column::Bytes:
        row.bytes = r.integer(i);
        break;
      case Column::Iterations:
        row.iterations = r.integer(i);
        break;
      case Column::TMin:
        row.t_min_ps = ps;
        break;
      case Column::TMax:
        row.t_max_ps = ps;
        break;
      case Column::TTypical:
        row.t_typical_ps = ps;
        break;
      case Column::TAvg:
        row.t_avg_ps = ps;
        break;
      case Column::TStdev:
        row.t_stdev_ps = ps;
        break;
      case Column::P99:
        row.t_p99_ps = ps;
        break;
      case Column::P999:
        row.t_p999_ps = ps;
        break;
      default:
        break;  // transactions per second, CPU utilization
    }
  }
  return row;
}

}  // namespace

PerftestLog parse_perftest_log(std::string_view text, const std::string& name) {
  PerftestLog log;
  const std::vector<LogLine> lines = split_lines(text);
  std::optional<std::vector<Column>> table;  // the columns of the table being read
  std::string unit;
  size_t table_rows = 0;
  PerftestAddress* last_address = nullptr;
  int table_line = 0;
  bool table_seen = false;  // the current run's table has begun
  const auto end_table = [&](const LogLine& at) {
    if (table && table_rows == 0) fail_at(name, at.number, "a result row", at.text);
    table.reset();
  };
  for (const LogLine& l : lines) {
    const std::string_view t = trim(l.text);
    if (table) {
      if (is_remark(t)) continue;
      if (t.empty() || is_separator(t)) {
        end_table(l);
        continue;
      }
      const std::vector<std::string> words = fields_of(t);
      const std::vector<Column>& columns = *table;
      const std::string expected = "a result row of " + std::to_string(columns.size()) +
                                   " numbers (the table header is line " +
                                   std::to_string(table_line) + ")";
      if (words.size() != columns.size()) fail_at(name, l.number, expected, l.text);
      const TableRow row{name, l, words, expected};
      PerftestRun& run = log.runs.back();
      const uint32_t index = static_cast<uint32_t>(log.runs.size() - 1);
      if (run.test.ends_with("_bw")) {
        log.bandwidth.push_back(bandwidth_row(row, columns, unit, run.test, index));
      } else {
        log.latency.push_back(latency_row(row, columns, run.test, index));
      }
      ++table_rows;
      continue;
    }
    if (std::optional<PerftestRun> run = title(t)) {
      log.runs.push_back(std::move(*run));
      last_address = nullptr;
      table_seen = false;
      continue;
    }
    if (starts_with(t, "#bytes")) {
      if (log.runs.empty())
        fail_at(name, l.number,
                "a perftest banner (e.g. 'RDMA_Write BW Test') before the result table", l.text);
      std::string header_unit;
      table = table_header(t, header_unit);
      if (!table)
        fail_at(name, l.number,
                "a perftest table header (#bytes #iterations BW peak[..] ... or t_min[usec] ...)",
                l.text);
      PerftestRun& run = log.runs.back();
      const bool bw_table = header_unit.size() > 0;
      if (bw_table != run.test.ends_with("_bw")) {
        fail_at(name, l.number,
                std::string("the ") + (bw_table ? "latency" : "bandwidth") + " table of '" +
                    run.title + "'",
                l.text);
      }
      unit = header_unit;
      run.bandwidth_unit = header_unit;
      table_rows = 0;
      table_line = l.number;
      table_seen = true;
      continue;
    }
    if (log.runs.empty()) continue;  // shell prompts, server banners, warnings before the test
    PerftestRun& run = log.runs.back();
    const std::vector<std::string> words = fields_of(t);
    if (words.size() >= 2 && (words[0] == "local" || words[0] == "remote") &&
        words[1] == "address:") {
      PerftestAddress& a = words[0] == "local" ? run.local : run.remote;
      address_line(a, words);
      last_address = &a;
      continue;
    }
    if (words.size() == 2 && words[0] == "GID:" && last_address != nullptr) {
      last_address->gid = words[1];
      continue;
    }
    if (!table_seen) settings_line(run, l.text);  // the banner: up to the table
  }
  const int end = static_cast<int>(lines.size()) + 1;
  if (table && table_rows == 0) fail_at_end(name, end, "a result row");
  if (log.bandwidth.empty() && log.latency.empty()) {
    fail_at_end(name, end, "a perftest result table (a '#bytes ...' header and its rows)");
  }
  return log;
}

}  // namespace fabtwin::hw
