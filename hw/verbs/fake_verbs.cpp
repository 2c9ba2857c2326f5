#include "hw/verbs/fake_verbs.h"

#include <arpa/inet.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

namespace fabtwin::hw {

namespace {

constexpr uint32_t kMaxPsn = 0xFFFFFF;

struct FakeMr {
  uint32_t pd = 0;
  unsigned char* base = nullptr;
  uint64_t iova = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t key = 0;
  void* mapping = nullptr;  // a dma-buf mapping this registration owns
};

struct FakeCq {
  int capacity = 0;
  std::deque<WorkCompletion> entries;
  bool overrun = false;
};

struct SlotEntry {
  uint64_t wr_id = 0;
  bool generates_completion = false;
};

struct FakeQp {
  std::string device;
  uint32_t pd = 0;
  uint32_t qpn = 0;
  QpState state = QpState::Reset;
  QpAttributes attributes;
  QpCapabilities caps;
  std::shared_ptr<FakeCq> send_cq, recv_cq;
  std::deque<SendRequest> unprocessed;
  std::deque<SlotEntry> slots;  // posted send requests whose slot is not yet freed
  std::deque<ReceiveRequest> receives;
  uint32_t next_send_psn = 0;
  uint32_t next_recv_psn = 0;
  int rnr_attempts = 0;
};

struct FakeDevice {
  FakeDeviceSpec spec;
  int pending_error_after = -1;
  int pending_error_count = 0;
  WcStatus pending_error = WcStatus::Success;
};

std::string hex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

}  // namespace

struct FakeFabricState {
  mutable std::mutex mutex;
  std::map<std::string, FakeDevice> devices;  // by name
  std::map<uint32_t, FakeMr> mrs;             // by key (lkey == rkey)
  std::map<uint32_t, std::shared_ptr<FakeQp>> qps;
  uint32_t next_key = 0x1100;
  uint32_t next_qpn = 0x120;
  uint32_t next_pd = 1;
  int64_t bytes_written = 0, bytes_sent = 0, rnr_naks = 0;

  // Called with the mutex held.
  void complete(FakeCq& cq, const WorkCompletion& wc) {
    if (static_cast<int>(cq.entries.size()) >= cq.capacity) {
      cq.overrun = true;
      return;
    }
    cq.entries.push_back(wc);
  }

  void to_error(FakeQp& qp) {
    qp.state = QpState::Error;
    for (const SendRequest& r : qp.unprocessed) {
      for (SlotEntry& s : qp.slots)
        if (s.wr_id == r.wr_id) s.generates_completion = true;
      complete(*qp.send_cq,
               {r.wr_id, WcStatus::WrFlushError,
                r.opcode == SendOpcode::Send ? WcOpcode::Send : WcOpcode::RdmaWrite, 0, qp.qpn, 0});
    }
    qp.unprocessed.clear();
    for (const ReceiveRequest& r : qp.receives)
      complete(*qp.recv_cq, {r.wr_id, WcStatus::WrFlushError, WcOpcode::Recv, 0, qp.qpn, 0});
    qp.receives.clear();
  }

  void fail_front(FakeQp& qp, WcStatus status) {
    const SendRequest r = qp.unprocessed.front();
    qp.unprocessed.pop_front();
    for (SlotEntry& s : qp.slots)
      if (s.wr_id == r.wr_id) s.generates_completion = true;
    complete(*qp.send_cq,
             {r.wr_id, status, r.opcode == SendOpcode::Send ? WcOpcode::Send : WcOpcode::RdmaWrite,
              0, qp.qpn, 0});
    to_error(qp);
  }

  // The host bytes behind [addr, addr+length) of registration `key` in protection domain `pd`
  // with `access`, or null.
  unsigned char* resolve(uint32_t key, uint32_t pd, uint64_t addr, uint64_t length,
                         uint32_t access) {
    auto it = mrs.find(key);
    if (it == mrs.end()) return nullptr;
    const FakeMr& mr = it->second;
    if (mr.pd != pd || (mr.access & access) != access) return nullptr;
    if (addr < mr.iova || length > mr.length || addr - mr.iova > mr.length - length) return nullptr;
    return mr.base + (addr - mr.iova);
  }

