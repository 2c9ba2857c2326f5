#include "sim/cli/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "models/fabric/metrics.h"
#include "sim/atomic_file.h"
#include "sim/cli/nccl_table.h"
#include "sim/cli/record_columns.h"
#include "sim/statistics.h"
#include "sim/utf8_text.h"

namespace fabtwin {

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

RunFigures run_figures(const RunResult& r) {
  RunFigures f;
  const FlowSet flows = all_flows(r);
  f.flows = static_cast<int64_t>(flows.size());
  f.completed = completed_count(flows);
  std::vector<double> goodput;
  Time first_start = Time::max(), last_finish{};
  for (const FlowRecord& flow : r.flows) {
    f.timeouts += flow.timeouts;
    f.rate_cuts += flow.rate_cuts;
    first_start = std::min(first_start, flow.spec.start);
    if (flow.completed) {
      goodput.push_back(flow.goodput_bps());
      last_finish = std::max(last_finish, flow.finish);
    }
  }
  if (last_finish > first_start) f.makespan_ps = (last_finish - first_start).ps;
  f.retransmitted = packets_retransmitted(r);
  if (f.completed > 0) {
    f.fct_p50_ps = fct_percentile_ps(flows, 50);
    f.fct_p99_ps = fct_percentile_ps(flows, 99);
    f.fct_max_ps = fct_percentile_ps(flows, 100);
  }
  std::sort(goodput.begin(), goodput.end());
  f.goodput_p50_bps = sorted_percentile(goodput, 50);
  f.goodput_min_bps = sorted_percentile(goodput, 0);
  f.goodput_max_bps = sorted_percentile(goodput, 100);
  f.rate_cuts += r.connection_rate_cuts;
  const PriorityCounters total = counter_totals(r);
  f.drops = total.drops;
  f.drops_egress = total.drops_egress;
  f.drops_headroom = total.drops_headroom;
  f.drops_ttl = total.drops_ttl;
  f.drops_link_down = total.drops_link_down;
  f.drops_unroutable = total.drops_unroutable;
  f.pause_sent = total.pause_sent;
  f.xon_sent = total.xon_sent;
  f.xoff_transitions = total.xoff_transitions;
  f.pause_received = total.pause_received;
  f.paused_ps = static_cast<double>(total.paused_time.ps);
  f.ecn_marks = total.ecn_marks;
  f.cnps_sent = total.cnp_sent;  // flows' and collectives' QPs alike
  f.cnps_received = total.cnp_received;
  f.max_queue_bytes = max_switch_queue_bytes(r);
  for (const PortRecord& p : r.ports) {
    f.ports_with_headroom_overflow += p.total(&PriorityCounters::drops_headroom) > 0;
    f.ports_paused += p.total(&PriorityCounters::paused_time).ps > 0;
  }
  for (const BufferRecord& b : r.buffers) {
    if (b.max_used > f.peak_buffer_bytes || f.peak_buffer_switch.empty()) {
      f.peak_buffer_bytes = b.max_used;
      f.buffer_bytes = b.buffer;
      f.peak_buffer_switch = b.node;
    }
  }
  if (r.wall_seconds > 0) {
    f.events_per_second = static_cast<double>(r.events) / r.wall_seconds;
    f.data_packets_per_second = static_cast<double>(r.data_packets_sent) / r.wall_seconds;
  }
  return f;
}

namespace {

std::string time_text(double ps) {
  char buf[32];
  if (ps >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.3f ms", ps / 1e9);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f us", ps / 1e6);
  }
  return buf;
}
std::string gbps_text(double bps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f Gb/s", bps / 1e9);
  return buf;
}
std::string bytes_text(int64_t b) {
  char buf[32];
  if (b >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(b) / 1e6);
  } else if (b >= 1000) {
    std::snprintf(buf, sizeof buf, "%.1f KB", static_cast<double>(b) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  }
  return buf;
}

// The deadlock detector's findings: each deadlock's cycle, then the pause storms.
void print_deadlocks(const RunResult& r, std::ostream& out) {
  const DeadlockReport& d = r.deadlock;
  if (!d.enabled) return;
  out << "\ndeadlock    ";
  if (d.deadlocks.empty()) {
    out << "none found";
  } else {
    out << d.deadlocks.size() << (d.deadlocks.size() == 1 ? " deadlock" : " deadlocks");
  }
  out << " (a lossless queue paused " << format_time(d.detection_time)
      << " without sending is stuck; checked every " << format_time(d.check_interval) << ")\n";
  size_t queue = 0, flow = 0;
  for (size_t i = 0; i < d.deadlocks.size(); ++i) {
    const DeadlockRecord& k = d.deadlocks[i];
    out << "  cycle     " << k.queues << " queues, formed at "
        << time_text(static_cast<double>(k.formed_at.ps)) << ", found at "
        << time_text(static_cast<double>(k.detected_at.ps)) << ": " << bytes_text(k.bytes_stranded)
        << " stranded, " << k.flows << (k.flows == 1 ? " flow" : " flows") << " stuck; "
        << k.stuck_queues << " stuck queues (" << bytes_text(k.stuck_bytes) << ") wait on it\n";
    for (; queue < d.cycles.size() && d.cycles[queue].deadlock == i; ++queue) {
      const DeadlockQueueRecord& q = d.cycles[queue];
      char line[200];
      std::snprintf(line, sizeof line,
                    "  %-12s p%-3u -> %-12s priority %u, stuck since %s, %s in %lld frames\n",
                    q.node.c_str(), q.port, q.peer.c_str(), q.priority,
                    time_text(static_cast<double>(q.stuck_since.ps)).c_str(),
                    bytes_text(q.bytes).c_str(), static_cast<long long>(q.frames));
      out << line;
    }
    std::string flows;
    size_t shown = 0;
    for (; flow < d.flows.size() && d.flows[flow].deadlock == i; ++flow) {
      if (++shown <= 16) flows.append(" ").append(std::to_string(d.flows[flow].flow));
    }
    if (shown > 16) flows.append(" ... (").append(std::to_string(shown)).append(" in all)");
    if (shown > 0) out << "  flows    " << flows << "\n";
  }
  if (!d.storms.empty()) {
    out << "  storms    " << d.storms.size()
        << " pause storm(s) or tree(s) without a cycle (not a deadlock), by root queue:\n";
    for (size_t i = 0; i < d.storms.size() && i < 8; ++i) {
      const StormRecord& s = d.storms[i];
      char line[220];
      std::snprintf(line, sizeof line,
                    "  %-12s p%-3u -> %-12s priority %u, stuck since %s, found %s..%s, "
                    "%u queues\n",
                    s.node.c_str(), s.port, s.peer.c_str(), s.priority,
                    time_text(static_cast<double>(s.stuck_since.ps)).c_str(),
                    time_text(static_cast<double>(s.first_detected.ps)).c_str(),
                    time_text(static_cast<double>(s.last_detected.ps)).c_str(), s.max_queues);
      out << line;
    }
    if (d.storms.size() > 8) out << "  ... (" << d.storms.size() << " in all)\n";
  }
}

// The detector's findings as JSON: each deadlock with its cycle and flows, and the storms.
nlohmann::json deadlock_json(const RunResult& r) {
  const DeadlockReport& d = r.deadlock;
  nlohmann::json j = {{"enabled", d.enabled},
                      {"detection_time_ps", d.detection_time.ps},
                      {"check_interval_ps", d.check_interval.ps},
                      {"found", !d.deadlocks.empty()}};
  const auto deadlock_columns = columns_of<DeadlockRecord>();
  const auto queue_columns = columns_of<DeadlockQueueRecord>();
  nlohmann::json deadlocks = nlohmann::json::array();
  for (size_t i = 0; i < d.deadlocks.size(); ++i) {
    nlohmann::json k = record_json(deadlock_columns, d.deadlocks[i]);
    k["cycle"] = nlohmann::json::array();
    for (const DeadlockQueueRecord& q : d.cycles) {
      if (q.deadlock != i) continue;
      nlohmann::json row = record_json(queue_columns, q);
      row.erase("deadlock_index");
      k["cycle"].push_back(std::move(row));
    }
    k["flow_ids"] = nlohmann::json::array();
    for (const DeadlockFlowRecord& f : d.flows) {
      if (f.deadlock == i) k["flow_ids"].push_back(f.flow);
    }
    deadlocks.push_back(std::move(k));
  }
  j["deadlocks"] = std::move(deadlocks);
  nlohmann::json storms = nlohmann::json::array();
  const auto storm_columns = columns_of<StormRecord>();
  for (const StormRecord& s : d.storms) storms.push_back(record_json(storm_columns, s));
  j["storms"] = std::move(storms);
  return j;
}

}  // namespace

