// The parallel runner: every result but wall-clock figures is identical for any number of
// threads, on scenarios that exercise PFC, ECN and DCQCN, for several seeds.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "models/fabric/fabric.h"
#include "models/fabric/fabric_spec.h"
#include "models/fabric/partitioning.h"
#include "sim/cli/report.h"
#include "sim/window_workers.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  uint64_t fingerprint;
  nlohmann::json report;
  std::vector<std::tuple<int64_t, uint32_t, int64_t>> queues;
  std::vector<std::tuple<uint32_t, int, int64_t, int64_t>> pauses;
  std::vector<std::tuple<int64_t, uint32_t, int64_t, int64_t, double>> rates;
  std::vector<std::tuple<int64_t, uint32_t, int64_t>> buffers;
  int partitions;
  nlohmann::json engine = {};
  int64_t pool_capacity = 0;  // packets, all pools together
};

Outcome run_with(const std::string& scenario, const std::vector<std::string>& sets, int threads) {
  Fabric fabric(load_scenario(fs::path(FABTWIN_SOURCE_DIR) / scenario, sets), threads);
  const RunResult r = fabric.run();
  Outcome o{r.fingerprint, json_report(r), {}, {}, {}, {}, r.partitions};
  o.engine = o.report["engine"];
  o.pool_capacity = r.peak_packets_in_pool;
  o.report.erase("engine");  // wall clock, threads, partitions: allowed to differ
  for (const auto& q : r.queue_samples) o.queues.emplace_back(q.time.ps, q.port, q.bytes);
  for (const auto& p : r.pauses) o.pauses.emplace_back(p.port, p.priority, p.start.ps, p.end.ps);
  for (const auto& s : r.rate_samples)
    o.rates.emplace_back(s.time.ps, s.flow, s.rate_bps, s.target_bps, s.alpha);
  for (const auto& b : r.buffer_samples) o.buffers.emplace_back(b.time.ps, b.buffer, b.bytes);
  return o;
}

void check_same(const Outcome& a, const Outcome& b) {
  CHECK(a.fingerprint == b.fingerprint);
  CHECK(a.report == b.report);
  CHECK(a.queues == b.queues);
  CHECK(a.pauses == b.pauses);
  CHECK(a.rates == b.rates);
  CHECK(a.buffers == b.buffers);
}

void check_identical(const std::string& scenario, const std::vector<std::string>& sets) {
  const Outcome one = run_with(scenario, sets, 1);
  REQUIRE(one.partitions == 1);
  // Bursts (each component's events of a window together) change nothing either.
  std::vector<std::string> plain_sets = sets;
  plain_sets.push_back("run.bursts=false");
  const Outcome plain = run_with(scenario, plain_sets, 1);
  CHECK(one.engine["burst_window_ps"].get<int64_t>() > 0);
  CHECK(plain.engine["burst_window_ps"].get<int64_t>() == 0);
  check_same(plain, one);
  int parallel_runs = 0;
  for (const int threads : {2, 4, 8, 16}) {
    const Outcome many = run_with(scenario, sets, threads);
    INFO(scenario << " with " << threads << " threads (" << many.partitions << " partitions)");
    parallel_runs += many.partitions > 1;
    check_same(one, many);
  }
  CHECK(parallel_runs == 4);  // the fabric really was split
}

}  // namespace

TEST_CASE("DCQCN on a leaf-spine: identical for 1 to 16 threads", "[parallel]") {
  check_identical("scenarios/default.json", {"run.end=1ms"});
  check_identical("scenarios/default.json", {"run.end=1ms", "run.seed=7"});
}

TEST_CASE("PFC pause propagation: identical for 1 to 16 threads", "[parallel]") {
  check_identical("scenarios/lossless/pfc_incast.json", {"traffic[0].size=256KB"});
  check_identical("scenarios/lossless/hol_victim.json", {"traffic[0].size=256KB", "run.seed=3"});
}

TEST_CASE("a lossy fat-tree with drops and retransmissions: identical for 1 to 16 threads",
          "[parallel]") {
  check_identical("scenarios/bench/fat_tree_k8_permutation.json",
                  {"topology.k=4", "traffic[0].size=300KB", "fabric.pfc.enabled=false",
                   "fabric.switch.buffer=300KB", "nic.ack_timeout=50us"});
}

