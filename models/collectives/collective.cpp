#include "models/collectives/collective.h"

#include <algorithm>
#include <set>

namespace fabtwin {
namespace {

using GpuParams = BoundParams<GpuConfig>;
using NcclParams = BoundParams<NcclConfig>;

// A rate that must be positive (a zero would stall the GPU node).
std::function<void(ParamReader&, GpuConfig&)> positive_rate(BitsPerSec GpuConfig::*field,
                                                            const char* key) {
  return [field, key](ParamReader& r, GpuConfig& c) {
    c.*field = r.rate(key);
    if ((c.*field).bps <= 0)
      throw ScenarioError(r.path_of(key), "expected a positive rate, found 0");
  };
}

const GpuParams kGpuParams{
    "gpu",
    "gpu",
    "GPU nodes (used by collective traffic; accepted without it)",
    {
        GpuParams::custom(
            {"nvlink_rate", ParamType::Rate, "\"2960Gbps\"",
             "NVLink/NVSwitch data bandwidth of one GPU, each direction, after NVLink protocol "
             "overhead; all its channels share it",
             "H100 NVLink4: 450 GB/s line rate per direction, about 370 GB/s effective after ~20% "
             "protocol overhead (docs/references.md §4.4, nccl-tests#212, nccl#1442)"},
            positive_rate(&GpuConfig::nvlink_rate, "nvlink_rate")),
        GpuParams::custom(
            {"pcie_rate", ParamType::Rate, "\"460Gbps\"",
             "PCIe bandwidth between a GPU and its NIC, each direction, after protocol overhead; "
             "the NIC cannot read (send) or write (receive) payload faster",
             "PCIe Gen5 x16: 32 GT/s x 16 x 128/130 = 504 Gb/s, less ~9% TLP headers at 256 B "
             "payloads"},
            positive_rate(&GpuConfig::pcie_rate, "pcie_rate")),
        GpuParams::field(
            &GpuConfig::pcie_latency,
            {"pcie_latency", ParamType::Time, "\"0.5us\"",
             "a doorbell or completion crossing PCIe between the GPU side and the NIC",
             "fabtwin estimate (a PCIe switch hop and DMA turnaround); calibrate on hardware"}),
        GpuParams::field(
            &GpuConfig::gpudirect,
            {"gpudirect", ParamType::Boolean, "true",
             "GPUDirect RDMA: the NIC reads and writes GPU memory directly. Off: data bounces "
             "through host memory, crossing PCIe twice (half the PCIe rate) with bounce_latency "
             "more per message",
             "NCCL uses GDR when nvidia_peermem or dma-buf is available"}),
        GpuParams::field(
            &GpuConfig::bounce_latency,
            {"bounce_latency", ParamType::Time, "\"5us\"",
             "extra latency per message when gpudirect is off (staging copy through host memory)",
             "docs/references.md §6: the host-memory bounce adds 5-10 us per message"}),
        GpuParams::custom(
            {"channel_rate", ParamType::Rate, "\"320Gbps\"",
             "data one channel (one thread block) reduces or copies per second; a slice's GPU work "
             "takes its bytes at this rate (half of it on each lane of a tree)",
             "NCCL 2.30.7 per-channel caps for Hopper: tree 36-41 GB/s, ring search up to 48 GB/s"},
            [](ParamReader& r, GpuConfig& c) {
              const BitsPerSec rate = r.rate("channel_rate");
              if (rate.bps <= 0) {
                throw ScenarioError(r.path_of("channel_rate"), "expected a positive rate, found 0");
              }
              c.channel_rate = static_cast<double>(rate.bps) / 8;
            }),
        GpuParams::field(
            &GpuConfig::compute_capability,
            {"compute_capability", ParamType::Integer, "90",
             "GPU architecture for NCCL's tuning tables: 70 Volta, 80 Ampere, 90 Hopper, 100 "
             "Blackwell",
             "H100", "70..120"}),
        GpuParams::custom(
            {"cpu", ParamType::Choice, "\"intel\"",
             "host CPU vendor (NCCL's tuning model charges AMD hosts more network overhead)",
             "NCCL 2.30.7 tuning.cc", "intel|amd"},
            [](ParamReader& r, GpuConfig& c) { c.intel_cpu = r.choice("cpu") == "intel"; }),
    }};

// A chunk size of at least one byte.
std::function<void(ParamReader&, NcclConfig&)> chunk(int64_t NcclConfig::*field, const char* key) {
  return [field, key](ParamReader& r, NcclConfig& c) {
    c.*field = r.bytes(key).count;
    if (c.*field < 1) throw ScenarioError(r.path_of(key), "expected at least 1B");
  };
}

// `<algorithm>_<kind>_step_latency`: "auto" (the generic `<kind>_step_latency`, read before
// it) or a time of its own for the steps of that algorithm's collectives.
NcclParams::Entry step_latency_of(std::array<Time, 2> NcclConfig::*per_algorithm,
                                  nccl::Algorithm algorithm, const std::string& kind,
                                  Time NcclConfig::*generic, const std::string& source) {
  const std::string name = nccl::name(algorithm);
  const std::string key = name + "_" + kind + "_step_latency";
  const std::string generic_key = kind + "_step_latency";
  return NcclParams::custom(
      {key, ParamType::Text, "\"auto\"",
       "the " + generic_key + " of " + name + " collectives' steps (auto: " + generic_key +
           "); all-to-all and send/receive, point-to-point in NCCL, keep " + generic_key +
           ". Only the Simple protocol is modelled, so there is no LL or LL128 value",
       "fabtwin: auto. A calibration knob; NCCL's own per-algorithm figure: " + source},
      [per_algorithm, algorithm, key, generic](ParamReader& r, NcclConfig& c) {
        (c.*per_algorithm)[static_cast<size_t>(algorithm)] =
            r.time_or(key, "auto").value_or(c.*generic);
      });
}

const NcclParams kNcclParams{
    "nccl",
    "nccl",
    "NCCL (Simple protocol) as modelled; names follow NCCL's environment variables",
    {
        NcclParams::field(
            &NcclConfig::base_latency,
            {"base_latency", ParamType::Time, "\"8.4us\"",
             "fixed cost of launching one collective (kernel launch and set-up), per rank and "
             "iteration",
             "NCCL 2.30.7 tuning.cc baseLat, Ring/Tree Simple"}),
        NcclParams::field(
            &NcclConfig::nvlink_step_latency,
            {"nvlink_step_latency", ParamType::Time, "\"3.4us\"",
             "from a slice written into a peer's buffer over NVLink to the peer's kernel acting on "
             "it (also how long a freed slot takes to reach the writer)",
             "NCCL 2.30.7 tuning.cc hwLat[NVLINK][Ring][Simple]"}),
        NcclParams::field(
            &NcclConfig::net_step_latency,
            {"net_step_latency", ParamType::Time, "\"11us\"",
             "proxy overhead of each network send (isend posting and completion polling); with the "
             "default PCIe and 1 us links an unloaded network step then costs about 14 us",
             "NCCL 2.30.7 tuning.cc hwLat[NET][Ring][Simple] = 14 us for the whole step"}),
        step_latency_of(&NcclConfig::nvlink_step_latency_of, nccl::Algorithm::Ring, "nvlink",
                        &NcclConfig::nvlink_step_latency,
                        "NCCL 2.30.7 tuning.cc hwLat[NVLINK][Ring][Simple] = 3.4 us"),
        step_latency_of(&NcclConfig::nvlink_step_latency_of, nccl::Algorithm::Tree, "nvlink",
                        &NcclConfig::nvlink_step_latency,
                        "NCCL 2.30.7 tuning.cc hwLat[NVLINK][Tree][Simple] = 4 us"),
        step_latency_of(&NcclConfig::net_step_latency_of, nccl::Algorithm::Ring, "net",
                        &NcclConfig::net_step_latency,
                        "NCCL 2.30.7 tuning.cc hwLat[NET][Ring][Simple] = 14 us per step"),
        step_latency_of(&NcclConfig::net_step_latency_of, nccl::Algorithm::Tree, "net",
                        &NcclConfig::net_step_latency,
                        "NCCL 2.30.7 tuning.cc hwLat[NET][Tree][Simple] = 14 us per step"),
        NcclParams::custom(
            {"buffsize", ParamType::Bytes, "\"4MiB\"",
             "NCCL_BUFFSIZE: buffer per connection, 8 steps (NCCL_STEPS); ring all-reduce moves "
             "chunks of 4 steps in slices of 2",
             "NCCL default"},
            [](ParamReader& r, NcclConfig& c) {
              c.buffsize = r.bytes("buffsize").count;
              if (c.buffsize < 8 * 4096 || c.buffsize % 8 != 0) {
                throw ScenarioError(r.path_of("buffsize"),
                                    "expected a multiple of 8 bytes of at least "
                                    "32KiB (8 steps), found " +
                                        format_bytes(Bytes{c.buffsize}));
              }
            }),
        NcclParams::field(
            &NcclConfig::min_channels,
            {"min_nchannels", ParamType::Integer, "1",
             "NCCL_MIN_NCHANNELS: fewest channels the communicator and each collective use",
             "NCCL default", "1..64"}),
        NcclParams::field(&NcclConfig::max_channels,
                          {"max_nchannels", ParamType::Integer, "64",
                           "NCCL_MAX_NCHANNELS: most channels the communicator uses",
                           "NCCL MAXCHANNELS = 64", "1..64"}),
        NcclParams::custom(
            {"nchannels", ParamType::List, "\"auto\"",
             "channels of the communicator (\"auto\": 2 per NIC of a node, NCCL duplicating each "
             "ring it finds); NCCL then uses fewer for small sizes (threadThreshold)",
             "NCCL graph search duplicates channels (2 per NIC on rail-optimized nodes)"},
            [](ParamReader& r, NcclConfig& c) {
              const nlohmann::json channels = r.json("nchannels");
              if (channels == "auto") {
                c.channels = 0;
              } else if (channels.is_number_integer() && channels.get<int64_t>() >= 1 &&
                         channels.get<int64_t>() <= 64) {
                c.channels = channels.get<int>();
              } else {
                throw ScenarioError(r.path_of("nchannels"),
                                    "expected \"auto\" or a channel count 1..64, "
                                    "found " +
                                        json_text(channels));
              }
            }),
        NcclParams::field(
            &NcclConfig::qps_per_connection,
            {"ib_qps_per_connection", ParamType::Integer, "1",
             "NCCL_IB_QPS_PER_CONNECTION: queue pairs per network connection, each with its own "
             "UDP source port (ECMP entropy); messages alternate over them, or are split over "
             "all of them with ib_split_data_on_qps",
             "NCCL default", "1..128"}),
        NcclParams::field(
            &NcclConfig::split_data_on_qps,
            {"ib_split_data_on_qps", ParamType::Boolean, "false",
             "NCCL_IB_SPLIT_DATA_ON_QPS: each message is split over all the connection's QPs "
             "(ceil(size / QPs) rounded up to 128 bytes per QP, an empty part still one packet) "
             "and arrives when every part has; off: whole messages alternate over the QPs",
             "NCCL default 0 (net_ib; it was 1 in NCCL 2.12)"}),
        NcclParams::field(
            &NcclConfig::adaptive_routing,
            {"ib_adaptive_routing", ParamType::Boolean, "false",
             "NCCL_IB_ADAPTIVE_ROUTING: a message above ib_ar_threshold goes as RDMA WRITEs "
             "followed by a zero-byte WRITE with immediate (one more packet, after all the data "
             "on its QP) that completes it at the receiver; below it, one WRITE with immediate",
             "NCCL default: on for InfiniBand, off for RoCE"}),
        NcclParams::custom(
            {"ib_ar_threshold", ParamType::Bytes, "\"8192B\"",
             "NCCL_IB_AR_THRESHOLD: the message size above which ib_adaptive_routing applies",
             "NCCL default 8192"},
            [](ParamReader& r, NcclConfig& c) {
              c.ar_threshold = r.bytes("ib_ar_threshold").count;
            }),
        NcclParams::custom(
            {"p2p_net_chunksize", ParamType::Bytes, "\"128KiB\"",
             "NCCL_P2P_NET_CHUNKSIZE: all-to-all / send-receive chunk over the network", "NCCL"},
            chunk(&NcclConfig::p2p_net_chunk, "p2p_net_chunksize")),
        NcclParams::custom(
            {"p2p_nvl_chunksize", ParamType::Bytes, "\"512KiB\"",
             "NCCL_P2P_NVL_CHUNKSIZE: all-to-all / send-receive chunk over NVLink", "NCCL"},
            chunk(&NcclConfig::p2p_nvlink_chunk, "p2p_nvl_chunksize")),
    },
    [](ParamReader& r, const NcclConfig& c) {
      if (c.min_channels > c.max_channels) {
        throw ScenarioError(r.path_of("min_nchannels"),
                            "expected min_nchannels <= max_nchannels, found " +
                                std::to_string(c.min_channels) + " > " +
                                std::to_string(c.max_channels));
      }
    }};

}  // namespace

const ParamGroup kCollectiveParams{
    "traffic[type=collective]",
    "collective",
    "NCCL collective, run like nccl-tests (one row per size)",
    {
        {"type", ParamType::Choice, "", "generator type", "fabtwin", "collective"},
        {"op", ParamType::Choice, "\"all_reduce\"", "the collective", "nccl-tests *_perf programs",
         "all_reduce|all_gather|reduce_scatter|broadcast|reduce|all_to_all|send_recv"},
        {"size", ParamType::Bytes, "(sweep)",
         "one size, as nccl-tests' size column: per-rank buffer (all_gather, reduce_scatter, "
         "all_to_all: all ranks' parts together); without it the sweep below runs (giving "
         "both is an error)",
         "nccl-tests"},
        {"min_bytes", ParamType::Bytes, "\"32MiB\"", "sweep start (nccl-tests -b)",
         "nccl-tests default"},
        {"max_bytes", ParamType::Bytes, "\"32MiB\"", "sweep end, inclusive (nccl-tests -e)",
         "nccl-tests default"},
        {"step_factor", ParamType::Integer, "2", "sweep multiplier (nccl-tests -f)", "nccl-tests",
         "2..1024"},
        {"data_type", ParamType::Choice, "\"float\"", "element type (nccl-tests -d)",
         "nccl-tests default", "int8|uint8|int32|uint32|int64|uint64|half|float|double|bfloat16"},
        {"redop", ParamType::Choice, "\"sum\"", "reduction (nccl-tests -o); no effect on timing",
         "nccl-tests default", "sum|prod|max|min|avg"},
        {"root", ParamType::Integer, "0", "broadcast and reduce: root rank (nccl-tests -r)",
         "nccl-tests default", "0.."},
        {"ranks", ParamType::List, "(all GPUs)",
         "a count n (GPUs 0..n-1) or a list of GPU indices; rank r is the r-th", "fabtwin"},
        {"algorithm", ParamType::Choice, "\"auto\"",
         "NCCL_ALGO: ring, tree (all_reduce only) or auto (NCCL 2.30.7's tuning model picks "
         "the faster for each size, Simple protocol)",
         "NCCL", "auto|ring|tree"},
        {"iterations", ParamType::Integer, "1",
         "timed iterations per size (nccl-tests -n; 20 there, 1 here: packet level is costly)",
         "fabtwin", "1..100000"},
        {"warmup_iterations", ParamType::Integer, "0", "untimed iterations first (nccl-tests -w)",
         "fabtwin", "0..100000"},
        {"start", ParamType::Time, "\"0us\"", "when the first size starts", "fabtwin"},
        {"dscp", ParamType::Integer, "26", "DSCP of the collective's network traffic (NCCL_IB_TC)",
         "DSCP 26 on priority 3 is the usual lossless RoCE class", "0..63"},
    }};

const std::vector<const ParamGroup*>& collective_param_groups() {
  static const std::vector<const ParamGroup*> groups{&kGpuParams.group(), &kNcclParams.group()};
  return groups;
}

namespace {

const nlohmann::json& section(const nlohmann::json& root, const char* key) {
  static const nlohmann::json none;
  return root.contains(key) ? root[key] : none;
}

int type_size(const std::string& t) {
  if (t == "int8" || t == "uint8") return 1;
  if (t == "half" || t == "bfloat16") return 2;
  if (t == "int32" || t == "uint32" || t == "float") return 4;
  return 8;
}

nccl::Op op_of(const std::string& s) {
  using nccl::Op;
  if (s == "all_gather") return Op::AllGather;
  if (s == "reduce_scatter") return Op::ReduceScatter;
  if (s == "broadcast") return Op::Broadcast;
  if (s == "reduce") return Op::Reduce;
  if (s == "all_to_all") return Op::AllToAll;
  if (s == "send_recv") return Op::SendRecv;
  return Op::AllReduce;
}

nccl::Collective tuning_op(nccl::Op op) {
  switch (op) {
    case nccl::Op::AllGather:
      return nccl::Collective::AllGather;
    case nccl::Op::ReduceScatter:
      return nccl::Collective::ReduceScatter;
    case nccl::Op::Broadcast:
      return nccl::Collective::Broadcast;
    case nccl::Op::Reduce:
      return nccl::Collective::Reduce;
    default:
      return nccl::Collective::AllReduce;
  }
}

CollectiveSpec read_spec(ParamReader& r, uint32_t generator, const Topology& t) {
  CollectiveSpec s;
  s.generator = generator;
  s.op = op_of(r.choice("op"));
  s.algorithm = r.choice("algorithm");
  if (s.algorithm == "tree" && s.op != nccl::Op::AllReduce) {
    throw ScenarioError(r.path_of("algorithm"),
                        "expected ring or auto: NCCL's tree runs all_reduce only, found \"tree\"");
  }
  const Bytes lo = r.bytes("min_bytes"), hi = r.bytes("max_bytes");
  const int64_t factor = r.integer("step_factor");
  if (r.has("size")) {
    for (const char* key : {"min_bytes", "max_bytes", "step_factor"}) {
      if (r.has(key)) {
        throw ScenarioError(r.path_of(key),
                            "give either size or a sweep (min_bytes, max_bytes, "
                            "step_factor), not both");
      }
    }
    s.sizes.push_back(r.bytes("size").count);
  } else {
    // The key that is wrong is blamed: min_bytes below 1 B, else max_bytes below min_bytes.
    if (lo.count < 1) {
      throw ScenarioError(
          r.path_of("min_bytes"),
          "expected at least 1B (nccl-tests' smallest size), found " + format_bytes(lo));
    }
    if (hi < lo) {
      throw ScenarioError(
          r.path_of("max_bytes"),
          "expected at least min_bytes (" + format_bytes(lo) + "), found " + format_bytes(hi));
    }
    for (int64_t b = lo.count; b <= hi.count; b *= factor) {
      s.sizes.push_back(b);
      if (b > hi.count / factor) break;  // the next size would pass max_bytes (or overflow)
    }
  }
  s.type = r.choice("data_type");
  s.type_bytes = type_size(s.type);
  s.redop = r.choice("redop");
  const nlohmann::json& ranks = r.raw("ranks");
  const int gpus = t.gpus();
  if (ranks.is_null()) {
    for (int g = 0; g < gpus; ++g) s.gpus.push_back(g);
  } else if (ranks.is_number_integer()) {
    const int64_t n = ranks.get<int64_t>();
    if (n < 1 || n > gpus) {
      throw ScenarioError(r.path_of("ranks"), "expected a rank count 1.." + std::to_string(gpus) +
                                                  " (GPUs in the topology), found " +
                                                  json_text(ranks));
    }
    for (int g = 0; g < n; ++g) s.gpus.push_back(g);
  } else if (ranks.is_array() && !ranks.empty()) {
    std::set<int> seen;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const nlohmann::json& g = ranks[i];
      if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() >= gpus ||
          !seen.insert(g.get<int>()).second) {
        throw ScenarioError(r.path_of("ranks") + "[" + std::to_string(i) + "]",
                            "expected a GPU index 0.." + std::to_string(gpus - 1) +
                                " not listed before, found " + json_text(g));
      }
      s.gpus.push_back(g.get<int>());
    }
  } else {
    throw ScenarioError(r.path_of("ranks"),
                        "expected a count or a list of GPU indices, found " + json_text(ranks));
  }
  const int64_t root = r.integer("root");
  if (root >= static_cast<int64_t>(s.gpus.size())) {
    throw ScenarioError(r.path_of("root"), "expected a rank 0.." +
                                               std::to_string(s.gpus.size() - 1) + ", found " +
                                               std::to_string(root));
  }
  s.root = static_cast<int>(root);
  s.iterations = static_cast<int>(r.integer("iterations"));
  s.warmup = static_cast<int>(r.integer("warmup_iterations"));
  s.start = r.time("start");
  s.dscp = static_cast<int>(r.integer("dscp"));
  r.finish();
  return s;
}

}  // namespace

