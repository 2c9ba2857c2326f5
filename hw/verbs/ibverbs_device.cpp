#include "hw/verbs/ibverbs_device.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace fabtwin::hw {

namespace {

[[noreturn]] void fail(const std::string& call, const std::string& device, int error) {
  throw VerbsError(call + " on " + device + ": " + std::strerror(error), error);
}

uint32_t ibv_access(uint32_t access) {
  uint32_t flags = 0;
  if (access & kAccessLocalWrite) flags |= IBV_ACCESS_LOCAL_WRITE;
  if (access & kAccessRemoteWrite) flags |= IBV_ACCESS_REMOTE_WRITE;
  if (access & kAccessRemoteRead) flags |= IBV_ACCESS_REMOTE_READ;
  if (access & kAccessRelaxedOrdering) flags |= IBV_ACCESS_RELAXED_ORDERING;
  return flags;
}

int mtu_bytes(ibv_mtu mtu) {
  return 128 << static_cast<int>(mtu);
}

ibv_mtu ibv_mtu_of(int bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    default:
      return IBV_MTU_4096;
  }
}

ibv_qp_state ibv_state(QpState s) {
  switch (s) {
    case QpState::Reset:
      return IBV_QPS_RESET;
    case QpState::Init:
      return IBV_QPS_INIT;
    case QpState::ReadyToReceive:
      return IBV_QPS_RTR;
    case QpState::ReadyToSend:
      return IBV_QPS_RTS;
    case QpState::SendQueueDrained:
      return IBV_QPS_SQD;
    case QpState::SendQueueError:
      return IBV_QPS_SQE;
    case QpState::Error:
      return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

QpState state_of(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return QpState::Reset;
    case IBV_QPS_INIT:
      return QpState::Init;
    case IBV_QPS_RTR:
      return QpState::ReadyToReceive;
    case IBV_QPS_RTS:
      return QpState::ReadyToSend;
    case IBV_QPS_SQD:
      return QpState::SendQueueDrained;
    case IBV_QPS_SQE:
      return QpState::SendQueueError;
    default:
      return QpState::Error;
  }
}

WcStatus status_of(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
      return WcStatus::Success;
    case IBV_WC_LOC_LEN_ERR:
      return WcStatus::LocalLengthError;
    case IBV_WC_LOC_QP_OP_ERR:
      return WcStatus::LocalQpOperationError;
    case IBV_WC_LOC_PROT_ERR:
      return WcStatus::LocalProtectionError;
    case IBV_WC_WR_FLUSH_ERR:
      return WcStatus::WrFlushError;
    case IBV_WC_REM_INV_REQ_ERR:
      return WcStatus::RemoteInvalidRequestError;
    case IBV_WC_REM_ACCESS_ERR:
      return WcStatus::RemoteAccessError;
    case IBV_WC_REM_OP_ERR:
      return WcStatus::RemoteOperationError;
    case IBV_WC_RETRY_EXC_ERR:
      return WcStatus::RetryExceeded;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return WcStatus::RnrRetryExceeded;
    default:
      return WcStatus::GeneralError;
  }
}

class IbvRegistration : public MemoryRegistration {
 public:
  explicit IbvRegistration(ibv_mr* mr, uint64_t iova) : mr_(mr), iova_(iova) {}
  ~IbvRegistration() override { ibv_dereg_mr(mr_); }
  uint64_t iova() const override { return iova_; }
  uint64_t length() const override { return mr_->length; }
  uint32_t lkey() const override { return mr_->lkey; }
  uint32_t rkey() const override { return mr_->rkey; }

 private:
  ibv_mr* mr_;
  uint64_t iova_;
};

class IbvCompletionQueue : public CompletionQueue {
 public:
  IbvCompletionQueue(ibv_cq* cq, std::string device) : cq_(cq), device_(std::move(device)) {}
  ~IbvCompletionQueue() override { ibv_destroy_cq(cq_); }
  ibv_cq* native() { return cq_; }
  int capacity() const override { return cq_->cqe; }
  int poll(std::span<WorkCompletion> out) override {
    ibv_wc wc[32];
    const int want = static_cast<int>(std::min<std::size_t>(out.size(), 32));
    const int n = ibv_poll_cq(cq_, want, wc);
    if (n < 0) throw VerbsError("ibv_poll_cq on " + device_ + " failed", EIO);
    for (int i = 0; i < n; ++i) {
      WorkCompletion& c = out[i];
      c.wr_id = wc[i].wr_id;
      c.status = status_of(wc[i].status);
      c.opcode = wc[i].opcode == IBV_WC_RDMA_WRITE ? WcOpcode::RdmaWrite
                 : (wc[i].opcode & IBV_WC_RECV)    ? WcOpcode::Recv
                                                   : WcOpcode::Send;
      c.byte_len = wc[i].byte_len;
      c.qp_num = wc[i].qp_num;
      c.vendor_error = wc[i].vendor_err;
    }
    return n;
  }

