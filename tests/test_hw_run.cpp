// The hardware runner's parts that need no hardware: the `hw` section, the host mapping, the
// plan (split over queue pairs as the simulator splits flows, its hash), the TCP transport with
// several ranks in threads of one process, and the whole run writing its measurement file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "hw/run/host_mapping.h"
#include "hw/run/hw_config.h"
#include "hw/run/hw_measurement.h"
#include "hw/run/hw_runner.h"
#include "hw/run/local_control_group.h"
#include "hw/run/plan.h"
#include "hw/run/tcp_transport.h"
#include "models/fabric/fabric_spec.h"
#include "models/nic/host_nic.h"
#include "sim/cli/compare.h"
#include "sim/scenario_file.h"
#include "sim/sha256.h"
#include "test_support.h"

using namespace fabtwin;
using namespace fabtwin::hw;
namespace fs = std::filesystem;

namespace {

using testing::temp_dir;
using testing::write_temp;

nlohmann::json scenario(int hosts = 4) {
  return {{"topology", {{"type", "star"}, {"hosts", hosts}}},
          {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
          {"traffic",
           {{{"type", "incast"}, {"receiver", 0}, {"senders", hosts - 1}, {"size", "300KB"}},
            {{"type", "permutation"}, {"size", "100KB"}, {"start", "50us"}}}},
          {"run", {{"seed", 3}}}};
}

FabricSpec resolve(const nlohmann::json& s, const std::vector<std::string>& sets = {}) {
  return FabricSpec::resolve(load_scenario(write_temp("hw.json", s.dump()), sets));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// What one rank of a job run in threads returned: its exit status (-1 if it threw), its error
// and what it said.
struct RankOutcome {
  int status = -1;
  std::string error;
  std::string said;
};

// Runs a job of `ranks` ranks in threads of this process over a LocalControlGroup: the
// scenario on the hosts file's ranks, rank 0 writing `out` (and its JSON to `root_json`, if set).
std::vector<RankOutcome> run_ranks(int ranks, const fs::path& scenario, const fs::path& hosts,
                                   const fs::path& out, const std::string& root_json = "") {
  auto group = LocalControlGroup::create(ranks);
  std::vector<RankOutcome> outcomes(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      RankOutcome& mine = outcomes[static_cast<size_t>(r)];
      std::ostringstream said;
      try {
        RunOptions o;
        o.scenario = scenario.string();
        o.sets = {"hw.hosts=" + hosts.string()};
        o.rank = r;
        o.out = out.string();
        if (r == 0) o.json = root_json;
        const PreparedRun run = prepare_run(o);
        auto transport = make_transport(run);
        mine.status = execute_run(run, *group[static_cast<size_t>(r)], *transport, o, said);
      } catch (const std::exception& e) {
        mine.error = e.what();
        static_cast<LocalControlGroup&>(*group[static_cast<size_t>(r)]).abandon(e.what());
      }
      mine.said = said.str();
    });
  }
  for (std::thread& t : threads) t.join();
  return outcomes;
}

}  // namespace

