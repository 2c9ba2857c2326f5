// The verbs data transport end to end on the fake provider: two or three "ranks" in threads,
// their descriptors exchanged over an in-process control group, the plan's messages moved as RC
// WRITEs or SENDs; the peer fields checked; failures named.
#include <time.h>

#include <catch2/catch.hpp>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "hw/verbs/fake_verbs.h"
#include "hw/verbs/ibverbs_device.h"
#include "hw/verbs/verbs_transport.h"
#include "in_process_control.h"

using namespace fabtwin;
using namespace fabtwin::hw;

namespace {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A ring of `ranks` processes, one host each: connection r goes r -> r+1; each carries
// `messages` messages of growing size, started 20 us apart.
Plan ring_plan(int ranks, int messages, int64_t size = 10000) {
  Plan plan;
  plan.ranks = ranks;
  for (int r = 0; r < ranks; ++r) plan.host_rank.push_back(r);
  for (int r = 0; r < ranks; ++r) {
    PlannedConnection c;
    c.id = static_cast<uint32_t>(r);
    c.src_host = c.src_rank = r;
    c.dst_host = c.dst_rank = (r + 1) % ranks;
    plan.connections.push_back(c);
  }
  uint32_t flow = 0;
  for (int m = 0; m < messages; ++m)
    for (int r = 0; r < ranks; ++r)
      plan.messages.push_back(
          {flow++, static_cast<uint32_t>(r), Bytes{size + 1000 * m}, Time{m * 20'000'000}});
  plan.mtu_bytes = 4096;
  return plan;
}

struct FakeCluster {
  FakeFabric fabric;
  std::shared_ptr<VerbsProvider> provider;
  explicit FakeCluster(int ranks) {
    for (int r = 0; r < ranks; ++r)
      fabric.add_device(
          fake_roce_device("fake_" + std::to_string(r), "10.0.0." + std::to_string(r + 1)));
    provider = fabric.provider();
  }
  VerbsSettings settings(int rank) const {
    VerbsSettings s;
    s.device = "fake_" + std::to_string(rank);
    s.provider = provider;
    return s;
  }
};

// Runs the plan on every rank in a thread; returns each rank's result (or rethrows the first
// failure).
using ControlFactory = std::function<std::unique_ptr<ControlGroup>(int rank)>;

ControlFactory in_process(int ranks) {
  auto hub = std::make_shared<test::InProcessHub>(ranks);
  return [hub](int rank) { return std::make_unique<test::InProcessControl>(hub, rank); };
}

// The real control group over loopback TCP (hw/control): rank 0 listens on a free port, the
// others join once it does.
ControlFactory over_loopback(int ranks) {
  auto listening = std::make_shared<std::promise<uint16_t>>();
  auto port = std::make_shared<std::shared_future<uint16_t>>(listening->get_future().share());
  return [=](int rank) {
    ControlConfig c;
    c.rank = rank;
    c.ranks = ranks;
    c.root_port = 0;
    c.run_id = "verbs-transport-test";
    c.token = std::vector<unsigned char>(32, 0x5a);
    c.join_deadline = std::chrono::milliseconds(5000);
    c.call_deadline = std::chrono::milliseconds(5000);
    if (rank == 0)
      c.on_listening = [listening](uint16_t p) { listening->set_value(p); };
    else
      c.root_port = port->get();
    return ControlGroup::join(c);
  };
}

std::vector<TransportResult> run_ranks(const Plan& plan,
                                       const std::function<VerbsSettings(int)>& settings,
                                       int64_t budget_ns = 5'000'000'000,
                                       ControlFactory controls = nullptr, int runs = 1) {
  if (!controls) controls = in_process(plan.ranks);
  std::vector<TransportResult> results(plan.ranks);
  std::vector<std::exception_ptr> errors(plan.ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < plan.ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        auto group = controls(r);
        ControlGroup& control = *group;
        auto transport = make_verbs_transport(settings(r));
        transport->connect(plan, control);
        for (int run = 0; run < runs; ++run) {
          control.barrier();
          const int64_t start = now_ns();
          try {
            results[r] = transport->run(plan, start, start + budget_ns);
          } catch (...) {
            errors[r] = std::current_exception();
          }
          control.barrier();  // every rank gets here, whether its run failed or not
        }
        transport->close();
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

std::string property(const TransportResult& r, const std::string& key) {
  for (const auto& [k, v] : r.properties)
    if (k == key) return v;
  return "";
}

// A control group of two where this process is rank 0 and rank 1's descriptor is written by
// the test.
class ScriptedPeer : public ControlGroup {
 public:
  explicit ScriptedPeer(std::function<nlohmann::json(const nlohmann::json& mine)> peer)
      : peer_(std::move(peer)) {}
  int rank() const override { return 0; }
  int ranks() const override { return 2; }
  uint16_t bound_port() const override { return 0; }
  void barrier() override {}
  std::vector<unsigned char> broadcast(const std::vector<unsigned char>& b, int) override {
    return b;
  }
  std::vector<std::vector<unsigned char>> allgather(const std::vector<unsigned char>& b) override {
    const std::string text = peer_(nlohmann::json::parse(b.begin(), b.end())).dump();
    return {b, std::vector<unsigned char>(text.begin(), text.end())};
  }
  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& b) override {
    return {b};
  }

 private:
  std::function<nlohmann::json(const nlohmann::json&)> peer_;
};

// Rank 1's honest descriptor for a two-rank ring: it mirrors rank 0's ends.
nlohmann::json honest_peer(const nlohmann::json& mine) {
  nlohmann::json peer;
  peer["rank"] = 1;
  peer["gid"] = "0000:0000:0000:0000:0000:ffff:0a00:0002";
  peer["gid_type"] = "RoCE v2";
  peer["ends"] = nlohmann::json::array();
  for (const auto& e : mine["ends"]) {
    nlohmann::json p = e;
    p["role"] = e["role"] == "src" ? "dst" : "src";
    p["qpn"] = 0x300;
    p["psn"] = 0x42;
    p["rkey"] = 0x1234u;
    p["addr"] = uint64_t{0x10000};
    p["len"] = uint64_t{1} << 20;
    peer["ends"].push_back(p);
  }
  return peer;
}

}  // namespace

TEST_CASE("verbs transport: three ranks exchange RDMA WRITEs around a ring", "[verbs_transport]") {
  FakeCluster cluster(3);
  const Plan plan = ring_plan(3, 5);
  const auto results = run_ranks(plan, [&](int r) { return cluster.settings(r); });
  int64_t planned_bytes = 0;
  for (const PlannedMessage& m : plan.messages) planned_bytes += m.size.count;
  CHECK(cluster.fabric.bytes_written() == planned_bytes);
  for (int r = 0; r < 3; ++r) {
    const TransportResult& res = results[r];
    REQUIRE(res.messages.size() == 5);
    for (size_t i = 0; i < res.messages.size(); ++i) {
      const MessageTiming& m = res.messages[i];
      CHECK(m.completed);
      CHECK(m.connection == static_cast<uint32_t>(r));
      // Posted no earlier than its start offset (20 us apart), completed after posting.
      CHECK(m.posted_ns >= static_cast<int64_t>(i) * 20'000);
      CHECK(m.completed_ns >= m.posted_ns);
    }
    REQUIRE(res.connections.size() == 1);
    CHECK(res.connections[0].messages_completed == 5);
    CHECK(res.connections[0].bytes_sent == 5 * 10000 + 1000 * (0 + 1 + 2 + 3 + 4));
    CHECK(res.connections[0].latency_ns.size() == 5);
    CHECK(res.received.empty());  // a WRITE's destination cannot tell
    CHECK(property(res, "gid_index") == "3");
    CHECK(property(res, "gid_type") == "RoCE v2");
    CHECK(property(res, "path_mtu") == "4096");
    CHECK(property(res, "device") == "fake_" + std::to_string(r));
  }
}

TEST_CASE("verbs transport: descriptors through the authenticated control group",
          "[verbs_transport]") {
  FakeCluster cluster(2);
  const Plan plan = ring_plan(2, 3);
  const auto results = run_ranks(
      plan, [&](int r) { return cluster.settings(r); }, 5'000'000'000, over_loopback(2));
  for (const TransportResult& r : results) {
    REQUIRE(r.messages.size() == 3);
    for (const MessageTiming& m : r.messages) CHECK(m.completed);
  }
  CHECK(cluster.fabric.bytes_written() == 2 * (3 * 10000 + 1000 * 3));
}

TEST_CASE("verbs transport: SENDs are received in order, in a small window", "[verbs_transport]") {
  FakeCluster cluster(2);
  const Plan plan = ring_plan(2, 40, 100);
  const auto results = run_ranks(plan, [&](int r) {
    VerbsSettings s = cluster.settings(r);
    s.verb = VerbsVerb::Send;
    s.tx_depth = 4;  // the fake refuses a fifth outstanding request
    s.cq_mod = 3;
    s.rx_depth = 8;
    s.inline_size = 236;  // perftest's SEND default
    return s;
  });
  int64_t planned_bytes = 0;
  for (const PlannedMessage& m : plan.messages) planned_bytes += m.size.count;
  CHECK(cluster.fabric.bytes_sent() == planned_bytes);
  CHECK(cluster.fabric.bytes_written() == 0);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(results[r].messages.size() == 40);
    REQUIRE(results[r].received.size() == 40);
    for (size_t i = 0; i < 40; ++i) {
      CHECK(results[r].messages[i].completed);
      const MessageTiming& got = results[r].received[i];
      CHECK(got.connection == static_cast<uint32_t>(1 - r));
      CHECK(got.flow == 2 * i + (1 - r));
      CHECK(got.bytes == static_cast<int64_t>(100 + 1000 * i));
      CHECK(got.received_ns >= 0);
    }
    CHECK(property(results[r], "verb") == "send");
    CHECK(property(results[r], "cq_mod") == "3");
  }
}

TEST_CASE("verbs transport: a second run on the same queue pairs gets its receives",
          "[verbs_transport]") {
  FakeCluster cluster(2);
  const Plan plan = ring_plan(2, 12, 300);
  const auto results = run_ranks(
      plan,
      [&](int r) {
        VerbsSettings s = cluster.settings(r);
        s.verb = VerbsVerb::Send;
        s.rx_depth = 5;
        return s;
      },
      5'000'000'000, nullptr, 2);
  int64_t planned_bytes = 0;
  for (const PlannedMessage& m : plan.messages) planned_bytes += m.size.count;
  CHECK(cluster.fabric.bytes_sent() == 2 * planned_bytes);
  for (const TransportResult& r : results) {
    CHECK(r.received.size() == 12);
    for (const MessageTiming& m : r.messages) CHECK(m.completed);
  }
}

TEST_CASE("verbs transport: the path MTU is the plan's, capped by the port", "[verbs_transport]") {
  CHECK(path_mtu_for(4096) == 4096);
  CHECK(path_mtu_for(9000) == 4096);
  CHECK(path_mtu_for(1500) == 1024);
  CHECK(path_mtu_for(100) == 256);
  FakeCluster cluster(2);
  Plan plan = ring_plan(2, 1);
  plan.mtu_bytes = 2048;
  const auto results = run_ranks(plan, [&](int r) { return cluster.settings(r); });
  CHECK(property(results[0], "path_mtu") == "2048");
}

TEST_CASE("verbs transport: a failing path names the connection and the peer",
          "[verbs_transport]") {
  FakeCluster cluster(2);
  cluster.fabric.inject_send_error("fake_0", WcStatus::RetryExceeded, 2);
  const Plan plan = ring_plan(2, 4);
  CHECK_THROWS_WITH(run_ranks(
                        plan, [&](int r) { return cluster.settings(r); }, 300'000'000),
                    Catch::Contains("connection 0 (peer rank 1)") &&
                        Catch::Contains("transport retry counter exceeded") &&
                        Catch::Contains("did not acknowledge"));
}

TEST_CASE("verbs transport: every peer field is checked before use", "[verbs_transport]") {
  const Plan plan = ring_plan(2, 2);
  auto attempt = [&](std::function<void(nlohmann::json&)> lie) {
    FakeCluster cluster(1);
    ScriptedPeer control([&](const nlohmann::json& mine) {
      nlohmann::json peer = honest_peer(mine);
      lie(peer);
      return peer;
    });
    auto transport = make_verbs_transport(cluster.settings(0));
    transport->connect(plan, control);
  };
  // The honest descriptor passes (the fake accepts a peer it cannot reach until traffic flows).
  CHECK_NOTHROW(attempt([](nlohmann::json&) {}));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["ends"][0]["qpn"] = 0x1000000; }),
                    Catch::Contains("peer rank 1, connection") && Catch::Contains("field qpn") &&
                        Catch::Contains("0x2..0xffffff, found 0x1000000"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["ends"][0]["qpn"] = 1; }),
                    Catch::Contains("field qpn") && Catch::Contains("found 0x1"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["ends"][0]["rkey"] = uint64_t{1} << 32; }),
                    Catch::Contains("field rkey") && Catch::Contains("32-bit"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["ends"][1]["psn"] = 0x1000000; }),
                    Catch::Contains("field psn") && Catch::Contains("found 0x1000000"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["ends"][1]["psn"] = -5; }),
                    Catch::Contains("field psn") && Catch::Contains("unsigned integer"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) {
                      for (auto& e : p["ends"])
                        if (e["role"] == "dst") e["len"] = 100;
                    }),
                    Catch::Contains("field len") && Catch::Contains("at least 11000 bytes") &&
                        Catch::Contains("found 100 bytes"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) {
                      for (auto& e : p["ends"])
                        if (e["role"] == "dst") e["addr"] = UINT64_MAX - 10;
                    }),
                    Catch::Contains("field addr+len") && Catch::Contains("does not wrap around"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["gid"] = "10.0.0.2"; }),
                    Catch::Contains("field gid"));
  CHECK_THROWS_WITH(
      attempt([](nlohmann::json& p) { p["gid_type"] = "RoCE v1"; }),
      Catch::Contains("field gid_type: expected RoCE v2") && Catch::Contains("found RoCE v1"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p.erase("gid_type"); }),
                    Catch::Contains("field gid_type: expected a string, found nothing"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["gid"] = "::"; }),
                    Catch::Contains("zero GID"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["rank"] = 0; }),
                    Catch::Contains("peer rank 1: field rank: expected 1, found 0"));
  CHECK_THROWS_WITH(attempt([](nlohmann::json& p) { p["ends"].erase(0); }),
                    Catch::Contains("no 'dst' end") || Catch::Contains("no 'src' end"));
  CHECK_THROWS_AS(attempt([](nlohmann::json& p) { p = "not an object"; }), ControlError);
}

