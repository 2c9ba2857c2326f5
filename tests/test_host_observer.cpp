// The host observer's readers on fixture trees (tests/data/sysfs: two ports of a ConnectX-6 Dx
// in the two ecn/ layouts, see tests/data/observe/README.md) and on this machine's own network
// interfaces: every counter family, wrap-aware deltas, settings, the GPU-NIC matrix, the
// sampler's period, JSON both ways and the tables.
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hw/observe/counter_value.h"
#include "hw/observe/dcb_settings.h"
#include "hw/observe/ethtool_stats.h"
#include "hw/observe/gpu_topology.h"
#include "hw/observe/host_observer.h"
#include "hw/observe/host_settings.h"
#include "hw/observe/sysfs_counters.h"

using namespace fabtwin::hw;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(FABTWIN_TEST_DATA);
const fs::path kSysfs = kData / "sysfs";

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const CounterValue* find_counter(const std::vector<CounterValue>& v, const std::string& name) {
  for (const CounterValue& c : v) {
    if (c.counter == name) return &c;
  }
  return nullptr;
}

const HostSetting* find_setting(const std::vector<HostSetting>& v, const std::string& name) {
  for (const HostSetting& s : v) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string setting(const std::vector<HostSetting>& v, const std::string& name) {
  const HostSetting* s = find_setting(v, name);
  INFO(name);
  REQUIRE(s != nullptr);
  return s->value;
}

// A writable copy of the fixture tree, removed at the end of the test.
struct TreeCopy {
  fs::path root;
  TreeCopy() {
    root = fs::temp_directory_path() /
           ("fabtwin-observe-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::copy(kSysfs, root, fs::copy_options::recursive);
  }
  ~TreeCopy() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void set(const std::string& file, const std::string& value) const {
    std::ofstream(root / file) << value << "\n";
  }
};

const std::string kPort0 = "class/infiniband/mlx5_0/ports/1/";

}  // namespace

TEST_CASE("every file of hw_counters/ and counters/ is read with its value", "[observe]") {
  std::vector<std::string> notes;
  const std::vector<CounterValue> v = read_port_counters(kSysfs, "mlx5_0", 1, notes);
  CHECK(notes.empty());
  size_t hw = 0, port = 0;
  for (const CounterValue& c : v) {
    CHECK(c.source == "sysfs");
    CHECK(c.device == "mlx5_0/1");
    hw += c.counter.starts_with("hw_counters/");
    port += c.counter.starts_with("counters/");
  }
  // 30 files in hw_counters/ less lifespan (a setting), 21 in counters/.
  CHECK(hw == 29);
  CHECK(port == 21);
  CHECK(find_counter(v, "hw_counters/lifespan") == nullptr);
  CHECK(find_counter(v, "hw_counters/np_cnp_sent")->value == 48211);
  CHECK(find_counter(v, "hw_counters/rp_cnp_handled")->value == 47902);
  CHECK(find_counter(v, "hw_counters/np_ecn_marked_roce_packets")->value == 52734);
  CHECK(find_counter(v, "hw_counters/out_of_sequence")->value == 117);
  CHECK(find_counter(v, "hw_counters/local_ack_timeout_err")->value == 3);
  CHECK(find_counter(v, "counters/port_xmit_data")->value == 98123409876ULL);
  CHECK(find_counter(v, "counters/VL15_dropped")->value == 0);
  CHECK(rdma_netdev(kSysfs, "mlx5_0") == "ens1f0np0");
}

TEST_CASE("a missing RDMA device or port is named with what is there", "[observe]") {
  std::vector<std::string> notes;
  CHECK_THROWS_WITH(read_port_counters(kSysfs, "mlx5_7", 1, notes),
                    Catch::Contains("no RDMA device 'mlx5_7'") &&
                        Catch::Contains("devices there: mlx5_0, mlx5_1"));
  CHECK_THROWS_WITH(
      read_port_counters(kSysfs, "mlx5_0", 2, notes),
      Catch::Contains("RDMA device 'mlx5_0' has no port 2") && Catch::Contains("ports: 1"));
  CHECK_THROWS_WITH(read_port_counters(kSysfs / "class", "mlx5_0", 1, notes),
                    Catch::Contains("no RDMA device there at all"));
  ObserveConfig c;
  c.sysfs_root = kSysfs;
  c.device = "mlx5_9";
  CHECK_THROWS_AS(HostObserver(c), ObserveError);
  c.device = "mlx5_0";
  c.netdev = "eth9";
  CHECK_THROWS_WITH(HostObserver(c), Catch::Contains("no network interface 'eth9'"));
}

TEST_CASE("a counter file that is not a number is noted and skipped", "[observe]") {
  const TreeCopy tree;
  tree.set(kPort0 + "hw_counters/out_of_buffer", "N/A");
  std::vector<std::string> notes;
  const std::vector<CounterValue> v = read_port_counters(tree.root, "mlx5_0", 1, notes);
  CHECK(find_counter(v, "hw_counters/out_of_buffer") == nullptr);
  CHECK(find_counter(v, "hw_counters/out_of_sequence") != nullptr);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("out_of_buffer: not read as a number"));
}

