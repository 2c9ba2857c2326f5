// The part of the verbs API (rdma-core's libibverbs) the hardware transport uses, as a narrow C++
// interface: open a device, read its port and GID table, allocate a protection domain, register
// memory (host, or GPU memory by dma-buf), create completion queues and RC queue pairs, move a
// queue pair RESET -> INIT -> RTR -> RTS, post RDMA WRITE and SEND, post receives, poll. Two
// implementations: the real one over libibverbs (ibverbs_device.h) and an in-process fake for
// tests (fake_verbs.h), which checks what a NIC checks (state transitions and their attribute
// masks, memory bounds, keys and access rights) and moves the bytes.
//
// Objects are owned by unique_ptr; a child (QP, MR, CQ) must be destroyed before its parent
// (PD, device), as with ibv_destroy_*.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabtwin::hw {

// A failed verbs call: the call, the device and errno's meaning.
class VerbsError : public std::runtime_error {
 public:
  VerbsError(const std::string& what, int error) : std::runtime_error(what), error_(error) {}
  int error() const { return error_; }  // errno of the failed call (0: not an errno failure)

 private:
  int error_;
};

// A 16-byte GID (an IPv6 address; RoCE's IPv4 GIDs are IPv4-mapped, ::ffff:a.b.c.d).
struct Gid {
  std::array<uint8_t, 16> raw{};

  bool operator==(const Gid&) const = default;
  bool is_zero() const;
  bool is_ipv4_mapped() const;  // ::ffff:a.b.c.d
  bool is_link_local() const;   // fe80::/10
  // "fe80:0000:0000:0000:0202:c9ff:fe00:0001", the form of sysfs and show_gids.
  std::string to_string() const;
  // Parses the sysfs form (8 groups of 4 hex digits) or any inet_pton IPv6 text; throws
  // std::invalid_argument naming the text.
  static Gid parse(const std::string& text);
};

enum class GidType { InfiniBand, RoCEv1, RoCEv2 };
const char* to_string(GidType type);

struct GidEntry {
  int index = 0;
  Gid gid;
  GidType type = GidType::RoCEv2;
};

struct PortInfo {
  int port = 1;
  bool active = false;     // IBV_PORT_ACTIVE
  std::string state;       // "ACTIVE", "DOWN", ...
  std::string link_layer;  // "Ethernet" or "InfiniBand"
  int max_mtu_bytes = 4096;
  int active_mtu_bytes = 4096;
  int gid_table_length = 0;
  uint16_t lid = 0;
};

struct DeviceInfo {
  std::string name;  // e.g. mlx5_0
  std::string firmware;
  int ports = 1;
  int max_qp_wr = 0;
  int max_cqe = 0;
  int max_qp_rd_atom = 0;
};

// Memory access rights (IBV_ACCESS_*).
enum Access : uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRelaxedOrdering = 1u << 3,
};

class MemoryRegistration {
 public:
  virtual ~MemoryRegistration() = default;
  virtual uint64_t iova() const = 0;  // the address peers and SGEs use (the pointer, or the iova
                                      // given to a dma-buf registration)
  virtual uint64_t length() const = 0;
  virtual uint32_t lkey() const = 0;
  virtual uint32_t rkey() const = 0;
};

enum class WcStatus {
  Success,
  LocalLengthError,
  LocalQpOperationError,
  LocalProtectionError,
  WrFlushError,
  RemoteInvalidRequestError,
  RemoteAccessError,
  RemoteOperationError,
  RetryExceeded,     // IBV_WC_RETRY_EXC_ERR: no ACK after retry_cnt retransmissions
  RnrRetryExceeded,  // IBV_WC_RNR_RETRY_EXC_ERR: the receiver had no receive posted
  GeneralError,
};
const char* to_string(WcStatus status);

enum class WcOpcode { Send, RdmaWrite, Recv };

struct WorkCompletion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::Success;
  WcOpcode opcode = WcOpcode::Send;
  uint32_t byte_len = 0;  // receives: bytes received
  uint32_t qp_num = 0;
  uint32_t vendor_error = 0;
};

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  virtual int capacity() const = 0;
  // Fills up to out.size() completions; returns how many (0: none ready). Throws VerbsError.
  virtual int poll(std::span<WorkCompletion> out) = 0;
};

enum class QpState {
  Reset,
  Init,
  ReadyToReceive,
  ReadyToSend,
  SendQueueDrained,
  SendQueueError,
  Error
};
const char* to_string(QpState state);

// Which QpAttributes fields a modify carries (IBV_QP_* attribute mask bits).
enum QpAttrMask : uint32_t {
  kQpState = 1u << 0,
  kQpAccessFlags = 1u << 1,
  kQpPkeyIndex = 1u << 2,
  kQpPort = 1u << 3,
  kQpAddressVector = 1u << 4,
  kQpPathMtu = 1u << 5,
  kQpTimeout = 1u << 6,
  kQpRetryCount = 1u << 7,
  kQpRnrRetry = 1u << 8,
  kQpRqPsn = 1u << 9,
  kQpMaxReadAtomic = 1u << 10,
  kQpMinRnrTimer = 1u << 11,
  kQpSqPsn = 1u << 12,
  kQpMaxDestReadAtomic = 1u << 13,
  kQpDestQpn = 1u << 14,
};

