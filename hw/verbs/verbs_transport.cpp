#include "hw/verbs/verbs_transport.h"

#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>

#include "hw/control/peer_fields.h"
#include "hw/verbs/ibverbs_device.h"
#include "hw/verbs/memory_region.h"
#include "hw/verbs/qp_setup.h"

namespace fabtwin::hw {

namespace {

constexpr uint32_t kMax24 = 0xFFFFFF;
constexpr int64_t kSignalAbove = 8192;  // perftest signals every request above 8 KiB
constexpr int64_t kMaxMessage = std::numeric_limits<int32_t>::max();

int64_t monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

uint32_t random_psn() {
  uint32_t value = 0;
  if (getrandom(&value, sizeof value, 0) != sizeof value)
    throw std::runtime_error(std::string("getrandom failed: ") + std::strerror(errno));
  return value & kMax24;
}

enum class Role { Source, Destination };

// One end of a planned connection in this process.
struct End {
  const PlannedConnection* connection = nullptr;
  Role role = Role::Source;
  std::unique_ptr<QueuePair> qp;
  uint32_t psn = 0;
  uint64_t slot_offset = 0;  // destination: the receive slot in the registration
  uint64_t slot_length = 0;
  uint64_t remote_addr = 0;  // source: the peer's receive slot
  uint32_t remote_rkey = 0;
  int64_t max_message = 0;
  std::vector<size_t> messages;  // plan message indices carried, in order
  std::vector<size_t> sends;     // destination: those sent as SENDs, each needing a receive
  // run() state
  size_t next = 0;                                  // source: next message to post
  std::deque<std::pair<size_t, bool>> outstanding;  // (message, signalled)
  size_t received = 0;                              // destination (SEND): messages received
  size_t receives_posted = 0;                       // destination: for this run's SENDs
  size_t receives_outstanding = 0;                  // posted, not yet consumed
  int signal_counter = 0;
};

std::string peer_where(int rank, uint32_t connection) {
  return "peer rank " + std::to_string(rank) + ", connection " + std::to_string(connection);
}

[[noreturn]] void bad_field(int rank, uint32_t connection, const std::string& field,
                            const std::string& expected, const std::string& found) {
  throw ControlError(peer_where(rank, connection) + ": field " + field + ": expected " + expected +
                     ", found " + found);
}

struct PeerEnd {
  uint32_t qpn = 0, psn = 0, rkey = 0;
  uint64_t addr = 0, len = 0;
};

struct PeerDescriptor {
  Gid gid;
  std::string gid_type;                                      // "RoCE v2", ...
  std::map<std::pair<uint32_t, std::string>, PeerEnd> ends;  // (connection, role)
};

// A field that must be an unsigned JSON integer; its range is checked by peer_fields.h.
uint64_t unsigned_field(const nlohmann::json& j, const char* name, int rank, uint32_t connection) {
  if (!j.contains(name) || !j[name].is_number_unsigned())
    bad_field(rank, connection, name, "an unsigned integer",
              j.contains(name) ? j[name].dump() : "nothing");
  return j[name].get<uint64_t>();
}

PeerDescriptor parse_descriptor(const std::vector<unsigned char>& bytes, int rank) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    throw ControlError("peer rank " + std::to_string(rank) +
                       ": its queue-pair descriptor is not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("gid") || !j["gid"].is_string() || !j.contains("ends") ||
      !j["ends"].is_array())
    throw ControlError("peer rank " + std::to_string(rank) +
                       ": its queue-pair descriptor lacks 'gid' (string) or 'ends' (array)");
  if (!j.contains("rank") || j["rank"] != rank)
    throw ControlError("peer rank " + std::to_string(rank) + ": field rank: expected " +
                       std::to_string(rank) + ", found " +
                       (j.contains("rank") ? j["rank"].dump() : "nothing"));
  PeerDescriptor d;
  try {
    d.gid = Gid::parse(j["gid"].get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw ControlError("peer rank " + std::to_string(rank) + ": field gid: " + e.what());
  }
  if (d.gid.is_zero())
    throw ControlError("peer rank " + std::to_string(rank) +
                       ": field gid: expected a GID, "
                       "found the zero GID");
  if (!j.contains("gid_type") || !j["gid_type"].is_string())
    throw ControlError("peer rank " + std::to_string(rank) +
                       ": field gid_type: expected a string, found " +
                       (j.contains("gid_type") ? j["gid_type"].dump() : "nothing"));
  d.gid_type = j["gid_type"].get<std::string>();
  for (const nlohmann::json& e : j["ends"]) {
    if (!e.is_object() || !e.contains("connection") || !e["connection"].is_number_unsigned() ||
        !e.contains("role") || !e["role"].is_string())
      throw ControlError("peer rank " + std::to_string(rank) +
                         ": an end without 'connection' or 'role'");
    const uint32_t c = e["connection"].get<uint32_t>();
    const std::string where = peer_where(rank, c);
    PeerEnd p;
    p.qpn = check_qpn(unsigned_field(e, "qpn", rank, c), where);
    p.psn = check_psn(unsigned_field(e, "psn", rank, c), where);
    p.rkey = check_rkey(unsigned_field(e, "rkey", rank, c), where);
    p.addr = unsigned_field(e, "addr", rank, c);
    p.len = unsigned_field(e, "len", rank, c);
    d.ends[{c, e["role"].get<std::string>()}] = p;
  }
  return d;
}

class VerbsTransport : public DataTransport {
 public:
  explicit VerbsTransport(VerbsSettings settings) : settings_(std::move(settings)) {}
  ~VerbsTransport() override { close(); }

