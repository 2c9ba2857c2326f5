// `fabtwin import`: perftest and nccl-tests logs into measurement files (docs/measurements.md).
#include "sim/cli/import.h"

#include <boost/program_options.hpp>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "hw/import/log_lines.h"
#include "sim/atomic_file.h"
#include "sim/cli/hdf5_table.h"
#include "sim/cli/report.h"
#include "sim/file_contents.h"
#include "sim/utf8_text.h"

namespace po = boost::program_options;

namespace fabtwin {
namespace {

std::string number_text(double v) {
  std::ostringstream out;
  out << std::setprecision(15) << v;
  return out.str();
}

void property(MeasurementFile& m, const std::string& name, const std::string& value) {
  if (!value.empty()) m.properties.push_back({name, value});
}

void property(MeasurementFile& m, const std::string& name, int64_t value) {
  if (value >= 0) m.properties.push_back({name, std::to_string(value)});
}

std::string read_log(const std::string& path) {
  try {
    return file_contents(path, "log");
  } catch (const std::runtime_error& e) {
    throw hw::LogFormatError(e.what());
  }
}

void write_contents(const MeasurementFile& m, const std::filesystem::path& path,
                    const std::string& run_id) {
  Hdf5File h5(path.string());
  h5.attribute("fabtwin_version", std::string(kVersion));
  h5.attribute("schema_version", int64_t{kHdf5SchemaVersion});
  h5.attribute("source", std::string("hardware"));
  h5.attribute("importer", m.importer);
  h5.attribute("log_file", m.log_file);
  h5.attribute("log_lines", m.log_lines);
  const auto write = [&](const std::string& name, const auto& rows) {
    write_table(h5, name, rows);
  };
  if (!m.collectives.empty()) {
    h5.group("collectives");
    write("collectives/results", m.collectives);
    write("collectives/rank_gpus", m.rank_gpus);
    write("collectives/gpus", m.gpus);
  }
  h5.group("perftest");
  h5.group("hw");
  for_each_measurement_table(m, write);
  h5.attribute("run_id", run_id);
  h5.close();
}

void print_summary(const MeasurementFile& m, std::ostream& out) {
  out << "fabtwin " << kVersion << "  import " << m.importer << "  " << m.log_file << "\n";
  for (const HwProperty& p : m.properties)
    out << "  " << std::left << std::setw(22) << p.name << p.value << "\n";
  if (!m.collectives.empty()) {
    out << "  " << m.collectives.size() << " nccl-tests rows (" << m.collectives[0].op << ")\n";
    out << "  " << std::right << std::setw(12) << "size" << std::setw(12) << "time us"
        << std::setw(10) << "algbw" << std::setw(10) << "busbw\n";
    for (const CollectiveRow& c : m.collectives) {
      out << "  " << std::setw(12) << c.size << std::setw(12) << number_text(c.time_us)
          << std::setw(10) << number_text(c.algbw) << std::setw(10) << number_text(c.busbw) << "\n";
    }
  }
  for (const hw::PerftestRun& r : m.perftest_runs) {
    out << "  " << r.test << "  " << r.title << "  device " << (r.device.empty() ? "?" : r.device)
        << "  link " << (r.link_type.empty() ? "?" : r.link_type) << "\n";
  }
  if (!m.perftest_bandwidth.empty()) {
    out << "  " << std::setw(12) << "bytes" << std::setw(14) << "avg Gb/s" << std::setw(14)
        << "peak Gb/s" << std::setw(12) << "Mpps\n";
    for (const hw::PerftestBandwidthRow& b : m.perftest_bandwidth) {
      out << "  " << std::setw(12) << b.bytes << std::setw(14) << number_text(b.average_bps / 1e9)
          << std::setw(14) << number_text(b.peak_bps / 1e9) << std::setw(12)
          << number_text(b.msg_rate_mpps) << "\n";
    }
  }
  if (!m.perftest_latency.empty()) {
    out << "  " << std::setw(12) << "bytes" << std::setw(14) << "typical us" << std::setw(14)
        << "avg us" << std::setw(12) << "p99 us\n";
    const auto us = [](int64_t ps) { return ps < 0 ? std::string("-") : number_text(ps / 1e6); };
    for (const hw::PerftestLatencyRow& l : m.perftest_latency) {
      out << "  " << std::setw(12) << l.bytes << std::setw(14) << us(l.t_typical_ps)
          << std::setw(14) << us(l.t_avg_ps) << std::setw(12) << us(l.t_p99_ps) << "\n";
    }
  }
}

}  // namespace

MeasurementFile perftest_measurement(const hw::PerftestLog& log, const std::string& file,
                                     int64_t lines) {
  MeasurementFile m;
  m.importer = "perftest";
  m.log_file = file;
  m.log_lines = lines;
  m.perftest_runs = log.runs;
  for (size_t i = 0; i < log.runs.size(); ++i) {
    for (const auto& [name, value] : log.runs[i].settings) {
      m.perftest_settings.push_back({static_cast<uint32_t>(i), name, value});
    }
  }
  m.perftest_bandwidth = log.bandwidth;
  m.perftest_latency = log.latency;
  return m;
}

MeasurementFile nccl_tests_measurement(const hw::NcclTestsLog& log, const std::string& file,
                                       int64_t lines, const std::string& op) {
  const std::string named = hw::nccl_tests_op(log.program);
  if (!op.empty() && !named.empty() && op != named) {
    throw hw::LogFormatError(file + ": --op " + op + " contradicts the log, which ran " +
                             log.program);
  }
  const std::string collective = named.empty() ? op : named;
  if (collective.empty()) {
    throw hw::LogFormatError(file +
                             ": the log does not name its benchmark (no '# Collective test "
                             "starting' line, no *_perf command line): give --op, e.g. "
                             "--op all_reduce");
  }
  MeasurementFile m;
  m.importer = "nccl-tests";
  m.log_file = file;
  m.log_lines = lines;
  property(m, "program", log.program);
  property(m, "nccl_tests_version", log.tests_version);
  property(m, "nccl_version", log.nccl_version);
  property(m, "network", log.network);
  property(m, "nranks", log.nranks);
  property(m, "nnodes", log.nnodes);
  property(m, "channels", log.channels);
  property(m, "algorithm", log.algorithm);
  property(m, "protocol", log.protocol);
  property(m, "threads", log.threads);
  property(m, "gpus_per_thread", log.gpus_per_thread);
  property(m, "warmup_iterations", log.warmup_iterations);
  property(m, "iterations", log.iterations);
  property(m, "agg_iterations", log.agg_iterations);
  property(m, "validation", log.validation);
  property(m, "out_of_bounds", log.out_of_bounds);
  if (log.avg_bus_bandwidth) property(m, "avg_bus_bandwidth", number_text(*log.avg_bus_bandwidth));
  const int ranks =
      !log.devices.empty() ? static_cast<int>(log.devices.size()) : static_cast<int>(log.nranks);
  for (const hw::NcclTestsDevice& d : log.devices) {
    m.gpus.push_back({d.host + "/gpu" + std::to_string(d.device)});
  }
  for (size_t i = 0; i < log.rows.size(); ++i) {
    const hw::NcclTestsRow& r = log.rows[i];
    CollectiveRow c;
    c.op = collective;
    c.algorithm = log.algorithm.empty() ? "unknown" : log.algorithm;
    c.protocol = log.protocol.empty() ? "unknown" : log.protocol;
    c.size = r.size;
    c.count = r.count;
    c.type = r.type;
    c.redop = r.redop;
    c.root = r.root;
    c.ranks = ranks;
    c.channels = static_cast<int>(log.channels);
    c.iterations = static_cast<int>(log.iterations);
    c.time_us = r.time_us;
    c.algbw = r.algbw;
    c.busbw = r.busbw;
    c.start = Time{-1};
    c.end = Time{-1};
    m.collectives.push_back(c);
    for (size_t rank = 0; rank < log.devices.size(); ++rank) {
      m.rank_gpus.push_back(
          {static_cast<uint32_t>(i), static_cast<uint32_t>(rank), static_cast<uint32_t>(rank)});
    }
    m.nccl_tests.push_back({static_cast<uint32_t>(i), r.wrong, r.in_place_time_us, r.in_place_algbw,
                            r.in_place_busbw, r.in_place_wrong, static_cast<uint32_t>(r.line)});
  }
  m.devices = log.devices;
  m.nccl_info = log.info;
  return m;
}

void write_measurement_hdf5(const MeasurementFile& m, const std::filesystem::path& file) {
  const std::string run_id = new_run_id();
  write_atomically(file,
                   [&](const std::filesystem::path& temp) { write_contents(m, temp, run_id); });
}

nlohmann::json measurement_json(const MeasurementFile& m) {
  nlohmann::json j;
  j["fabtwin_version"] = kVersion;
  j["schema_version"] = kHdf5SchemaVersion;
  j["source"] = "hardware";
  j["importer"] = m.importer;
  j["log_file"] = m.log_file;
  j["log_lines"] = m.log_lines;
  const auto table = [&](const std::string& name, const auto& rows) {
    using R = typename std::decay_t<decltype(rows)>::value_type;
    const auto columns = columns_of<R>();
    nlohmann::json list = nlohmann::json::array();
    for (const R& r : rows) list.push_back(record_json(columns, r));
    j["tables"][name] = list;
  };
  if (!m.collectives.empty()) {
    table("collectives/results", m.collectives);
    table("collectives/rank_gpus", m.rank_gpus);
    table("collectives/gpus", m.gpus);
  }
  for_each_measurement_table(m, table);
  return j;
}

int command_import(const std::vector<std::string>& args) {
  po::options_description opts(
      "fabtwin import perftest|nccl-tests LOG [--out FILE.h5] [--json FILE|-] [--op OP]");
  std::string out, json, op;
  opts.add_options()("help,h", "this help")("out", po::value(&out),
                                            "write the measurement file (HDF5)")(
      "json", po::value(&json), "write the tables as JSON to FILE, or to stdout with -")(
      "op", po::value(&op),
      "nccl-tests: the collective (all_reduce, all_gather, ...) when the log does not name it")(
      "format", po::value<std::string>(), "perftest or nccl-tests")("log", po::value<std::string>(),
                                                                    "the log file");
  po::positional_options_description positional;
  positional.add("format", 1).add("log", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (!vm.count("format") || !vm.count("log"))
    throw po::error("give the format and the log: fabtwin import perftest|nccl-tests LOG");
  const std::string format = vm["format"].as<std::string>();
  if (format != "perftest" && format != "nccl-tests") {
    throw po::error("unknown format \"" + format + "\": expected perftest or nccl-tests");
  }
  if (format == "perftest" && !op.empty()) throw po::error("--op is for nccl-tests logs");
  if (!out.empty()) check_writable(out, "--out", OutputKind::Seekable);
  if (!json.empty() && json != "-") check_writable(json, "--json");
  const std::string file = vm["log"].as<std::string>();
  const std::string text = read_log(file);
  const int64_t lines = static_cast<int64_t>(hw::split_lines(text).size());
  const MeasurementFile m =
      format == "perftest"
          ? perftest_measurement(hw::parse_perftest_log(text, file), file, lines)
          : nccl_tests_measurement(hw::parse_nccl_tests_log(text, file), file, lines, op);
  const bool json_to_stdout = json == "-";
  std::ostream& say = json_to_stdout ? std::cerr : std::cout;
  if (!json_to_stdout) print_summary(m, std::cout);
  if (!out.empty()) {
    write_measurement_hdf5(m, out);
    say << "measurements " << out << "\n";
  }
  if (json_to_stdout) {
    std::cout << json_document(measurement_json(m));
  } else if (!json.empty()) {
    write_text_atomically(json, json_document(measurement_json(m)));
  }
  return 0;
}

}  // namespace fabtwin