// The address vector of a RoCE path: the GRH (global route header) fields and the SL.
struct AddressVector {
  bool is_global = true;
  Gid dgid;                   // the peer's GID
  int sgid_index = 0;         // our GID table index
  uint8_t traffic_class = 0;  // the IP ToS byte of RoCEv2: DSCP << 2
  uint8_t hop_limit = 255;
  uint32_t flow_label = 0;
  uint8_t sl = 0;  // service level (the priority on InfiniBand; the PCP only with VLANs on RoCE)
  uint16_t dlid = 0;
  int port = 1;
};

struct QpAttributes {
  QpState state = QpState::Reset;
  uint32_t access = 0;  // remote access the QP allows (kAccessRemoteWrite, ...)
  uint16_t pkey_index = 0;
  int port = 1;
  AddressVector av;
  int path_mtu_bytes = 4096;  // 256, 512, 1024, 2048 or 4096
  uint32_t dest_qp_num = 0;
  uint32_t rq_psn = 0;   // first PSN expected from the peer (its sq_psn)
  uint32_t sq_psn = 0;   // first PSN this QP sends
  uint8_t timeout = 14;  // local ACK timeout: 4.096 us * 2^timeout
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;  // 7: retry for ever
  uint8_t min_rnr_timer = 12;
  uint8_t max_rd_atomic = 1;
  uint8_t max_dest_rd_atomic = 1;
};

struct QpCapabilities {
  int max_send_wr = 128;
  int max_recv_wr = 1;
  int max_send_sge = 1;
  int max_recv_sge = 1;
  int max_inline_data = 0;
};

enum class SendOpcode { RdmaWrite, Send };

struct SendRequest {
  uint64_t wr_id = 0;
  SendOpcode opcode = SendOpcode::RdmaWrite;
  uint64_t local_addr = 0;  // in the local registration's iova space
  uint32_t length = 0;
  uint32_t lkey = 0;
  uint64_t remote_addr = 0;  // WRITE: in the peer registration's iova space
  uint32_t rkey = 0;
  bool signaled = true;  // a completion is generated (errors always generate one)
  bool inline_data = false;
};

struct ReceiveRequest {
  uint64_t wr_id = 0;
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;
  virtual uint32_t qp_num() const = 0;
  virtual QpState state() const = 0;
  virtual QpCapabilities capabilities() const = 0;  // as granted
  // ibv_modify_qp with the mask's fields; throws VerbsError (EINVAL for a wrong mask).
  virtual void modify(const QpAttributes& attributes, uint32_t mask) = 0;
  // Throws VerbsError (ENOMEM: the send queue is full; EINVAL: wrong state or request).
  virtual void post_send(const SendRequest& request) = 0;
  virtual void post_receive(const ReceiveRequest& request) = 0;
};

class ProtectionDomain {
 public:
  virtual ~ProtectionDomain() = default;
  // ibv_reg_mr (host memory; GPU memory when nvidia-peermem is loaded).
  virtual std::unique_ptr<MemoryRegistration> register_memory(void* addr, uint64_t length,
                                                              uint32_t access) = 0;
  // ibv_reg_dmabuf_mr: `length` bytes at `offset` of the dma-buf `fd`, addressed as `iova`.
  virtual std::unique_ptr<MemoryRegistration> register_dmabuf(uint64_t offset, uint64_t length,
                                                              uint64_t iova, int fd,
                                                              uint32_t access) = 0;
  // An RC queue pair in RESET; capabilities are the minimum asked for.
  virtual std::unique_ptr<QueuePair> create_rc_qp(CompletionQueue& send_cq,
                                                  CompletionQueue& recv_cq,
                                                  const QpCapabilities& capabilities) = 0;
};

class VerbsDevice {
 public:
  virtual ~VerbsDevice() = default;
  virtual DeviceInfo info() const = 0;
  virtual PortInfo query_port(int port) const = 0;
  // The port's valid GID entries (all-zero entries left out).
  virtual std::vector<GidEntry> gid_table(int port) const = 0;
  virtual std::unique_ptr<ProtectionDomain> allocate_pd() = 0;
  virtual std::unique_ptr<CompletionQueue> create_cq(int entries) = 0;
};

// The devices a process can open (ibv_get_device_list), and opening one.
class VerbsProvider {
 public:
  virtual ~VerbsProvider() = default;
  virtual std::string name() const = 0;  // "libibverbs" or "fake"
  virtual std::vector<std::string> device_names() const = 0;
  // Opens `name`, or the first device when empty. Throws VerbsError naming what is missing
  // ("no RDMA device found ...") or the device that failed.
  virtual std::unique_ptr<VerbsDevice> open(const std::string& name) = 0;
};

// The path MTU enum's byte value check: 256..4096, a power of two.
bool is_valid_path_mtu(int bytes);

}  // namespace fabtwin::hw