  std::string name() const override { return "verbs"; }

  void connect(const Plan& plan, ControlGroup& control) override {
    close();
    rank_ = control.rank();
    check_settings();
    open_device_and_memory(plan);
    open_queue_pairs(plan);
    exchange_and_connect(plan, control);
    control.barrier();
  }

  TransportResult run(const Plan& plan, int64_t start_ns, int64_t deadline_ns) override;

  void close() override {
    ends_.clear();
    registration_.reset();
    gpu_registration_.reset();
    host_buffer_.reset();
    gpu_buffer_.reset();
    send_cq_.reset();
    recv_cq_.reset();
    pd_.reset();
    device_.reset();
  }

 private:
  void check_settings() const {
    auto require = [](bool ok, const std::string& what) {
      if (!ok) throw std::invalid_argument("verbs transport: " + what);
    };
    require(settings_.tx_depth >= 1, "tx_depth must be at least 1");
    require(settings_.rx_depth >= 1, "rx_depth must be at least 1");
    require(settings_.cq_mod >= 1, "cq_mod must be at least 1");
    require(settings_.inline_size >= 0, "inline_size must not be negative");
    require(settings_.traffic_class >= -1 && settings_.traffic_class <= 255,
            "traffic_class must be -1 (from DSCP) or 0..255");
    require(settings_.sl >= 0 && settings_.sl <= 15, "sl must be 0..15");
    require(settings_.port >= 1, "port must be at least 1");
  }

  // The verb a message travels by. PlannedMessage carries none yet (the scenario's per-flow
  // verb arrives with the simulator's SEND model), so the setting applies to every message.
  VerbsVerb verb_of(const PlannedMessage&) const { return settings_.verb; }

  void open_device_and_memory(const Plan& plan);
  void open_queue_pairs(const Plan& plan);
  void exchange_and_connect(const Plan& plan, ControlGroup& control);

  uint64_t base_iova() const { return registration().iova(); }
  void post_receive(End& e) {
    e.qp->post_receive({static_cast<uint64_t>(&e - ends_.data()), base_iova() + e.slot_offset,
                        static_cast<uint32_t>(e.slot_length), registration().lkey()});
    ++e.receives_posted;
    ++e.receives_outstanding;
  }
  const MemoryRegistration& registration() const {
    return registration_ ? *registration_ : *gpu_registration_->registration;
  }