TEST_CASE("hw section: declared defaults, auto keywords, errors at their JSON path", "[hw]") {
  const HwConfig d = read_hw_config(nlohmann::json::object());
  CHECK(d.transport == "verbs");
  CHECK(d.memory == "host");
  CHECK(d.tx_depth == 128);
  CHECK(d.inline_size == 220);
  CHECK(d.gid_index == -1);
  CHECK(d.traffic_class == -1);
  CHECK(d.control_port == 18600);
  CHECK(traffic_class_of(d, 26) == 104);

  const HwConfig c = read_hw_config(
      {{"hw", {{"transport", "tcp"}, {"gid_index", 3}, {"traffic_class", 106}, {"sl", 3}}}});
  CHECK(c.transport == "tcp");
  CHECK(c.gid_index == 3);
  CHECK(traffic_class_of(c, 26) == 106);
  CHECK(c.sl == 3);

  CHECK_THAT(error_of([] {
               read_hw_config({{"hw", {{"transport", "rdma"}}}});
             }),
             Catch::Contains("hw.transport"));
  CHECK_THAT(error_of([] {
               read_hw_config({{"hw", {{"tx_detph", 64}}}});
             }),
             Catch::Contains("hw.tx_detph"));
  CHECK_THAT(error_of([] {
               read_hw_config({{"hw", {{"gid_index", "first"}}}});
             }),
             Catch::Contains("hw.gid_index") && Catch::Contains("\"auto\""));
  CHECK_THAT(error_of([] {
               read_hw_config({{"hw", {{"traffic_class", 256}}}});
             }),
             Catch::Contains("hw.traffic_class"));
  CHECK_THAT(error_of([] { read_hw_config({{"hw", {{"sl", 16}}}}); }), Catch::Contains("hw.sl"));
  CHECK_THAT(error_of([] {
               read_hw_config({{"hw", {{"run_deadline", "0s"}}}});
             }),
             Catch::Contains("hw.run_deadline"));
  CHECK_THAT(error_of([] { read_hw_config({{"hw", 3}}); }), Catch::Contains("at hw:"));
  CHECK(hw_params().path == "hw");

  // The simulator accepts the section (and ignores it): the same flows with or without it.
  nlohmann::json with = scenario();
  with["hw"] = {{"transport", "tcp"}};
  CHECK(resolve(with).flows == resolve(scenario()).flows);
  nlohmann::json misspelt = scenario();
  misspelt["hardware"] = nlohmann::json::object();
  CHECK_THAT(error_of([&] { resolve(misspelt); }),
             Catch::Contains("hardware") && Catch::Contains("unknown section"));
}

TEST_CASE("host mapping: hosts files, mpirun blocks, missing hosts", "[hw]") {
  const HostMapping m =
      parse_hosts_text("# two hosts\n10.0.0.1 0-3\n\n10.0.0.2 4,5, # tail\n10.0.0.3 6-7\n", "h", 8);
  CHECK(m.ranks == 3);
  CHECK(m.host_rank == std::vector<int>{0, 0, 0, 0, 1, 1, 2, 2});
  CHECK(m.rank_address == std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3"});

  CHECK_THAT(
      error_of([] { parse_hosts_text("a 0-3\nb 3-4\n", "hosts.txt", 8); }),
      Catch::Contains("hosts.txt:2") && Catch::Contains("host 3 is already played by rank 0"));
  CHECK_THAT(error_of([] { parse_hosts_text("a 0-8\n", "hosts.txt", 8); }),
             Catch::Contains("hosts.txt:1") && Catch::Contains("host 8 is not in the scenario"));
  CHECK_THAT(error_of([] { parse_hosts_text("a 2-1\n", "f", 8); }), Catch::Contains("f:1"));
  CHECK_THAT(error_of([] { parse_hosts_text("a 0-1 extra\n", "f", 8); }),
             Catch::Contains("ADDRESS HOSTS"));
  CHECK_THAT(error_of([] { parse_hosts_text("# nothing\n", "f", 8); }), Catch::Contains("no"));

  CHECK(block_mapping(8, 3).host_rank == std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2});
  CHECK(block_mapping(2, 4).host_rank == std::vector<int>{0, 2});

  const fs::path file = write_temp("hosts", "127.0.0.1 0-1\n127.0.0.1 3\n");
  CHECK_THAT(error_of([&] {
               resolve_mapping(file.string(), 4, {true, true, true, true});
             }),
             Catch::Contains("host 2 send or receive"));
  CHECK(resolve_mapping(file.string(), 4, {true, true, false, true}).ranks == 2);
  CHECK_THAT(error_of([] { read_hosts_file("/nonexistent/hosts", 4); }),
             Catch::Contains("/nonexistent/hosts"));
}

