#include "hw/run/hw_config.h"

namespace fabtwin::hw {
namespace {

using HwParams = BoundParams<HwConfig>;

// "auto", or an integer in [low, high]; auto reads as -1.
int auto_or_integer(ParamReader& r, const std::string& key, int low, int high) {
  const nlohmann::json v = r.json(key);
  if (v.is_string() && v.get<std::string>() == "auto") return -1;
  if (v.is_number_integer() && v.get<int64_t>() >= low && v.get<int64_t>() <= high) {
    return v.get<int>();
  }
  throw ScenarioError(r.path_of(key), "expected \"auto\" or an integer in " + std::to_string(low) +
                                          ".." + std::to_string(high) + ", found " + json_text(v));
}

void positive(ParamReader& r, const std::string& key, Time t) {
  if (t.ps <= 0) {
    throw ScenarioError(r.path_of(key), "expected a positive time, found " + format_time(t));
  }
}

const HwParams kHwParams{
    "hw",
    "hw",
    "Hardware runs (fabtwin-hw; the simulator ignores this section)",
    {
        HwParams::field(&HwConfig::transport,
                        {"transport", ParamType::Choice, "\"verbs\"",
                         "how messages travel: RC queue pairs on RDMA NICs (verbs) or TCP sockets "
                         "between the same processes (tcp), for machines without RDMA",
                         "fabtwin-hw", "verbs|tcp"}),
        HwParams::field(&HwConfig::memory,
                        {"memory", ParamType::Choice, "\"host\"",
                         "where the message buffers live: host memory, or GPU memory (cuda) "
                         "registered through nvidia-peermem or dma-buf",
                         "fabtwin-hw", "host|cuda"}),
        HwParams::field(&HwConfig::gpu,
                        {"gpu", ParamType::Integer, "-1",
                         "CUDA device of the buffers when memory is cuda; -1: the process's local "
                         "rank on its host (OMPI_COMM_WORLD_LOCAL_RANK or MPI_LOCALRANKID, else 0)",
                         "fabtwin-hw", "-1..1023"}),
        HwParams::field(&HwConfig::hosts,
                        {"hosts", ParamType::Text, "\"\"",
                         "hosts file (relative to the working directory): one line per process, "
                         "`ADDRESS HOSTS` with the scenario hosts it plays (`0-7`, `0,2,4-5`), "
                         "rank = line order, `#` comments; empty: under mpirun the ranks of the "
                         "job with a block mapping of hosts to ranks, else one process plays "
                         "every host",
                         "fabtwin-hw"}),
        HwParams::field(&HwConfig::control_address,
                        {"control_address", ParamType::Text, "\"\"",
                         "address rank 0 listens on for the control network; empty: the first "
                         "address of the hosts file, or 127.0.0.1 without one",
                         "fabtwin-hw"}),
        HwParams::field(&HwConfig::control_port,
                        {"control_port", ParamType::Integer, "18600",
                         "TCP port of rank 0's control listener", "fabtwin-hw", "1..65535"}),
        HwParams::field(&HwConfig::bind_address,
                        {"bind_address", ParamType::Text, "\"\"",
                         "address rank 0's control listener binds to; empty: control_address. "
                         "A wildcard (0.0.0.0) is used only when written here",
                         "fabtwin-hw; the bootstrap's security (docs/hardware.md)"}),
        HwParams::field(&HwConfig::data_address,
                        {"data_address", ParamType::Text, "\"\"",
                         "tcp transport: address each rank's data listener binds to and "
                         "advertises; empty: the rank's address in the hosts file, else (under "
                         "mpirun) the address of its interface toward control_address",
                         "fabtwin-hw"}),
        HwParams::field(&HwConfig::device,
                        {"device", ParamType::Text, "\"\"",
                         "RDMA device (e.g. mlx5_0); empty: the first device found, as perftest "
                         "picks one",
                         "perftest (references §4.5)"}),
        HwParams::field(&HwConfig::port,
                        {"port", ParamType::Integer, "1", "port of the RDMA device",
                         "perftest's default port 1 (references §4.5)", "1..255"}),
        HwParams::custom({"gid_index", ParamType::Text, "\"auto\"",
                          "GID table index of the queue pairs' source address; auto: the entry "
                          "perftest's scoring prefers, a RoCE v2 GID holding an IPv4 address",
                          "perftest's GID scoring (references §4.5)", "auto|0..255"},
                         [](ParamReader& r, HwConfig& c) {
                           c.gid_index = auto_or_integer(r, "gid_index", 0, 255);
                         }),
        HwParams::custom({"traffic_class", ParamType::Text, "\"auto\"",
                          "GRH traffic class of the queue pairs (the IP ToS byte on RoCEv2); "
                          "auto: each flow's DSCP << 2, so DSCP 26 is 104",
                          "RoCEv2 carries the GRH traffic class as the IP ToS byte (references "
                          "§4.5)",
                          "auto|0..255"},
                         [](ParamReader& r, HwConfig& c) {
                           c.traffic_class = auto_or_integer(r, "traffic_class", 0, 255);
                         }),
        HwParams::field(&HwConfig::sl,
                        {"sl", ParamType::Integer, "0", "service level of the address vector",
                         "perftest's default SL 0 (references §4.5)", "0..15"}),
        HwParams::field(
            &HwConfig::tx_depth,
            {"tx_depth", ParamType::Integer, "128",
             "send queue depth: work requests a queue pair has outstanding at most",
             "perftest's default TX depth 128 for bandwidth tests (references §4.5)", "1..32768"}),
        HwParams::field(
            &HwConfig::inline_size,
            {"inline_size", ParamType::Integer, "220",
             "messages up to this many bytes are posted inline (copied into the work "
             "request)",
             "perftest's default inline size 220 for RDMA WRITE (references §4.5)", "0..1024"}),
        HwParams::field(&HwConfig::join_deadline,
                        {"join_deadline", ParamType::Time, "\"120s\"",
                         "every process must have joined the control network within this time",
                         "fabtwin-hw; above NCCL's socket retry budget of about 60 s (references "
                         "§4.5)"}),
        HwParams::field(
            &HwConfig::handshake_deadline,
            {"handshake_deadline", ParamType::Time, "\"10s\"",
             "one control connection must have authenticated within this time", "fabtwin-hw"}),
        HwParams::field(&HwConfig::run_deadline,
                        {"run_deadline", ParamType::Time, "\"60s\"",
                         "messages not completed this long after the common start are recorded "
                         "as not completed, and the run ends",
                         "fabtwin-hw"}),
        HwParams::field(&HwConfig::start_delay,
                        {"start_delay", ParamType::Time, "\"10ms\"",
                         "time from the barrier every process leaves to the common start, from "
                         "which the messages' start offsets count",
                         "fabtwin-hw"}),
        HwParams::field(&HwConfig::warmup,
                        {"warmup", ParamType::Bytes, "\"64KiB\"",
                         "bytes each connection carries, untimed, before the timed run (opens "
                         "the connection's path, faults the buffers in); 0B: none",
                         "fabtwin-hw; perftest's --perform_warm_up does the like (references "
                         "§4.5)"}),
        HwParams::field(&HwConfig::sample_period,
                        {"sample_period", ParamType::Time, "\"100ms\"",
                         "period of the counter samples taken during the run; 0us: counters "
                         "read before and after only",
                         "fabtwin-hw"}),
    },
    [](ParamReader& r, const HwConfig& c) {
      positive(r, "join_deadline", c.join_deadline);
      positive(r, "handshake_deadline", c.handshake_deadline);
      positive(r, "run_deadline", c.run_deadline);
      if (c.start_delay.ps < 0) {
        throw ScenarioError(r.path_of("start_delay"),
                            "expected a time of 0 or more, found " + format_time(c.start_delay));
      }
      if (c.sample_period.ps < 0) {
        throw ScenarioError(r.path_of("sample_period"),
                            "expected a time of 0 or more, found " + format_time(c.sample_period));
      }
    }};

}  // namespace

const ParamGroup& hw_params() {
  return kHwParams.group();
}

HwConfig read_hw_config(const nlohmann::json& scenario) {
  const bool has = scenario.is_object() && scenario.contains("hw");
  return kHwParams.read(has ? scenario["hw"] : nlohmann::json());
}

int traffic_class_of(const HwConfig& config, int dscp) {
  return config.traffic_class >= 0 ? config.traffic_class : dscp << 2;
}

}  // namespace fabtwin::hw
