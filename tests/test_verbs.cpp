// The verbs layer without a NIC: GIDs and their selection (on a fixture sysfs tree), the
// in-process fake provider checking what a NIC checks, the queue-pair bring-up against it, host
// memory, the peer-memory and dma-buf probes, and the real libibverbs and libcuda paths as far as
// this machine has them.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "hw/cuda/gpu_memory.h"
#include "hw/verbs/fake_verbs.h"
#include "hw/verbs/gid_selection.h"
#include "hw/verbs/ibverbs_device.h"
#include "hw/verbs/memory_region.h"
#include "hw/verbs/qp_setup.h"

using namespace fabtwin::hw;

namespace {

const std::string kSysfs = std::string(FABTWIN_TEST_DATA) + "/sysfs";

GidEntry entry(int index, const std::string& gid, GidType type) {
  return GidEntry{index, Gid::parse(gid), type};
}

// Two fake devices with a connected RC QP each, and registered host memory on both sides.
struct Pair {
  FakeFabric fabric;
  std::unique_ptr<VerbsProvider> provider;
  std::unique_ptr<VerbsDevice> a, b;
  std::unique_ptr<ProtectionDomain> pd_a, pd_b;
  std::unique_ptr<CompletionQueue> cq_a, cq_b;
  HostBuffer buf_a{1 << 16}, buf_b{1 << 16};
  std::unique_ptr<MemoryRegistration> mr_a, mr_b;
  std::unique_ptr<QueuePair> qp_a, qp_b;
  RcPath path_a, path_b;

  explicit Pair(int tx_depth = 16, int rx_depth = 16, uint8_t rnr_retry = 7) {
    fabric.add_device(fake_roce_device("fake_a", "10.0.0.1"));
    fabric.add_device(fake_roce_device("fake_b", "10.0.0.2"));
    provider = fabric.provider();
    a = provider->open("fake_a");
    b = provider->open("fake_b");
    pd_a = a->allocate_pd();
    pd_b = b->allocate_pd();
    cq_a = a->create_cq(64);
    cq_b = b->create_cq(64);
    const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
    mr_a = register_host_buffer(*pd_a, buf_a, access);
    mr_b = register_host_buffer(*pd_b, buf_b, access);
    qp_a = pd_a->create_rc_qp(*cq_a, *cq_a, {tx_depth, rx_depth, 1, 1, 64});
    qp_b = pd_b->create_rc_qp(*cq_b, *cq_b, {tx_depth, rx_depth, 1, 1, 64});
    const GidEntry ga = select_gid(a->gid_table(1), AddressFamily::IPv4, "a");
    const GidEntry gb = select_gid(b->gid_table(1), AddressFamily::IPv4, "b");
    path_a.sgid_index = ga.index;
    path_a.remote_gid = gb.gid;
    path_a.remote_qpn = qp_b->qp_num();
    path_a.local_psn = 0x123456;
    path_a.remote_psn = 0xfffff0;  // wraps during the tests
    path_a.rnr_retry = rnr_retry;
    path_b = path_a;
    path_b.sgid_index = gb.index;
    path_b.remote_gid = ga.gid;
    path_b.remote_qpn = qp_a->qp_num();
    path_b.local_psn = path_a.remote_psn;
    path_b.remote_psn = path_a.local_psn;
  }
  void connect() {
    connect_rc(*qp_a, path_a);
    connect_rc(*qp_b, path_b);
  }
  SendRequest write(uint64_t id, uint32_t offset, uint32_t length, bool signaled = true) {
    SendRequest r;
    r.wr_id = id;
    r.local_addr = mr_a->iova() + offset;
    r.length = length;
    r.lkey = mr_a->lkey();
    r.remote_addr = mr_b->iova() + offset;
    r.rkey = mr_b->rkey();
    r.signaled = signaled;
    return r;
  }
  std::vector<WorkCompletion> drain(CompletionQueue& cq, int polls = 4) {
    std::vector<WorkCompletion> all;
    WorkCompletion wc[16];
    for (int i = 0; i < polls; ++i) {
      const int n = cq.poll(wc);
      all.insert(all.end(), wc, wc + n);
    }
    return all;
  }
};

}  // namespace