TEST_CASE(
    "cut-through, port-to-port latency, message overhead, CNP delay: identical for 1 to 16 "
    "threads",
    "[parallel][forwarding]") {
  // A latency below and above a full frame's wire time (334 ns at 100 Gb/s): frames that cut
  // through start before their last bit is in, or wait in the pipeline.
  for (const std::string latency : {"200ns", "600ns"}) {
    check_identical("scenarios/default.json",
                    {"run.end=1ms", "fabric.switch.forwarding=cut_through",
                     "fabric.switch.port_to_port_latency=" + latency, "nic.message_overhead=400ns",
                     "nic.cc.cnp_delay=1us"});
  }
  check_identical("scenarios/lossless/pfc_incast.json",
                  {"traffic[0].size=256KB", "fabric.switch.port_to_port_latency=500ns"});
}

TEST_CASE("links of zero delay cannot cross partitions", "[parallel]") {
  const ScenarioDocument doc = load_scenario(
      fs::path(FABTWIN_SOURCE_DIR) / "scenarios/default.json", {"fabric.link.delay=0us"});
  CHECK_THROWS_WITH(Fabric(doc, 2),
                    Catch::Contains("zero delay") && Catch::Contains("--threads 1"));
  CHECK_NOTHROW(Fabric(doc, 1));
}

TEST_CASE("window workers run every item once per window, on any number of threads", "[parallel]") {
  for (const int threads : {1, 2, 3, 8}) {
    for (const size_t items : {size_t{1}, size_t{2}, size_t{5}, size_t{16}}) {
      INFO(threads << " threads, " << items << " items");
      std::vector<std::atomic<int>> runs(items);
      std::atomic<int> in_window{0};
      WindowWorkers workers(threads, items, [&](size_t i) {
        runs[i].fetch_add(1);
        in_window.fetch_add(1);
      });
      CHECK(workers.threads() == std::min<int>(threads, static_cast<int>(items)));
      for (int window = 1; window <= 300; ++window) {
        in_window = 0;
        workers.run_window();
        REQUIRE(in_window.load() == static_cast<int>(items));  // all done when it returns
        if (window == 100) {
          // Long enough for the waiting threads to fall asleep: the next window wakes them.
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
        }
      }
      for (const auto& r : runs) CHECK(r.load() == 300);
    }
  }
}

TEST_CASE("window workers stop cleanly however late a thread wakes for the last window",
          "[parallel]") {
  // The destructor moves the window counter on to wake the threads. A thread that woke for the
  // last window and read the counter after that move once took it for a window to run: it
  // claimed the items a second time, ran their work after the run had ended, and then slept for
  // good while the destructor waited for it (seen once as a hung `fabtwin run` under a busy
  // ctest). The gap is a few instructions wide, so a run of this test meets it only by chance:
  // many short lives of two threads, each window's work done at once or after a yield, and
  // nothing may run after the last window or hang the destructor.
  for (int life = 0; life < 3000; ++life) {
    INFO("life " << life);
    std::atomic<int> runs{0};
    {
      WindowWorkers workers(2, 2, [&](size_t) {
        if (life % 2 == 1) std::this_thread::yield();
        runs.fetch_add(1);
      });
      const int windows = 1 + life % 3;
      for (int w = 0; w < windows; ++w) workers.run_window();
      REQUIRE(runs.load() == 2 * windows);
    }
    REQUIRE(runs.load() == 2 * (1 + life % 3));  // nothing ran after the last window
  }
}