TEST_CASE("deltas: 32-bit queue counters wrap, 64-bit counters reset", "[observe]") {
  CHECK(counter_wrap_bits("sysfs", "hw_counters/out_of_sequence") == 32);
  CHECK(counter_wrap_bits("sysfs", "hw_counters/np_cnp_sent") == 64);
  CHECK(counter_wrap_bits("sysfs", "counters/port_xmit_data") == 64);
  CHECK(counter_wrap_bits("ethtool", "rx_prio3_pause") == 64);
  CHECK(counter_delta(10, 25, 32).delta == 15);
  CHECK(counter_delta(10, 25, 32).kind == DeltaKind::Plain);
  const CounterDelta wrapped = counter_delta(4294967000ULL, 200, 32);
  CHECK(wrapped.delta == 496);
  CHECK(wrapped.kind == DeltaKind::Wrapped);
  const CounterDelta reset = counter_delta(5000, 20, 64);
  CHECK(reset.delta == 20);
  CHECK(reset.kind == DeltaKind::Reset);
  // A 32-bit counter whose earlier reading does not fit 32 bits was cleared, not wrapped.
  CHECK(counter_delta(1ULL << 40, 7, 32).kind == DeltaKind::Reset);
}

TEST_CASE("before and after: the deltas of a run, with a wrapped queue counter", "[observe]") {
  const TreeCopy tree;
  ObserveConfig c;
  c.sysfs_root = tree.root;
  c.device = "mlx5_0";
  c.ethtool = false;
  c.gpu_topology_command = "";
  c.rank = 3;
  c.host = "node7";
  HostObserver o(c);
  o.before();
  tree.set(kPort0 + "hw_counters/np_cnp_sent", "48311");
  tree.set(kPort0 + "hw_counters/rx_write_requests", "200");  // was 4294967000
  tree.set(kPort0 + "counters/port_xmit_data", "98123409876000");
  o.after();
  const Observation obs = o.take();
  REQUIRE(obs.snapshots.size() == 2);
  CHECK(obs.snapshots[0].phase == "before");
  CHECK(obs.snapshots[1].phase == "after");
  CHECK(obs.snapshots[1].monotonic_raw_ns >= obs.snapshots[0].monotonic_raw_ns);
  const ObservationTables t = observation_tables({obs});
  CHECK(t.counters.size() == 2 * 50);
  REQUIRE(t.deltas.size() == 50);
  const auto delta = [&](const std::string& name) {
    for (const CounterDeltaRow& d : t.deltas) {
      if (d.counter == name) return d;
    }
    FAIL("no delta for " << name);
    return CounterDeltaRow{};
  };
  CHECK(delta("hw_counters/np_cnp_sent").delta == 100);
  CHECK(delta("hw_counters/np_cnp_sent").kind.empty());
  CHECK(delta("hw_counters/rx_write_requests").delta == 496);
  CHECK(delta("hw_counters/rx_write_requests").kind == "wrapped");
  CHECK(delta("counters/port_xmit_data").delta == 98123409876000ULL - 98123409876ULL);
  CHECK(delta("hw_counters/out_of_sequence").delta == 0);
  CHECK(t.deltas[0].rank == 3);
  CHECK(t.deltas[0].host == "node7");
  CHECK(t.deltas[0].interval_ns >= 0);
  // take() empties the observer.
  CHECK(o.take().snapshots.empty());
}