 private:
  ibv_cq* cq_;
  std::string device_;
};

class IbvQueuePair : public QueuePair {
 public:
  IbvQueuePair(ibv_qp* qp, QpCapabilities caps, std::string device)
      : qp_(qp), caps_(caps), device_(std::move(device)) {}
  ~IbvQueuePair() override { ibv_destroy_qp(qp_); }
  uint32_t qp_num() const override { return qp_->qp_num; }
  QpCapabilities capabilities() const override { return caps_; }
  QpState state() const override {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    if (ibv_query_qp(qp_, &attr, IBV_QP_STATE, &init) != 0) return QpState::Error;
    return state_of(attr.qp_state);
  }

  void modify(const QpAttributes& a, uint32_t mask) override {
    ibv_qp_attr attr{};
    int flags = 0;
    if (mask & kQpState) flags |= IBV_QP_STATE, attr.qp_state = ibv_state(a.state);
    if (mask & kQpAccessFlags)
      flags |= IBV_QP_ACCESS_FLAGS, attr.qp_access_flags = ibv_access(a.access);
    if (mask & kQpPkeyIndex) flags |= IBV_QP_PKEY_INDEX, attr.pkey_index = a.pkey_index;
    if (mask & kQpPort) flags |= IBV_QP_PORT, attr.port_num = static_cast<uint8_t>(a.port);
    if (mask & kQpAddressVector) {
      flags |= IBV_QP_AV;
      attr.ah_attr.is_global = a.av.is_global ? 1 : 0;
      std::memcpy(attr.ah_attr.grh.dgid.raw, a.av.dgid.raw.data(), 16);
      attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(a.av.sgid_index);
      attr.ah_attr.grh.traffic_class = a.av.traffic_class;
      attr.ah_attr.grh.hop_limit = a.av.hop_limit;
      attr.ah_attr.grh.flow_label = a.av.flow_label;
      attr.ah_attr.sl = a.av.sl;
      attr.ah_attr.dlid = a.av.dlid;
      attr.ah_attr.port_num = static_cast<uint8_t>(a.av.port);
    }
    if (mask & kQpPathMtu) flags |= IBV_QP_PATH_MTU, attr.path_mtu = ibv_mtu_of(a.path_mtu_bytes);
    if (mask & kQpTimeout) flags |= IBV_QP_TIMEOUT, attr.timeout = a.timeout;
    if (mask & kQpRetryCount) flags |= IBV_QP_RETRY_CNT, attr.retry_cnt = a.retry_cnt;
    if (mask & kQpRnrRetry) flags |= IBV_QP_RNR_RETRY, attr.rnr_retry = a.rnr_retry;
    if (mask & kQpRqPsn) flags |= IBV_QP_RQ_PSN, attr.rq_psn = a.rq_psn;
    if (mask & kQpMaxReadAtomic)
      flags |= IBV_QP_MAX_QP_RD_ATOMIC, attr.max_rd_atomic = a.max_rd_atomic;
    if (mask & kQpMinRnrTimer) flags |= IBV_QP_MIN_RNR_TIMER, attr.min_rnr_timer = a.min_rnr_timer;
    if (mask & kQpSqPsn) flags |= IBV_QP_SQ_PSN, attr.sq_psn = a.sq_psn;
    if (mask & kQpMaxDestReadAtomic)
      flags |= IBV_QP_MAX_DEST_RD_ATOMIC, attr.max_dest_rd_atomic = a.max_dest_rd_atomic;
    if (mask & kQpDestQpn) flags |= IBV_QP_DEST_QPN, attr.dest_qp_num = a.dest_qp_num;
    const int error = ibv_modify_qp(qp_, &attr, flags);
    if (error)
      fail(std::string("ibv_modify_qp(->") + to_string(a.state) + ") QP " +
               std::to_string(qp_->qp_num),
           device_, error);
  }

