#include "hw/run/hw_runner.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <stdexcept>

#include "hw/observe/host_observer.h"
#include "hw/run/hw_measurement.h"
#include "hw/run/tcp_transport.h"
#include "sim/atomic_file.h"
#include "sim/cli/hdf5_table.h"
#include "sim/cli/report.h"
#include "sim/statistics.h"
#include "sim/utf8_text.h"
#ifdef FABTWIN_HW_VERBS
#include "hw/verbs/ibverbs_device.h"
#include "hw/verbs/verbs_transport.h"
#endif
#ifdef FABTWIN_HW_NCCL
#include "hw/nccl/nccl_collectives.h"
#endif

namespace fabtwin::hw {
namespace {

// The address of this host's interface toward `peer` (the control network's root): the source
// address the kernel would use to reach it (a connected UDP socket sends nothing). 127.0.0.1
// when it cannot tell.
std::string address_toward(const std::string& peer) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(peer.c_str(), "9", &hints, &found) != 0 || found == nullptr) return "127.0.0.1";
  std::string address = "127.0.0.1";
  const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    char text[NI_MAXHOST] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        getnameinfo(reinterpret_cast<sockaddr*>(&local), length, text, sizeof text, nullptr, 0,
                    NI_NUMERICHOST) == 0) {
      address = text;
    }
  }
  if (fd >= 0) ::close(fd);
  freeaddrinfo(found);
  return address;
}

std::chrono::milliseconds millis(Time t) {
  return std::chrono::milliseconds(t.ps / 1'000'000'000);
}

std::vector<unsigned char> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}

// Each connection carries `bytes` once, at the start, untimed.
Plan warmup_plan(const Plan& plan, Bytes bytes) {
  Plan warm = plan;
  warm.messages.clear();
  for (const PlannedConnection& c : plan.connections)
    warm.messages.push_back({c.id, c.id, bytes, Time{}});
  return warm;
}

std::string us(double ns) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << ns / 1e3;
  return out.str();
}

void print_summary(const HwMeasurement& m, std::ostream& out) {
  out << "fabtwin-hw " << kVersion << "  " << m.scenario_file << "  (" << m.transport << ", "
      << m.ranks << (m.ranks == 1 ? " process" : " processes") << ", " << m.mapping << ")\n";
  out << "plan        " << m.plan_hash.substr(0, 16) << "\n";
  out << "flows       " << m.flows_completed() << " of " << m.flows.size() << " completed\n";
  std::vector<double> fct;
  int64_t bytes = 0;
  Time last{};
  for (const FlowRecord& f : m.flows) {
    if (!f.completed) continue;
    fct.push_back(static_cast<double>(f.fct().ps) / 1e3);
    bytes += f.spec.size.count;
    last = std::max(last, f.finish);
  }
  if (!fct.empty()) {
    out << "fct us      p50 " << us(percentile(fct, 50)) << "  p99 " << us(percentile(fct, 99))
        << "  max " << us(percentile(fct, 100)) << "\n";
    if (last.ps > 0) {
      out << "goodput     " << std::fixed << std::setprecision(3)
          << static_cast<double>(bytes) * 8 / last.seconds() / 1e9
          << " Gb/s (all completed bytes over the last completion)\n";
    }
  }
  out << "wall        " << std::fixed << std::setprecision(3) << m.wall_seconds << " s\n";
}

// The RDMA device whose counters are read: hw.device, or for the verbs transport the first one
// the kernel lists (the one the transport opens when none is named); none for tcp.
std::string observed_device(const HwConfig& c) {
  if (c.transport != "verbs") return "";
  if (!c.device.empty()) return c.device;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names.empty() ? "" : names.front();
}

