#include "hw/run/plan.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "hw/run/host_mapping.h"
#include "models/collectives/nccl_plan.h"
#include "models/fabric/fabric_spec.h"
#include "models/nic/host_nic.h"
#include "sim/sha256.h"

namespace fabtwin::hw {

std::vector<bool> hosts_in_use(const FabricSpec& spec) {
  std::vector<bool> used(static_cast<size_t>(spec.topology.hosts), false);
  for (const FlowSpec& f : spec.flows) {
    used[f.src] = true;
    used[f.dst] = true;
  }
  for (const CollectiveConnection& c : spec.collectives.connections) {
    if (c.src_host >= 0) used[c.src_host] = true;
    if (c.dst_host >= 0) used[c.dst_host] = true;
  }
  return used;
}

namespace {

std::vector<PlannedCollective> planned_collectives(const FabricSpec& spec) {
  const CollectiveSetup& setup = spec.collectives;
  std::vector<PlannedCollective> out;
  for (size_t s = 0; s < setup.specs.size(); ++s) {
    const CollectiveSpec& c = setup.specs[s];
    PlannedCollective p;
    p.generator = c.generator;
    p.op = nccl::name(c.op);
    p.type = c.type;
    p.redop = c.redop;
    p.root = c.root;
    p.sizes = c.sizes;
    p.iterations = c.iterations;
    p.warmup = c.warmup;
    const int nics = spec.topology.nics_per_node;
    for (int node : setup.spec_nodes[s]) p.hosts.push_back(node * nics);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

Plan make_plan(const FabricSpec& spec, const HostMapping& mapping,
               std::vector<std::pair<std::string, std::string>> settings) {
  Plan plan;
  plan.ranks = mapping.ranks;
  plan.host_rank = mapping.host_rank;
  plan.mtu_bytes = spec.nic.mtu.count;
  plan.qps_per_flow = spec.nic.qps_per_flow;
  plan.settings = std::move(settings);
  const int qps = plan.qps_per_flow;

  // Connections of every (src, dst) pair that has a flow, in (src, dst, dscp, verb, qp) order:
  // a queue pair has one traffic class, and its flows one verb, so flows of one pair with
  // different DSCPs or verbs get connections of their own.
  std::map<std::tuple<int, int, int, Verb>, uint32_t> first_connection;
  for (const FlowSpec& f : spec.flows) {
    first_connection.emplace(std::tuple{f.src, f.dst, f.dscp, f.verb}, 0);
  }
  for (auto& [key, id] : first_connection) {
    const auto [src, dst, dscp, verb] = key;
    id = static_cast<uint32_t>(plan.connections.size());
    for (int qp = 0; qp < qps; ++qp) {
      PlannedConnection c;
      c.id = static_cast<uint32_t>(plan.connections.size());
      c.src_host = src;
      c.dst_host = dst;
      c.src_rank = plan.host_rank.at(src);
      c.dst_rank = plan.host_rank.at(dst);
      c.qp = qp;
      c.dscp = dscp;
      c.verb = verb;
      plan.connections.push_back(c);
    }
  }
  for (const FlowSpec& f : spec.flows) {
    const uint32_t first = first_connection.at({f.src, f.dst, f.dscp, f.verb});
    for (int qp = 0; qp < qps; ++qp) {
      const int64_t bytes = qps == 1 ? f.size.count : part_bytes(f.size.count, qps, qp);
      if (bytes == 0) continue;
      plan.messages.push_back({f.id, first + static_cast<uint32_t>(qp), Bytes{bytes}, f.start});
    }
  }
  std::stable_sort(plan.messages.begin(), plan.messages.end(),
                   [](const PlannedMessage& a, const PlannedMessage& b) {
                     return std::tie(a.start.ps, a.flow, a.connection) <
                            std::tie(b.start.ps, b.flow, b.connection);
                   });
  plan.collectives = planned_collectives(spec);
  plan.hash = sha256_hex(plan_text(plan));
  return plan;
}

std::string plan_text(const Plan& plan) {
  std::ostringstream out;
  out << "fabtwin-hw plan 1\n";
  out << "ranks " << plan.ranks << "\n";
  out << "mtu " << plan.mtu_bytes << "\n";
  out << "qps_per_flow " << plan.qps_per_flow << "\n";
  out << "hosts";
  for (int r : plan.host_rank) out << " " << r;
  out << "\n";
  for (const auto& [name, value] : plan.settings) out << "setting " << name << "=" << value << "\n";
  for (const PlannedConnection& c : plan.connections) {
    out << "connection " << c.id << " " << c.src_host << " " << c.dst_host << " " << c.src_rank
        << " " << c.dst_rank << " " << c.qp << " " << c.dscp << " "
        << (c.verb == Verb::Send ? "send" : "write") << "\n";
  }
  for (const PlannedMessage& m : plan.messages) {
    out << "message " << m.flow << " " << m.connection << " " << m.size.count << " " << m.start.ps
        << "\n";
  }
  for (const PlannedCollective& c : plan.collectives) {
    out << "collective " << c.generator << " " << c.op << " " << c.type << " " << c.redop << " "
        << c.root << " " << c.iterations << " " << c.warmup << " sizes";
    for (int64_t s : c.sizes) out << " " << s;
    out << " hosts";
    for (int h : c.hosts) out << " " << h;
    out << "\n";
  }
  return out.str();
}

}  // namespace fabtwin::hw