  const FakeDevice* device_with_gid(const Gid& gid) const {
    for (const auto& [name, device] : devices)
      for (const GidEntry& e : device.spec.gids)
        if (e.gid == gid) return &device;
    return nullptr;
  }

  // The responder for `qp`'s path, if it would answer: it exists at the GID and QPN the path
  // names, is at least in RTR and is connected back to `qp`.
  FakeQp* responder(const FakeQp& qp) {
    const FakeDevice* peer_device = device_with_gid(qp.attributes.av.dgid);
    if (!peer_device) return nullptr;
    auto it = qps.find(qp.attributes.dest_qp_num);
    if (it == qps.end() || it->second->device != peer_device->spec.name) return nullptr;
    FakeQp& peer = *it->second;
    if (peer.state != QpState::ReadyToReceive && peer.state != QpState::ReadyToSend) return nullptr;
    if (peer.attributes.dest_qp_num != qp.qpn) return nullptr;
    const FakeDevice& own = devices.at(qp.device);
    bool back = false;
    for (const GidEntry& e : own.spec.gids) back = back || e.gid == peer.attributes.av.dgid;
    return back ? &peer : nullptr;
  }

  // Processes `qp`'s send queue as far as it can.
  void progress(FakeQp& qp) {
    while (qp.state == QpState::ReadyToSend && !qp.unprocessed.empty()) {
      const SendRequest& r = qp.unprocessed.front();
      FakeDevice& device = devices.at(qp.device);
      if (device.pending_error_count > 0) {
        if (device.pending_error_after == 0) {
          --device.pending_error_count;
          fail_front(qp, device.pending_error);
          return;
        }
      }
      unsigned char* local = nullptr;
      if (!r.inline_data) {
        local = resolve(r.lkey, qp.pd, r.local_addr, r.length, 0);
        if (!local && r.length > 0) {
          fail_front(qp, WcStatus::LocalProtectionError);
          return;
        }
      } else {
        local = reinterpret_cast<unsigned char*>(r.local_addr);
      }
      FakeQp* peer = responder(qp);
      if (!peer || peer->next_recv_psn != qp.next_send_psn) {
        fail_front(qp, WcStatus::RetryExceeded);
        return;
      }
      if (peer->attributes.path_mtu_bytes != qp.attributes.path_mtu_bytes) {
        fail_front(qp, WcStatus::RemoteInvalidRequestError);
        return;
      }
      const uint32_t mtu = static_cast<uint32_t>(qp.attributes.path_mtu_bytes);
      const uint32_t packets = r.length == 0 ? 1 : (r.length + mtu - 1) / mtu;
      if (r.opcode == SendOpcode::RdmaWrite) {
        unsigned char* remote =
            (peer->attributes.access & kAccessRemoteWrite)
                ? resolve(r.rkey, peer->pd, r.remote_addr, r.length, kAccessRemoteWrite)
                : nullptr;
        if (!remote && r.length > 0) {
          fail_front(qp, WcStatus::RemoteAccessError);
          return;
        }
        if (r.length > 0) std::memmove(remote, local, r.length);
        bytes_written += r.length;
      } else {
        if (peer->receives.empty()) {
          ++rnr_naks;
          if (qp.attributes.rnr_retry < 7 && ++qp.rnr_attempts > qp.attributes.rnr_retry)
            fail_front(qp, WcStatus::RnrRetryExceeded);
          return;  // waits for a receive
        }
        qp.rnr_attempts = 0;
        const ReceiveRequest rr = peer->receives.front();
        peer->receives.pop_front();
        unsigned char* target = resolve(rr.lkey, peer->pd, rr.addr, r.length, kAccessLocalWrite);
        if (r.length > rr.length || (!target && r.length > 0)) {
          complete(*peer->recv_cq, {rr.wr_id,
                                    r.length > rr.length ? WcStatus::LocalLengthError
                                                         : WcStatus::LocalProtectionError,
                                    WcOpcode::Recv, 0, peer->qpn, 0});
          to_error(*peer);
          fail_front(qp, WcStatus::RemoteInvalidRequestError);
          return;
        }
        if (r.length > 0) std::memmove(target, local, r.length);
        bytes_sent += r.length;
        complete(*peer->recv_cq,
                 {rr.wr_id, WcStatus::Success, WcOpcode::Recv, r.length, peer->qpn, 0});
      }
      qp.next_send_psn = (qp.next_send_psn + packets) & kMaxPsn;
      peer->next_recv_psn = (peer->next_recv_psn + packets) & kMaxPsn;
      if (device.pending_error_count > 0 && device.pending_error_after > 0)
        --device.pending_error_after;
      if (r.signaled)
        complete(*qp.send_cq, {r.wr_id, WcStatus::Success,
                               r.opcode == SendOpcode::Send ? WcOpcode::Send : WcOpcode::RdmaWrite,
                               r.length, qp.qpn, 0});
      qp.unprocessed.pop_front();
    }
  }