nccl::TuningInput tuning_input(const CollectiveSetup& setup, const Topology& t, uint32_t spec) {
  const CollectiveSpec& s = setup.specs[spec];
  double nic_gbs = 0;  // host link rate, GB/s
  for (const Link& l : t.links) {
    if (l.a < t.hosts || l.b < t.hosts) {
      nic_gbs = static_cast<double>(l.rate.bps) / 8e9;
      break;
    }
  }
  const int channels = setup.nccl.channels;
  nccl::TuningInput tune;
  tune.op = tuning_op(s.op);
  tune.ranks = static_cast<int>(s.gpus.size());
  tune.nodes = static_cast<int>(setup.spec_nodes[spec].size());
  tune.channels = channels;
  // Per-channel bandwidths as NCCL's graph search would find them: the node's NICs (RoCE
  // goodput, about 98% of the line) shared by the channels, NVLink inside one node.
  const double nvlink_gbs = static_cast<double>(setup.gpu.nvlink_rate.bps) / 8e9;
  const double net_per_channel = nic_gbs * 0.98 * t.nics_per_node / channels;
  const double nvlink_per_channel = std::min(60.0, nvlink_gbs / channels);
  tune.bw_inter = net_per_channel;
  tune.bw_intra =
      tune.nodes > 1 ? std::min(net_per_channel, nvlink_per_channel) : nvlink_per_channel;
  tune.compute_capability = setup.gpu.compute_capability;
  tune.intel_cpu = setup.gpu.intel_cpu;
  return tune;
}