  VerbsSettings settings_;
  int rank_ = 0;
  std::shared_ptr<VerbsProvider> provider_;
  std::unique_ptr<VerbsDevice> device_;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<CompletionQueue> send_cq_, recv_cq_;
  std::unique_ptr<HostBuffer> host_buffer_;
  std::unique_ptr<GpuBuffer> gpu_buffer_;
  std::unique_ptr<MemoryRegistration> registration_;
  std::optional<GpuRegistration> gpu_registration_;
  std::vector<End> ends_;
  GidEntry gid_;
  int path_mtu_ = 4096;
  uint64_t send_length_ = 0;
  std::vector<std::pair<std::string, std::string>> properties_;
};

void VerbsTransport::open_device_and_memory(const Plan& plan) {
  provider_ = settings_.provider ? settings_.provider
                                 : std::shared_ptr<VerbsProvider>(make_ibverbs_provider());
  // Both the NIC and the GPU are checked before failing, so one run names all that is missing.
  std::vector<std::string> missing;
  try {
    device_ = provider_->open(settings_.device);
  } catch (const VerbsError& e) {
    missing.push_back(e.what());
  }
  if (settings_.memory == VerbsMemory::Cuda) {
    try {
      gpu_count();
    } catch (const GpuError& e) {
      missing.push_back(std::string("memory cuda: ") + e.what());
    }
  }
  if (!missing.empty()) {
    std::string text = "verbs transport (rank " + std::to_string(rank_) + "): ";
    for (size_t i = 0; i < missing.size(); ++i) text += (i ? "; " : "") + missing[i];
    throw std::runtime_error(text);
  }
  const DeviceInfo info = device_->info();
  const PortInfo port = device_->query_port(settings_.port);
  if (!port.active)
    throw std::runtime_error("RDMA device " + info.name + " port " +
                             std::to_string(settings_.port) + " is " + port.state +
                             ", not ACTIVE (check the cable and `ibv_devinfo`)");
  const std::vector<GidEntry> table = device_->gid_table(settings_.port);
  const std::string where = info.name + " port " + std::to_string(settings_.port);
  if (settings_.gid_index >= 0) {
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const GidEntry& e) { return e.index == settings_.gid_index; });
    if (it == table.end())
      throw std::runtime_error(where + ": GID index " + std::to_string(settings_.gid_index) +
                               " is not a valid entry (see `show_gids`)");
    gid_ = *it;
  } else {
    gid_ = select_gid(table, settings_.gid_family, where);
  }
  path_mtu_ = std::min(path_mtu_for(plan.mtu_bytes), port.active_mtu_bytes);

  // The layout: the send source (the largest outgoing message), then a receive slot per
  // incoming connection, each page aligned.
  std::map<uint32_t, int64_t> largest;
  for (const PlannedMessage& m : plan.messages) {
    if (m.size.count > kMaxMessage)
      throw std::runtime_error("message of flow " + std::to_string(m.flow) + " has " +
                               std::to_string(m.size.count) +
                               " bytes, above the 2 GiB a work request carries");
    largest[m.connection] = std::max(largest[m.connection], m.size.count);
  }
  uint64_t send = 0, receive = 0;
  for (const PlannedConnection& c : plan.connections) {
    if (c.src_rank == rank_) send = std::max<uint64_t>(send, largest[c.id]);
    if (c.dst_rank == rank_) receive += round_up(std::max<int64_t>(largest[c.id], 1), page_size());
  }
  send_length_ = round_up(std::max<uint64_t>(send, 1), page_size());
  const uint64_t total = send_length_ + receive;
  const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRelaxedOrdering;
  pd_ = device_->allocate_pd();
  std::string memory = "host";
  if (settings_.memory == VerbsMemory::Cuda) {
    gpu_buffer_ = std::make_unique<GpuBuffer>(settings_.gpu, total);
    gpu_registration_ = register_gpu_buffer(*pd_, *gpu_buffer_, access, settings_.gpu_registration,
                                            settings_.sysfs_root);
    memory = "cuda:" + std::to_string(settings_.gpu) + " (" + gpu_buffer_->device_name() + ", " +
             gpu_buffer_->pci_bus_id() + ")";
    properties_.push_back({"gpu_registration", gpu_registration_->path});
    properties_.push_back({"gpu_registration_probes", gpu_registration_->why});
  } else {
    host_buffer_ = std::make_unique<HostBuffer>(total);
    registration_ = register_host_buffer(*pd_, *host_buffer_, access);
  }
  properties_.push_back({"verbs_provider", provider_->name()});
  properties_.push_back({"device", info.name});
  properties_.push_back({"firmware", info.firmware});
  properties_.push_back({"port", std::to_string(settings_.port)});
  properties_.push_back({"link_layer", port.link_layer});
  properties_.push_back({"active_mtu", std::to_string(port.active_mtu_bytes)});
  properties_.push_back({"path_mtu", std::to_string(path_mtu_)});
  properties_.push_back({"gid_index", std::to_string(gid_.index)});
  properties_.push_back({"gid", gid_.gid.to_string()});
  properties_.push_back({"gid_type", to_string(gid_.type)});
  properties_.push_back({"gid_selection", settings_.gid_index >= 0 ? "configured" : "auto"});
  properties_.push_back({"memory", memory});
  properties_.push_back({"verb", settings_.verb == VerbsVerb::Write ? "write" : "send"});
  properties_.push_back({"tx_depth", std::to_string(settings_.tx_depth)});
  properties_.push_back({"cq_mod", std::to_string(std::min(settings_.cq_mod, settings_.tx_depth))});
  properties_.push_back({"inline_size", std::to_string(settings_.inline_size)});
  properties_.push_back({"sl", std::to_string(settings_.sl)});
}