TEST_CASE("GIDs print like sysfs and know IPv4-mapped and link-local", "[verbs]") {
  const Gid v4 = Gid::parse("0000:0000:0000:0000:0000:ffff:0a0a:0107");
  CHECK(v4.is_ipv4_mapped());
  CHECK_FALSE(v4.is_link_local());
  CHECK(v4.to_string() == "0000:0000:0000:0000:0000:ffff:0a0a:0107");
  CHECK(Gid::parse("::ffff:10.10.1.7") == v4);
  const Gid ll = Gid::parse("fe80::ba3f:d2ff:fe1c:9a40");
  CHECK(ll.is_link_local());
  CHECK_FALSE(ll.is_ipv4_mapped());
  CHECK(Gid{}.is_zero());
  CHECK_THROWS_WITH(Gid::parse("fe80:zz::1"), Catch::Contains("not a GID"));
}

TEST_CASE("GID scores follow perftest: family +100, not link-local +10, v2 +2, v1 +1", "[verbs]") {
  CHECK(gid_score(entry(3, "::ffff:10.10.1.7", GidType::RoCEv2), AddressFamily::IPv4) == 112);
  CHECK(gid_score(entry(2, "::ffff:10.10.1.7", GidType::RoCEv1), AddressFamily::IPv4) == 111);
  CHECK(gid_score(entry(1, "fe80::1", GidType::RoCEv2), AddressFamily::IPv4) == 2);
  CHECK(gid_score(entry(0, "fe80::1", GidType::RoCEv1), AddressFamily::IPv4) == 1);
  CHECK(gid_score(entry(5, "fd00:10::1", GidType::RoCEv2), AddressFamily::IPv4) == 12);
  CHECK(gid_score(entry(5, "fd00:10::1", GidType::RoCEv2), AddressFamily::IPv6) == 112);
  CHECK(gid_score(entry(1, "fe80::1", GidType::RoCEv2), AddressFamily::IPv6) == 102);
  // Equal scores: the lowest index.
  const auto chosen = select_gid(
      {entry(7, "::ffff:10.0.0.9", GidType::RoCEv2), entry(4, "::ffff:10.0.0.8", GidType::RoCEv2)},
      AddressFamily::IPv4, "t");
  CHECK(chosen.index == 4);
  CHECK_THROWS_WITH(select_gid({}, AddressFamily::IPv4, "mlx5_9 port 1"),
                    Catch::Contains("mlx5_9 port 1") && Catch::Contains("no valid entry"));
}