TEST_CASE("settings: firmware, PCIe, NUMA, DCQCN in both ecn layouts, QoS, debugfs", "[observe]") {
  std::vector<std::string> notes;
  const std::vector<HostSetting> s0 = read_rdma_settings(kSysfs, "mlx5_0", 1, notes);
  CHECK(setting(s0, "fw_ver") == "22.36.1010");
  CHECK(setting(s0, "port/link_layer") == "Ethernet");
  CHECK(setting(s0, "hw_counters/lifespan") == "10");
  CHECK(setting(s0, "pci_address") == "0000:17:00.0");
  CHECK(setting(s0, "pcie/current_link_width") == "8");
  CHECK(setting(s0, "pcie/max_link_width") == "16");
  CHECK(setting(s0, "pcie/link_downgraded") == "yes");
  CHECK(setting(s0, "numa_node") == "0");
  CHECK(setting(s0, "local_cpulist") == "0-27,56-83");
  CHECK(setting(s0, "module/mlx5_core/version") == "24.10-1.1.4");
  CHECK(setting(s0, "debugfs/cc_params/rp_ai_rate") == "5");
  CHECK(setting(s0, "debugfs/cc_params/np_cnp_dscp") == "48");
  CHECK(find_setting(s0, "debugfs/cc_params/rp_ai_rate")
            ->source.ends_with("kernel/debug/mlx5/0000:17:00.0/cc_params/rp_ai_rate"));
  CHECK(notes.empty());

  const std::vector<HostSetting> n0 = read_netdev_settings(kSysfs, "ens1f0np0", notes);
  CHECK(setting(n0, "mtu") == "4200");
  CHECK(setting(n0, "ecn/roce_np/enable/3") == "1");
  CHECK(setting(n0, "ecn/roce_rp/enable/0") == "0");
  CHECK(setting(n0, "ecn/roce_rp/rpg_ai_rate") == "5");
  CHECK(setting(n0, "ecn/roce_rp/rpg_min_dec_fac") == "50");
  CHECK(setting(n0, "ecn/roce_np/cnp_dscp") == "48");
  CHECK(setting(n0, "qos/trust") == "dscp");
  CHECK_THAT(setting(n0, "qos/dscp2prio"), Catch::StartsWith("prio:0 dscp:07,06"));
  CHECK(notes.empty());

  // The second port: the params/ layout, no qos/, no debugfs, a full x16 link.
  const std::vector<HostSetting> s1 = read_rdma_settings(kSysfs, "mlx5_1", 1, notes);
  CHECK(setting(s1, "pcie/link_downgraded") == "no");
  CHECK(find_setting(s1, "debugfs/cc_params/rp_ai_rate") == nullptr);
  const std::vector<HostSetting> n1 = read_netdev_settings(kSysfs, "ens1f1np1", notes);
  CHECK(setting(n1, "ecn/roce_rp/params/rpg_ai_rate") == "5");
  CHECK(setting(n1, "ecn/roce_np/enable/4") == "1");
  REQUIRE(notes.size() == 2);
  CHECK_THAT(notes[0], Catch::Contains("cc_params: DCQCN parameters not readable"));
  CHECK_THAT(notes[1], Catch::Contains("ens1f1np1/qos: no QoS trust or dscp2prio"));
  CHECK_THROWS_WITH(read_netdev_settings(kSysfs, "eth7", notes),
                    Catch::Contains("no network interface 'eth7'"));
}