void VerbsTransport::open_queue_pairs(const Plan& plan) {
  int sources = 0, receiving = 0;
  for (const PlannedConnection& c : plan.connections) {
    sources += c.src_rank == rank_;
    bool sends = false;
    for (const PlannedMessage& m : plan.messages)
      sends = sends || (m.connection == c.id && verb_of(m) == VerbsVerb::Send);
    receiving += c.dst_rank == rank_ && sends;
  }
  const int max_cqe = device_->info().max_cqe;
  send_cq_ = device_->create_cq(std::clamp(sources * settings_.tx_depth, 1, max_cqe));
  recv_cq_ = device_->create_cq(std::clamp(receiving * settings_.rx_depth, 1, max_cqe));
  uint64_t slot = send_length_;
  for (const PlannedConnection& c : plan.connections) {
    for (Role role : {Role::Source, Role::Destination}) {
      if ((role == Role::Source ? c.src_rank : c.dst_rank) != rank_) continue;
      End end;
      end.connection = &c;
      end.role = role;
      for (size_t i = 0; i < plan.messages.size(); ++i)
        if (plan.messages[i].connection == c.id) {
          end.messages.push_back(i);
          end.max_message = std::max(end.max_message, plan.messages[i].size.count);
          if (role == Role::Destination && verb_of(plan.messages[i]) == VerbsVerb::Send)
            end.sends.push_back(i);
        }
      QpCapabilities caps;
      caps.max_send_wr = role == Role::Source ? settings_.tx_depth : 1;
      caps.max_recv_wr = end.sends.empty() ? 1 : settings_.rx_depth;
      caps.max_inline_data = role == Role::Source ? settings_.inline_size : 0;
      end.qp = pd_->create_rc_qp(*send_cq_, *recv_cq_, caps);
      end.psn = random_psn();
      if (role == Role::Destination) {
        end.slot_offset = slot;
        end.slot_length = round_up(std::max<int64_t>(end.max_message, 1), page_size());
        slot += end.slot_length;
      }
      ends_.push_back(std::move(end));
    }
  }
}