TEST_CASE("plan: connections per host pair and QP, flows split as the simulator splits them",
          "[hw]") {
  const FabricSpec spec = resolve(scenario(), {"nic.qps_per_flow=3"});
  const Plan plan = make_plan(spec, block_mapping(4, 2));
  CHECK(plan.qps_per_flow == 3);
  CHECK(plan.ranks == 2);
  // Every connection belongs to a pair with flows, three per pair, numbered in order.
  for (size_t i = 0; i < plan.connections.size(); ++i) {
    const PlannedConnection& c = plan.connections[i];
    CHECK(c.id == i);
    CHECK(c.qp == static_cast<int>(i % 3));
    CHECK(c.src_rank == c.src_host * 2 / 4);
    CHECK(c.dst_rank == c.dst_host * 2 / 4);
  }
  // A flow's parts add up to its size, each the simulator's part on that QP.
  for (const FlowSpec& f : spec.flows) {
    int64_t total = 0;
    for (const PlannedMessage& m : plan.messages) {
      if (m.flow != f.id) continue;
      const PlannedConnection& c = plan.connections[m.connection];
      CHECK(c.src_host == f.src);
      CHECK(c.dst_host == f.dst);
      CHECK(m.size.count == part_bytes(f.size.count, 3, c.qp));
      CHECK(m.start == f.start);
      total += m.size.count;
    }
    CHECK(total == f.size.count);
  }
  CHECK(std::is_sorted(
      plan.messages.begin(), plan.messages.end(),
      [](const PlannedMessage& a, const PlannedMessage& b) { return a.start.ps < b.start.ps; }));
  // 300000 B over 3 QPs: 100096 + 100096 + 99808 (chunks rounded up to 128 B).
  CHECK(part_bytes(300000, 3, 0) == 100096);
  CHECK(part_bytes(300000, 3, 2) == 99808);
}