  void post_send(const SendRequest& r) override {
    ibv_sge sge{r.local_addr, r.length, r.lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = r.wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = r.opcode == SendOpcode::RdmaWrite ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
    wr.send_flags = (r.signaled ? IBV_SEND_SIGNALED : 0) | (r.inline_data ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = r.remote_addr;
    wr.wr.rdma.rkey = r.rkey;
    const int error = ibv_post_send(qp_, &wr, &bad);
    if (error) fail("ibv_post_send QP " + std::to_string(qp_->qp_num), device_, error);
  }

  void post_receive(const ReceiveRequest& r) override {
    ibv_sge sge{r.addr, r.length, r.lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = r.wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const int error = ibv_post_recv(qp_, &wr, &bad);
    if (error) fail("ibv_post_recv QP " + std::to_string(qp_->qp_num), device_, error);
  }

 private:
  ibv_qp* qp_;
  QpCapabilities caps_;
  std::string device_;
};

class IbvProtectionDomain : public ProtectionDomain {
 public:
  IbvProtectionDomain(ibv_pd* pd, std::string device) : pd_(pd), device_(std::move(device)) {}
  ~IbvProtectionDomain() override { ibv_dealloc_pd(pd_); }

  std::unique_ptr<MemoryRegistration> register_memory(void* addr, uint64_t length,
                                                      uint32_t access) override {
    ibv_mr* mr = ibv_reg_mr(pd_, addr, length, static_cast<int>(ibv_access(access)));
    if (!mr) fail("ibv_reg_mr(" + std::to_string(length) + " bytes)", device_, errno);
    return std::make_unique<IbvRegistration>(mr, reinterpret_cast<uint64_t>(addr));
  }

  std::unique_ptr<MemoryRegistration> register_dmabuf(uint64_t offset, uint64_t length,
                                                      uint64_t iova, int fd,
                                                      uint32_t access) override {
    ibv_mr* mr =
        ibv_reg_dmabuf_mr(pd_, offset, length, iova, fd, static_cast<int>(ibv_access(access)));
    if (!mr) fail("ibv_reg_dmabuf_mr(" + std::to_string(length) + " bytes)", device_, errno);
    return std::make_unique<IbvRegistration>(mr, iova);
  }

  std::unique_ptr<QueuePair> create_rc_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq,
                                          const QpCapabilities& caps) override {
    auto* scq = dynamic_cast<IbvCompletionQueue*>(&send_cq);
    auto* rcq = dynamic_cast<IbvCompletionQueue*>(&recv_cq);
    if (!scq || !rcq)
      throw VerbsError("ibv_create_qp on " + device_ + ": not libibverbs completion queues",
                       EINVAL);
    ibv_qp_init_attr init{};
    init.send_cq = scq->native();
    init.recv_cq = rcq->native();
    init.qp_type = IBV_QPT_RC;
    init.sq_sig_all = 0;
    init.cap.max_send_wr = static_cast<uint32_t>(caps.max_send_wr);
    init.cap.max_recv_wr = static_cast<uint32_t>(caps.max_recv_wr);
    init.cap.max_send_sge = static_cast<uint32_t>(caps.max_send_sge);
    init.cap.max_recv_sge = static_cast<uint32_t>(caps.max_recv_sge);
    init.cap.max_inline_data = static_cast<uint32_t>(caps.max_inline_data);
    ibv_qp* qp = ibv_create_qp(pd_, &init);
    if (!qp)
      fail("ibv_create_qp(RC, " + std::to_string(caps.max_send_wr) + " send WRs, inline " +
               std::to_string(caps.max_inline_data) + ")",
           device_, errno);
    QpCapabilities granted{
        static_cast<int>(init.cap.max_send_wr), static_cast<int>(init.cap.max_recv_wr),
        static_cast<int>(init.cap.max_send_sge), static_cast<int>(init.cap.max_recv_sge),
        static_cast<int>(init.cap.max_inline_data)};
    return std::make_unique<IbvQueuePair>(qp, granted, device_);
  }

 private:
  ibv_pd* pd_;
  std::string device_;
};

class IbvDevice : public VerbsDevice {
 public:
  IbvDevice(ibv_context* context, std::string name) : context_(context), name_(std::move(name)) {}
  ~IbvDevice() override { ibv_close_device(context_); }

  DeviceInfo info() const override {
    ibv_device_attr attr{};
    const int error = ibv_query_device(context_, &attr);
    if (error) fail("ibv_query_device", name_, error);
    return DeviceInfo{name_,          attr.fw_ver,  attr.phys_port_cnt,
                      attr.max_qp_wr, attr.max_cqe, attr.max_qp_rd_atom};
  }

  PortInfo query_port(int port) const override {
    ibv_port_attr attr{};
    const int error = ibv_query_port(context_, static_cast<uint8_t>(port), &attr);
    if (error) fail("ibv_query_port(" + std::to_string(port) + ")", name_, error);
    PortInfo p;
    p.port = port;
    p.active = attr.state == IBV_PORT_ACTIVE;
    p.state = ibv_port_state_str(attr.state);
    p.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
    p.max_mtu_bytes = mtu_bytes(attr.max_mtu);
    p.active_mtu_bytes = mtu_bytes(attr.active_mtu);
    p.gid_table_length = attr.gid_tbl_len;
    p.lid = attr.lid;
    return p;
  }

  std::vector<GidEntry> gid_table(int port) const override {
    const PortInfo p = query_port(port);
    std::vector<GidEntry> table;
    for (int i = 0; i < p.gid_table_length; ++i) {
      ibv_gid_entry entry{};
      if (ibv_query_gid_ex(context_, static_cast<uint32_t>(port), static_cast<uint32_t>(i), &entry,
                           0) != 0)
        continue;  // an unused entry
      GidEntry e;
      e.index = i;
      std::memcpy(e.gid.raw.data(), entry.gid.raw, 16);
      if (e.gid.is_zero()) continue;
      e.type = entry.gid_type == IBV_GID_TYPE_ROCE_V2   ? GidType::RoCEv2
               : entry.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::RoCEv1
                                                        : GidType::InfiniBand;
      table.push_back(e);
    }
    return table;
  }

  std::unique_ptr<ProtectionDomain> allocate_pd() override {
    ibv_pd* pd = ibv_alloc_pd(context_);
    if (!pd) fail("ibv_alloc_pd", name_, errno);
    return std::make_unique<IbvProtectionDomain>(pd, name_);
  }

  std::unique_ptr<CompletionQueue> create_cq(int entries) override {
    ibv_cq* cq = ibv_create_cq(context_, entries, nullptr, nullptr, 0);
    if (!cq) fail("ibv_create_cq(" + std::to_string(entries) + ")", name_, errno);
    return std::make_unique<IbvCompletionQueue>(cq, name_);
  }

 private:
  ibv_context* context_;
  std::string name_;
};

class DeviceList {
 public:
  DeviceList() {
    errno = 0;
    list_ = ibv_get_device_list(&count_);
    error_ = errno;
  }
  ~DeviceList() {
    if (list_) ibv_free_device_list(list_);
  }
  ibv_device** list_ = nullptr;
  int count_ = 0;
  int error_ = 0;
};

std::string why_no_device() {
  std::error_code ec;
  if (!std::filesystem::exists("/sys/class/infiniband", ec))
    return "/sys/class/infiniband does not exist: no RDMA driver is loaded (for ConnectX: "
           "mlx5_core and mlx5_ib); check with `ibv_devinfo` and `rdma link`";
  if (std::filesystem::is_empty("/sys/class/infiniband", ec))
    return "/sys/class/infiniband is empty: the RDMA driver is loaded but found no NIC; check "
           "with `ibv_devinfo` and `rdma link`";
  return "/sys/class/infiniband lists devices, but libibverbs has no provider for them or "
         "cannot open /dev/infiniband/uverbs* (is the provider package, e.g. ibverbs-providers, "
         "installed, and may this user open the device files?)";
}

class IbvProvider : public VerbsProvider {
 public:
  std::string name() const override { return "libibverbs"; }
  std::vector<std::string> device_names() const override {
    DeviceList devices;
    std::vector<std::string> names;
    for (int i = 0; i < devices.count_; ++i) names.push_back(ibv_get_device_name(devices.list_[i]));
    return names;
  }
  std::unique_ptr<VerbsDevice> open(const std::string& name) override {
    DeviceList devices;
    // No list at all (errno ENOSYS when the kernel has no RDMA support) or an empty one: both
    // mean there is no device to open.
    if (!devices.list_ || devices.count_ == 0)
      throw VerbsError(
          "no RDMA device found (ibv_get_device_list returned none): " + why_no_device() +
              (devices.list_ ? std::string()
                             : std::string(" [libibverbs: ") + std::strerror(devices.error_) + "]"),
          ENODEV);
    ibv_device* chosen = nullptr;
    std::string list;
    for (int i = 0; i < devices.count_; ++i) {
      const std::string n = ibv_get_device_name(devices.list_[i]);
      list += (list.empty() ? "" : ", ") + n;
      if (!chosen && (name.empty() || n == name)) chosen = devices.list_[i];
    }
    if (!chosen) throw VerbsError("RDMA device '" + name + "' not found; devices: " + list, ENODEV);
    const std::string chosen_name = ibv_get_device_name(chosen);
    ibv_context* context = ibv_open_device(chosen);
    if (!context) fail("ibv_open_device", chosen_name, errno ? errno : ENODEV);
    return std::make_unique<IbvDevice>(context, chosen_name);
  }
};

}  // namespace

std::unique_ptr<VerbsProvider> make_ibverbs_provider() {
  return std::make_unique<IbvProvider>();
}

}  // namespace fabtwin::hw