  void progress_all() {
    for (auto& [qpn, qp] : qps) progress(*qp);
  }
};

namespace {

// The RC transitions ibv_modify_qp accepts, with the attributes each requires and allows
// (the ibv_modify_qp manual's table; RESET and ERR reachable from every state with the state
// alone).
struct Transition {
  QpState from, to;
  uint32_t required, optional;
};

constexpr Transition kTransitions[] = {
    {QpState::Reset, QpState::Init, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags, 0},
    {QpState::Init, QpState::Init, kQpState, kQpPkeyIndex | kQpPort | kQpAccessFlags},
    {QpState::Init, QpState::ReadyToReceive,
     kQpState | kQpAddressVector | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestReadAtomic |
         kQpMinRnrTimer,
     kQpAccessFlags | kQpPkeyIndex},
    {QpState::ReadyToReceive, QpState::ReadyToSend,
     kQpState | kQpSqPsn | kQpTimeout | kQpRetryCount | kQpRnrRetry | kQpMaxReadAtomic,
     kQpAccessFlags | kQpMinRnrTimer},
    {QpState::ReadyToSend, QpState::ReadyToSend, kQpState, kQpAccessFlags | kQpMinRnrTimer},
};

std::string mask_names(uint32_t mask) {
  static const std::pair<uint32_t, const char*> names[] = {
      {kQpState, "state"},
      {kQpAccessFlags, "access_flags"},
      {kQpPkeyIndex, "pkey_index"},
      {kQpPort, "port"},
      {kQpAddressVector, "av"},
      {kQpPathMtu, "path_mtu"},
      {kQpTimeout, "timeout"},
      {kQpRetryCount, "retry_cnt"},
      {kQpRnrRetry, "rnr_retry"},
      {kQpRqPsn, "rq_psn"},
      {kQpMaxReadAtomic, "max_rd_atomic"},
      {kQpMinRnrTimer, "min_rnr_timer"},
      {kQpSqPsn, "sq_psn"},
      {kQpMaxDestReadAtomic, "max_dest_rd_atomic"},
      {kQpDestQpn, "dest_qp_num"}};
  std::string out;
  for (const auto& [bit, name] : names)
    if (mask & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

class FakeMemoryRegistration : public MemoryRegistration {
 public:
  FakeMemoryRegistration(std::shared_ptr<FakeFabricState> fabric, uint32_t key, uint64_t iova,
                         uint64_t length)
      : fabric_(std::move(fabric)), key_(key), iova_(iova), length_(length) {}
  ~FakeMemoryRegistration() override {
    std::lock_guard lock(fabric_->mutex);
    auto it = fabric_->mrs.find(key_);
    if (it != fabric_->mrs.end()) {
      if (it->second.mapping) munmap(it->second.mapping, it->second.length);
      fabric_->mrs.erase(it);
    }
  }
  uint64_t iova() const override { return iova_; }
  uint64_t length() const override { return length_; }
  uint32_t lkey() const override { return key_; }
  uint32_t rkey() const override { return key_; }

 private:
  std::shared_ptr<FakeFabricState> fabric_;
  uint32_t key_;
  uint64_t iova_, length_;
};

class FakeCompletionQueue : public CompletionQueue {
 public:
  FakeCompletionQueue(std::shared_ptr<FakeFabricState> fabric, std::shared_ptr<FakeCq> cq,
                      std::string device)
      : fabric_(std::move(fabric)), cq_(std::move(cq)), device_(std::move(device)) {}
  int capacity() const override { return cq_->capacity; }
  const std::shared_ptr<FakeCq>& state() const { return cq_; }
  int poll(std::span<WorkCompletion> out) override {
    std::lock_guard lock(fabric_->mutex);
    fabric_->progress_all();
    if (cq_->overrun)
      throw VerbsError("completion queue overrun on " + device_ + " (capacity " +
                           std::to_string(cq_->capacity) + ")",
                       EOVERFLOW);
    int n = 0;
    while (n < static_cast<int>(out.size()) && !cq_->entries.empty()) {
      const WorkCompletion wc = cq_->entries.front();
      cq_->entries.pop_front();
      out[n++] = wc;
      if (wc.opcode == WcOpcode::Recv) continue;
      auto it = fabric_->qps.find(wc.qp_num);
      if (it == fabric_->qps.end()) continue;
      // The slots of this request and the unsignalled ones before it are free again.
      auto& slots = it->second->slots;
      while (!slots.empty()) {
        const SlotEntry s = slots.front();
        slots.pop_front();
        if (s.wr_id == wc.wr_id && s.generates_completion) break;
      }
    }
    return n;
  }

 private:
  std::shared_ptr<FakeFabricState> fabric_;
  std::shared_ptr<FakeCq> cq_;
  std::string device_;
};

class FakeQueuePair : public QueuePair {
 public:
  FakeQueuePair(std::shared_ptr<FakeFabricState> fabric, std::shared_ptr<FakeQp> qp)
      : fabric_(std::move(fabric)), qp_(std::move(qp)) {}
  ~FakeQueuePair() override {
    std::lock_guard lock(fabric_->mutex);
    fabric_->qps.erase(qp_->qpn);
  }
  uint32_t qp_num() const override { return qp_->qpn; }
  QpState state() const override {
    std::lock_guard lock(fabric_->mutex);
    return qp_->state;
  }
  QpCapabilities capabilities() const override { return qp_->caps; }

  void modify(const QpAttributes& a, uint32_t mask) override {
    std::lock_guard lock(fabric_->mutex);
    FakeQp& qp = *qp_;
    const std::string where = "ibv_modify_qp(" + std::string(to_string(qp.state)) + "->" +
                              to_string(a.state) + ") on " + qp.device + " QP " + hex(qp.qpn);
    if (!(mask & kQpState)) throw VerbsError(where + ": no state in the attribute mask", EINVAL);
    if (a.state == QpState::Reset || a.state == QpState::Error) {
      if (mask != kQpState)
        throw VerbsError(where + ": attributes not allowed: " + mask_names(mask & ~kQpState),
                         EINVAL);
      if (a.state == QpState::Error) {
        fabric_->to_error(qp);
      } else {
        FakeQp reset;
        reset.device = qp.device;
        reset.pd = qp.pd;
        reset.qpn = qp.qpn;
        reset.caps = qp.caps;
        reset.send_cq = qp.send_cq;
        reset.recv_cq = qp.recv_cq;
        qp = std::move(reset);
      }
      return;
    }
    const Transition* t = nullptr;
    for (const Transition& c : kTransitions)
      if (c.from == qp.state && c.to == a.state) t = &c;
    if (!t) throw VerbsError(where + ": not a valid transition", EINVAL);
    if ((mask & t->required) != t->required)
      throw VerbsError(where + ": missing attributes " + mask_names(t->required & ~mask), EINVAL);
    if (mask & ~(t->required | t->optional))
      throw VerbsError(
          where + ": attributes not allowed: " + mask_names(mask & ~(t->required | t->optional)),
          EINVAL);
    const FakeDevice& device = fabric_->devices.at(qp.device);
    auto bad = [&](const std::string& what) { throw VerbsError(where + ": " + what, EINVAL); };
    if ((mask & kQpPort) && a.port != 1) bad("port " + std::to_string(a.port) + " (one port)");
    if ((mask & kQpPkeyIndex) && a.pkey_index != 0)
      bad("pkey_index " + std::to_string(a.pkey_index));
    if (mask & kQpPathMtu) {
      if (!is_valid_path_mtu(a.path_mtu_bytes) || a.path_mtu_bytes > device.spec.active_mtu_bytes)
        bad("path_mtu " + std::to_string(a.path_mtu_bytes) + " (port active MTU " +
            std::to_string(device.spec.active_mtu_bytes) + ")");
    }
    if ((mask & kQpDestQpn) && a.dest_qp_num > kMaxPsn) bad("dest_qp_num above 0xffffff");
    if ((mask & kQpRqPsn) && a.rq_psn > kMaxPsn) bad("rq_psn above 0xffffff");
    if ((mask & kQpSqPsn) && a.sq_psn > kMaxPsn) bad("sq_psn above 0xffffff");
    if ((mask & kQpTimeout) && a.timeout > 31) bad("timeout above 31");
    if ((mask & kQpRetryCount) && a.retry_cnt > 7) bad("retry_cnt above 7");
    if ((mask & kQpRnrRetry) && a.rnr_retry > 7) bad("rnr_retry above 7");
    if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31) bad("min_rnr_timer above 31");
    if ((mask & kQpMaxReadAtomic) && a.max_rd_atomic > device.spec.max_qp_rd_atom)
      bad("max_rd_atomic above the device's " + std::to_string(device.spec.max_qp_rd_atom));
    if ((mask & kQpMaxDestReadAtomic) && a.max_dest_rd_atomic > device.spec.max_qp_rd_atom)
      bad("max_dest_rd_atomic above the device's " + std::to_string(device.spec.max_qp_rd_atom));
    if (mask & kQpAddressVector) {
      if (!a.av.is_global) bad("RoCE needs a GRH (av.is_global)");
      bool valid_sgid = false;
      for (const GidEntry& e : device.spec.gids)
        valid_sgid = valid_sgid || e.index == a.av.sgid_index;
      if (!valid_sgid)
        bad("sgid_index " + std::to_string(a.av.sgid_index) + " is not in the GID table");
      if (a.av.dgid.is_zero()) bad("dgid is zero");
    }
    if (mask & kQpAccessFlags) qp.attributes.access = a.access;
    if (mask & kQpPort) qp.attributes.port = a.port;
    if (mask & kQpAddressVector) qp.attributes.av = a.av;
    if (mask & kQpPathMtu) qp.attributes.path_mtu_bytes = a.path_mtu_bytes;
    if (mask & kQpDestQpn) qp.attributes.dest_qp_num = a.dest_qp_num;
    if (mask & kQpRqPsn) qp.next_recv_psn = qp.attributes.rq_psn = a.rq_psn;
    if (mask & kQpSqPsn) qp.next_send_psn = qp.attributes.sq_psn = a.sq_psn;
    if (mask & kQpTimeout) qp.attributes.timeout = a.timeout;
    if (mask & kQpRetryCount) qp.attributes.retry_cnt = a.retry_cnt;
    if (mask & kQpRnrRetry) qp.attributes.rnr_retry = a.rnr_retry;
    if (mask & kQpMinRnrTimer) qp.attributes.min_rnr_timer = a.min_rnr_timer;
    if (mask & kQpMaxReadAtomic) qp.attributes.max_rd_atomic = a.max_rd_atomic;
    if (mask & kQpMaxDestReadAtomic) qp.attributes.max_dest_rd_atomic = a.max_dest_rd_atomic;
    qp.state = qp.attributes.state = a.state;
  }

  void post_send(const SendRequest& r) override {
    std::lock_guard lock(fabric_->mutex);
    FakeQp& qp = *qp_;
    const std::string where = "ibv_post_send on " + qp.device + " QP " + hex(qp.qpn);
    if (qp.state != QpState::ReadyToSend && qp.state != QpState::Error)
      throw VerbsError(where + ": QP in " + to_string(qp.state) + ", not RTS", EINVAL);
    if (static_cast<int>(qp.slots.size()) >= qp.caps.max_send_wr)
      throw VerbsError(where + ": send queue full (" + std::to_string(qp.caps.max_send_wr) +
                           " requests outstanding)",
                       ENOMEM);
    if (r.inline_data && static_cast<int>(r.length) > qp.caps.max_inline_data)
      throw VerbsError(where + ": inline length " + std::to_string(r.length) + " above " +
                           std::to_string(qp.caps.max_inline_data),
                       EINVAL);
    qp.slots.push_back({r.wr_id, r.signaled});
    qp.unprocessed.push_back(r);
    if (qp.state == QpState::Error)
      fabric_->to_error(qp);
    else
      fabric_->progress(qp);
  }

  void post_receive(const ReceiveRequest& r) override {
    std::lock_guard lock(fabric_->mutex);
    FakeQp& qp = *qp_;
    const std::string where = "ibv_post_recv on " + qp.device + " QP " + hex(qp.qpn);
    if (qp.state == QpState::Reset) throw VerbsError(where + ": QP in RESET", EINVAL);
    if (static_cast<int>(qp.receives.size()) >= qp.caps.max_recv_wr)
      throw VerbsError(where + ": receive queue full (" + std::to_string(qp.caps.max_recv_wr) + ")",
                       ENOMEM);
    qp.receives.push_back(r);
    if (qp.state == QpState::Error)
      fabric_->to_error(qp);
    else
      fabric_->progress_all();
  }

 private:
  std::shared_ptr<FakeFabricState> fabric_;
  std::shared_ptr<FakeQp> qp_;
};

class FakeProtectionDomain : public ProtectionDomain {
 public:
  FakeProtectionDomain(std::shared_ptr<FakeFabricState> fabric, std::string device, uint32_t pd)
      : fabric_(std::move(fabric)), device_(std::move(device)), pd_(pd) {}

  std::unique_ptr<MemoryRegistration> register_memory(void* addr, uint64_t length,
                                                      uint32_t access) override {
    check_access("ibv_reg_mr", access);
    if (!addr || length == 0)
      throw VerbsError("ibv_reg_mr on " + device_ + ": empty region", EINVAL);
    return add(static_cast<unsigned char*>(addr), reinterpret_cast<uint64_t>(addr), length, access,
               nullptr);
  }

  std::unique_ptr<MemoryRegistration> register_dmabuf(uint64_t offset, uint64_t length,
                                                      uint64_t iova, int fd,
                                                      uint32_t access) override {
    const std::string where = "ibv_reg_dmabuf_mr on " + device_;
    {
      std::lock_guard lock(fabric_->mutex);
      if (!fabric_->devices.at(device_).spec.dmabuf_supported)
        throw VerbsError(where + ": " + std::strerror(EOPNOTSUPP), EOPNOTSUPP);
    }
    if (fd < 0) throw VerbsError(where + ": " + std::strerror(EBADF), EBADF);
    check_access("ibv_reg_dmabuf_mr", access);
    if (length == 0) throw VerbsError(where + ": empty region", EINVAL);
    void* mapping =
        mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (mapping == MAP_FAILED) {
      const int e = errno;
      throw VerbsError(where + ": cannot map the dma-buf: " + std::strerror(e), e);
    }
    return add(static_cast<unsigned char*>(mapping), iova, length, access, mapping);
  }

  std::unique_ptr<QueuePair> create_rc_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq,
                                          const QpCapabilities& caps) override {
    std::lock_guard lock(fabric_->mutex);
    const FakeDevice& device = fabric_->devices.at(device_);
    if (caps.max_send_wr < 1 || caps.max_send_wr > device.spec.max_qp_wr || caps.max_recv_wr < 1 ||
        caps.max_recv_wr > device.spec.max_qp_wr || caps.max_inline_data < 0 ||
        caps.max_inline_data > 1024)
      throw VerbsError("ibv_create_qp on " + device_ + ": capabilities out of range (max_qp_wr " +
                           std::to_string(device.spec.max_qp_wr) + ")",
                       EINVAL);
    auto qp = std::make_shared<FakeQp>();
    qp->device = device_;
    qp->pd = pd_;
    qp->qpn = fabric_->next_qpn++;
    qp->caps = caps;
    qp->send_cq = cq_of(send_cq);
    qp->recv_cq = cq_of(recv_cq);
    fabric_->qps[qp->qpn] = qp;
    return std::make_unique<FakeQueuePair>(fabric_, qp);
  }

 private:
  std::shared_ptr<FakeCq> cq_of(CompletionQueue& cq) {
    auto* fake = dynamic_cast<FakeCompletionQueue*>(&cq);
    if (!fake)
      throw VerbsError("ibv_create_qp on " + device_ + ": not a completion queue of this provider",
                       EINVAL);
    return fake->state();
  }

  void check_access(const char* call, uint32_t access) {
    if ((access & (kAccessRemoteWrite)) && !(access & kAccessLocalWrite))
      throw VerbsError(
          std::string(call) + " on " + device_ + ": remote write access needs local write access",
          EINVAL);
  }

  std::unique_ptr<MemoryRegistration> add(unsigned char* base, uint64_t iova, uint64_t length,
                                          uint32_t access, void* mapping) {
    std::lock_guard lock(fabric_->mutex);
    const uint32_t key = fabric_->next_key;
    fabric_->next_key += 0x100;
    fabric_->mrs[key] = FakeMr{pd_, base, iova, length, access, key, mapping};
    return std::make_unique<FakeMemoryRegistration>(fabric_, key, iova, length);
  }

  std::shared_ptr<FakeFabricState> fabric_;
  std::string device_;
  uint32_t pd_;
};

class FakeDeviceHandle : public VerbsDevice {
 public:
  FakeDeviceHandle(std::shared_ptr<FakeFabricState> fabric, std::string name)
      : fabric_(std::move(fabric)), name_(std::move(name)) {}