TEST_CASE("plan hash: stable for the same inputs, changed by any of them", "[hw]") {
  const FabricSpec spec = resolve(scenario());
  const Plan a = make_plan(spec, block_mapping(4, 2), {{"transport", "tcp"}});
  CHECK(a.hash.size() == 64);
  CHECK(make_plan(resolve(scenario()), block_mapping(4, 2), {{"transport", "tcp"}}).hash == a.hash);
  CHECK(plan_text(a).find("message ") != std::string::npos);
  CHECK(make_plan(spec, block_mapping(4, 4), {{"transport", "tcp"}}).hash != a.hash);
  CHECK(make_plan(spec, block_mapping(4, 2), {{"transport", "verbs"}}).hash != a.hash);
  CHECK(make_plan(resolve(scenario(), {"traffic[0].size=301KB"}), block_mapping(4, 2),
                  {{"transport", "tcp"}})
            .hash != a.hash);
  CHECK(make_plan(resolve(scenario(), {"run.seed=4"}), block_mapping(4, 2), {{"transport", "tcp"}})
            .hash != a.hash);  // the permutation draws other pairs
  // A SEND flow gets connections of its own, of its verb; the verb enters the hash.
  const Plan send = make_plan(resolve(scenario(), {"traffic[0].verb=send"}), block_mapping(4, 2),
                              {{"transport", "tcp"}});
  CHECK(send.hash != a.hash);
  const FabricSpec send_spec = resolve(scenario(), {"traffic[0].verb=send"});
  for (const PlannedMessage& m : send.messages) {
    for (const FlowSpec& f : send_spec.flows) {
      if (f.id == m.flow) CHECK(send.connections[m.connection].verb == f.verb);
    }
  }
  // SHA-256 of "abc" (FIPS 180-2, appendix B.1).
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("TCP transport: two ranks in threads, every message acknowledged", "[hw]") {
  const FabricSpec spec = resolve(scenario(), {"nic.qps_per_flow=2"});
  const Plan plan = make_plan(spec, block_mapping(4, 2));
  auto group = LocalControlGroup::create(2);
  std::vector<TransportResult> results(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        TcpTransport t({"127.0.0.1", std::chrono::milliseconds(10'000)});
        t.connect(plan, *group[r]);
        group[r]->barrier();
        const int64_t start = monotonic_raw_ns() + 1'000'000;
        results[r] = t.run(plan, start, start + 10'000'000'000);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        static_cast<LocalControlGroup&>(*group[r]).abandon(e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(errors == std::vector<std::string>{"", ""});
  size_t sent = 0, received = 0;
  for (int r = 0; r < 2; ++r) {
    for (const MessageTiming& t : results[r].messages) {
      CHECK(t.completed);
      CHECK(plan.connections[t.connection].src_rank == r);
      CHECK(t.posted_ns >= 0);
      CHECK(t.completed_ns > t.posted_ns);
      ++sent;
    }
    for (const MessageTiming& t : results[r].received) {
      CHECK(t.completed);
      CHECK(plan.connections[t.connection].dst_rank == r);
      ++received;
    }
    int64_t bytes = 0;
    for (const ConnectionTiming& c : results[r].connections) bytes += c.bytes_sent;
    int64_t planned = 0;
    for (const PlannedMessage& m : plan.messages) {
      if (plan.connections[m.connection].src_rank == r) planned += m.size.count;
    }
    CHECK(bytes == planned);
  }
  CHECK(sent == plan.messages.size());
  CHECK(received == plan.messages.size());
  // The incast's messages start at 0, the permutation's at 50 us: none posted before its start.
  for (int r = 0; r < 2; ++r) {
    for (const MessageTiming& t : results[r].messages) {
      for (const PlannedMessage& m : plan.messages) {
        if (m.flow == t.flow && m.connection == t.connection)
          CHECK(t.posted_ns >= m.start.ps / 1000);
      }
    }
  }
}

TEST_CASE("TCP transport: a deadline leaves messages not completed, and says so", "[hw]") {
  // 1 GB through loopback cannot finish in 1 ms.
  const FabricSpec spec = resolve(
      {{"topology", {{"type", "star"}, {"hosts", 2}}},
       {"traffic", {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "1GB"}}}}}}}});
  const Plan plan = make_plan(spec, block_mapping(2, 1));
  auto group = LocalControlGroup::create(1);
  TcpTransport t({"127.0.0.1", std::chrono::milliseconds(5'000)});
  t.connect(plan, *group[0]);
  const int64_t start = monotonic_raw_ns();
  const TransportResult r = t.run(plan, start, start + 1'000'000);
  REQUIRE(r.messages.size() == 1);
  CHECK_FALSE(r.messages[0].completed);
  CHECK(r.messages[0].completed_ns == -1);
  CHECK(r.messages[0].posted_ns >= 0);
  CHECK(monotonic_raw_ns() - start < 2'000'000'000);
}

TEST_CASE("a whole run in threads: three ranks, the measurement file of every flow", "[hw]") {
  nlohmann::json s = scenario(6);
  s["hw"] = {{"transport", "tcp"}, {"warmup", "4KiB"}, {"start_delay", "1ms"}};
  const fs::path scenario_file = write_temp("run.json", s.dump());
  const fs::path hosts = write_temp("hosts3", "127.0.0.1 0-1\n127.0.0.1 2-3\n127.0.0.1 4-5\n");
  const fs::path out = temp_dir() / "hw.h5";
  fs::remove(out);
  const auto ranks = run_ranks(3, scenario_file, hosts, out);
  for (const RankOutcome& r : ranks) {
    CHECK(r.error.empty());
    CHECK(r.status == 0);
  }
  CHECK_THAT(ranks[0].said, Catch::Contains("11 of 11 completed"));  // 5 incast + 6 permutation
  CHECK(ranks[1].said.empty());
  // The file compares with itself flow by flow: every flow has an fct and a goodput.
  const Comparison c = compare_files(out.string(), out.string());
  CHECK(c.source_a == "hardware");
  REQUIRE(c.tables.size() == 1);
  CHECK(c.tables[0].table == "flows");
  CHECK(c.tables[0].matched.size() == 11);
  for (const MatchedRow& row : c.tables[0].matched) CHECK(row.metrics.size() == 2);
}

// Collectives that cannot run (no GPU here, a build without NCCL, or, on a GPU host, a device
// that is not there): the file is still written, and every rank says why and exits 1. Rank 0
// prints its JSON to stdout (--json -), which must then hold the JSON alone.
TEST_CASE("collectives that cannot run: every rank says why and exits 1", "[hw]") {
  const nlohmann::json s = {
      {"topology", {{"type", "rail_optimized"}, {"nodes", 1}, {"gpus_per_node", 2}, {"spines", 1}}},
      {"traffic",
       {{{"type", "collective"},
         {"op", "all_reduce"},
         {"min_bytes", "64KiB"},
         {"max_bytes", "64KiB"},
         {"iterations", 2},
         {"warmup_iterations", 1},
         {"ranks", 2}}}},
      {"hw", {{"transport", "tcp"}, {"gpu", 1023}}}};
  const fs::path scenario_file = write_temp("collective.json", s.dump());
  const fs::path hosts = write_temp("hosts2", "127.0.0.1 0\n127.0.0.1 1\n");
  const fs::path out = temp_dir() / "collective-not-run.h5";
  fs::remove(out);
  const auto ranks = run_ranks(2, scenario_file, hosts, out, "-");
  for (const RankOutcome& r : ranks) {
    CHECK(r.error.empty());
    CHECK(r.status == 1);
  }
  CHECK(fs::exists(out));
  const nlohmann::json report = nlohmann::json::parse(ranks[0].said, nullptr, false);
  REQUIRE(report.is_object());
  bool noted = false;
  for (const auto& p : report["tables"]["hw/properties"]) {
    noted = noted ||
            (p["name"] == "collectives" && p["value"].get<std::string>().starts_with("not run: "));
  }
  CHECK(noted);
  CHECK_THAT(ranks[1].said,
             Catch::StartsWith("fabtwin-hw: the scenario's collectives were not run: "));
}

TEST_CASE("a run whose ranks made different plans is refused before any traffic", "[hw]") {
  const FabricSpec spec = resolve(scenario());
  const Plan a = make_plan(spec, block_mapping(4, 2));
  const Plan b = make_plan(resolve(scenario(), {"traffic[0].size=1KB"}), block_mapping(4, 2));
  auto group = LocalControlGroup::create(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      PreparedRun run{spec,
                      read_hw_config({{"hw", {{"transport", "tcp"}}}}),
                      block_mapping(4, 2),
                      r == 0 ? a : b,
                      r,
                      "127.0.0.1"};
      TcpTransport t({"127.0.0.1", std::chrono::milliseconds(5'000)});
      errors[r] = error_of([&] { execute_run(run, *group[r], t, RunOptions{}, std::cout); });
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) CHECK_THAT(e, Catch::Contains("different scenarios"));
}

TEST_CASE("transport results travel as JSON and every field is checked", "[hw]") {
  TransportResult r;
  r.messages.push_back({7, 2, 4096, 10, 200, -1, true});
  // Received before the destination's own start (it left the barrier later): negative.
  r.received.push_back({8, 3, 100, -1, -1, -150, true});
  r.connections.push_back({2, 4096, 1, {190}});
  r.properties = {{"transport", "tcp"}};
  const TransportResult back = transport_result_from_json(transport_result_json(r), 1);
  REQUIRE(back.messages.size() == 1);
  CHECK(back.messages[0].completed_ns == 200);
  CHECK(back.received[0].received_ns == -150);
  CHECK(back.connections[0].latency_ns == std::vector<int64_t>{190});
  CHECK(back.properties == r.properties);
  nlohmann::json bad = transport_result_json(r);
  bad["messages"][0]["bytes"] = "many";
  CHECK_THAT(error_of([&] { transport_result_from_json(bad, 2); }),
             Catch::Contains("rank 2") && Catch::Contains("bytes"));
}

namespace {

// A control group that passes every call through and, once the data endpoints have been
// exchanged, opens a stray connection to rank 0's data listener that presents a forged hello
// (the right connection id, a wrong cookie), and one that sends nothing useful and hangs up.
class StrayConnections : public ControlGroup {
 public:
  StrayConnections(std::unique_ptr<ControlGroup> inner, uint32_t connection)
      : inner_(std::move(inner)), connection_(connection) {}
  ~StrayConnections() override {
    for (int fd : strays_) ::close(fd);
  }
  int rank() const override { return inner_->rank(); }
  int ranks() const override { return inner_->ranks(); }
  uint16_t bound_port() const override { return 0; }
  void barrier() override { inner_->barrier(); }
  std::vector<unsigned char> broadcast(const std::vector<unsigned char>& b, int root) override {
    return inner_->broadcast(b, root);
  }
  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& b) override {
    return inner_->gather(b);
  }
  std::vector<std::vector<unsigned char>> allgather(const std::vector<unsigned char>& b) override {
    auto all = inner_->allgather(b);
    const nlohmann::json root = nlohmann::json::parse(all[0].begin(), all[0].end(), nullptr, false);
    if (rank() == 1 && root.is_object() && root.contains("port")) {
      for (int attempt = 0; attempt < 2; ++attempt) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(root["port"].get<uint16_t>());
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
        // The magic and a connection rank 0 does accept, but a cookie of zeros.
        unsigned char hello[24] = {0x57, 0x48, 0x54, 0x46, static_cast<unsigned char>(connection_)};
        if (attempt == 0) {
          CHECK(::send(fd, hello, sizeof hello, MSG_NOSIGNAL) == sizeof hello);  // cookie zeros
          strays_.push_back(fd);
        } else {
          CHECK(::send(fd, hello, 5, MSG_NOSIGNAL) == 5);  // a truncated hello
          ::close(fd);
        }
      }
    }
    return all;
  }

 private:
  std::unique_ptr<ControlGroup> inner_;
  uint32_t connection_;
  std::vector<int> strays_;
};

}  // namespace

TEST_CASE("TCP transport: connections with a forged or truncated hello are refused", "[hw]") {
  const FabricSpec spec = resolve(scenario());
  const Plan plan = make_plan(spec, block_mapping(4, 2));
  auto members = LocalControlGroup::create(2);
  std::vector<std::unique_ptr<ControlGroup>> group;
  uint32_t into_rank0 = 0;
  // From rank 1 into rank 0: rank 1 opens the strays before its own connections, so a stray
  // that were taken would hold the connection's place.
  while (plan.connections.at(into_rank0).dst_rank != 0 ||
         plan.connections.at(into_rank0).src_rank != 1) {
    ++into_rank0;
  }
  REQUIRE(into_rank0 < 256);
  for (auto& m : members) {
    group.push_back(std::make_unique<StrayConnections>(std::move(m), into_rank0));
  }
  std::vector<TransportResult> results(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        TcpTransport t({"127.0.0.1", std::chrono::milliseconds(10'000)});
        t.connect(plan, *group[r]);
        group[r]->barrier();
        const int64_t start = monotonic_raw_ns();
        results[r] = t.run(plan, start, start + 10'000'000'000);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(errors == std::vector<std::string>{"", ""});
  // Every planned message arrived intact: the strays were closed, not taken for connections.
  size_t received = 0;
  for (const TransportResult& r : results) {
    for (const MessageTiming& t : r.received) received += t.completed ? 1 : 0;
  }
  CHECK(received == plan.messages.size());
}