void VerbsTransport::exchange_and_connect(const Plan& plan, ControlGroup& control) {
  nlohmann::json mine;
  mine["rank"] = rank_;
  mine["gid"] = gid_.gid.to_string();
  mine["gid_type"] = to_string(gid_.type);
  mine["ends"] = nlohmann::json::array();
  for (const End& e : ends_) {
    nlohmann::json j;
    j["connection"] = e.connection->id;
    j["role"] = e.role == Role::Source ? "src" : "dst";
    j["qpn"] = e.qp->qp_num();
    j["psn"] = e.psn;
    j["rkey"] = e.role == Role::Destination ? registration().rkey() : 0u;
    j["addr"] = e.role == Role::Destination ? base_iova() + e.slot_offset : uint64_t{0};
    j["len"] = e.role == Role::Destination ? e.slot_length : uint64_t{0};
    mine["ends"].push_back(j);
  }
  const std::string text = mine.dump();
  const auto all = control.allgather(std::vector<unsigned char>(text.begin(), text.end()));
  if (static_cast<int>(all.size()) != control.ranks())
    throw ControlError("allgather returned " + std::to_string(all.size()) + " descriptors for " +
                       std::to_string(control.ranks()) + " ranks");
  std::map<int, PeerDescriptor> peers;
  for (End& e : ends_) {
    const int peer_rank = e.role == Role::Source ? e.connection->dst_rank : e.connection->src_rank;
    if (peer_rank < 0 || peer_rank >= static_cast<int>(all.size()))
      throw ControlError("connection " + std::to_string(e.connection->id) + ": peer rank " +
                         std::to_string(peer_rank) + " is not in the group");
    if (!peers.count(peer_rank)) {
      peers[peer_rank] = parse_descriptor(all[peer_rank], peer_rank);
      // Both ends must speak the same RoCE version, or no packet is ever acknowledged.
      if (peers[peer_rank].gid_type != to_string(gid_.type))
        throw ControlError("peer rank " + std::to_string(peer_rank) +
                           ": field gid_type: expected " + to_string(gid_.type) +
                           " (this end's GID), found " + peers[peer_rank].gid_type +
                           " (set hw.gid_index to entries of the same RoCE version)");
    }
    const PeerDescriptor& peer = peers[peer_rank];
    const std::string peer_role = e.role == Role::Source ? "dst" : "src";
    auto it = peer.ends.find({e.connection->id, peer_role});
    if (it == peer.ends.end())
      throw ControlError(peer_where(peer_rank, e.connection->id) + ": no '" + peer_role +
                         "' end in its descriptor (different plans?)");
    const PeerEnd& p = it->second;
    if (e.role == Role::Source) {
      // What this end writes comes from the local plan; the peer's slot only has to hold it.
      const uint64_t need = static_cast<uint64_t>(std::max<int64_t>(e.max_message, 1));
      const std::string where = peer_where(peer_rank, e.connection->id);
      check_advertised_length(p.len, need, where, "len");
      check_remote_region(p.addr, need, p.addr, p.len, where, "addr+len");
      e.remote_addr = p.addr;
      e.remote_rkey = p.rkey;
    }
    RcPath path;
    path.port = settings_.port;
    path.sgid_index = gid_.index;
    path.remote_gid = peer.gid;
    path.remote_qpn = p.qpn;
    path.remote_psn = p.psn;
    path.local_psn = e.psn;
    path.path_mtu_bytes = path_mtu_;
    path.traffic_class = static_cast<uint8_t>(
        settings_.traffic_class >= 0 ? settings_.traffic_class : (e.connection->dscp & 63) << 2);
    path.sl = static_cast<uint8_t>(settings_.sl);
    path.timeout = settings_.timeout;
    path.retry_cnt = settings_.retry_cnt;
    path.rnr_retry = settings_.rnr_retry;
    path.remote_access = e.role == Role::Destination ? uint32_t{kAccessRemoteWrite} : 0u;
    move_to_init(*e.qp, path);
    // Receives go up before the peer can send (SEND verb).
    if (!e.sends.empty()) {
      const size_t want = std::min<size_t>(e.sends.size(), static_cast<size_t>(settings_.rx_depth));
      while (e.receives_outstanding < want) post_receive(e);
    }
    move_to_rtr(*e.qp, path);
    move_to_rts(*e.qp, path);
  }
}