  DeviceInfo info() const override {
    std::lock_guard lock(fabric_->mutex);
    const FakeDeviceSpec& s = fabric_->devices.at(name_).spec;
    return DeviceInfo{s.name, "fake", 1, s.max_qp_wr, s.max_cqe, s.max_qp_rd_atom};
  }
  PortInfo query_port(int port) const override {
    std::lock_guard lock(fabric_->mutex);
    if (port != 1)
      throw VerbsError("ibv_query_port on " + name_ + ": no port " + std::to_string(port), EINVAL);
    const FakeDeviceSpec& s = fabric_->devices.at(name_).spec;
    PortInfo p;
    p.port = 1;
    p.active = s.port_active;
    p.state = s.port_active ? "ACTIVE" : "DOWN";
    p.link_layer = "Ethernet";
    p.max_mtu_bytes = 4096;
    p.active_mtu_bytes = s.active_mtu_bytes;
    p.gid_table_length = 0;
    for (const GidEntry& e : s.gids) p.gid_table_length = std::max(p.gid_table_length, e.index + 1);
    return p;
  }
  std::vector<GidEntry> gid_table(int port) const override {
    query_port(port);
    std::lock_guard lock(fabric_->mutex);
    return fabric_->devices.at(name_).spec.gids;
  }
  std::unique_ptr<ProtectionDomain> allocate_pd() override {
    std::lock_guard lock(fabric_->mutex);
    return std::make_unique<FakeProtectionDomain>(fabric_, name_, fabric_->next_pd++);
  }
  std::unique_ptr<CompletionQueue> create_cq(int entries) override {
    int max_cqe;
    {
      std::lock_guard lock(fabric_->mutex);
      max_cqe = fabric_->devices.at(name_).spec.max_cqe;
    }
    if (entries < 1 || entries > max_cqe)
      throw VerbsError("ibv_create_cq on " + name_ + ": " + std::to_string(entries) +
                           " entries (1.." + std::to_string(max_cqe) + ")",
                       EINVAL);
    auto cq = std::make_shared<FakeCq>();
    cq->capacity = entries;
    return std::make_unique<FakeCompletionQueue>(fabric_, cq, name_);
  }