TEST_CASE("the sysfs GID table is read and the RoCE v2 IPv4 entry chosen", "[verbs]") {
  const auto table = read_sysfs_gid_table(kSysfs, "mlx5_0", 1);
  REQUIRE(table.size() == 6);  // the two all-zero entries are left out
  CHECK(table[1].type == GidType::RoCEv2);
  CHECK(table[2].type == GidType::RoCEv1);
  const GidEntry v4 = select_gid(table, AddressFamily::IPv4, "mlx5_0");
  CHECK(v4.index == 3);
  CHECK(v4.gid.to_string() == "0000:0000:0000:0000:0000:ffff:0a0a:0107");
  CHECK(select_gid(table, AddressFamily::IPv6, "mlx5_0").index == 5);
  // No address configured: the link-local RoCE v2 entry is the best there is.
  CHECK(
      select_gid(read_sysfs_gid_table(kSysfs, "mlx5_1", 1), AddressFamily::IPv4, "mlx5_1").index ==
      1);
  CHECK_THROWS_WITH(read_sysfs_gid_table(kSysfs, "mlx5_0", 2),
                    Catch::Contains("ports/2/gids") && Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(parse_gid_type("RoCE v3"), Catch::Contains("RoCE v3"));
}

TEST_CASE("host buffers are page aligned and whole pages", "[verbs]") {
  HostBuffer b(5000);
  CHECK(reinterpret_cast<uintptr_t>(b.data()) % page_size() == 0);
  CHECK(b.size() == round_up(5000, page_size()));
  CHECK(b.data()[4999] == 0);
}

TEST_CASE("fake verbs: an RC WRITE copies into the peer's memory, completions as signalled",
          "[verbs]") {
  Pair p;
  p.connect();
  CHECK(p.qp_a->state() == QpState::ReadyToSend);
  for (int i = 0; i < 300; ++i) p.buf_a.data()[i] = static_cast<unsigned char>(i * 7);
  p.qp_a->post_send(p.write(1, 0, 100, false));
  p.qp_a->post_send(p.write(2, 100, 200, true));
  const auto wcs = p.drain(*p.cq_a);
  REQUIRE(wcs.size() == 1);  // the unsignalled write completes silently
  CHECK(wcs[0].wr_id == 2);
  CHECK(wcs[0].status == WcStatus::Success);
  CHECK(wcs[0].opcode == WcOpcode::RdmaWrite);
  CHECK(std::memcmp(p.buf_a.data(), p.buf_b.data(), 300) == 0);
  CHECK(p.fabric.bytes_written() == 300);
  CHECK(p.drain(*p.cq_b).empty());  // a WRITE leaves nothing at the responder
}

TEST_CASE("fake verbs: transitions need exactly their attribute masks", "[verbs]") {
  Pair p;
  QpAttributes a;
  a.state = QpState::ReadyToReceive;
  CHECK_THROWS_WITH(p.qp_a->modify(a, kQpState), Catch::Contains("not a valid transition"));
  move_to_init(*p.qp_a, p.path_a);
  CHECK_THROWS_WITH(
      p.qp_a->modify(a, kQpState | kQpAddressVector | kQpPathMtu | kQpDestQpn),
      Catch::Contains("missing attributes rq_psn, min_rnr_timer, max_dest_rd_atomic"));
  a.av.dgid = p.path_a.remote_gid;
  a.av.sgid_index = p.path_a.sgid_index;
  CHECK_THROWS_WITH(
      p.qp_a->modify(a, kQpState | kQpAddressVector | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                            kQpMaxDestReadAtomic | kQpMinRnrTimer | kQpSqPsn),
      Catch::Contains("not allowed: sq_psn"));
  RcPath bad = p.path_a;
  bad.sgid_index = 9;
  CHECK_THROWS_WITH(move_to_rtr(*p.qp_a, bad), Catch::Contains("sgid_index 9"));
  bad = p.path_a;
  bad.remote_psn = 0x1000000;
  CHECK_THROWS_WITH(move_to_rtr(*p.qp_a, bad), Catch::Contains("rq_psn above 0xffffff"));
  move_to_rtr(*p.qp_a, p.path_a);
  CHECK_THROWS_AS(p.qp_a->post_send(p.write(1, 0, 8)), VerbsError);  // not RTS yet
  move_to_rts(*p.qp_a, p.path_a);
  CHECK(p.qp_a->state() == QpState::ReadyToSend);
}

TEST_CASE("fake verbs: a path nobody answers ends in a retry-exceeded completion", "[verbs]") {
  SECTION("the peer was never connected") {
    Pair p;
    connect_rc(*p.qp_a, p.path_a);
    p.qp_a->post_send(p.write(5, 0, 64, false));  // errors complete even when unsignalled
    p.qp_a->post_send(p.write(6, 0, 64, true));
    const auto wcs = p.drain(*p.cq_a);
    REQUIRE(wcs.size() == 2);
    CHECK(wcs[0].status == WcStatus::RetryExceeded);
    CHECK(wcs[1].status == WcStatus::WrFlushError);
    CHECK(p.qp_a->state() == QpState::Error);
  }
  SECTION("the PSNs disagree") {
    Pair p;
    p.path_b.remote_psn += 1;
    p.connect();
    p.qp_a->post_send(p.write(5, 0, 64));
    const auto wcs = p.drain(*p.cq_a);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == WcStatus::RetryExceeded);
  }
  SECTION("an injected error") {
    Pair p;
    p.connect();
    p.fabric.inject_send_error("fake_a", WcStatus::RetryExceeded, 2);
    for (int i = 0; i < 4; ++i) p.qp_a->post_send(p.write(i, 0, 4096));
    const auto wcs = p.drain(*p.cq_a);
    REQUIRE(wcs.size() == 4);
    CHECK(wcs[1].status == WcStatus::Success);
    CHECK(wcs[2].status == WcStatus::RetryExceeded);
    CHECK(wcs[3].status == WcStatus::WrFlushError);
  }
}