void print_summary(const RunResult& r, std::ostream& out) {
  const RunFigures f = run_figures(r);
  out << "fabtwin " << kVersion << "  " << r.scenario_file << "\n";
  out << "topology    " << r.topology << ": " << r.hosts << " hosts, " << r.switches
      << (r.switches == 1 ? " switch" : " switches");
  if (!r.gpus.empty()) out << ", " << r.gpus.size() << (r.gpus.size() == 1 ? " GPU" : " GPUs");
  out << "\n";
  out << "run         seed " << r.seed << ", end " << format_time(r.end_time) << ", last event at "
      << time_text(static_cast<double>(r.last_event_time.ps));
  if (f.makespan_ps > 0) {
    out << ", traffic makespan " << time_text(static_cast<double>(f.makespan_ps));
  }
  if (!r.stop_reason.empty()) {
    out << " (stopped at " << time_text(static_cast<double>(r.stop_time.ps))
        << " with traffic pending: " << r.stop_reason << ")";
  } else {
    out << (r.reached_end ? " (stopped at the end time with traffic pending)"
                          : " (all traffic done)");
  }
  out << "\n";

  const bool flows_line = f.flows > 0 || r.collectives.empty();
  if (flows_line) {
    out << "\nflows       " << f.completed << " of " << f.flows << " completed, " << f.retransmitted
        << " packets retransmitted, " << f.timeouts << " ACK timeouts\n";
    const int64_t out_of_sequence = receiver_total(r, &FlowRecord::out_of_sequence);
    const int64_t duplicates = receiver_total(r, &FlowRecord::duplicates);
    if (out_of_sequence > 0 || duplicates > 0) {
      out << "  receivers " << out_of_sequence << " out of sequence, "
          << receiver_total(r, &FlowRecord::naks_sent) << " NAKs, "
          << receiver_total(r, &FlowRecord::sacks_sent) << " SACKs, " << duplicates
          << " duplicates, reorder depth up to " << max_reorder_depth(r) << " packets\n";
    }
    if (const int64_t rnr = receiver_total(r, &FlowRecord::rnr_naks); rnr > 0) {
      out << "  receivers " << rnr << " RNR NAKs (SENDs that found no receive WQE posted)\n";
    }
  }
  if (f.completed > 0) {
    out << "  FCT       p50 " << time_text(f.fct_p50_ps) << "   p99 " << time_text(f.fct_p99_ps)
        << "   max " << time_text(f.fct_max_ps) << "\n";
    out << "  goodput   min " << gbps_text(f.goodput_min_bps) << "   p50 "
        << gbps_text(f.goodput_p50_bps) << "   max " << gbps_text(f.goodput_max_bps) << "\n";
  }
  if (!r.flows.empty() && r.flows.size() <= 16) {
    out << "\n  flow  src  dst        size       start         FCT      goodput  retx\n";
    for (const FlowRecord& fl : r.flows) {
      char line[160];
      std::snprintf(line, sizeof line, "  %4u %4d %4d %11s %11s %11s %12s %5lld\n", fl.spec.id,
                    fl.spec.src, fl.spec.dst, bytes_text(fl.spec.size.count).c_str(),
                    time_text(static_cast<double>(fl.spec.start.ps)).c_str(),
                    fl.completed ? time_text(static_cast<double>(fl.fct().ps)).c_str() : "-",
                    fl.completed ? gbps_text(fl.goodput_bps()).c_str() : "-",
                    static_cast<long long>(fl.packets_retransmitted));
      out << line;
    }
  }

  std::vector<const PortRecord*> ports;
  for (const PortRecord& p : r.ports) {
    if (p.switch_port && p.max_queue_bytes() > 0) ports.push_back(&p);
  }
  std::stable_sort(ports.begin(), ports.end(), [](const PortRecord* a, const PortRecord* b) {
    return a->max_queue_bytes() > b->max_queue_bytes();
  });
  out << (flows_line ? "\n" : "") << "\nports       max switch queue "
      << bytes_text(f.max_queue_bytes) << ", drops " << f.drops << " packets (" << f.drops_egress
      << " lossy over the egress limit, " << f.drops_headroom << " lossless over the headroom";
  if (f.drops_ttl > 0) out << ", " << f.drops_ttl << " TTL expired";
  if (f.drops_link_down > 0) out << ", " << f.drops_link_down << " on down links";
  if (f.drops_unroutable > 0) out << ", " << f.drops_unroutable << " without a route";
  out << ")\n";
  out << "  pfc       " << f.pause_sent << " XOFF frames sent (" << f.xoff_transitions
      << " XOFF transitions, " << f.xon_sent << " XON), " << f.pause_received << " XOFF received; "
      << f.ports_paused << " egress ports paused, " << time_text(f.paused_ps) << " in total\n";
  if (const PriorityCounters t = counter_totals(r); t.watchdog_storms > 0) {
    out << "  watchdog  " << t.watchdog_storms << " pause storms declared, " << t.watchdog_drops
        << " frames dropped\n";
  }
  out << "  ecn       " << f.ecn_marks << " packets marked CE\n";
  out << "  cc        " << r.congestion_control;
  if (r.congestion_control != "none") {
    out << ": " << f.cnps_sent << " CNPs sent, " << f.cnps_received << " received, " << f.rate_cuts
        << " rate cuts";
  }
  out << "\n";
  if (!f.peak_buffer_switch.empty()) {
    out << "  buffer    peak " << bytes_text(f.peak_buffer_bytes) << " of "
        << bytes_text(f.buffer_bytes) << " (" << f.peak_buffer_switch << ")\n";
  }
  if (f.drops_headroom > 0) {
    out << "\nWARNING: PFC headroom overflowed on " << f.ports_with_headroom_overflow
        << " port(s): " << f.drops_headroom
        << " lossless packets were dropped. The headroom is too small for the link's\n"
           "         delay and MTU; raise fabric.switch.headroom or leave it at \"auto\".\n";
  }
  const size_t shown = std::min<size_t>(ports.size(), 8);
  if (shown > 0) {
    out << "  deepest queues (of " << ports.size() << " switch ports that queued):\n";
    for (size_t i = 0; i < shown; ++i) {
      const PortRecord& p = *ports[i];
      char line[160];
      std::snprintf(line, sizeof line, "  %-12s p%-3u -> %-12s max queue %10s  drops %lld\n",
                    p.node.c_str(), p.port, p.peer.c_str(), bytes_text(p.max_queue_bytes()).c_str(),
                    static_cast<long long>(p.drops()));
      out << line;
    }
  }

  const auto links = link_utilization_by_group(r);
  if (!links.empty()) {
    out << "  links     utilization of switch egress ports per sample, by tiers: mean, "
           "max/mean (mean, worst), max/mean over the run\n";
    for (const auto& [group, u] : links) {
      if (u.samples == 0) continue;
      char line[160];
      std::snprintf(line, sizeof line,
                    "  %-12s %3d links  mean %5.1f%%  max/mean %5.2f (worst %5.2f)  run %5.2f\n",
                    group.c_str(), u.links, 100 * u.mean, u.imbalance_mean, u.imbalance_worst,
                    u.imbalance_run);
      out << line;
    }
  }

  print_deadlocks(r, out);
  if (!r.collectives.empty()) print_collectives(r, out);

  if (r.routing != "shortest_path" || r.routing_strategy != "ecmp" || !r.link_events.empty() ||
      !r.unreachable.empty()) {
    out << "\nrouting     " << r.routing << ", strategy " << r.routing_strategy << ", "
        << (r.flowlet_moves > 0 ? std::to_string(r.flowlet_moves) + " flowlet moves, " : "")
        << r.link_events.size() << " link event(s), " << r.route_updates
        << " route update(s) installed\n";
    for (size_t i = 0; i < r.link_events.size() && i < 8; ++i) {
      const LinkEventRecord& e = r.link_events[i];
      out << "  link      " << time_text(static_cast<double>(e.time.ps)) << "  " << e.a << " - "
          << e.b << (e.up ? " up" : " down") << "\n";
    }
    if (r.link_events.size() > 8) out << "  ...       " << r.link_events.size() - 8 << " more\n";
    for (size_t i = 0; i < r.unreachable.size();) {
      const Time from = r.unreachable[i].from;
      size_t j = i;
      std::string pairs;
      for (; j < r.unreachable.size() && r.unreachable[j].from == from; ++j) {
        if (j - i < 6) {
          if (!pairs.empty()) pairs += ", ";
          pairs +=
              std::to_string(r.unreachable[j].src) + "->" + std::to_string(r.unreachable[j].dst);
        }
      }
      out << "  unreachable from " << time_text(static_cast<double>(from.ps)) << ": " << j - i
          << " host pair(s) without a route (" << pairs << (j - i > 6 ? ", ..." : "") << ")\n";
      i = j;
    }
  }

  char partitions[160] = "";
  if (r.partitions > 1) {
    std::snprintf(partitions, sizeof partitions, " (%s, %d links cut%s, windows of %s)",
                  r.partitioner.c_str(), r.cut_links,
                  r.node_nics_together ? ", GPU nodes with their NICs" : "",
                  time_text(static_cast<double>(r.window.ps)).c_str());
  }
  char bursts[80] = "";
  if (r.burst_window.ps > 0) {
    std::snprintf(bursts, sizeof bursts, ", bursts of %s",
                  time_text(static_cast<double>(r.burst_window.ps)).c_str());
  }
  char engine[480];
  std::snprintf(engine, sizeof engine,
                "\nengine      %llu events in %.3f s wall on %d thread(s), %d partition(s)%s%s: "
                "%.2f M events/s, %.0f k data packets/s (%lld data packets)\n",
                static_cast<unsigned long long>(r.events), r.wall_seconds, r.threads, r.partitions,
                partitions, bursts, f.events_per_second / 1e6, f.data_packets_per_second / 1e3,
                static_cast<long long>(r.data_packets_sent));
  out << engine;
  out << "fingerprint " << hex64(r.fingerprint) << "\n";
  if (!r.run_id.empty()) out << "run id      " << r.run_id << "\n";
}