TEST_CASE("ethtool -S text: every statistic, and the per-priority PFC ones picked out",
          "[observe]") {
  const std::vector<CounterValue> v = parse_ethtool_statistics(
      file_text(kData / "observe" / "ethtool_S_mlx5_pfc3.txt"), "ens1f0np0");
  CHECK(v.size() == 22 + 8 * 5 + 8);
  CHECK(find_counter(v, "rx_prio3_pause")->value == 1523);
  CHECK(find_counter(v, "tx_prio3_pause_duration")->value == 91104);
  CHECK(find_counter(v, "rx_discards_phy")->value == 0);
  CHECK(v[0].source == "ethtool");
  CHECK(v[0].device == "ens1f0np0");
  int pfc = 0;
  for (const CounterValue& c : v) pfc += pfc_statistic(c.counter).has_value();
  CHECK(pfc == 5);
  const auto d = pfc_statistic("rx_prio3_pause_transition");
  REQUIRE(d);
  CHECK(d->priority == 3);
  CHECK(d->direction == "rx");
  CHECK(d->kind == "pause_transition");
  CHECK(pfc_statistic("tx_prio7_pause")->kind == "pause");
  CHECK_FALSE(pfc_statistic("rx_prio3_bytes"));
  CHECK_FALSE(pfc_statistic("rx_prio9_pause"));
  CHECK_FALSE(pfc_statistic("rx_pause_ctrl_phy"));
  CHECK_THROWS_WITH(
      parse_ethtool_statistics("NIC statistics:\n     rx_packets: 12\n  garbage\n", "e"),
      Catch::Contains("line 3: expected 'name: unsigned value', found 'garbage'"));
  CHECK_THROWS_WITH(parse_ethtool_statistics("rx_packets: -1\n", "e"), Catch::Contains("line 1"));
}

TEST_CASE("ethtool statistics through SIOCETHTOOL on this machine's interfaces", "[observe]") {
  // lo offers no statistics; a virtual or real NIC offers some. Either way: values or a clear
  // refusal naming the interface, never a crash.
  for (const std::string& netdev : std::vector<std::string>{"lo", "eth0"}) {
    if (!fs::exists(fs::path("/sys/class/net") / netdev)) continue;
    INFO(netdev);
    try {
      const std::vector<CounterValue> v = read_ethtool_statistics(netdev);
      for (const CounterValue& c : v) {
        CHECK(c.source == "ethtool");
        CHECK(c.device == netdev);
        CHECK(!c.counter.empty());
      }
    } catch (const ObserveError& e) {
      CHECK_THAT(e.what(), Catch::Contains("ethtool statistics of " + netdev));
    }
  }
  CHECK_THROWS_WITH(read_ethtool_statistics("fabtwin-none0"),
                    Catch::Contains("no network interface 'fabtwin-none0'"));
  CHECK_THROWS_WITH(read_ethtool_statistics("a-name-far-too-long-for-linux"),
                    Catch::Contains("no network interface"));
}

TEST_CASE("nvidia-smi topo -m: the GPU-NIC matrix, affinities and the NIC legend", "[observe]") {
  const GpuTopology t =
      parse_gpu_topology(file_text(kData / "observe" / "nvidia_smi_topo_4gpu_2nic.txt"));
  REQUIRE(t.devices.size() == 6);
  CHECK(t.devices[4] == "NIC0");
  CHECK(t.links.at({"GPU0", "NIC0"}) == "PIX");
  CHECK(t.links.at({"GPU1", "NIC0"}) == "PXB");
  CHECK(t.links.at({"GPU3", "NIC0"}) == "SYS");
  CHECK(t.links.at({"GPU0", "GPU1"}) == "NV12");
  CHECK(t.links.at({"NIC1", "GPU2"}) == "PIX");
  CHECK(t.cpu_affinity.at("GPU2") == "28-55,84-111");
  CHECK(t.numa_affinity.at("GPU3") == "1");
  CHECK(topology_device_name(t, "NIC1") == "mlx5_1");
  const std::vector<HostSetting> s = gpu_topology_settings(t, "nvidia-smi topo -m");
  CHECK(s.size() == 4 * 2 + 4 * 2);
  CHECK(setting(s, "gpu_nic/GPU2/mlx5_1") == "PIX");
  CHECK(setting(s, "gpu_nic/GPU0/mlx5_1") == "SYS");
  CHECK(setting(s, "gpu_cpu_affinity/GPU0") == "0-27,56-83");
  CHECK_THROWS_WITH(parse_gpu_topology("\tGPU0\tGPU1\tNIC0\nGPU0\t X \tNV4\n"),
                    Catch::Contains("line 2: expected GPU0 and 3 link kinds"));
  CHECK_THROWS_WITH(parse_gpu_topology("No devices were found\n"),
                    Catch::Contains("no matrix header"));
}