TEST_CASE("window workers run every task once, on the thread that prepared it or another",
          "[parallel]") {
  // Item i has i * 7 tasks of varying length (item 0 none); the prepared count changes with
  // the window, and a task checks that its item was prepared in this window.
  for (const int threads : {2, 3, 8}) {
    INFO(threads << " threads");
    constexpr size_t kItems = 5;
    std::atomic<int> window{0};
    std::array<std::atomic<int>, kItems> prepared_in{};
    std::vector<std::vector<std::atomic<int>>> runs(kItems);
    for (size_t i = 0; i < kItems; ++i) runs[i] = std::vector<std::atomic<int>>(i * 7 + 1);
    std::atomic<int> wrong_window{0}, own_elsewhere{0};
    std::array<std::atomic<int>, kItems> preparer{};
    WindowWorkers workers(
        threads, kItems,
        [&](size_t i) {
          prepared_in[i] = window.load();
          return static_cast<uint32_t>(i * 7 + (window.load() % 2));
        },
        [&](size_t i, uint32_t task, int thread, bool own) {
          if (prepared_in[i].load() != window.load()) ++wrong_window;
          runs[i][task].fetch_add(1);
          if (own && preparer[i].load() != -1 && preparer[i].load() != thread) ++own_elsewhere;
          preparer[i] = own ? thread : preparer[i].load();
          // A task's length: the atomic counter keeps the loop from being optimised away.
          std::atomic<int> spin{0};
          while (spin.fetch_add(1, std::memory_order_relaxed) < static_cast<int>(task % 5) * 2000) {
          }
        });
    int odd = 0;
    for (int w = 1; w <= 200; ++w) {
      window = w;
      for (auto& p : preparer) p = -1;
      workers.run_window();
      odd += w % 2;
    }
    CHECK(wrong_window.load() == 0);
    CHECK(own_elsewhere.load() == 0);  // an item's own tasks run where it was prepared
    for (size_t i = 0; i < kItems; ++i) {
      INFO("item " << i);
      for (size_t t = 0; t < i * 7; ++t) CHECK(runs[i][t].load() == 200);
      CHECK(runs[i][i * 7].load() == odd);  // the extra task of odd windows
    }
  }
}

TEST_CASE("window workers pass an item's exception on and still stop cleanly", "[parallel]") {
  std::atomic<int> window{0};
  WindowWorkers workers(3, 6, [&](size_t i) {
    if (window.load() == 2 && (i == 4 || i == 1)) {
      throw std::runtime_error("item " + std::to_string(i));
    }
  });
  window = 1;
  workers.run_window();
  window = 2;
  CHECK_THROWS_WITH(workers.run_window(), "item 1");  // the lowest item's, every time
  window = 3;
  CHECK_NOTHROW(workers.run_window());  // the next window runs normally
}

TEST_CASE("window workers pass a task's exception on, the lowest item's and task's", "[parallel]") {
  std::atomic<int> window{0};
  WindowWorkers workers(
      2, 3,
      [&](size_t i) {
        if (window.load() == 3 && i == 1) throw std::runtime_error("prepare 1");
        return uint32_t{4};
      },
      [&](size_t i, uint32_t task, int, bool) {
        if (window.load() >= 2 && i >= 1 && task >= 2) {
          throw std::runtime_error("item " + std::to_string(i) + " task " + std::to_string(task));
        }
      });
  window = 1;
  CHECK_NOTHROW(workers.run_window());
  window = 2;
  CHECK_THROWS_WITH(workers.run_window(), "item 1 task 2");
  window = 3;
  CHECK_THROWS_WITH(workers.run_window(), "prepare 1");  // before item 2's tasks
  window = 1;
  CHECK_NOTHROW(workers.run_window());
}

TEST_CASE("METIS cuts no more links than the breadth-first cut, as evenly", "[parallel]") {
  for (const int k : {4, 8}) {
    const FabricSpec spec = FabricSpec::resolve(
        load_scenario(fs::path(FABTWIN_SOURCE_DIR) / "scenarios/bench/fat_tree_k8_permutation.json",
                      {"topology.k=" + std::to_string(k)}));
    for (const int parts : {2, 4, 8}) {
      INFO("k=" << k << ", " << parts << " parts");
      const FabricPartitioning bfs =
          partition_fabric(spec.topology, parts, false, Partitioner::BreadthFirst);
      const FabricPartitioning metis =
          partition_fabric(spec.topology, parts, false, Partitioner::Metis);
      CHECK(bfs.partitioner == Partitioner::BreadthFirst);
      CHECK(metis.partitioner ==
            (metis_available() ? Partitioner::Metis : Partitioner::BreadthFirst));
      CHECK(static_cast<int>(metis.partitions) == parts);
      std::vector<int> nodes(metis.partitions, 0);  // no partition left empty
      for (uint32_t p : metis.partition_of) ++nodes[p];
      CHECK(std::count(nodes.begin(), nodes.end(), 0) == 0);
      CHECK(metis.cut_links <= bfs.cut_links);
      CHECK(metis.imbalance < 1.15);
      CHECK(metis.lookahead == microseconds(1));
    }
  }
}