TEST_CASE("fake verbs: keys, bounds and access are checked", "[verbs]") {
  Pair p;
  p.connect();
  SendRequest r = p.write(1, 0, 64);
  r.rkey ^= 0x100;
  p.qp_a->post_send(r);
  auto wcs = p.drain(*p.cq_a);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].status == WcStatus::RemoteAccessError);

  Pair q;
  q.connect();
  q.qp_a->post_send(q.write(1, 65536 - 32, 64));  // runs past the end of both regions
  wcs = q.drain(*q.cq_a);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].status == WcStatus::LocalProtectionError);

  Pair s;
  s.connect();
  auto read_only = s.pd_b->register_memory(s.buf_b.data(), 4096, kAccessLocalWrite);
  SendRequest w = s.write(1, 0, 64);
  w.rkey = read_only->rkey();
  s.qp_a->post_send(w);
  wcs = s.drain(*s.cq_a);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].status == WcStatus::RemoteAccessError);
  CHECK_THROWS_WITH(s.pd_a->register_memory(s.buf_a.data(), 64, kAccessRemoteWrite),
                    Catch::Contains("needs local write"));
}

TEST_CASE("fake verbs: the send queue holds tx_depth requests until a signalled completion",
          "[verbs]") {
  Pair p(4);
  p.connect();
  for (int i = 0; i < 3; ++i) p.qp_a->post_send(p.write(i, 0, 64, false));
  p.qp_a->post_send(p.write(3, 0, 64, true));
  try {
    p.qp_a->post_send(p.write(4, 0, 64, false));
    FAIL("a fifth request fitted in a queue of four");
  } catch (const VerbsError& e) {
    CHECK(e.error() == ENOMEM);
  }
  REQUIRE(p.drain(*p.cq_a, 1).size() == 1);
  for (int i = 4; i < 8; ++i) p.qp_a->post_send(p.write(i, 0, 64, i == 7));
}

TEST_CASE("fake verbs: a SEND fills a posted receive, without one RNR", "[verbs]") {
  Pair p(16, 16, 2);
  p.connect();
  std::memcpy(p.buf_a.data(), "hello, responder", 16);
  SendRequest r = p.write(9, 0, 16);
  r.opcode = SendOpcode::Send;
  p.qp_b->post_receive({77, p.mr_b->iova() + 1024, 64, p.mr_b->lkey()});
  p.qp_a->post_send(r);
  auto recv = p.drain(*p.cq_b);
  REQUIRE(recv.size() == 1);
  CHECK(recv[0].wr_id == 77);
  CHECK(recv[0].opcode == WcOpcode::Recv);
  CHECK(recv[0].byte_len == 16);
  CHECK(std::memcmp(p.buf_b.data() + 1024, "hello, responder", 16) == 0);
  REQUIRE(p.drain(*p.cq_a).size() == 1);
  // No receive posted, rnr_retry 2: the third retry fails the request.
  p.qp_a->post_send(r);
  const auto wcs = p.drain(*p.cq_a, 5);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].status == WcStatus::RnrRetryExceeded);
  CHECK(p.fabric.rnr_naks() >= 3);
}