TEST_CASE("the observer reads the GPU-NIC matrix and notes what it cannot read", "[observe]") {
  ObserveConfig c;
  c.sysfs_root = kSysfs;
  c.device = "mlx5_1";
  c.gpu_topology_command =
      "cat '" + (kData / "observe" / "nvidia_smi_topo_4gpu_2nic.txt").string() + "'";
  HostObserver o(c);
  o.before();
  o.after();
  Observation obs = o.take();
  CHECK(obs.netdev == "ens1f1np1");
  CHECK(setting(obs.settings, "gpu_nic/GPU2/mlx5_1") == "PIX");
  CHECK(setting(obs.settings, "ecn/roce_rp/params/rpg_hai_rate") == "50");
  // The fixture's interface does not exist on this machine: one note, said once.
  int ethtool_notes = 0;
  for (const std::string& n : obs.notes) {
    ethtool_notes += n.find("no network interface 'ens1f1np1'") != std::string::npos;
  }
  CHECK(ethtool_notes == 1);

  c.gpu_topology_command = "fabtwin-no-such-tool topo -m";
  HostObserver missing(c);
  missing.before();
  obs = missing.take();
  bool noted = false;
  for (const std::string& n : obs.notes)
    noted = noted || n.find("exited with 127 (not found)") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("the sampler takes a snapshot every period while it runs", "[observe]") {
  ObserveConfig c;
  c.sysfs_root = kSysfs;
  c.device = "mlx5_0";
  c.ethtool = false;
  c.gpu_topology_command = "";
  c.sample_period = std::chrono::milliseconds(25);
  HostObserver o(c);
  o.before();
  const auto start = std::chrono::steady_clock::now();
  o.start_sampling();
  std::this_thread::sleep_for(std::chrono::milliseconds(160));
  o.stop_sampling();
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  o.after();
  const Observation obs = o.take();
  std::vector<const CounterSnapshot*> samples;
  for (const CounterSnapshot& s : obs.snapshots) {
    if (s.phase == "sample") samples.push_back(&s);
  }
  // One at the start, then one a period after each began: never more than the elapsed time
  // holds, never closer than the period (a loaded machine only delays them).
  INFO("elapsed " << elapsed_ms << " ms");
  CHECK(samples.size() <= static_cast<size_t>(elapsed_ms / 25) + 1);
  CHECK(samples.size() >= 3);
  for (size_t i = 1; i < samples.size(); ++i) {
    const double gap_ms = (samples[i]->monotonic_raw_ns - samples[i - 1]->monotonic_raw_ns) / 1e6;
    CHECK(gap_ms >= 20.0);  // 25 ms less what a preemption between two clock reads may take
    CHECK(samples[i]->values.size() == 50);
  }
  CHECK(obs.snapshots.front().phase == "before");
  CHECK(obs.snapshots.back().phase == "after");
  CHECK(obs.snapshots.back().realtime_ns > 1'600'000'000LL * 1'000'000'000LL);
  const ObservationTables t = observation_tables({obs});
  CHECK(t.counters.size() == 50 * obs.snapshots.size());
}

TEST_CASE("an observation crosses the control group as JSON and back", "[observe]") {
  Observation o;
  o.rank = 2;
  o.host = "node2";
  o.device = "mlx5_0";
  o.port = 1;
  o.netdev = "ens1f0np0";
  o.settings = {{"fw_ver", "22.36.1010", "/sys/class/infiniband/mlx5_0/fw_ver"}};
  o.snapshots = {{"before",
                  10,
                  20,
                  {{"sysfs", "mlx5_0/1", "hw_counters/np_cnp_sent", 18446744073709551000ULL}}}};
  o.notes = {"debugfs not readable"};
  const std::string text = o.to_json().dump();
  const Observation back = Observation::from_json(nlohmann::json::parse(text));
  CHECK(back.to_json() == o.to_json());
  CHECK(back.snapshots[0].values[0].value == 18446744073709551000ULL);

  nlohmann::json bad = o.to_json();
  bad.erase("netdev");
  CHECK_THROWS_WITH(Observation::from_json(bad),
                    Catch::Contains("observation of rank 2.netdev: missing"));
  bad = o.to_json();
  bad["snapshots"][0]["values"][0][3] = -5;
  CHECK_THROWS_WITH(Observation::from_json(bad),
                    Catch::Contains("snapshots[0].values[0]: expected [source, device, counter, "
                                    "unsigned value]"));
  bad = o.to_json();
  bad["port"] = "one";
  CHECK_THROWS_WITH(Observation::from_json(bad),
                    Catch::Contains("port: expected an integer, found string"));
  CHECK_THROWS_WITH(Observation::from_json(nlohmann::json::array()),
                    Catch::Contains("expected an object, found array"));
}

TEST_CASE("the tables: PFC pauses per priority, settings and notes of every rank", "[observe]") {
  const std::string text = file_text(kData / "observe" / "ethtool_S_mlx5_pfc3.txt");
  std::vector<CounterValue> before = parse_ethtool_statistics(text, "ens1f0np0");
  std::vector<CounterValue> after = before;
  for (CounterValue& v : after) {
    if (v.counter == "rx_prio3_pause") v.value += 40;
    if (v.counter == "rx_prio3_pause_duration") v.value += 1200;
    if (v.counter == "rx_prio3_pause_transition") v.value += 39;
    if (v.counter == "tx_prio3_pause") v.value += 7;
  }
  std::vector<Observation> all(2);
  for (int r = 0; r < 2; ++r) {
    all[r].rank = r;
    all[r].host = "node" + std::to_string(r);
    all[r].snapshots = {{"before", 1000, 5, before}, {"after", 2000, 6, after}};
    all[r].settings = {{"qos/trust", "dscp", "/sys/class/net/ens1f0np0/qos/trust"}};
    all[r].notes = {"a note"};
  }
  std::vector<std::string> names;
  size_t pfc_rows = 0, setting_rows = 0, note_rows = 0;
  for_each_observation_table(all, [&](const std::string& name, const auto& rows) {
    names.push_back(name);
    using R = typename std::decay_t<decltype(rows)>::value_type;
    if constexpr (std::is_same_v<R, PfcPauseRow>) {
      pfc_rows = rows.size();
      REQUIRE(rows.size() == 4);
      CHECK(rows[0].direction == "rx");
      CHECK(rows[0].priority == 3);
      CHECK(rows[0].pauses == 40);
      CHECK(rows[0].pause_duration_us == 1200);
      CHECK(rows[0].transitions == 39);
      CHECK(rows[1].direction == "tx");
      CHECK(rows[1].pauses == 7);
      CHECK(rows[1].pause_duration_us == 0);
      CHECK(rows[3].rank == 1);
    }
    if constexpr (std::is_same_v<R, SettingRow>) setting_rows = rows.size();
    if constexpr (std::is_same_v<R, ObserveNoteRow>) note_rows = rows.size();
    if constexpr (std::is_same_v<R, CounterDeltaRow>) {
      CHECK(rows.size() == 2 * before.size());
      CHECK(rows[0].interval_ns == 1000);
    }
  });
  CHECK(names == std::vector<std::string>{"hw/counters", "hw/counter_deltas", "hw/pfc_pauses",
                                          "hw/settings", "hw/observe_notes"});
  CHECK(pfc_rows == 4);
  CHECK(setting_rows == 2);
  CHECK(note_rows == 2);
}

namespace {

// A netlink attribute: header, payload, padding to 4 bytes.
std::vector<unsigned char> attribute(int type, const void* data, size_t size) {
  nlattr a{};
  a.nla_type = static_cast<__u16>(type);
  a.nla_len = static_cast<__u16>(NLA_HDRLEN + size);
  std::vector<unsigned char> out(NLA_ALIGN(a.nla_len), 0);
  std::memcpy(out.data(), &a, sizeof a);
  std::memcpy(out.data() + NLA_HDRLEN, data, size);
  return out;
}

std::vector<unsigned char> nested(int type, const std::vector<std::vector<unsigned char>>& parts) {
  std::vector<unsigned char> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return attribute(type | NLA_F_NESTED, all.data(), all.size());
}

std::vector<unsigned char> message(int type, const void* body, size_t body_size,
                                   const std::vector<unsigned char>& attributes) {
  nlmsghdr h{};
  h.nlmsg_type = static_cast<__u16>(type);
  h.nlmsg_len = static_cast<__u32>(NLMSG_LENGTH(body_size) + attributes.size());
  std::vector<unsigned char> out(NLMSG_ALIGN(NLMSG_LENGTH(body_size)), 0);
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + NLMSG_HDRLEN, body, body_size);
  out.insert(out.end(), attributes.begin(), attributes.end());
  return out;
}

}  // namespace