TEST_CASE("results do not depend on the partitioner", "[parallel]") {
  const std::vector<std::string> sets = {"topology.k=4", "traffic[0].size=200KB"};
  const std::string scenario = "scenarios/bench/fat_tree_k8_permutation.json";
  const Outcome one = run_with(scenario, sets, 1);
  for (const char* partitioner : {"bfs", "metis"}) {
    std::vector<std::string> with = sets;
    with.push_back(std::string("run.partitioner=") + partitioner);
    const Outcome many = run_with(scenario, with, 4);
    INFO(partitioner);
    CHECK(many.partitions == 4);
    // The report says which cut ran (METIS falls back to bfs in a build without it).
    CHECK(many.engine["partitioner"] ==
          (std::string(partitioner) == "metis" && !metis_available() ? "bfs" : partitioner));
    CHECK(many.engine["cut_links"].get<int>() > 0);
    CHECK(many.fingerprint == one.fingerprint);
    CHECK(many.report == one.report);
  }
}

TEST_CASE("a large fabric runs as partitions for cache locality, on any number of threads",
          "[parallel]") {
  const std::string scenario = "scenarios/bench/fat_tree_k8_permutation.json";
  const auto topology = [&](int k, const std::string& delay) {
    return FabricSpec::resolve(
               load_scenario(fs::path(FABTWIN_SOURCE_DIR) / scenario,
                             {"topology.k=" + std::to_string(k), "fabric.link.delay=" + delay}))
        .topology;
  };
  const Topology k8 = topology(8, "1us");
  const Topology k16 = topology(16, "1us");
  // Weight: 80 switches of 8 ports and 128 hosts (896); 320 of 16 and 1,024 hosts (7,168).
  CHECK(locality_partitions(k8) == 1);
  CHECK(locality_partitions(k16) == 7);
  const auto parts = [](const Topology& t, int threads, int partitions) {
    return partition_run(t, threads, partitions, std::nullopt, Partitioner::Metis).partitions;
  };
  CHECK(parts(k16, 1, 0) == 7);
  CHECK(parts(k16, 4, 0) == 7);
  CHECK(parts(k16, 16, 0) == 16);  // at least one per thread
  CHECK(parts(k16, 1, 1) == 1);    // run.partitions asks for fewer
  CHECK(parts(k16, 1, 3) == 3);
  CHECK(parts(k8, 1, 0) == 1);
  CHECK(parts(k8, 2, 0) == 2);
  CHECK(partition_run(k16, 1, 0, std::nullopt, Partitioner::Metis).lookahead == microseconds(1));
  // Windows shorter than kLocalityWindow, or none at all, keep the threads' cut.
  CHECK(parts(topology(16, "50ns"), 1, 0) == 7);
  CHECK(parts(topology(16, "49ns"), 1, 0) == 1);
  CHECK(parts(topology(16, "49ns"), 2, 0) == 2);
  const Topology zero = topology(16, "0us");
  CHECK(parts(zero, 1, 0) == 1);
  CHECK_THROWS_WITH(parts(zero, 1, 2), Catch::Contains("zero delay"));

  // The same run whole and in 7 partitions on one thread, and in 7 on two threads.
  const std::vector<std::string> sets = {"topology.k=16", "traffic[0].size=16KB"};
  std::vector<std::string> whole = sets;
  whole.push_back("run.partitions=1");
  const Outcome one = run_with(scenario, whole, 1);
  REQUIRE(one.partitions == 1);
  for (const int threads : {1, 2}) {
    const Outcome many = run_with(scenario, sets, threads);
    INFO(threads << " threads");
    CHECK(many.partitions == 7);
    CHECK(many.fingerprint == one.fingerprint);
    CHECK(many.report == one.report);
    CHECK(many.queues == one.queues);
    CHECK(many.pauses == one.pauses);
    CHECK(many.buffers == one.buffers);
    // One thread runs its partitions in turn, and they share one packet pool, which grows as
    // the whole run's does (a pool per partition held 7 small first blocks: 28,672 packets
    // against 36,864).
    if (threads == 1) CHECK(many.pool_capacity == one.pool_capacity);
  }
  CHECK_THROWS_WITH(run_with(scenario, {"run.partitions=-1"}, 1),
                    Catch::Contains("run.partitions"));
}