TEST_CASE("verbs transport: no device, no GPU: connect says what is missing", "[verbs_transport]") {
  const Plan plan = ring_plan(2, 1);
  ScriptedPeer control(honest_peer);
  FakeFabric empty;
  VerbsSettings s;
  s.provider = empty.provider();
  CHECK_THROWS_WITH(make_verbs_transport(s)->connect(plan, control),
                    Catch::Contains("rank 0") && Catch::Contains("no RDMA device found"));
  // The real provider on this machine.
  if (make_ibverbs_provider()->device_names().empty()) {
    VerbsSettings real;
    real.memory = VerbsMemory::Cuda;
    try {
      make_verbs_transport(real)->connect(plan, control);
      FAIL("connect succeeded without an RDMA device");
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("no RDMA device found (ibv_get_device_list returned none)"));
      bool gpu_ok = false;
      try {
        gpu_ok = gpu_count() > 0;
      } catch (const GpuError&) {
      }
      // Without a GPU the same message names that too.
      if (!gpu_ok) CHECK_THAT(what, Catch::Contains("memory cuda: "));
    }
  }
  VerbsSettings wrong;
  wrong.tx_depth = 0;
  CHECK_THROWS_WITH(make_verbs_transport(wrong)->connect(plan, control),
                    Catch::Contains("tx_depth"));
}