// This host's observer, or the reason there is none (an observer that cannot start is noted,
// not fatal: it only reads).
std::unique_ptr<HostObserver> start_observer(const PreparedRun& run, std::string& why) {
  ObserveConfig oc;
  oc.device = observed_device(run.config);
  oc.port = run.config.port;
  oc.rank = run.rank;
  oc.ethtool = !oc.device.empty();
  oc.sample_period = std::max(std::chrono::milliseconds(1), millis(run.config.sample_period));
  try {
    return std::make_unique<HostObserver>(oc);
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

// The observation tables of every rank, each keeping its rows for the file and the JSON.
std::vector<ObservationTable> observation_tables_of(const std::vector<Observation>& all) {
  std::vector<ObservationTable> out;
  for_each_observation_table(all, [&](const std::string& name, const auto& rows) {
    using Rows = std::decay_t<decltype(rows)>;
    using R = typename Rows::value_type;
    out.push_back({name, [name, rows](Hdf5File& h5) { write_table(h5, name, rows); },
                   [rows] {
                     const auto columns = columns_of<R>();
                     nlohmann::json list = nlohmann::json::array();
                     for (const R& r : rows) list.push_back(record_json(columns, r));
                     return list;
                   }});
  });
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> shared_settings(const HwConfig& c) {
  return {{"transport", c.transport},
          {"memory", c.memory},
          {"gid_index", std::to_string(c.gid_index)},
          {"traffic_class", std::to_string(c.traffic_class)},
          {"sl", std::to_string(c.sl)},
          {"tx_depth", std::to_string(c.tx_depth)},
          {"inline_size", std::to_string(c.inline_size)},
          {"warmup", std::to_string(c.warmup.count)},
          {"run_deadline_ps", std::to_string(c.run_deadline.ps)},
          {"start_delay_ps", std::to_string(c.start_delay.ps)}};
}

PreparedRun prepare_run(const RunOptions& options) {
  const ScenarioDocument doc = load_scenario(options.scenario, options.sets);
  PreparedRun run{FabricSpec::resolve(doc), read_hw_config(doc.root), {}, {}, 0, {}};
  run.mapping = resolve_mapping(run.config.hosts, run.spec.topology.hosts, hosts_in_use(run.spec));
  const auto launcher = launcher_rank();
  if (options.rank >= 0) {
    if (launcher && launcher->rank != options.rank) {
      throw std::invalid_argument("--rank " + std::to_string(options.rank) + " contradicts " +
                                  launcher->variables + ", which say rank " +
                                  std::to_string(launcher->rank));
    }
    run.rank = options.rank;
  } else if (launcher) {
    run.rank = launcher->rank;
  } else if (run.mapping.ranks > 1) {
    throw std::invalid_argument(run.mapping.origin + " has " + std::to_string(run.mapping.ranks) +
                                " processes: give this one's --rank (0.." +
                                std::to_string(run.mapping.ranks - 1) +
                                "), or start them with mpirun");
  }
  if (run.rank >= run.mapping.ranks) {
    throw std::invalid_argument("rank " + std::to_string(run.rank) + " is not in the mapping (" +
                                run.mapping.origin + ": ranks 0.." +
                                std::to_string(run.mapping.ranks - 1) + ")");
  }
  if (launcher && launcher->ranks != run.mapping.ranks) {
    throw std::invalid_argument(launcher->variables + " say " + std::to_string(launcher->ranks) +
                                " processes, " + run.mapping.origin + " has " +
                                std::to_string(run.mapping.ranks));
  }
  run.plan = make_plan(run.spec, run.mapping, shared_settings(run.config));
  const std::string& mine = run.mapping.rank_address[static_cast<size_t>(run.rank)];
  run.data_address = !run.config.data_address.empty() ? run.config.data_address
                     : !mine.empty()                  ? mine
                                     : address_toward(control_config(run).root_address);
  return run;
}

ControlConfig control_config(const PreparedRun& run) {
  ControlConfig c;
  c.rank = run.rank;
  c.ranks = run.mapping.ranks;
  c.root_address = !run.config.control_address.empty()    ? run.config.control_address
                   : !run.mapping.rank_address[0].empty() ? run.mapping.rank_address[0]
                                                          : "127.0.0.1";
  c.root_port = static_cast<uint16_t>(run.config.control_port);
  c.bind_address = run.config.bind_address;
  c.run_id = run.plan.hash;
  c.handshake_deadline = millis(run.config.handshake_deadline);
  c.join_deadline = millis(run.config.join_deadline);
  c.call_deadline = millis(run.config.run_deadline) + millis(run.config.join_deadline);
  return c;
}

std::unique_ptr<DataTransport> make_transport(const PreparedRun& run) {
  if (run.config.transport == "tcp") {
    if (run.config.memory != "host") {
      throw std::runtime_error("hw.memory = " + run.config.memory +
                               ": the tcp transport sends from host memory only");
    }
    TcpTransport::Options o;
    o.address = run.data_address;
    o.connect_deadline = millis(run.config.join_deadline);
    return std::make_unique<TcpTransport>(o);
  }
#ifdef FABTWIN_HW_VERBS
  return make_verbs_transport(verbs_settings(run.config, run.plan));
#else
  throw std::runtime_error(
      "hw.transport = verbs: this fabtwin-hw was built without the verbs transport (hw/verbs), "
      "so no RDMA device can be used; use hw.transport = tcp (--set hw.transport=tcp)");
#endif
}

int execute_run(const PreparedRun& run, ControlGroup& control, DataTransport& transport,
                const RunOptions& options, std::ostream& say) {
  const bool root = control.rank() == 0;
  if (root && !options.out.empty()) check_writable(options.out, "--out", OutputKind::Seekable);
  if (root && !options.json.empty() && options.json != "-") check_writable(options.json, "--json");
  // Every process must have made the same plan (the handshake's key names it too).
  const auto hashes = control.allgather(bytes_of(run.plan.hash));
  for (size_t r = 0; r < hashes.size(); ++r) {
    const std::string other(hashes[r].begin(), hashes[r].end());
    if (other != run.plan.hash) {
      throw std::runtime_error("rank " + std::to_string(r) + " made plan " + other.substr(0, 16) +
                               ", this rank (" + std::to_string(control.rank()) + ") " +
                               run.plan.hash.substr(0, 16) +
                               ": the processes were given different scenarios, --set values "
                               "or host mappings");
    }
  }
  const auto wall_start = std::chrono::steady_clock::now();
  transport.connect(run.plan, control);
  const int64_t lead = run.config.start_delay.ps / 1000;
  const int64_t allowed = run.config.run_deadline.ps / 1000;
  if (run.config.warmup.count > 0) {
    const Plan warm = warmup_plan(run.plan, run.config.warmup);
    control.barrier();
    const int64_t start = monotonic_raw_ns() + lead;
    const TransportResult r = transport.run(warm, start, start + allowed);
    int64_t done = 0;
    for (const MessageTiming& t : r.messages) done += t.completed ? 1 : 0;
    if (done != static_cast<int64_t>(r.messages.size())) {
      throw std::runtime_error("the warm-up did not complete within hw.run_deadline (" +
                               std::to_string(done) + " of " + std::to_string(r.messages.size()) +
                               " connections of rank " + std::to_string(control.rank()) + ")");
    }
  }
  std::string observe_error;
  const std::unique_ptr<HostObserver> observer = start_observer(run, observe_error);
  if (observer) {
    observer->before();
    if (run.config.sample_period.ps > 0) observer->start_sampling();
  }
  control.barrier();
  const int64_t start = monotonic_raw_ns() + lead;
  const TransportResult mine = transport.run(run.plan, start, start + allowed);
  if (observer) observer->after();
  // A WRITE's destination cannot tell when the last byte has landed: nobody releases its queue
  // pairs and memory until every rank's messages are done.
  control.barrier();
  transport.close();
  // With the JSON on stdout, whatever else a rank says goes to stderr.
  const bool json_to_stdout = options.json == "-";
  std::ostream& note = json_to_stdout ? std::cerr : say;
  // The collective generators, through NCCL, after the flows.
  CollectiveMeasurement collectives;
  std::string collectives_note;
  if (!run.plan.collectives.empty()) {
#ifdef FABTWIN_HW_NCCL
    NcclRunSettings ns;
    ns.device = run.config.gpu;
    try {
      collectives = run_nccl_collectives(run.spec, control, ns);
    } catch (const NcclRunError& e) {
      // Raised on every rank alike (the runner shares a rank's failure first): the flows'
      // results are still gathered and written.
      collectives_note = std::string("not run: ") + e.what();
    }
#else
    collectives_note = "not run: this fabtwin-hw was built without CUDA and NCCL";
#endif
  }
  // Every rank knows the reason (they stop together) and says it: a rank started by hand on
  // another host would otherwise end silently.
  if (!collectives_note.empty()) {
    note << "fabtwin-hw: the scenario's collectives were " << collectives_note << "\n";
  }
  nlohmann::json report = {{"transport", transport_result_json(mine)}};
  report["observation"] = observer ? observer->take().to_json() : nlohmann::json();
  report["observe_error"] = observe_error;
  const auto gathered = control.gather(bytes_of(report.dump()));
  if (!root) return collectives_note.empty() ? 0 : 1;
  std::vector<TransportResult> results;
  std::vector<Observation> observations;
  std::vector<HwProperty> notes;
  for (size_t r = 0; r < gathered.size(); ++r) {
    const nlohmann::json j =
        nlohmann::json::parse(gathered[r].begin(), gathered[r].end(), nullptr, false);
    if (!j.is_object() || !j.contains("transport")) {
      throw std::runtime_error("rank " + std::to_string(r) + "'s results are not a JSON object");
    }
    results.push_back(transport_result_from_json(j["transport"], static_cast<int>(r)));
    if (j.contains("observation") && j["observation"].is_object()) {
      observations.push_back(Observation::from_json(j["observation"]));
    }
    if (j.contains("observe_error") && j["observe_error"].is_string() &&
        !j["observe_error"].get<std::string>().empty()) {
      notes.push_back({"rank" + std::to_string(r) + ".observe_error",
                       j["observe_error"].get<std::string>().substr(0, 127)});
    }
  }
  HwMeasurement m = assemble_measurement(run.plan, run.spec.flows, results);
  m.observations = observation_tables_of(observations);
  m.collectives = std::move(collectives);
  if (!m.collectives.rows.empty()) {
    m.properties.push_back({"nccl_version", m.collectives.nccl_version});
    m.properties.push_back({"nccl_network", m.collectives.network});
  }
  m.properties.insert(m.properties.end(), notes.begin(), notes.end());
  if (!collectives_note.empty()) {
    m.properties.push_back({"collectives", collectives_note.substr(0, 127)});
  }
  m.scenario_text = run.spec.scenario_text;
  m.scenario_file = run.spec.scenario_file;
  m.seed = run.spec.run.seed;
  m.transport = transport.name();
  m.mapping = run.mapping.origin;
  m.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  m.run_id = new_run_id();
  const std::vector<HwProperty> run_properties{{"transport", transport.name()},
                                               {"mapping", run.mapping.origin},
                                               {"ranks", std::to_string(run.mapping.ranks)},
                                               {"fabtwin_version", kVersion},
                                               {"plan_hash", run.plan.hash}};
  m.properties.insert(m.properties.begin(), run_properties.begin(), run_properties.end());
  for (int r = 0; r < run.mapping.ranks; ++r) {
    std::string hosts;
    for (size_t h = 0; h < run.mapping.host_rank.size(); ++h) {
      if (run.mapping.host_rank[h] == r) hosts += (hosts.empty() ? "" : ",") + std::to_string(h);
    }
    const std::string& address = run.mapping.rank_address[static_cast<size_t>(r)];
    m.properties.push_back(
        {"rank" + std::to_string(r) + ".hosts", (address.empty() ? "" : address + " ") + hosts});
  }
  if (!json_to_stdout) print_summary(m, say);
  if (!options.out.empty()) {
    write_measurement_hdf5(m, options.out);
    note << "results     " << options.out << "\n";
  }
  if (json_to_stdout) {
    say << measurement_json(m).dump(2) << "\n";
  } else if (!options.json.empty()) {
    write_text_atomically(options.json, json_document(measurement_json(m)));
  }
  if (!collectives_note.empty()) return 1;
  if (m.flows_completed() != static_cast<int64_t>(m.flows.size())) {
    note << "fabtwin-hw: " << m.flows.size() - static_cast<size_t>(m.flows_completed()) << " of "
         << m.flows.size() << " flows did not complete within hw.run_deadline\n";
    return 1;
  }
  return 0;
}

#ifdef FABTWIN_HW_VERBS
VerbsSettings verbs_settings(const HwConfig& c, const Plan& plan) {
  VerbsSettings v;
  bool writes = false, sends = false;
  for (const PlannedConnection& pc : plan.connections) {
    (pc.verb == Verb::Send ? sends : writes) = true;
  }
  if (writes && sends) {
    throw std::runtime_error(
        "the scenario's flows use both RDMA WRITE and SEND (their generators' `verb`), and the "
        "verbs transport runs one verb per run: run the two as separate scenarios");
  }
  v.verb = sends ? VerbsVerb::Send : VerbsVerb::Write;
  v.device = c.device;
  v.port = c.port;
  v.gid_index = c.gid_index;
  v.traffic_class = c.traffic_class;
  v.sl = c.sl;
  v.tx_depth = c.tx_depth;
  v.inline_size = c.inline_size;
  v.memory = parse_verbs_memory(c.memory);
  v.gpu = c.gpu >= 0 ? c.gpu : local_rank();
  return v;
}
#endif

std::string check_transport(const PreparedRun& run) {
  make_transport(run);  // a transport this binary lacks is refused here
  if (run.config.transport == "tcp") return "tcp: data listener on " + run.data_address;
#ifdef FABTWIN_HW_VERBS
  const auto provider = make_ibverbs_provider();
  provider->open(run.config.device);
  std::string names;
  for (const std::string& n : provider->device_names()) names += (names.empty() ? "" : ", ") + n;
  return "verbs: " + (run.config.device.empty() ? "the first device" : run.config.device) +
         " opens (devices: " + names + ")";
#else
  return "";
#endif
}

void print_check(const PreparedRun& run, std::ostream& out) {
  const Plan& p = run.plan;
  out << "scenario    " << run.spec.scenario_file << "  (" << run.spec.topology.hosts << " hosts, "
      << run.spec.flows.size() << " flows, " << p.collectives.size() << " collective generators)\n";
  out << "mapping     " << run.mapping.origin << ", " << run.mapping.ranks
      << (run.mapping.ranks == 1 ? " process\n" : " processes\n");
  std::vector<int64_t> sent(static_cast<size_t>(p.ranks), 0), received(sent);
  std::vector<int> out_connections(sent.size(), 0), in_connections(sent.size(), 0);
  for (const PlannedMessage& m : p.messages) {
    sent[p.connections[m.connection].src_rank] += m.size.count;
    received[p.connections[m.connection].dst_rank] += m.size.count;
  }
  for (const PlannedConnection& c : p.connections) {
    ++out_connections[c.src_rank];
    ++in_connections[c.dst_rank];
  }
  for (int r = 0; r < p.ranks; ++r) {
    std::string hosts;
    for (size_t h = 0; h < p.host_rank.size(); ++h) {
      if (p.host_rank[h] != r) continue;
      if (!hosts.empty()) hosts += ',';
      hosts += std::to_string(h);
    }
    const std::string& address = run.mapping.rank_address[static_cast<size_t>(r)];
    out << "  rank " << r << "  " << (address.empty() ? "(launcher)" : address) << "  hosts "
        << (hosts.empty() ? "(none)" : hosts) << "  sends " << format_bytes(Bytes{sent[r]})
        << " on " << out_connections[r] << " connections, receives "
        << format_bytes(Bytes{received[r]}) << " on " << in_connections[r] << "\n";
  }
  out << "plan        " << p.hash << "\n";
  out << "            " << p.connections.size() << " connections (nic.qps_per_flow "
      << p.qps_per_flow << "), " << p.messages.size() << " messages, mtu " << p.mtu_bytes << " B\n";
  for (const PlannedCollective& c : p.collectives) {
    out << "  collective traffic[" << c.generator << "] " << c.op << " " << c.type << ", "
        << c.sizes.size() << " sizes, " << c.hosts.size() << " ranks (run through NCCL)\n";
  }
  for (const auto& [name, value] : p.settings) out << "  " << name << " = " << value << "\n";
  const ControlConfig cc = control_config(run);
  out << "control     " << cc.root_address << ":" << cc.root_port << " (rank 0 binds "
      << (cc.bind_address.empty() ? cc.root_address : cc.bind_address) << ")\n";
}

}  // namespace fabtwin::hw