TEST_CASE("DCB netlink: PFC enablement, ETS, DSCP trust from the kernel's reply", "[observe]") {
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1 << 3;
  ieee_ets ets{};
  for (int p = 0; p < 8; ++p) {
    ets.prio_tc[p] = static_cast<__u8>(p);
    ets.tc_tsa[p] = p < 4 ? IEEE_8021QAZ_TSA_ETS : IEEE_8021QAZ_TSA_STRICT;
    ets.tc_tx_bw[p] = p < 4 ? 25 : 0;
  }
  const dcb_app apps[] = {{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26},
                          {IEEE_8021QAZ_APP_SEL_DSCP, 6, 48},
                          {IEEE_8021QAZ_APP_SEL_DSCP, 3, 24},
                          {IEEE_8021QAZ_APP_SEL_ETHERTYPE, 4, 0x8915}};
  std::vector<std::vector<unsigned char>> table;
  for (const dcb_app& a : apps) table.push_back(attribute(DCB_ATTR_IEEE_APP, &a, sizeof a));
  const __u8 dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
  std::vector<unsigned char> attrs = attribute(DCB_ATTR_IFNAME, "ens1f0np0", 10);
  const auto ieee = nested(DCB_ATTR_IEEE, {attribute(DCB_ATTR_IEEE_ETS, &ets, sizeof ets),
                                           attribute(DCB_ATTR_IEEE_PFC, &pfc, sizeof pfc),
                                           nested(DCB_ATTR_IEEE_APP_TABLE, table)});
  attrs.insert(attrs.end(), ieee.begin(), ieee.end());
  const auto d = attribute(DCB_ATTR_DCBX, &dcbx, 1);
  attrs.insert(attrs.end(), d.begin(), d.end());
  dcbmsg body{};
  body.cmd = DCB_CMD_IEEE_GET;
  const std::vector<unsigned char> reply = message(RTM_GETDCB, &body, sizeof body, attrs);
  const std::vector<HostSetting> s =
      dcb_settings_from_reply(reply.data(), reply.size(), "ens1f0np0");
  CHECK(setting(s, "dcb/dcbx") == "host,ieee");
  CHECK(setting(s, "dcb/pfc_enabled") == "3");
  CHECK(setting(s, "dcb/pfc_cap") == "8");
  CHECK(setting(s, "dcb/ets/prio_tc") == "0,1,2,3,4,5,6,7");
  CHECK(setting(s, "dcb/ets/tc_tx_bw") == "25,25,25,25,0,0,0,0");
  CHECK(setting(s, "dcb/ets/tc_tsa") == "ets,ets,ets,ets,strict,strict,strict,strict");
  CHECK(setting(s, "dcb/trust") == "dscp");
  CHECK(setting(s, "dcb/dscp2prio") == "prio:3 dscp:26,24 prio:6 dscp:48");

  // A cut message and the kernel's refusal are named.
  CHECK_THROWS_WITH(dcb_settings_from_reply(reply.data(), reply.size() - 8, "ens1f0np0"),
                    Catch::Contains("header says"));
  nlmsgerr e{};
  e.error = -EOPNOTSUPP;
  const std::vector<unsigned char> refusal = message(NLMSG_ERROR, &e, sizeof e, {});
  CHECK_THROWS_WITH(
      dcb_settings_from_reply(refusal.data(), refusal.size(), "eth0"),
      Catch::Contains("DCB settings of eth0 not read: its driver has no DCB support"));
  // This machine's interfaces: settings, or a refusal naming the interface; never a crash.
  for (const std::string& netdev : std::vector<std::string>{"lo", "eth0"}) {
    if (!fs::exists(fs::path("/sys/class/net") / netdev)) continue;
    try {
      read_dcb_settings(netdev);
    } catch (const ObserveError& err) {
      CHECK_THAT(err.what(), Catch::Contains("DCB settings of " + netdev + " not read"));
    }
  }
  CHECK_THROWS_WITH(read_dcb_settings("fabtwin-none0"), Catch::Contains("no such interface"));
}