CollectiveSetup read_collectives(const nlohmann::json& scenario, const Topology& t) {
  CollectiveSetup setup;
  if (scenario.contains("traffic") && scenario["traffic"].is_array()) {
    const nlohmann::json& list = scenario["traffic"];
    for (size_t i = 0; i < list.size(); ++i) {
      const nlohmann::json& g = list[i];
      if (!g.is_object() || !g.contains("type") || g["type"] != "collective") continue;
      if (setup.specs.size() == 255) {  // a GPU node numbers its collectives in 8 bits
        throw ScenarioError("traffic[" + std::to_string(i) + "]",
                            "expected at most 255 collective generators, found more");
      }
      ParamReader r(g, "traffic[" + std::to_string(i) + "]", kCollectiveParams);
      r.choice("type");
      setup.specs.push_back(read_spec(r, static_cast<uint32_t>(i), t));
    }
  }
  setup.gpu = kGpuParams.read(section(scenario, "gpu"));
  setup.nccl = kNcclParams.read(section(scenario, "nccl"));
  NcclConfig& n = setup.nccl;
  if (n.channels == 0) n.channels = 2 * t.nics_per_node;  // "auto"
  n.channels = std::clamp(n.channels, n.min_channels, n.max_channels);

  for (uint32_t si = 0; si < setup.specs.size(); ++si) {
    const CollectiveSpec& s = setup.specs[si];
    nccl::PlanInput base;
    base.op = s.op;
    for (int gpu_index : s.gpus) {
      base.rank_node.push_back(t.node_of_gpu(gpu_index));
      base.rank_local.push_back(gpu_index % t.gpus_per_node);
    }
    base.root = s.root;
    base.buffer = n.buffsize;
    base.p2p_chunk_net = n.p2p_net_chunk;
    base.p2p_chunk_nvlink = n.p2p_nvlink_chunk;
    std::vector<int> nodes = base.rank_node;
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    setup.spec_nodes.push_back(nodes);
    const int ranks = static_cast<int>(s.gpus.size());
    nccl::TuningInput tune = tuning_input(setup, t, si);
    std::vector<uint32_t> indices;
    for (int64_t size : s.sizes) {
      CollectiveOp op;
      op.spec = si;
      op.size = size;
      op.plan = base;
      op.plan.bytes = nccl::element_count(s.op, size, s.type_bytes, ranks) * s.type_bytes *
                      (s.op == nccl::Op::AllGather || s.op == nccl::Op::ReduceScatter ||
                               s.op == nccl::Op::AllToAll
                           ? ranks
                           : 1);
      tune.bytes = op.plan.bytes;
      nccl::Algorithm algorithm = nccl::Algorithm::Ring;
      if (s.algorithm == "tree") algorithm = nccl::Algorithm::Tree;
      if (s.algorithm == "auto" && s.op == nccl::Op::AllReduce && ranks > 1) {
        algorithm = nccl::choose_algorithm(tune, nccl::Protocol::Simple);
      }
      op.plan.algorithm = algorithm;
      const bool point_to_point = s.op == nccl::Op::AllToAll || s.op == nccl::Op::SendRecv;
      op.nvlink_step_latency = point_to_point
                                   ? n.nvlink_step_latency
                                   : n.nvlink_step_latency_of[static_cast<size_t>(algorithm)];
      op.net_step_latency = point_to_point ? n.net_step_latency
                                           : n.net_step_latency_of[static_cast<size_t>(algorithm)];
      op.plan.channels = std::max(
          n.min_channels,
          nccl::channels_for(op.plan.bytes, n.channels, algorithm, nccl::Protocol::Simple, ranks));
      indices.push_back(static_cast<uint32_t>(setup.ops.size()));
      setup.ops.push_back(std::move(op));
    }
    setup.spec_ops.push_back(std::move(indices));
  }
  return setup;
}

}  // namespace fabtwin
