#include "sim/cli/bench.h"

#include <sys/resource.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "models/fabric/fabric.h"
#include "sim/cli/report.h"
#include "sim/event_queue.h"

namespace fabtwin {
namespace {

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Hold model: keep `pending` events queued; pop the earliest, push one a random delay later
// (uniform in [0, 10 us), the span of link and serialization delays in a packet-level run).
template <typename Queue>
double hold_rate(size_t pending, size_t operations) {
  Queue q;
  Rng rng(1, 1);
  uint64_t seq = 0;
  constexpr uint64_t kSpan = 10'000'000;  // 10 us in ps
  for (size_t i = 0; i < pending; ++i) {
    q.push(Event{Time{static_cast<int64_t>(rng.below(kSpan))}, seq++, 0, 0, 0});
  }
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < operations; ++i) {
    const Event e = q.pop();
    q.push(Event{e.time + Time{static_cast<int64_t>(rng.below(kSpan))}, seq++, 0, 0, 0});
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(operations) / s / 1e6;
}

void queue_microbenchmark() {
  std::printf("hold model, delays uniform in [0, 10 us); million pop+push pairs per second\n");
  std::printf("%10s %16s %16s\n", "pending", "calendar queue", "4-ary heap");
  for (size_t pending : {1000u, 10000u, 100000u, 1000000u}) {
    const size_t operations = 10'000'000;
    std::printf("%10zu %16.2f %16.2f\n", pending, hold_rate<EventQueue>(pending, operations),
                hold_rate<EventHeap>(pending, operations));
  }
}

}  // namespace

int command_bench(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  po::options_description opts("fabtwin bench");
  std::string scenario =
      std::string(FABTWIN_SOURCE_DIR) + "/scenarios/bench/fat_tree_k8_permutation.json";
  std::vector<std::string> sets;
  int threads = 1;
  opts.add_options()("help,h", "this help")("queue", "event-queue microbenchmark instead")(
      "scenario", po::value(&scenario), "workload scenario (default: the standard benchmark)")(
      "set", po::value(&sets)->composing(), "override a scenario value: path=value")(
      "threads", po::value(&threads), "threads (default 1; 0 = every hardware thread)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts;
    return 0;
  }
  if (vm.count("queue")) {
    queue_microbenchmark();
    return 0;
  }
  const double rss_before = peak_rss_mb();
  Fabric fabric(FabricSpec::resolve(load_scenario(scenario, sets)), threads);
  const RunResult r = fabric.run();
  const RunFigures f = run_figures(r);
  std::printf("workload            %s\n", scenario.c_str());
  std::printf("threads             %d (%d partitions%s)\n", r.threads, r.partitions,
              r.burst_window.ps > 0 ? (", bursts of " + format_time(r.burst_window)).c_str() : "");
  if (r.threads > 1 && r.burst_window.ps > 0) {
    std::printf(
        "bursts taken        %.1f%% of events (run by a thread with none of its own left)\n",
        r.events > 0 ? 100.0 * static_cast<double>(r.taken_events) / static_cast<double>(r.events)
                     : 0.0);
  }
  std::printf("flows completed     %lld of %lld\n", static_cast<long long>(f.completed),
              static_cast<long long>(f.flows));
  std::printf("simulated time      %s (last event)\n", format_time(r.last_event_time).c_str());
  std::printf("makespan            %s (first flow start to last flow completion)\n",
              format_time(Time{f.makespan_ps}).c_str());
  std::printf("events              %llu\n", static_cast<unsigned long long>(r.events));
  std::printf("data packets        %lld\n", static_cast<long long>(r.data_packets_sent));
  std::printf("wall time           %.3f s\n", r.wall_seconds);
  std::printf("cpu time            %.3f s user, %.3f s system (the event loop, all threads)\n",
              r.cpu_user_seconds, r.cpu_system_seconds);
  std::printf("events/s            %.3f M\n", f.events_per_second / 1e6);
  std::printf("data packets/s      %.1f k\n", f.data_packets_per_second / 1e3);
  std::printf("peak memory         %.1f MB (process RSS; %.1f MB before building the fabric)\n",
              peak_rss_mb(), rss_before);
  std::printf("packet pool         %lld packets (peak in use)\n",
              static_cast<long long>(r.peak_packets_in_pool));
  std::printf("fingerprint         %s\n", hex64(r.fingerprint).c_str());
  return 0;
}

}  // namespace fabtwin
