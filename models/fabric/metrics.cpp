#include "models/fabric/metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/params.h"
#include "sim/statistics.h"

namespace fabtwin {

// --- Flows ---------------------------------------------------------------------------------------

FlowSet all_flows(const RunResult& r) {
  FlowSet flows;
  for (const FlowRecord& f : r.flows) flows.push_back(&f);
  return flows;
}

std::map<std::string, FlowSet> flows_by_generator(const RunResult& r) {
  std::map<std::string, FlowSet> groups;
  for (const FlowRecord& f : r.flows) groups[std::to_string(f.spec.generator)].push_back(&f);
  return groups;
}

const char* size_bucket(Bytes size) {
  if (size.count <= 10'000) return "<=10KB";
  if (size.count <= 100'000) return "<=100KB";
  if (size.count <= 1'000'000) return "<=1MB";
  if (size.count <= 10'000'000) return "<=10MB";
  return ">10MB";
}

std::map<std::string, FlowSet> flows_by_size(const RunResult& r) {
  std::map<std::string, FlowSet> groups;
  for (const FlowRecord& f : r.flows) groups[size_bucket(f.spec.size)].push_back(&f);
  return groups;
}

int64_t completed_count(const FlowSet& flows) {
  int64_t n = 0;
  for (const FlowRecord* f : flows) n += f->completed ? 1 : 0;
  return n;
}

namespace {

// `value` of each completed flow; throws when none completed.
template <class Value>
std::vector<double> of_completed(const FlowSet& flows, Value value) {
  std::vector<double> values;
  for (const FlowRecord* f : flows) {
    if (f->completed) values.push_back(value(*f));
  }
  if (values.empty()) throw std::runtime_error("no flow completed");
  return values;
}

void require_completed(const FlowRecord& f) {
  if (!f.completed)
    throw std::runtime_error("flow " + std::to_string(f.spec.id) + " did not complete");
}

}  // namespace

double fct_percentile_ps(const FlowSet& flows, double q) {
  return percentile(
      of_completed(flows, [](const FlowRecord& f) { return static_cast<double>(f.fct().ps); }), q);
}

std::vector<BitsPerSec> host_line_rates(const RunResult& r) {
  std::vector<BitsPerSec> rates;
  for (size_t i = 0; i < r.ports.size(); ++i) {
    if (i > 0 && r.ports[i].node == r.ports[i - 1].node)
      continue;                         // ports are listed node by node,
    if (r.ports[i].switch_port) break;  // hosts first
    rates.push_back(r.ports[i].rate);
  }
  return rates;
}

namespace {
Time ideal_fct(const std::vector<BitsPerSec>& rates, const FlowRecord& f) {
  const auto src = static_cast<size_t>(f.spec.src);
  if (src >= rates.size() || rates[src].bps <= 0) {
    throw std::runtime_error("no line rate for host " + std::to_string(f.spec.src));
  }
  return serialization_delay(f.spec.size, rates[src]);
}
}  // namespace

Time ideal_fct(const RunResult& r, const FlowRecord& f) {
  return ideal_fct(host_line_rates(r), f);
}

double slowdown_percentile(const RunResult& r, const FlowSet& flows, double q) {
  const std::vector<BitsPerSec> rates = host_line_rates(r);
  return percentile(of_completed(flows,
                                 [&](const FlowRecord& f) {
                                   return static_cast<double>(f.fct().ps) /
                                          static_cast<double>(ideal_fct(rates, f).ps);
                                 }),
                    q);
}

double goodput_bps(const FlowSet& flows) {
  Time first = Time::max(), last{};
  double bits = 0;
  for (const FlowRecord* f : flows) {
    if (!f->completed) continue;
    first = std::min(first, f->spec.start);
    last = std::max(last, f->finish);
    bits += 8.0 * static_cast<double>(f->spec.size.count);
  }
  if (first == Time::max()) throw std::runtime_error("no flow completed");
  return bits / (last - first).seconds();
}

double throughput_bps(const RunResult& r, const FlowSet& flows) {
  if (flows.empty()) throw std::runtime_error("no flows");
  Time first = Time::max();
  double bits = 0;
  for (const FlowRecord* f : flows) {
    first = std::min(first, f->spec.start);
    bits += 8.0 * static_cast<double>(f->bytes_received);
  }
  if (r.last_event_time <= first) throw std::runtime_error("no time after the first flow's start");
  return bits / (r.last_event_time - first).seconds();
}

double aggregate_goodput_bps(const RunResult& r) {
  for (const FlowRecord& f : r.flows) require_completed(f);
  return goodput_bps(all_flows(r));
}

double jain_index_of_goodputs(const RunResult& r) {
  std::vector<double> goodput;
  for (const FlowRecord& f : r.flows) {
    require_completed(f);
    goodput.push_back(f.goodput_bps());
  }
  return jain_index(goodput);
}

const FlowRecord& completed_flow(const RunResult& r, int64_t id) {
  if (id < 0 || id >= static_cast<int64_t>(r.flows.size())) {
    throw ScenarioError("metric.flow", "no flow " + std::to_string(id) + " in the run");
  }
  require_completed(r.flows[id]);
  return r.flows[id];
}

// --- Congestion-control rates
// ---------------------------------------------------------------------

std::vector<double> mean_rates_bps(const RunResult& r, Time after) {
  std::vector<double> sum(r.flows.size(), 0.0);
  std::vector<int64_t> n(r.flows.size(), 0);
  for (const RateSampleRecord& s : r.rate_samples) {
    if (s.time < after) continue;
    sum[s.flow] += static_cast<double>(s.rate_bps);
    ++n[s.flow];
  }
  std::vector<double> mean;
  for (size_t f = 0; f < sum.size(); ++f) {
    if (n[f] > 0) mean.push_back(sum[f] / static_cast<double>(n[f]));
  }
  if (mean.empty()) throw std::runtime_error("no rate samples after " + format_time(after));
  return mean;
}

double jain_index_of_rates(const RunResult& r, Time after) {
  return jain_index(mean_rates_bps(r, after));
}

Time rate_convergence_time(const RunResult& r) {
  Time converged_at{-1};
  size_t i = 0;
  while (i < r.rate_samples.size()) {
    const Time t = r.rate_samples[i].time;
    std::vector<double> rates;
    for (; i < r.rate_samples.size() && r.rate_samples[i].time == t; ++i) {
      rates.push_back(static_cast<double>(r.rate_samples[i].rate_bps));
    }
    if (rates.size() < 2) continue;
    if (jain_index(rates) >= 0.95) {
      if (converged_at.ps < 0) converged_at = t;
    } else {
      converged_at = Time{-1};
    }
  }
  if (converged_at.ps < 0) throw std::runtime_error("the rates never converged (Jain >= 0.95)");
  return converged_at;
}

// --- Ports, queues, PFC -------------------------------------------------------------------------

uint32_t port_index(const RunResult& r, const std::string& node, uint32_t port) {
  for (uint32_t i = 0; i < r.ports.size(); ++i) {
    if (r.ports[i].node == node && r.ports[i].port == port) return i;
  }
  throw ScenarioError("metric.port", "no port " + std::to_string(port) + " on " + node);
}

std::string port_name(const PortRecord& p) {
  return p.node + ":" + std::to_string(p.port);
}

double mean_queue_bytes(const RunResult& r, uint32_t port, Time after) {
  double sum = 0;
  int64_t n = 0;
  for (const QueueDepthSample& s : r.queue_samples) {
    if (s.port == port && s.time >= after) {
      sum += static_cast<double>(s.bytes);
      ++n;
    }
  }
  if (n == 0) {
    throw std::runtime_error("no queue samples of " + r.ports.at(port).node + " port " +
                             std::to_string(r.ports.at(port).port) + " after " +
                             format_time(after));
  }
  return sum / static_cast<double>(n);
}

std::vector<Time> queue_delays(const RunResult& r, uint32_t port, Time after) {
  const BitsPerSec rate = r.ports.at(port).rate;
  std::vector<Time> delays;
  for (const QueueDepthSample& s : r.queue_samples) {
    if (s.port == port && s.time >= after)
      delays.push_back(serialization_delay(Bytes{s.bytes}, rate));
  }
  if (delays.empty()) {
    throw std::runtime_error("no queue samples of " + port_name(r.ports.at(port)) + " after " +
                             format_time(after));
  }
  std::sort(delays.begin(), delays.end());
  return delays;
}

double mean_queue_delay_us(const RunResult& r, uint32_t port, Time after) {
  const std::vector<Time> d = queue_delays(r, port, after);
  double sum = 0;
  for (const Time t : d) sum += static_cast<double>(t.ps);
  return sum / static_cast<double>(d.size()) / 1e6;
}

double queue_delay_quantile_us(const RunResult& r, uint32_t port, Time after, double quantile) {
  if (!(quantile >= 0 && quantile <= 1)) {
    throw ScenarioError("metric.quantile",
                        "expected a quantile between 0 and 1, found " + std::to_string(quantile));
  }
  const std::vector<Time> d = queue_delays(r, port, after);
  const auto i =
      std::min(d.size() - 1, static_cast<size_t>(quantile * static_cast<double>(d.size())));
  return static_cast<double>(d[i].ps) / 1e6;
}

double mean_max_queue_bytes(const RunResult& r, const std::string& node,
                            const std::vector<uint32_t>& ports) {
  if (ports.empty()) throw ScenarioError("metric.ports", "no ports listed");
  double sum = 0;
  for (uint32_t port : ports) {
    sum += static_cast<double>(r.ports[port_index(r, node, port)].max_queue_bytes());
  }
  return sum / static_cast<int>(ports.size());
}

MetricGroups mean_queue_bytes_by_port(const RunResult& r) {
  std::vector<double> sum(r.ports.size(), 0.0);
  std::vector<int64_t> n(r.ports.size(), 0);
  for (const QueueDepthSample& s : r.queue_samples) {
    sum.at(s.port) += static_cast<double>(s.bytes);
    ++n[s.port];
  }
  MetricGroups out;
  for (size_t p = 0; p < r.ports.size(); ++p) {
    if (n[p] > 0) out[port_name(r.ports[p])] = sum[p] / static_cast<double>(n[p]);
  }
  return out;
}

double mean_switch_queue_bytes(const RunResult& r) {
  const MetricGroups by_port = mean_queue_bytes_by_port(r);
  double sum = 0;
  int64_t n = 0;
  for (const PortRecord& p : r.ports) {
    const auto it = by_port.find(port_name(p));
    if (!p.switch_port || it == by_port.end()) continue;
    sum += it->second;
    ++n;
  }
  if (n == 0) throw std::runtime_error("no queue samples of any switch port");
  return sum / static_cast<double>(n);
}

int64_t max_switch_queue_bytes(const RunResult& r) {
  int64_t m = 0;
  for (const PortRecord& p : r.ports) {
    if (p.switch_port) m = std::max(m, p.max_queue_bytes());
  }
  return m;
}

std::map<std::string, LinkGroupUtilization> link_utilization_by_group(const RunResult& r) {
  struct Interval {
    double sum = 0, max = 0;
    int links = 0;
  };
  // Per group: per sample time, the links' sum and max; per port, busy fraction x time.
  std::map<std::string, std::map<int64_t, Interval>> intervals;
  std::map<uint32_t, std::pair<double, double>> per_port;  // port -> (busy ps, sampled ps)
  std::map<uint32_t, Time> previous;
  for (const LinkUtilizationSample& s : r.link_samples) {
    Interval& in = intervals[r.ports.at(s.port).link][s.time.ps];
    in.sum += s.utilization;
    in.max = std::max(in.max, s.utilization);
    ++in.links;
    const Time from = previous.count(s.port) ? previous[s.port] : Time{};
    auto& [busy, span] = per_port[s.port];
    busy += s.utilization * static_cast<double>((s.time - from).ps);
    span += static_cast<double>((s.time - from).ps);
    previous[s.port] = s.time;
  }
  std::map<std::string, LinkGroupUtilization> out;
  for (const auto& [group, by_time] : intervals) {
    LinkGroupUtilization& g = out[group];
    double mean_sum = 0, max_sum = 0;
    for (const auto& [t, in] : by_time) {
      g.links = std::max(g.links, in.links);
      if (in.sum <= 0) continue;
      const double mean = in.sum / in.links;
      ++g.samples;
      mean_sum += mean;
      max_sum += in.max;
      g.imbalance_worst = std::max(g.imbalance_worst, in.max / mean);
    }
    if (g.samples == 0) continue;
    g.mean = mean_sum / g.samples;
    g.imbalance_mean = max_sum / mean_sum;
  }
  std::map<std::string, std::pair<double, double>> run;  // group -> (sum, max) of link means
  std::map<std::string, int> links;
  for (const auto& [port, busy_span] : per_port) {
    const double u = busy_span.second > 0 ? busy_span.first / busy_span.second : 0;
    auto& [sum, max] = run[r.ports.at(port).link];
    sum += u;
    max = std::max(max, u);
    ++links[r.ports.at(port).link];
  }
  for (const auto& [group, sum_max] : run) {
    if (sum_max.first > 0) {
      out[group].imbalance_run = sum_max.second / (sum_max.first / links[group]);
    }
  }
  return out;
}

double port_utilization(const RunResult& r, uint32_t port) {
  if (r.last_event_time.ps <= 0) throw std::runtime_error("the run had no events");
  return static_cast<double>(r.ports.at(port).busy_time.ps) /
         static_cast<double>(r.last_event_time.ps);
}

PriorityCounters counter_totals(const RunResult& r) {
  PriorityCounters total;
  for (const PortRecord& p : r.ports) {
    for (const PriorityCounters& c : p.counters) merge_record(total, c);
  }
  return total;
}

Time pause_time(const RunResult& r) {
  Time t{};
  for (const PauseRecord& p : r.pauses) t += p.end - p.start;
  return t;
}

int64_t packets_retransmitted(const RunResult& r) {
  int64_t n = 0;
  for (const FlowRecord& f : r.flows) n += f.packets_retransmitted;
  return n;
}

int64_t receiver_total(const RunResult& r, int64_t FlowRecord::*counter) {
  int64_t n = 0;
  for (const FlowRecord& f : r.flows) n += f.*counter;
  return n;
}

int64_t max_reorder_depth(const RunResult& r) {
  int64_t n = 0;
  for (const FlowRecord& f : r.flows) n = std::max(n, f.max_reorder_depth);
  return n;
}

// --- Collectives ---------------------------------------------------------------------------------

const CollectiveRow& completed_collective(const RunResult& r, int64_t row) {
  if (row < 0 || row >= static_cast<int64_t>(r.collectives.size())) {
    throw ScenarioError("metric.row", "no collective row " + std::to_string(row) + " in the run");
  }
  if (r.collectives[row].time_us <= 0) {
    throw std::runtime_error("collective row " + std::to_string(row) + " did not complete");
  }
  return r.collectives[row];
}

double ring_tree_crossover_log2(const RunResult& r, uint32_t ring, uint32_t tree) {
  std::map<int64_t, std::pair<double, double>> times;  // size -> (ring, tree)
  for (const CollectiveRow& row : r.collectives) {
    if (row.time_us <= 0) throw std::runtime_error("a collective size did not complete");
    if (row.generator == ring) times[row.size].first = row.time_us;
    if (row.generator == tree) times[row.size].second = row.time_us;
  }
  int64_t from = -1;
  for (const auto& [size, t] : times) {
    if (t.first <= 0 || t.second <= 0) continue;
    if (t.first < t.second) {
      if (from < 0) from = size;
    } else {
      from = -1;
    }
  }
  if (from < 0) throw std::runtime_error("ring never beats tree up to the largest size");
  return std::log2(static_cast<double>(from));
}

// --- The catalogue
// --------------------------------------------------------------------------------

namespace {

using Args = nlohmann::json;

Time after_arg(const Args& a) {
  return parse_time(a.value("after", std::string("0us")));
}

uint32_t port_arg(const RunResult& r, const Args& a) {
  return port_index(r, a.at("node").get<std::string>(), a.at("port").get<uint32_t>());
}

// Applies `value` to each group of `groups`, leaving out the groups it cannot measure.
template <class Value>
MetricGroups each(const std::map<std::string, FlowSet>& groups, Value value) {
  MetricGroups out;
  for (const auto& [name, flows] : groups) {
    if (completed_count(flows) > 0) out[name] = value(flows);
  }
  return out;
}

// One member of each completed collective row, by row number ("0", "1", ...).
MetricGroups by_completed_row(const RunResult& r, double CollectiveRow::*member) {
  MetricGroups out;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    if (r.collectives[i].time_us > 0) out[std::to_string(i)] = r.collectives[i].*member;
  }
  return out;
}

// Per-group figures of link_utilization_by_group as metric groups.
MetricGroups link_groups(const RunResult& r, double LinkGroupUtilization::*member) {
  MetricGroups out;
  for (const auto& [group, u] : link_utilization_by_group(r)) {
    if (u.samples > 0) out[group] = u.*member;
  }
  return out;
}

Metric scalar(std::string name, std::string unit, std::string args, std::string meaning,
              std::function<double(const RunResult&, const Args&)> value) {
  return {std::move(name),    std::move(unit),  std::move(args),
          std::move(meaning), std::move(value), {}};
}

Metric grouped(std::string name, std::string unit, std::string meaning,
               std::function<MetricGroups(const RunResult&)> groups) {
  return {std::move(name), std::move(unit), "", std::move(meaning), {}, std::move(groups)};
}

template <class Count>
Metric total(std::string name, std::string unit, std::string meaning, Count count) {
  return scalar(std::move(name), std::move(unit), "", std::move(meaning),
                [count](const RunResult& r, const Args&) { return static_cast<double>(count(r)); });
}

std::vector<Metric> build_catalogue() {
  std::vector<Metric> c;
  c.push_back(total("flows_completed", "flows", "Flows whose source saw the last ACK.",
                    [](const RunResult& r) { return completed_count(all_flows(r)); }));
  struct Percentile {
    const char* label;
    double q;
    const char* words;
  };
  for (const Percentile& pc :
       {Percentile{"p50", 50, "median"}, Percentile{"p99", 99, "99th percentile"},
        Percentile{"p999", 99.9, "99.9th percentile"}}) {
    const std::string p = pc.label, what = pc.words;
    const double q = pc.q;
    c.push_back(scalar(
        "fct_" + p + "_ps", "ps", "", "FCT of the completed flows, " + what + " (nearest rank).",
        [q](const RunResult& r, const Args&) { return fct_percentile_ps(all_flows(r), q); }));
    c.push_back(grouped("fct_" + p + "_ps_by_generator", "ps",
                        "FCT " + what + " of each traffic generator's completed flows.",
                        [q](const RunResult& r) {
                          return each(flows_by_generator(r),
                                      [q](const FlowSet& f) { return fct_percentile_ps(f, q); });
                        }));
    c.push_back(grouped("fct_" + p + "_ps_by_size", "ps",
                        "FCT " + what +
                            " of the completed flows of each size bucket (<=10KB, "
                            "<=100KB, <=1MB, <=10MB, >10MB).",
                        [q](const RunResult& r) {
                          return each(flows_by_size(r),
                                      [q](const FlowSet& f) { return fct_percentile_ps(f, q); });
                        }));
    c.push_back(scalar(
        "slowdown_" + p, "", "",
        "FCT over the ideal FCT (message bits at the source's line rate), " + what +
            " over the completed flows.",
        [q](const RunResult& r, const Args&) { return slowdown_percentile(r, all_flows(r), q); }));
    c.push_back(grouped("slowdown_" + p + "_by_generator", "",
                        "Slowdown " + what + " of each traffic generator's completed flows.",
                        [q](const RunResult& r) {
                          return each(flows_by_generator(r), [&](const FlowSet& f) {
                            return slowdown_percentile(r, f, q);
                          });
                        }));
    c.push_back(grouped("slowdown_" + p + "_by_size", "",
                        "Slowdown " + what + " of the completed flows of each size bucket.",
                        [q](const RunResult& r) {
                          return each(flows_by_size(r), [&](const FlowSet& f) {
                            return slowdown_percentile(r, f, q);
                          });
                        }));
  }
  c.push_back(scalar("flow_fct_ps", "ps", "flow", "FCT of flow `flow` (which must complete).",
                     [](const RunResult& r, const Args& a) {
                       return static_cast<double>(
                           completed_flow(r, a.value("flow", int64_t{0})).fct().ps);
                     }));
  c.push_back(scalar("flow_goodput_bps", "b/s", "flow",
                     "Goodput of flow `flow`: message bits over its FCT.",
                     [](const RunResult& r, const Args& a) {
                       return completed_flow(r, a.value("flow", int64_t{0})).goodput_bps();
                     }));
  c.push_back(scalar("aggregate_goodput_bps", "b/s", "",
                     "Message bits of all flows (which must all complete) over the time from the "
                     "first start to the last completion.",
                     [](const RunResult& r, const Args&) { return aggregate_goodput_bps(r); }));
  c.push_back(scalar("goodput_p50_bps", "b/s", "",
                     "Median over the completed flows of each one's goodput (message bits over "
                     "its FCT).",
                     [](const RunResult& r, const Args&) {
                       std::vector<double> g;
                       for (const FlowRecord& f : r.flows) {
                         if (f.completed) g.push_back(f.goodput_bps());
                       }
                       if (g.empty()) throw std::runtime_error("no flow completed");
                       return percentile(g, 50);
                     }));
  c.push_back(grouped("goodput_bps_by_generator", "b/s",
                      "Message bits of each traffic generator's completed flows over the time "
                      "from their first start to their last completion.",
                      [](const RunResult& r) { return each(flows_by_generator(r), goodput_bps); }));
  c.push_back(
      scalar("throughput_bps", "b/s", "",
             "Payload bits delivered in order (complete flows or not) from the first "
             "flow's start to the last event.",
             [](const RunResult& r, const Args&) { return throughput_bps(r, all_flows(r)); }));
  c.push_back(grouped("throughput_bps_by_generator", "b/s",
                      "throughput_bps of each traffic generator's flows.", [](const RunResult& r) {
                        MetricGroups out;
                        for (const auto& [g, flows] : flows_by_generator(r))
                          out[g] = throughput_bps(r, flows);
                        return out;
                      }));
  c.push_back(scalar("jain_index", "", "",
                     "Jain's fairness index of the flows' goodputs (all must complete).",
                     [](const RunResult& r, const Args&) { return jain_index_of_goodputs(r); }));
  c.push_back(scalar(
      "jain_index_of_rates", "", "after?",
      "Jain's index of the flows' mean congestion-control rates from `after` on.",
      [](const RunResult& r, const Args& a) { return jain_index_of_rates(r, after_arg(a)); }));
  c.push_back(scalar("rate_convergence_time_ps", "ps", "",
                     "First rate sample time from which Jain's index of the sampled rates stays "
                     ">= 0.95.",
                     [](const RunResult& r, const Args&) {
                       return static_cast<double>(rate_convergence_time(r).ps);
                     }));
  c.push_back(scalar("mean_queue_bytes", "B", "node, port, after?",
                     "Time average of the sampled queue depth of `node`'s port `port` from "
                     "`after` on.",
                     [](const RunResult& r, const Args& a) {
                       return mean_queue_bytes(r, port_arg(r, a), after_arg(a));
                     }));
  c.push_back(scalar("mean_queue_delay_us", "us", "node, port, after?",
                     "Mean queueing delay (sampled queue depth at the port's line rate) of "
                     "`node`'s port `port` from `after` on.",
                     [](const RunResult& r, const Args& a) {
                       return mean_queue_delay_us(r, port_arg(r, a), after_arg(a));
                     }));
  c.push_back(scalar("queue_delay_quantile_us", "us", "node, port, quantile, after?",
                     "The `quantile` (0..1) of the sampled queueing delay of `node`'s port "
                     "`port` from `after` on.",
                     [](const RunResult& r, const Args& a) {
                       return queue_delay_quantile_us(r, port_arg(r, a), after_arg(a),
                                                      a.at("quantile").get<double>());
                     }));
  c.push_back(scalar("mean_max_queue_bytes", "B", "node, ports",
                     "Mean over `node`'s listed `ports` of their deepest queue.",
                     [](const RunResult& r, const Args& a) {
                       return mean_max_queue_bytes(r, a.at("node").get<std::string>(),
                                                   a.at("ports").get<std::vector<uint32_t>>());
                     }));
  c.push_back(total("max_switch_queue_bytes", "B", "Deepest queue of any switch port.",
                    max_switch_queue_bytes));
  c.push_back(grouped("max_queue_bytes_by_port", "B",
                      "Deepest queue (any priority) of each switch port.", [](const RunResult& r) {
                        MetricGroups out;
                        for (const PortRecord& p : r.ports) {
                          if (p.switch_port)
                            out[port_name(p)] = static_cast<double>(p.max_queue_bytes());
                        }
                        return out;
                      }));
  c.push_back(scalar("mean_switch_queue_bytes", "B", "",
                     "Mean over the switch ports of each one's time-averaged sampled queue depth "
                     "(output.queue_sample_interval).",
                     [](const RunResult& r, const Args&) { return mean_switch_queue_bytes(r); }));
  c.push_back(grouped("mean_queue_bytes_by_port", "B",
                      "Time average of each port's sampled queue depth (ports with samples).",
                      mean_queue_bytes_by_port));
  c.push_back(total("buffer_peak_bytes", "B",
                    "Peak occupancy of the fullest switch buffer (reserved, shared and headroom "
                    "bytes together).",
                    [](const RunResult& r) {
                      int64_t m = 0;
                      for (const BufferRecord& b : r.buffers) m = std::max(m, b.max_used);
                      return m;
                    }));
  c.push_back(grouped("buffer_peak_bytes_by_switch", "B", "Peak occupancy of each switch's buffer.",
                      [](const RunResult& r) {
                        MetricGroups out;
                        for (const BufferRecord& b : r.buffers)
                          out[b.node] = static_cast<double>(b.max_used);
                        return out;
                      }));
  c.push_back(scalar(
      "port_utilization", "", "node, port",
      "Busy time of `node`'s port `port` over the time of the last event.",
      [](const RunResult& r, const Args& a) { return port_utilization(r, port_arg(r, a)); }));
  c.push_back(grouped("busy_time_ps_by_port", "ps",
                      "Time each port spent serializing frames (ports that sent anything).",
                      [](const RunResult& r) {
                        MetricGroups out;
                        for (const PortRecord& p : r.ports) {
                          if (p.busy_time.ps > 0)
                            out[port_name(p)] = static_cast<double>(p.busy_time.ps);
                        }
                        return out;
                      }));
  c.push_back(
      grouped("link_utilization_by_tier", "",
              "Mean utilization of the sampled switch egress ports of each link group "
              "(`leaf->spine`, `spine->core`, ...) over the sampling intervals in which "
              "the group carried traffic (/link_utilization).",
              [](const RunResult& r) { return link_groups(r, &LinkGroupUtilization::mean); }));
  c.push_back(grouped(
      "link_imbalance_by_tier", "",
      "The busiest link's utilization in each sampling interval over the "
      "group's mean utilization in it, each summed over the intervals in which "
      "the group carried traffic (max/mean weighted by load; 1 = perfectly "
      "even).",
      [](const RunResult& r) { return link_groups(r, &LinkGroupUtilization::imbalance_mean); }));
  c.push_back(grouped(
      "link_imbalance_worst_by_tier", "",
      "The largest per-interval max/mean utilization of each link group.",
      [](const RunResult& r) { return link_groups(r, &LinkGroupUtilization::imbalance_worst); }));
  c.push_back(grouped(
      "link_imbalance_run_by_tier", "",
      "Max/mean over each link group of its links' utilization averaged over "
      "the whole sampled run.",
      [](const RunResult& r) { return link_groups(r, &LinkGroupUtilization::imbalance_run); }));
  c.push_back(total("pause_time_ps", "ps", "Summed length of the PFC pause intervals.",
                    [](const RunResult& r) { return pause_time(r).ps; }));
  c.push_back(grouped("paused_time_ps_by_port", "ps",
                      "Summed length of each egress port's PFC pause intervals (ports that were "
                      "paused).",
                      [](const RunResult& r) {
                        MetricGroups out;
                        for (const PauseRecord& p : r.pauses)
                          out[port_name(r.ports.at(p.port))] +=
                              static_cast<double>((p.end - p.start).ps);
                        return out;
                      }));
  c.push_back(total("xoff_sent", "frames", "PFC XOFF frames sent by all ports, refreshes included.",
                    [](const RunResult& r) { return counter_totals(r).pause_sent; }));
  c.push_back(total("pause_frames_received", "frames",
                    "PFC XOFF frames that arrived at any port (refreshes included).",
                    [](const RunResult& r) { return counter_totals(r).pause_received; }));
  c.push_back(total("xoff_transitions", "",
                    "Times any port's ingress group went from flowing to paused.",
                    [](const RunResult& r) { return counter_totals(r).xoff_transitions; }));
  c.push_back(total("ecn_marks", "packets", "Packets marked CE at any switch queue.",
                    [](const RunResult& r) { return counter_totals(r).ecn_marks; }));
  c.push_back(total("drops", "packets", "Frames dropped anywhere, any cause.",
                    [](const RunResult& r) { return counter_totals(r).drops; }));
  c.push_back(total("watchdog_storms", "",
                    "Pause storms the PFC watchdog declared, over every switch and NIC queue.",
                    [](const RunResult& r) { return counter_totals(r).watchdog_storms; }));
  c.push_back(total("watchdog_drops", "packets",
                    "Frames the PFC watchdog discarded (action drop) during storms.",
                    [](const RunResult& r) { return counter_totals(r).watchdog_drops; }));
  c.push_back(total("cnps_sent", "CNPs", "CNPs the NICs' notification points sent.",
                    [](const RunResult& r) { return counter_totals(r).cnp_sent; }));
  c.push_back(total("cnps_received", "CNPs", "CNPs that arrived at the NICs.",
                    [](const RunResult& r) { return counter_totals(r).cnp_received; }));
  c.push_back(total("data_packets_sent", "packets",
                    "Data packets every NIC sent, flows and collectives' connections, "
                    "retransmissions included.",
                    [](const RunResult& r) { return r.data_packets_sent; }));
  c.push_back(total("flowlet_moves", "flowlets",
                    "Flowlets (routing.strategy flowlet) that a switch sent out of another port "
                    "than the previous flowlet of their flow-table entry.",
                    [](const RunResult& r) { return r.flowlet_moves; }));
  c.push_back(total("packets_retransmitted", "packets", "Data packets the flows retransmitted.",
                    packets_retransmitted));
  const auto receiver = [](int64_t FlowRecord::*counter) {
    return [counter](const RunResult& r) { return receiver_total(r, counter); };
  };
  c.push_back(total("out_of_sequence", "packets",
                    "Data packets of flows that arrived ahead of the expected PSN.",
                    receiver(&FlowRecord::out_of_sequence)));
  c.push_back(total("naks_sent", "NAKs", "Sequence-error NAKs the flows' receivers sent.",
                    receiver(&FlowRecord::naks_sent)));
  c.push_back(total("rnr_naks", "NAKs",
                    "Receiver-not-ready NAKs the flows' receivers answered to SENDs that found no "
                    "receive WQE posted.",
                    receiver(&FlowRecord::rnr_naks)));
  c.push_back(total("sacks_sent", "SACKs", "SACKs the flows' receivers sent (selective repeat).",
                    receiver(&FlowRecord::sacks_sent)));
  c.push_back(total("duplicates", "packets",
                    "Data packets of flows that arrived at a receiver that already had them.",
                    receiver(&FlowRecord::duplicates)));
  c.push_back(total("max_reorder_depth", "packets",
                    "Largest PSN distance of an arrival ahead of the expected PSN, any flow.",
                    max_reorder_depth));
  c.push_back(scalar("collective_time_us", "µs", "row?",
                     "Time of one iteration of collective row `row` (nccl-tests' time).",
                     [](const RunResult& r, const Args& a) {
                       return completed_collective(r, a.value("row", int64_t{0})).time_us;
                     }));
  c.push_back(scalar("collective_busbw", "GB/s", "row?, divide_by?",
                     "Bus bandwidth of collective row `row`, divided by `divide_by` (1).",
                     [](const RunResult& r, const Args& a) {
                       return completed_collective(r, a.value("row", int64_t{0})).busbw /
                              a.value("divide_by", 1.0);
                     }));
  c.push_back(
      grouped("collective_time_us_by_row", "µs",
              "Time of one iteration of each completed collective row (nccl-tests' time; "
              "rows \"0\", \"1\", ... as in /collectives).",
              [](const RunResult& r) { return by_completed_row(r, &CollectiveRow::time_us); }));
  c.push_back(
      grouped("collective_busbw_by_row", "GB/s",
              "Bus bandwidth (nccl-tests' busbw) of each completed collective row.",
              [](const RunResult& r) { return by_completed_row(r, &CollectiveRow::busbw); }));
  c.push_back(scalar("ring_tree_crossover_log2", "", "ring, tree",
                     "log2 of the smallest size from which generator `ring` beats generator "
                     "`tree` at every larger size of their sweep.",
                     [](const RunResult& r, const Args& a) {
                       return ring_tree_crossover_log2(r, a.at("ring").get<uint32_t>(),
                                                       a.at("tree").get<uint32_t>());
                     }));
  return c;
}

}  // namespace

const std::vector<Metric>& metric_catalogue() {
  static const std::vector<Metric> catalogue = build_catalogue();
  return catalogue;
}

const Metric& find_metric(const std::string& name) {
  std::string known;
  for (const Metric& m : metric_catalogue()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw ScenarioError("metric.name", "expected one of " + known + ", found \"" + name + "\"");
}

double measure_metric(const std::string& name, const RunResult& r, const nlohmann::json& args) {
  const Metric& m = find_metric(name);
  if (!m.value) {
    throw ScenarioError("metric.name",
                        "\"" + name + "\" is one figure per group, not a single one");
  }
  return m.value(r, args);
}

nlohmann::json metrics_json(const RunResult& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const Metric& m : metric_catalogue()) {
    if (!m.args.empty()) continue;
    try {
      j[m.name] = m.value ? nlohmann::json(m.value(r, nlohmann::json::object()))
                          : nlohmann::json(m.groups(r));
    } catch (const std::runtime_error&) {
      j[m.name] = nullptr;
    }
  }
  return j;
}

}  // namespace fabtwin