TEST_CASE("fake verbs: with rnr_retry 7 a SEND waits for its receive", "[verbs]") {
  Pair p;
  p.connect();
  SendRequest r = p.write(9, 0, 128);
  r.opcode = SendOpcode::Send;
  p.qp_a->post_send(r);
  CHECK(p.drain(*p.cq_a, 20).empty());
  p.qp_b->post_receive({1, p.mr_b->iova(), 128, p.mr_b->lkey()});
  const auto wcs = p.drain(*p.cq_a);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].status == WcStatus::Success);
}

TEST_CASE("dma-buf: NCCL's probe and a registration by file descriptor", "[verbs]") {
  FakeFabric fabric;
  FakeDeviceSpec old = fake_roce_device("old", "10.0.0.3");
  old.dmabuf_supported = false;
  fabric.add_device(fake_roce_device("new", "10.0.0.4"));
  fabric.add_device(old);
  auto provider = fabric.provider();
  auto dev_new = provider->open("new");
  auto dev_old = provider->open("old");
  auto pd_new = dev_new->allocate_pd();
  auto pd_old = dev_old->allocate_pd();
  const DmabufProbe yes = probe_dmabuf(*pd_new);
  CHECK(yes.supported);
  CHECK(yes.error == EBADF);
  const DmabufProbe no = probe_dmabuf(*pd_old);
  CHECK_FALSE(no.supported);
  CHECK(no.error == EOPNOTSUPP);
  CHECK_THAT(no.detail, Catch::Contains("not supported"));

  // A memfd stands in for the GPU's dma-buf: the registration addresses it by the iova given.
  const int fd = memfd_create("fabtwin-test", 0);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, 8192) == 0);
  auto mr = pd_new->register_dmabuf(4096, 4096, 0x7000'0000'0000, fd,
                                    kAccessLocalWrite | kAccessRemoteWrite);
  CHECK(mr->iova() == 0x7000'0000'0000);
  CHECK(mr->length() == 4096);
  ::close(fd);
}

TEST_CASE("peer memory is detected by the files NCCL looks for", "[verbs]") {
  const std::string data = FABTWIN_TEST_DATA;
  CHECK_FALSE(detect_peer_memory(data + "/sysfs").available);
  CHECK_THAT(detect_peer_memory(data + "/sysfs").evidence,
             Catch::Contains("nvidia_peermem/version") && Catch::Contains("not loaded"));
  const auto nv_mem = detect_peer_memory(data + "/sysfs-peermem");
  CHECK(nv_mem.available);
  CHECK_THAT(nv_mem.evidence, Catch::EndsWith("memory_peers/nv_mem/version"));
  CHECK(detect_peer_memory(data + "/sysfs-peermem-module").available);
  CHECK(parse_gpu_registration_path("dmabuf") == GpuRegistrationPath::DmaBuf);
  CHECK_THROWS_WITH(parse_gpu_registration_path("gdr"), Catch::Contains("'auto', 'dmabuf'"));
}

TEST_CASE("libibverbs without a device: the error says so and why", "[verbs]") {
  auto provider = make_ibverbs_provider();
  if (!provider->device_names().empty()) {
    // A machine with a NIC: opening the first device works.
    CHECK_NOTHROW(provider->open(""));
    return;
  }
  try {
    provider->open("");
    FAIL("opening a device succeeded with no device listed");
  } catch (const VerbsError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("no RDMA device found (ibv_get_device_list returned "
                                           "none): /sys/class/infiniband"));
    CHECK(e.error() == ENODEV);
  }
}

TEST_CASE("GPU memory without a driver or a GPU: the error names what is missing", "[verbs]") {
  try {
    const int gpus = gpu_count();
    CHECK(gpus >= 1);  // a GPU machine
  } catch (const GpuError& e) {
    const std::string what = e.what();
    const bool named =
        what.find("no libcuda") == 0 || what.find("cuInit failed") == 0 || what.find("no GPU") == 0;
    CHECK(named);
    CHECK_THROWS_AS(GpuBuffer(0, 1 << 20), GpuError);
  }
}