 private:
  std::shared_ptr<FakeFabricState> fabric_;
  std::string name_;
};

class FakeProvider : public VerbsProvider {
 public:
  explicit FakeProvider(std::shared_ptr<FakeFabricState> fabric) : fabric_(std::move(fabric)) {}
  std::string name() const override { return "fake"; }
  std::vector<std::string> device_names() const override {
    std::lock_guard lock(fabric_->mutex);
    std::vector<std::string> names;
    for (const auto& [name, device] : fabric_->devices) names.push_back(name);
    return names;
  }
  std::unique_ptr<VerbsDevice> open(const std::string& name) override {
    const auto names = device_names();
    if (names.empty())
      throw VerbsError("no RDMA device found (the fake provider has no device)", ENODEV);
    if (name.empty()) return std::make_unique<FakeDeviceHandle>(fabric_, names.front());
    for (const std::string& n : names)
      if (n == name) return std::make_unique<FakeDeviceHandle>(fabric_, n);
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw VerbsError("RDMA device '" + name + "' not found; devices: " + list, ENODEV);
  }

 private:
  std::shared_ptr<FakeFabricState> fabric_;
};

}  // namespace

FakeDeviceSpec fake_roce_device(const std::string& name, const std::string& ipv4, int index) {
  FakeDeviceSpec spec;
  spec.name = name;
  in_addr v4{};
  if (inet_pton(AF_INET, ipv4.c_str(), &v4) != 1)
    throw std::invalid_argument("not an IPv4 address: '" + ipv4 + "'");
  Gid link_local = Gid::parse("fe80::2");
  std::memcpy(&link_local.raw[12], &v4, 4);
  Gid mapped;
  mapped.raw[10] = mapped.raw[11] = 0xff;
  std::memcpy(&mapped.raw[12], &v4, 4);
  spec.gids.push_back({0, link_local, GidType::RoCEv1});
  spec.gids.push_back({1, link_local, GidType::RoCEv2});
  if (index >= 3) {
    GidEntry v1{index - 1, mapped, GidType::RoCEv1};
    spec.gids.push_back(v1);
  }
  spec.gids.push_back({index, mapped, GidType::RoCEv2});
  return spec;
}

FakeFabric::FakeFabric() : state_(std::make_shared<FakeFabricState>()) {}
FakeFabric::~FakeFabric() = default;

void FakeFabric::add_device(const FakeDeviceSpec& spec) {
  std::lock_guard lock(state_->mutex);
  if (state_->devices.count(spec.name))
    throw std::invalid_argument("fake device '" + spec.name + "' added twice");
  state_->devices[spec.name] = FakeDevice{spec};
}

void FakeFabric::inject_send_error(const std::string& device, WcStatus status, int after) {
  std::lock_guard lock(state_->mutex);
  FakeDevice& d = state_->devices.at(device);
  d.pending_error = status;
  d.pending_error_after = after;
  d.pending_error_count = 1;
}

int64_t FakeFabric::bytes_written() const {
  std::lock_guard lock(state_->mutex);
  return state_->bytes_written;
}
int64_t FakeFabric::bytes_sent() const {
  std::lock_guard lock(state_->mutex);
  return state_->bytes_sent;
}
int64_t FakeFabric::rnr_naks() const {
  std::lock_guard lock(state_->mutex);
  return state_->rnr_naks;
}

std::unique_ptr<VerbsProvider> FakeFabric::provider() {
  return std::make_unique<FakeProvider>(state_);
}

}  // namespace fabtwin::hw