nlohmann::json json_report(const RunResult& r) {
  const RunFigures f = run_figures(r);
  nlohmann::json j;
  j["fabtwin_version"] = kVersion;
  j["run_id"] = r.run_id;
  j["warnings"] = r.warnings;
  j["scenario_file"] = r.scenario_file;
  j["seed"] = r.seed;
  j["fingerprint"] = hex64(r.fingerprint);
  j["events"] = r.events;
  j["end_time_ps"] = r.end_time.ps;
  j["last_event_time_ps"] = r.last_event_time.ps;
  j["reached_end"] = r.reached_end;
  j["stop_reason"] = r.stop_reason;
  j["stop_time_ps"] = r.stop_reason.empty() ? int64_t{-1} : r.stop_time.ps;
  j["topology"] = {{"type", r.topology}, {"hosts", r.hosts}, {"switches", r.switches}};
  j["flows"] = {{"total", f.flows},
                {"completed", f.completed},
                {"makespan_ps", f.makespan_ps},
                {"fct_p50_ps", f.fct_p50_ps},
                {"fct_p99_ps", f.fct_p99_ps},
                {"fct_max_ps", f.fct_max_ps},
                {"goodput_min_bps", f.goodput_min_bps},
                {"packets_retransmitted", f.retransmitted},
                {"timeouts", f.timeouts},
                {"goodput_p50_bps", f.goodput_p50_bps},
                {"goodput_max_bps", f.goodput_max_bps}};
  nlohmann::json flows = nlohmann::json::array();
  const auto flow_columns = columns_of<FlowRecord>();
  for (const FlowRecord& fl : r.flows) flows.push_back(record_json(flow_columns, fl));
  j["flow_records"] = std::move(flows);
  nlohmann::json ports = nlohmann::json::array();
  const auto port_columns = columns_of<PortRecord>();
  for (const PortRecord& p : r.ports) {
    if (p.tx_packets() == 0 && p.drops() == 0 && p.total(&PriorityCounters::pause_sent) == 0)
      continue;
    nlohmann::json port = record_json(port_columns, p);
    port["xoff_sent"] = port["pause_sent"];  // the names these two had before pause_sent and
    port["xoff_received"] = port["pause_received"];  // pause_received, kept for readers
    ports.push_back(std::move(port));
  }
  j["ports"] = {{"drops", f.drops},
                {"drops_egress_limit", f.drops_egress},
                {"drops_headroom_overflow", f.drops_headroom},
                {"max_switch_queue_bytes", f.max_queue_bytes},
                {"ecn_marks", f.ecn_marks}};
  j["pfc"] = {{"xoff_sent", f.pause_sent},
              {"xon_sent", f.xon_sent},
              {"xoff_transitions", f.xoff_transitions},
              {"xoff_received", f.pause_received},
              {"ports_paused", f.ports_paused},
              {"paused_ps", f.paused_ps},
              {"pause_intervals", r.pauses.size()}};
  j["buffer"] = {{"peak_bytes", f.peak_buffer_bytes}, {"switch", f.peak_buffer_switch}};
  j["congestion_control"] = {{"algorithm", r.congestion_control},
                             {"cnps_sent", f.cnps_sent},
                             {"cnps_received", f.cnps_received},
                             {"rate_cuts", f.rate_cuts}};
  j["port_records"] = std::move(ports);
  nlohmann::json link_events = nlohmann::json::array();
  for (const LinkEventRecord& e : r.link_events) {
    link_events.push_back(
        {{"time_ps", e.time.ps}, {"a", e.a}, {"b", e.b}, {"state", e.up ? "up" : "down"}});
  }
  nlohmann::json unreachable = nlohmann::json::array();
  for (const UnreachableRecord& u : r.unreachable) {
    unreachable.push_back({{"from_ps", u.from.ps}, {"src", u.src}, {"dst", u.dst}});
  }
  nlohmann::json link_groups = nlohmann::json::object();
  for (const auto& [group, u] : link_utilization_by_group(r)) {
    link_groups[group] = {{"links", u.links},
                          {"samples", u.samples},
                          {"mean", u.mean},
                          {"imbalance_mean", u.imbalance_mean},
                          {"imbalance_worst", u.imbalance_worst},
                          {"imbalance_run", u.imbalance_run}};
  }
  j["link_utilization"] = std::move(link_groups);
  j["routing"] = {{"algorithm", r.routing},
                  {"strategy", r.routing_strategy},
                  {"flowlet_moves", r.flowlet_moves},
                  {"drops_ttl", f.drops_ttl},
                  {"drops_link_down", f.drops_link_down},
                  {"drops_unroutable", f.drops_unroutable},
                  {"link_events", std::move(link_events)},
                  {"route_updates", r.route_updates},
                  {"unreachable", std::move(unreachable)}};
  j["engine"] = {{"data_packets_sent", r.data_packets_sent},
                 {"threads", r.threads},
                 {"partitions", r.partitions},
                 {"partitioner", r.partitioner},
                 {"cut_links", r.cut_links},
                 {"window_ps", r.partitions > 1 ? r.window.ps : 0},
                 {"node_nics_together", r.node_nics_together},
                 {"burst_window_ps", r.burst_window.ps},
                 {"wall_seconds", r.wall_seconds},
                 {"events_per_second", f.events_per_second},
                 {"data_packets_per_second", f.data_packets_per_second}};
  if (!r.collectives.empty()) {
    nlohmann::json collectives = nlohmann::json::array();
    const auto columns = columns_of<CollectiveRow>();
    for (const CollectiveRow& c : r.collectives) collectives.push_back(record_json(columns, c));
    j["collectives"] = std::move(collectives);
  }
  j["deadlock"] = deadlock_json(r);
  j["metrics"] = metrics_json(r);
  return j;
}

void write_json_report(const RunResult& r, const std::filesystem::path& file) {
  write_text_atomically(file, json_document(json_report(r)));
}

}  // namespace fabtwin
