// The metrics module (models/fabric/metrics.h) on small results built by hand, each figure
// against its hand computation, and the catalogue that names them.
#include <cmath>
#include <set>

#include "models/fabric/metrics.h"
#include "sim/params.h"
#include "sim/statistics.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

constexpr int64_t kUs = 1'000'000;  // ps

FlowRecord flow(uint32_t id, uint32_t generator, int src, int64_t size, int64_t start_us,
                int64_t finish_us) {
  FlowRecord f;
  f.spec.id = id;
  f.spec.generator = generator;
  f.spec.src = src;
  f.spec.dst = 1 - src;
  f.spec.size = Bytes{size};
  f.spec.start = Time{start_us * kUs};
  f.completed = finish_us >= 0;
  f.finish = Time{finish_us * kUs};
  f.bytes_received = f.completed ? size : 5'000;
  f.packets_retransmitted = id;
  return f;
}

PortRecord port(const std::string& node, uint32_t number, bool switch_port) {
  PortRecord p;
  p.node = node;
  p.port = number;
  p.peer = switch_port ? "host" + std::to_string(number) : "switch";
  p.switch_port = switch_port;
  p.rate = parse_rate("100Gbps");
  return p;
}

// Two hosts on a switch; four flows of two generators, the last not completed; samples of
// one switch port; PFC pauses of both host ports; a 400 us run.
RunResult small_run() {
  RunResult r;
  r.hosts = 2;
  r.switches = 1;
  r.last_event_time = Time{400 * kUs};
  r.flows = {flow(0, 0, 0, 1'000, 0, 1), flow(1, 0, 1, 50'000, 1, 11),
             flow(2, 1, 0, 2'000'000, 0, 200), flow(3, 1, 1, 20'000, 5, -1)};
  r.ports = {port("host0", 0, false), port("host1", 0, false), port("switch", 0, true),
             port("switch", 1, true)};
  r.ports[0].counters[3].max_queue_bytes = 5'000;
  r.ports[2].busy_time = Time{100 * kUs};
  r.ports[2].counters[3].pause_sent = 2;
  r.ports[2].counters[3].max_queue_bytes = 1'000;
  r.ports[3].counters[0].pause_sent = 1;
  r.ports[3].counters[0].max_queue_bytes = 3'000;
  r.ports[3].counters[0].drops = 4;
  r.ports[3].counters[0].ecn_marks = 7;
  r.ports[0].counters[6].cnp_sent = 2;
  r.queue_samples = {{Time{0}, 2, 100}, {Time{10 * kUs}, 2, 300}, {Time{20 * kUs}, 2, 500}};
  r.pauses = {{0, 3, Time{10 * kUs}, Time{30 * kUs}},
              {0, 3, Time{50 * kUs}, Time{60 * kUs}},
              {1, 3, Time{0}, Time{5 * kUs}}};
  return r;
}

}  // namespace

TEST_CASE("FCT percentiles: nearest rank over the completed flows", "[metrics]") {
  const RunResult r = small_run();
  const FlowSet flows = all_flows(r);
  CHECK(completed_count(flows) == 3);
  // Completed FCTs 1, 10 and 200 us; the fourth flow did not complete and is left out.
  CHECK(fct_percentile_ps(flows, 50) == 10 * kUs);
  CHECK(fct_percentile_ps(flows, 99) == 200 * kUs);
  CHECK(fct_percentile_ps(flows, 99.9) == 200 * kUs);
  CHECK_THROWS_AS(fct_percentile_ps(FlowSet{&r.flows[3]}, 50), std::runtime_error);
  CHECK_THROWS_AS(fct_percentile_ps(FlowSet{}, 50), std::runtime_error);
}

TEST_CASE("percentiles by nearest rank, of a vector in any order or sorted once", "[metrics]") {
  const std::vector<double> values{40, 10, 30, 20};  // ranks: 10, 20, 30, 40
  CHECK(percentile(values, 0) == 10);
  CHECK(percentile(values, 25) == 10);  // rank ceil(1.0) = 1
  CHECK(percentile(values, 26) == 20);  // rank ceil(1.04) = 2
  CHECK(percentile(values, 50) == 20);
  CHECK(percentile(values, 75) == 30);
  CHECK(percentile(values, 100) == 40);
  CHECK(percentile({}, 50) == 0);
  const std::vector<double> sorted{10, 20, 30, 40};
  for (const double q : {0.0, 25.0, 26.0, 50.0, 99.0, 100.0}) {
    CHECK(sorted_percentile(sorted, q) == percentile(values, q));
  }
  CHECK(sorted_percentile({}, 50) == 0);
}

TEST_CASE("flows group by traffic generator and by size bucket", "[metrics]") {
  const RunResult r = small_run();
  const auto by_generator = flows_by_generator(r);
  REQUIRE(by_generator.size() == 2);
  CHECK(by_generator.at("0").size() == 2);
  CHECK(fct_percentile_ps(by_generator.at("0"), 50) == 1 * kUs);
  CHECK(fct_percentile_ps(by_generator.at("0"), 99) == 10 * kUs);
  CHECK(fct_percentile_ps(by_generator.at("1"), 50) == 200 * kUs);

  CHECK(std::string(size_bucket(Bytes{10'000})) == "<=10KB");
  CHECK(std::string(size_bucket(Bytes{10'001})) == "<=100KB");
  CHECK(std::string(size_bucket(Bytes{1'000'000})) == "<=1MB");
  CHECK(std::string(size_bucket(Bytes{10'000'000})) == "<=10MB");
  CHECK(std::string(size_bucket(Bytes{10'000'001})) == ">10MB");
  const auto by_size = flows_by_size(r);
  CHECK(by_size.size() == 3);  // nothing of <=1MB
  CHECK(by_size.at("<=100KB").size() == 2);
  CHECK(fct_percentile_ps(by_size.at("<=100KB"), 50) == 10 * kUs);

  const MetricGroups groups = find_metric("fct_p50_ps_by_size").groups(r);
  CHECK(groups ==
        MetricGroups{{"<=10KB", 1.0 * kUs}, {"<=100KB", 10.0 * kUs}, {"<=10MB", 200.0 * kUs}});
}

TEST_CASE("slowdown is FCT over the message's time at the source's line rate", "[metrics]") {
  const RunResult r = small_run();
  CHECK(host_line_rates(r).size() == 2);
  // 1000 B at 100 Gb/s: 80 ns; 50 KB: 4 us; 2 MB: 160 us.
  CHECK(ideal_fct(r, r.flows[0]).ps == 80'000);
  CHECK(ideal_fct(r, r.flows[1]).ps == 4 * kUs);
  // Slowdowns 12.5, 2.5 and 1.25.
  CHECK(slowdown_percentile(r, all_flows(r), 50) == Approx(2.5));
  CHECK(slowdown_percentile(r, all_flows(r), 99) == Approx(12.5));
  RunResult no_hosts = r;
  no_hosts.ports = {port("switch", 0, true)};
  CHECK_THROWS_AS(slowdown_percentile(no_hosts, all_flows(no_hosts), 50), std::runtime_error);
}

TEST_CASE("goodput and throughput of flow sets", "[metrics]") {
  const RunResult r = small_run();
  const auto by_generator = flows_by_generator(r);
  // Generator 0: 51 000 B from 0 to 11 us.
  CHECK(goodput_bps(by_generator.at("0")) == Approx(51'000 * 8 / 11e-6));
  // Generator 1: only the 2 MB flow completed, 0 to 200 us.
  CHECK(goodput_bps(by_generator.at("1")) == Approx(2e6 * 8 / 200e-6));
  // Everything delivered, the incomplete flow's 5000 B too, from 0 to the last event (400 us).
  CHECK(throughput_bps(r, all_flows(r)) ==
        Approx((1'000 + 50'000 + 2'000'000 + 5'000) * 8 / 400e-6));
  // Generator 1 starts at 0 too.
  CHECK(throughput_bps(r, by_generator.at("1")) == Approx((2'000'000 + 5'000) * 8 / 400e-6));
  // Figures over every flow need every flow complete.
  CHECK_THROWS_AS(aggregate_goodput_bps(r), std::runtime_error);
  CHECK_THROWS_AS(jain_index_of_goodputs(r), std::runtime_error);
  RunResult done = r;
  done.flows.pop_back();
  CHECK(aggregate_goodput_bps(done) == Approx((1'000 + 50'000 + 2'000'000) * 8 / 200e-6));
  const double g0 = 8e3 / 1e-6, g1 = 4e5 / 10e-6, g2 = 16e6 / 200e-6;
  CHECK(jain_index_of_goodputs(done) ==
        Approx((g0 + g1 + g2) * (g0 + g1 + g2) / (3 * (g0 * g0 + g1 * g1 + g2 * g2))));
  CHECK(completed_flow(r, 1).spec.id == 1);
  CHECK_THROWS_AS(completed_flow(r, 3), std::runtime_error);
  CHECK_THROWS_AS(completed_flow(r, 4), ScenarioError);
}

TEST_CASE("queue, utilization, counter and pause figures", "[metrics]") {
  const RunResult r = small_run();
  CHECK(port_index(r, "switch", 1) == 3);
  CHECK_THROWS_AS(port_index(r, "switch", 9), ScenarioError);
  CHECK(mean_queue_bytes(r, 2, Time{}) == Approx(300));
  CHECK(mean_queue_bytes(r, 2, Time{10 * kUs}) == Approx(400));
  CHECK_THROWS_AS(mean_queue_bytes(r, 2, Time{30 * kUs}), std::runtime_error);  // none after
  CHECK_THROWS_AS(mean_queue_bytes(r, 3, Time{}), std::runtime_error);          // none at all
  CHECK(mean_max_queue_bytes(r, "switch", {0, 1}) == Approx(2'000));
  CHECK(max_switch_queue_bytes(r) == 3'000);  // the host port's 5000 is not a switch queue
  CHECK(port_utilization(r, 2) == Approx(0.25));

  const PriorityCounters total = counter_totals(r);
  CHECK(total.pause_sent == 3);
  CHECK(total.max_queue_bytes == 5'000);  // the largest, not the sum
  CHECK(total.drops == 4);

  CHECK(pause_time(r).ps == 35 * kUs);
  CHECK(find_metric("paused_time_ps_by_port").groups(r) ==
        MetricGroups{{"host0:0", 30.0 * kUs}, {"host1:0", 5.0 * kUs}});
  CHECK(find_metric("busy_time_ps_by_port").groups(r) == MetricGroups{{"switch:0", 100.0 * kUs}});
  CHECK(packets_retransmitted(r) == 0 + 1 + 2 + 3);
  CHECK(measure_metric("xoff_sent", r) == 3);
  CHECK(measure_metric("ecn_marks", r) == 7);
  CHECK(measure_metric("cnps_sent", r) == 2);
}

TEST_CASE("queue, buffer, pause and slowdown figures for sweeps and the report", "[metrics]") {
  RunResult r = small_run();
  // Port 2 (switch:0) sampled 100, 300, 500; add host0's port at 1000 and 3000.
  r.queue_samples.push_back({Time{0}, 0, 1'000});
  r.queue_samples.push_back({Time{10 * kUs}, 0, 3'000});
  CHECK(mean_queue_bytes_by_port(r) == MetricGroups{{"host0:0", 2'000.0}, {"switch:0", 300.0}});
  CHECK(mean_switch_queue_bytes(r) == Approx(300));  // the host port is not a switch port
  CHECK(find_metric("max_queue_bytes_by_port").groups(r) ==
        MetricGroups{{"switch:0", 1'000.0}, {"switch:1", 3'000.0}});
  r.buffers = {{"leaf0", 4'000'000, 0, 0, 70'000, 0}, {"leaf1", 4'000'000, 0, 0, 90'000, 0}};
  CHECK(measure_metric("buffer_peak_bytes", r) == 90'000);
  CHECK(find_metric("buffer_peak_bytes_by_switch").groups(r) ==
        MetricGroups{{"leaf0", 70'000.0}, {"leaf1", 90'000.0}});
  r.ports[2].counters[3].pause_received = 4;
  r.ports[0].counters[3].pause_received = 1;
  CHECK(measure_metric("pause_frames_received", r) == 5);
  // Slowdown per generator: FCT over size at 100 Gb/s. Generator 0: 1000 B in 1 us (0.08 us
  // ideal: 12.5) and 50 KB in 10 us (4 us ideal: 2.5); generator 1: 2 MB in 200 us (160 us: 1.25).
  const MetricGroups slow = find_metric("slowdown_p99_by_generator").groups(r);
  CHECK(slow.at("0") == Approx(12.5));
  CHECK(slow.at("1") == Approx(1.25));
  CHECK(find_metric("slowdown_p50_by_generator").groups(r).at("0") == Approx(2.5));
  RunResult empty;
  CHECK_THROWS_AS(mean_switch_queue_bytes(empty), std::runtime_error);
  // The report's "metrics" hold them too (null where nothing was measured).
  const nlohmann::json j = metrics_json(r);
  CHECK(j.at("buffer_peak_bytes") == 90'000);
  CHECK(j.at("mean_queue_bytes_by_port").at("host0:0") == 2'000);
  CHECK(metrics_json(empty).at("mean_switch_queue_bytes").is_null());
}

TEST_CASE("congestion-control rate figures", "[metrics]") {
  RunResult r = small_run();
  CHECK_THROWS_AS(mean_rates_bps(r, Time{}), std::runtime_error);  // no samples
  CHECK_THROWS_AS(rate_convergence_time(r), std::runtime_error);
  const int64_t g = 1'000'000'000;
  r.rate_samples = {{Time{10 * kUs}, 0, 10 * g, 0, 0}, {Time{10 * kUs}, 1, 30 * g, 0, 0},
                    {Time{20 * kUs}, 0, 20 * g, 0, 0}, {Time{20 * kUs}, 1, 20 * g, 0, 0},
                    {Time{30 * kUs}, 0, 20 * g, 0, 0}, {Time{30 * kUs}, 1, 20 * g, 0, 0}};
  const std::vector<double> mean = mean_rates_bps(r, Time{});
  REQUIRE(mean.size() == 2);
  CHECK(mean[0] == Approx(50.0 / 3 * g));
  CHECK(mean[1] == Approx(70.0 / 3 * g));
  const double a = 50.0 / 3, b = 70.0 / 3;
  CHECK(jain_index_of_rates(r, Time{}) == Approx((a + b) * (a + b) / (2 * (a * a + b * b))));
  CHECK(jain_index_of_rates(r, Time{20 * kUs}) == Approx(1.0));
  // Jain 0.8 at 10 us, 1 from 20 us on.
  CHECK(rate_convergence_time(r).ps == 20 * kUs);
  CHECK_THROWS_AS(mean_rates_bps(r, Time{40 * kUs}), std::runtime_error);
}

TEST_CASE("collective figures", "[metrics]") {
  RunResult r;
  const auto row = [](uint32_t generator, int64_t size, double time_us) {
    CollectiveRow c;
    c.generator = generator;
    c.size = size;
    c.time_us = time_us;
    c.busbw = 2 * time_us;
    return c;
  };
  // Ring (generator 0) is slower at 1 KiB, faster from 2 KiB on.
  r.collectives = {row(0, 1024, 10), row(0, 2048, 12), row(0, 4096, 14),
                   row(1, 1024, 8),  row(1, 2048, 13), row(1, 4096, 20)};
  CHECK(ring_tree_crossover_log2(r, 0, 1) == Approx(11));
  CHECK_THROWS_AS(ring_tree_crossover_log2(r, 1, 0), std::runtime_error);
  CHECK(measure_metric("collective_time_us", r, {{"row", 1}}) == 12);
  CHECK(measure_metric("collective_busbw", r, {{"row", 2}, {"divide_by", 4}}) == 7);
  CHECK_THROWS_AS(completed_collective(r, 6), ScenarioError);
  // By row, as sweeps name them (collective_time_us_by_row.2).
  CHECK(find_metric("collective_time_us_by_row").groups(r).at("2") == 14);
  CHECK(find_metric("collective_busbw_by_row").groups(r).at("5") == 40);
  r.collectives[0].time_us = 0;
  CHECK_THROWS_AS(completed_collective(r, 0), std::runtime_error);
  CHECK(find_metric("collective_time_us_by_row").groups(r).count("0") == 0);  // not completed
}

TEST_CASE("the catalogue names each metric once, and the report holds the argument-free ones",
          "[metrics]") {
  std::set<std::string> names;
  for (const Metric& m : metric_catalogue()) {
    INFO(m.name);
    CHECK(names.insert(m.name).second);
    CHECK(!m.meaning.empty());
    CHECK((m.value != nullptr) != (m.groups != nullptr));
    CHECK((m.args.empty() || m.value != nullptr));
  }
  for (const char* validated :
       {"flow_fct_ps", "flow_goodput_bps", "mean_queue_bytes", "jain_index_of_rates",
        "rate_convergence_time_ps", "port_utilization", "xoff_sent", "max_switch_queue_bytes",
        "mean_max_queue_bytes", "jain_index", "aggregate_goodput_bps", "collective_time_us",
        "collective_busbw", "ring_tree_crossover_log2"}) {
    CHECK(names.count(validated) == 1);
  }
  CHECK_THROWS_AS(find_metric("no_such_metric"), ScenarioError);
  const RunResult r = small_run();
  CHECK_THROWS_AS(measure_metric("fct_p50_ps_by_size", r), ScenarioError);  // a group, not a figure
  CHECK(measure_metric("mean_queue_bytes", r,
                       {{"node", "switch"}, {"port", 0}, {"after", "10us"}}) == Approx(400));

  const nlohmann::json j = metrics_json(r);
  CHECK(j.at("fct_p50_ps") == 10.0 * kUs);
  CHECK(j.at("fct_p99_ps_by_generator").at("1") == 200.0 * kUs);
  CHECK(j.at("aggregate_goodput_bps").is_null());     // a flow did not complete
  CHECK(j.at("rate_convergence_time_ps").is_null());  // no rate samples
  CHECK_FALSE(j.contains("mean_queue_bytes"));        // needs a port
}

TEST_CASE("link utilization per tier and its imbalance", "[metrics][adaptive]") {
  RunResult r;
  for (uint32_t p = 0; p < 3; ++p) {
    PortRecord port;
    port.node = "leaf0";
    port.port = p;
    port.switch_port = true;
    port.link = p < 2 ? "leaf->spine" : "leaf->host";
    r.ports.push_back(std::move(port));
  }
  // Uplinks 0 and 1 over two 10 us intervals: (1.0, 0.2), then (0.6, 0.6); an idle third one
  // where the group carries nothing does not count. The host link: 0.5 then 0.
  const double u[3][3] = {{1.0, 0.6, 0.0}, {0.2, 0.6, 0.0}, {0.5, 0.0, 0.0}};
  for (uint32_t p = 0; p < 3; ++p) {
    for (int k = 0; k < 3; ++k) r.link_samples.push_back({Time{(k + 1) * 10 * kUs}, p, u[p][k]});
  }
  const auto groups = link_utilization_by_group(r);
  const LinkGroupUtilization& up = groups.at("leaf->spine");
  CHECK(up.links == 2);
  CHECK(up.samples == 2);
  CHECK(up.mean == Approx((0.6 + 0.6) / 2));
  CHECK(up.imbalance_mean == Approx((1.0 + 0.6) / (0.6 + 0.6)));  // maxima over means
  CHECK(up.imbalance_worst == Approx(1.0 / 0.6));
  // Over the run (30 us): port 0 busy 16 us, port 1 8 us: max/mean = 16 / 12.
  CHECK(up.imbalance_run == Approx(16.0 / 12.0));
  const LinkGroupUtilization& host = groups.at("leaf->host");
  CHECK(host.samples == 1);
  CHECK(host.imbalance_run == Approx(1.0));
  CHECK(find_metric("link_imbalance_by_tier").groups(r).at("leaf->spine") ==
        Approx(up.imbalance_mean));
  CHECK(metrics_json(r).at("link_imbalance_run_by_tier").at("leaf->host") == Approx(1.0));
}