TransportResult VerbsTransport::run(const Plan& plan, int64_t start_ns, int64_t deadline_ns) {
  if (!device_) throw std::logic_error("verbs transport: run before connect");
  TransportResult result;
  result.properties = properties_;
  const int cq_mod = std::min(settings_.cq_mod, settings_.tx_depth);
  std::map<size_t, size_t> timing_of;  // plan message -> result.messages index
  size_t to_complete = 0, to_receive = 0;
  for (End& e : ends_) {
    e.next = 0;
    e.outstanding.clear();
    e.received = 0;
    // Receives posted before this run (at connect, or left from an earlier run) serve it; top
    // them up to the window.
    e.receives_posted = e.receives_outstanding;
    while (e.receives_posted < e.sends.size() &&
           e.receives_outstanding < static_cast<size_t>(settings_.rx_depth))
      post_receive(e);
    e.signal_counter = 0;
    if (e.role == Role::Source) {
      for (size_t m : e.messages) {
        const PlannedMessage& pm = plan.messages[m];
        timing_of[m] = result.messages.size();
        result.messages.push_back({pm.flow, pm.connection, pm.size.count, -1, -1, -1, false});
      }
      to_complete += e.messages.size();
    } else {
      to_receive += e.sends.size();
    }
  }
  std::map<uint32_t, size_t> end_of_qp;
  for (size_t i = 0; i < ends_.size(); ++i) end_of_qp[ends_[i].qp->qp_num()] = i;

  const auto fail = [&](const End& e, const WorkCompletion& wc, const char* side) {
    const int peer = e.role == Role::Source ? e.connection->dst_rank : e.connection->src_rank;
    std::string hint;
    if (wc.status == WcStatus::RetryExceeded)
      hint =
          ": the peer did not acknowledge (link down, wrong GID, QPN or PSN, or the peer "
          "process is gone)";
    if (wc.status == WcStatus::RemoteAccessError)
      hint = ": the peer refused the write (rkey, address or access rights)";
    if (wc.status == WcStatus::RnrRetryExceeded) hint = ": the peer had no receive posted";
    throw std::runtime_error(std::string("verbs transport: ") + side +
                             " completion on connection " + std::to_string(e.connection->id) +
                             " (peer rank " + std::to_string(peer) + "): " + to_string(wc.status) +
                             hint + " (vendor error " + std::to_string(wc.vendor_error) + ")");
  };

  size_t completed = 0, received = 0;
  WorkCompletion wcs[32];
  while (completed < to_complete || received < to_receive) {
    const int64_t now = monotonic_raw_ns();
    if (now >= deadline_ns) break;
    bool busy = false;
    // Post what is due, within each queue pair's window.
    for (End& e : ends_) {
      if (e.role != Role::Source) continue;
      while (e.next < e.messages.size() &&
             static_cast<int>(e.outstanding.size()) < settings_.tx_depth) {
        const size_t m = e.messages[e.next];
        const PlannedMessage& pm = plan.messages[m];
        const int64_t due = start_ns + pm.start.ps / 1000;
        const int64_t t = monotonic_raw_ns();
        if (t < due) break;
        const bool last = e.next + 1 == e.messages.size();
        const bool window_full = static_cast<int>(e.outstanding.size()) + 1 == settings_.tx_depth;
        const bool signaled =
            ++e.signal_counter >= cq_mod || last || window_full || pm.size.count > kSignalAbove;
        if (signaled) e.signal_counter = 0;
        SendRequest r;
        r.wr_id = m;
        r.opcode = verb_of(pm) == VerbsVerb::Send ? SendOpcode::Send : SendOpcode::RdmaWrite;
        r.length = static_cast<uint32_t>(pm.size.count);
        r.inline_data = host_buffer_ && pm.size.count > 0 && pm.size.count <= settings_.inline_size;
        r.local_addr = base_iova();
        r.lkey = registration().lkey();
        r.remote_addr = e.remote_addr;
        r.rkey = e.remote_rkey;
        r.signaled = signaled;
        e.qp->post_send(r);
        result.messages[timing_of[m]].posted_ns = t - start_ns;
        e.outstanding.push_back({m, signaled});
        ++e.next;
        busy = true;
      }
    }
    // Send completions: each completes its request and the unsignalled ones before it.
    const int n = send_cq_->poll(wcs);
    for (int i = 0; i < n; ++i) {
      const WorkCompletion& wc = wcs[i];
      End& e = ends_.at(end_of_qp.at(wc.qp_num));
      if (wc.status != WcStatus::Success) fail(e, wc, "send");
      const int64_t t = monotonic_raw_ns() - start_ns;
      while (!e.outstanding.empty()) {
        const auto [m, signaled] = e.outstanding.front();
        e.outstanding.pop_front();
        MessageTiming& timing = result.messages[timing_of[m]];
        timing.completed_ns = t;
        timing.completed = true;
        ++completed;
        if (m == wc.wr_id) break;
      }
      busy = true;
    }
    // Receive completions (SEND): the k-th on a connection is its k-th message.
    if (to_receive > 0) {
      const int r = recv_cq_->poll(wcs);
      for (int i = 0; i < r; ++i) {
        const WorkCompletion& wc = wcs[i];
        End& e = ends_.at(end_of_qp.at(wc.qp_num));
        if (wc.status != WcStatus::Success) fail(e, wc, "receive");
        if (e.received >= e.sends.size())
          throw std::runtime_error("verbs transport: connection " +
                                   std::to_string(e.connection->id) +
                                   " received more messages than planned");
        const PlannedMessage& pm = plan.messages[e.sends[e.received++]];
        MessageTiming timing{
            pm.flow, pm.connection, wc.byte_len, -1, -1, monotonic_raw_ns() - start_ns, false};
        if (static_cast<int64_t>(wc.byte_len) != pm.size.count)
          throw std::runtime_error(
              "verbs transport: connection " + std::to_string(e.connection->id) + " received " +
              std::to_string(wc.byte_len) + " bytes for flow " + std::to_string(pm.flow) +
              ", planned " + std::to_string(pm.size.count));
        result.received.push_back(timing);
        ++received;
        --e.receives_outstanding;
        if (e.receives_posted < e.sends.size()) post_receive(e);
        busy = true;
      }
    }
    if (!busy) {
      // Nothing moved: wait briefly when the next post is far.
      int64_t next_due = std::numeric_limits<int64_t>::max();
      bool in_flight = false;
      for (const End& e : ends_) {
        in_flight = in_flight || !e.outstanding.empty();
        if (e.role == Role::Source && e.next < e.messages.size())
          next_due =
              std::min(next_due, start_ns + plan.messages[e.messages[e.next]].start.ps / 1000);
      }
      if (!in_flight && to_receive == received && next_due - monotonic_raw_ns() > 200'000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  for (const End& e : ends_) {
    if (e.role != Role::Source) continue;
    ConnectionTiming c;
    c.connection = e.connection->id;
    for (size_t m : e.messages) {
      const MessageTiming& t = result.messages[timing_of[m]];
      if (!t.completed) continue;
      c.bytes_sent += t.bytes;
      ++c.messages_completed;
      c.latency_ns.push_back(t.completed_ns - t.posted_ns);
    }
    result.connections.push_back(std::move(c));
  }
  return result;
}

}  // namespace

VerbsVerb parse_verbs_verb(const std::string& text) {
  if (text == "write") return VerbsVerb::Write;
  if (text == "send") return VerbsVerb::Send;
  throw std::invalid_argument("verb '" + text + "': expected 'write' or 'send'");
}

VerbsMemory parse_verbs_memory(const std::string& text) {
  if (text == "host") return VerbsMemory::Host;
  if (text == "cuda") return VerbsMemory::Cuda;
  throw std::invalid_argument("memory '" + text + "': expected 'host' or 'cuda'");
}

int path_mtu_for(int64_t mtu_bytes) {
  for (int m : {4096, 2048, 1024, 512, 256})
    if (mtu_bytes >= m) return m;
  return 256;
}

std::unique_ptr<DataTransport> make_verbs_transport(const VerbsSettings& settings) {
  return std::make_unique<VerbsTransport>(settings);
}

}  // namespace fabtwin::hw
