// The control network over real loopback TCP: a group of ranks in threads runs the collective
// calls; wrong tokens, different runs, duplicate or impossible ranks are refused at the
// handshake; frames written by hand on a raw socket (replayed, reordered, truncated, oversized,
// tampered, of unknown version or type) and a silent peer are refused with a message naming
// what was wrong, and nothing is delivered. Also the job token's file rules and the checks of
// the fields a verbs peer sends.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "hw/control/control_group.h"
#include "hw/control/job_token.h"
#include "hw/control/peer_fields.h"
#include "hw/control/secure_channel.h"
#include "test_support.h"

using namespace fabtwin::hw;
using namespace std::chrono_literals;

namespace {

std::vector<unsigned char> token_of(unsigned char fill) {
  return std::vector<unsigned char>(32, fill);
}

std::vector<unsigned char> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}

ControlConfig group_config(int rank, int ranks) {
  ControlConfig c;
  c.rank = rank;
  c.ranks = ranks;
  c.root_port = 0;
  c.run_id = "run-a";
  c.token = token_of(7);
  c.handshake_deadline = 300ms;
  c.join_deadline = 400ms;
  c.call_deadline = 2000ms;
  return c;
}

// Rank 0 from `root`, started in a thread; returns once it listens, with its port.
struct RootThread {
  std::promise<uint16_t> port;
  std::future<std::unique_ptr<ControlGroup>> group;
  explicit RootThread(ControlConfig root) {
    root.on_listening = [this](uint16_t p) { port.set_value(p); };
    auto listening = port.get_future();
    group = std::async(std::launch::async, [root] { return ControlGroup::join(root); });
    if (listening.wait_for(2s) != std::future_status::ready) FAIL("rank 0 did not listen");
    bound = listening.get();
  }
  uint16_t bound = 0;
};

// What `f` throws (a ControlError's text), or "" when it returns.
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const ControlError& e) {
    return e.what();
  }
  return "";
}

// A listening loopback socket on a free port.
Socket loopback_listener(uint16_t& port) {
  Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(s.fd(), 4) == 0);
  socklen_t length = sizeof a;
  ::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &length);
  port = ntohs(a.sin_port);
  return s;
}

Socket connect_to(uint16_t port) {
  Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  REQUIRE(::connect(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return s;
}

ChannelConfig channel_config(unsigned char token = 7, std::string run_id = "run-a") {
  ChannelConfig c;
  c.token = token_of(token);
  c.run_id = std::move(run_id);
  c.max_frame = 1024;
  c.max_message = 8192;
  return c;
}

ControlClock::time_point soon() {
  return ControlClock::now() + 300ms;
}

// An authenticated client/server pair over loopback TCP.
struct ChannelPair {
  std::optional<SecureChannel> client, server;
};

ChannelPair open_pair() {
  uint16_t port = 0;
  Socket listener = loopback_listener(port);
  auto client = std::async(std::launch::async, [port] {
    return SecureChannel::open_as_client(connect_to(port), "rank 0 (test server)", channel_config(),
                                         1, soon());
  });
  ChannelPair pair;
  pair.server.emplace(SecureChannel::open_as_server(
      Socket(::accept(listener.fd(), nullptr, nullptr)), channel_config(),
      [](int) { return std::string(); }, soon()));
  pair.client.emplace(client.get());
  return pair;
}

// Writes raw bytes on the client's socket, as an attacker on the connection would.
void inject(SecureChannel& client, const std::vector<unsigned char>& bytes) {
  write_all(client.native_handle(), bytes.data(), bytes.size(), soon(), "test");
}

std::vector<unsigned char> frame(SecureChannel& client, FrameType type, uint64_t seq,
                                 const std::vector<unsigned char>& payload) {
  return encode_frame(client.frame_key(), client.send_direction(), type, seq, payload);
}

std::filesystem::path temp_file(const std::string& name) {
  const auto path = fabtwin::testing::temp_dir() / name;
  std::filesystem::remove(path);
  return path;
}

void write_file(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

}  // namespace

TEST_CASE("a 4-rank control group runs barrier, broadcast, allgather and gather", "[hw-control]") {
  const int ranks = 4;
  RootThread root(group_config(0, ranks));
  std::vector<std::future<std::unique_ptr<ControlGroup>>> others;
  for (int r = 1; r < ranks; ++r) {
    ControlConfig c = group_config(r, ranks);
    c.root_port = root.bound;
    others.push_back(std::async(std::launch::async, [c] { return ControlGroup::join(c); }));
  }
  std::vector<std::unique_ptr<ControlGroup>> group;
  group.push_back(root.group.get());
  for (auto& f : others) group.push_back(f.get());

  // A value larger than one frame (64 KiB), reassembled from parts.
  std::vector<unsigned char> large(200'000);
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<unsigned char>(i * 31 + 5);

  struct Seen {
    std::vector<unsigned char> from0, from2, big;
    std::vector<std::vector<unsigned char>> all, gathered;
  };
  std::vector<std::future<Seen>> runs;
  for (int r = 0; r < ranks; ++r)
    runs.push_back(std::async(std::launch::async, [&, r] {
      ControlGroup& g = *group[static_cast<size_t>(r)];
      Seen seen;
      g.barrier();
      seen.from0 = g.broadcast(r == 0 ? bytes_of("plan") : bytes_of("ignored"), 0);
      seen.from2 = g.broadcast(r == 2 ? bytes_of("from two") : std::vector<unsigned char>{}, 2);
      seen.all = g.allgather(bytes_of("rank" + std::to_string(r)));
      seen.gathered = g.gather(bytes_of(std::string(static_cast<size_t>(r), 'x')));
      seen.big = g.broadcast(r == 3 ? large : std::vector<unsigned char>{}, 3);
      g.barrier();
      return seen;
    }));
  for (int r = 0; r < ranks; ++r) {
    const Seen seen = runs[static_cast<size_t>(r)].get();
    CHECK(seen.from0 == bytes_of("plan"));
    CHECK(seen.from2 == bytes_of("from two"));
    REQUIRE(seen.all.size() == 4);
    for (int k = 0; k < ranks; ++k)
      CHECK(seen.all[static_cast<size_t>(k)] == bytes_of("rank" + std::to_string(k)));
    if (r == 0) {
      REQUIRE(seen.gathered.size() == 4);
      for (int k = 0; k < ranks; ++k)
        CHECK(seen.gathered[static_cast<size_t>(k)].size() == static_cast<size_t>(k));
    } else {
      CHECK(seen.gathered.empty());
    }
    CHECK(seen.big == large);
  }
}

TEST_CASE("ranks that call different collectives stop with a clear error", "[hw-control]") {
  RootThread root(group_config(0, 2));
  ControlConfig c = group_config(1, 2);
  c.root_port = root.bound;
  c.call_deadline = 300ms;
  auto other = std::async(std::launch::async, [c] { return ControlGroup::join(c); });
  auto group0 = root.group.get();
  auto group1 = other.get();
  auto barrier =
      std::async(std::launch::async, [&] { return refusal([&] { group1->barrier(); }); });
  const std::string at_root = refusal([&] { group0->gather(bytes_of("x")); });
  INFO(at_root);
  CHECK(at_root.find("rank 1 (127.0.0.1:") == 0);
  CHECK(at_root.find("called barrier (root 0) where this rank called gather (root 0)") !=
        std::string::npos);
  CHECK_FALSE(barrier.get().empty());  // rank 1 waits for an answer that never comes
}

TEST_CASE("a wrong job token is refused on both sides", "[hw-control]") {
  RootThread root(group_config(0, 2));
  ControlConfig c = group_config(1, 2);
  c.root_port = root.bound;
  c.token = token_of(8);
  const std::string client = refusal([&] { ControlGroup::join(c); });
  const std::string server = refusal([&] { root.group.get(); });
  INFO(client);
  INFO(server);
  CHECK(client.find("rank 0 (127.0.0.1:" + std::to_string(root.bound) + ")") != std::string::npos);
  CHECK(client.find("different job token") != std::string::npos);
  CHECK(server.find("rank(s) 1 did not join") != std::string::npos);
  CHECK(server.find("authentication failed") != std::string::npos);
  CHECK(server.find("client at 127.0.0.1:") != std::string::npos);
}

TEST_CASE("a client checks the server's proof", "[hw-control]") {
  uint16_t port = 0;
  Socket listener = loopback_listener(port);
  // A server holding another token: it answers Accept with a proof made from its own key.
  auto fake = std::async(std::launch::async, [&] {
    Socket s(::accept(listener.fd(), nullptr, nullptr));
    std::vector<unsigned char> hello = {'F', 'T', 'H', 'W', kControlVersion};
    hello.resize(5 + kNonceBytes, 0x42);
    write_all(s.fd(), hello.data(), hello.size(), soon(), "client");
    std::vector<unsigned char> join(4 + 1 + 4 + 2 + 5 + kNonceBytes + kTagBytes);
    size_t got = 0;
    while (got < join.size()) {
      const ssize_t n = ::recv(s.fd(), join.data() + got, join.size() - got, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    std::vector<unsigned char> accept = {'F', 'T', 'H', 'W', kControlVersion, 0};
    const Key wrong = derive_run_key(token_of(9), "run-a");
    const auto proof = hmac_sha256(wrong.data(), wrong.size(), join);
    accept.insert(accept.end(), proof.begin(), proof.end());
    write_all(s.fd(), accept.data(), accept.size(), soon(), "client");
    std::this_thread::sleep_for(50ms);
  });
  const std::string message = refusal([&] {
    SecureChannel::open_as_client(connect_to(port), "rank 0 (fake)", channel_config(), 1, soon());
  });
  fake.get();
  CHECK(message.find("rank 0 (fake): refused: the server's proof does not match") !=
        std::string::npos);
}

TEST_CASE("a different run id is refused at the handshake", "[hw-control]") {
  RootThread root(group_config(0, 2));
  ControlConfig c = group_config(1, 2);
  c.root_port = root.bound;
  c.run_id = "run-b";
  const std::string client = refusal([&] { ControlGroup::join(c); });
  const std::string server = refusal([&] { root.group.get(); });
  INFO(client);
  CHECK(client.find("different run id") != std::string::npos);
  CHECK(client.find("run-b") != std::string::npos);
  CHECK(server.find("different run id") != std::string::npos);
}

TEST_CASE("a rank that joined already, or outside the group, is refused", "[hw-control]") {
  RootThread root(group_config(0, 3));
  ControlConfig first = group_config(1, 3);
  first.root_port = root.bound;
  first.join_deadline = 600ms;
  auto joined = std::async(std::launch::async,
                           [first] { return refusal([&] { ControlGroup::join(first); }); });
  std::this_thread::sleep_for(100ms);
  ControlConfig again = first;
  const std::string duplicate = refusal([&] { ControlGroup::join(again); });
  ControlConfig outside = group_config(5, 8);
  outside.root_port = root.bound;
  const std::string out_of_range = refusal([&] { ControlGroup::join(outside); });
  const std::string server = refusal([&] { root.group.get(); });
  INFO(duplicate);
  INFO(out_of_range);
  CHECK(duplicate.find("rank 1 has joined already") != std::string::npos);
  CHECK(out_of_range.find("rank 5 outside this group's ranks 1..2") != std::string::npos);
  CHECK(server.find("rank(s) 2 did not join") != std::string::npos);
  // The first rank 1 waited for the group and saw rank 0 give up.
  CHECK_FALSE(joined.get().empty());
}

TEST_CASE("rank 0 listens on the address written, not on every address", "[hw-control]") {
  ControlConfig c0 = group_config(0, 2);
  c0.root_address = "127.0.0.2";
  c0.bind_address = "127.0.0.2";
  RootThread root(c0);
  // Another loopback address at the same port: nothing listens there.
  ControlConfig elsewhere = group_config(1, 2);
  elsewhere.root_port = root.bound;
  elsewhere.root_address = "127.0.0.1";
  elsewhere.join_deadline = 150ms;
  const std::string missed = refusal([&] { ControlGroup::join(elsewhere); });
  CHECK(missed.find("could not reach rank 0 (127.0.0.1:" + std::to_string(root.bound)) !=
        std::string::npos);
  ControlConfig c1 = elsewhere;
  c1.root_address = "127.0.0.2";
  c1.join_deadline = 400ms;
  auto group1 = ControlGroup::join(c1);
  auto group0 = root.group.get();
  CHECK(group1->broadcast(bytes_of("x"), 1) == bytes_of("x"));
  CHECK(group0->broadcast({}, 1) == bytes_of("x"));
}

TEST_CASE("frames that fail their check are refused and nothing is delivered", "[hw-control]") {
  ChannelPair pair = open_pair();
  SecureChannel& client = *pair.client;
  SecureChannel& server = *pair.server;
  const auto hello = bytes_of("hello");

  SECTION("a message spanning frames arrives whole") {
    std::vector<unsigned char> big(3000, 0x5a);
    client.send(big, soon());
    CHECK(server.receive(soon()) == big);
    server.send(bytes_of("back"), soon());
    CHECK(client.receive(soon()) == bytes_of("back"));
  }
  SECTION("a replayed frame") {
    client.send(hello, soon());
    inject(client, frame(client, FrameType::End, 0, hello));
    CHECK(server.receive(soon()) == hello);
    const std::string message = refusal([&] { server.receive(soon()); });
    CHECK(message.find("rank 1 (127.0.0.1:") == 0);
    CHECK(message.find("replayed frame: seq 0") != std::string::npos);
    CHECK(refusal([&] { server.receive(soon()); }).find("earlier refusal") != std::string::npos);
  }
  SECTION("a frame out of order") {
    inject(client, frame(client, FrameType::End, 1, hello));
    inject(client, frame(client, FrameType::End, 0, hello));
    CHECK(refusal([&] { server.receive(soon()); }).find("out of order: seq 1, expected 0") !=
          std::string::npos);
  }
  SECTION("a truncated frame") {
    auto f = frame(client, FrameType::End, 0, hello);
    f.resize(f.size() - 10);
    inject(client, f);
    ::shutdown(client.native_handle(), SHUT_WR);
    const std::string message = refusal([&] { server.receive(soon()); });
    CHECK(message.find("connection closed mid-way through a frame's payload and tag (truncated") !=
          std::string::npos);
  }
  SECTION("an oversized frame") {
    inject(client, frame(client, FrameType::End, 0, std::vector<unsigned char>(1025, 1)));
    CHECK(refusal([&] {
            server.receive(soon());
          }).find("oversized frame: length 1025 bytes over the maximum 1024") != std::string::npos);
  }
  SECTION("a tampered payload byte") {
    auto f = frame(client, FrameType::End, 0, hello);
    f[kFrameHeaderBytes + 2] ^= 0x01;
    inject(client, f);
    CHECK(refusal([&] { server.receive(soon()); }).find("bad tag (seq 0)") != std::string::npos);
  }
  SECTION("a tampered last part of a long message delivers none of it") {
    client.send(std::vector<unsigned char>(1024, 3), soon());  // one End frame, seq 0
    CHECK(server.receive(soon()).size() == 1024);
    inject(client, frame(client, FrameType::Part, 1, std::vector<unsigned char>(1024, 4)));
    auto last = frame(client, FrameType::End, 2, hello);
    last.back() ^= 0x80;
    inject(client, last);
    CHECK(refusal([&] { server.receive(soon()); }).find("bad tag (seq 2)") != std::string::npos);
  }
  SECTION("a message over the total cap") {
    for (uint64_t seq = 0; seq < 9; ++seq)
      inject(client, frame(client, FrameType::Part, seq, std::vector<unsigned char>(1000, 1)));
    CHECK(refusal([&] { server.receive(soon()); }).find("over the maximum of 8192 bytes") !=
          std::string::npos);
  }
  SECTION("an unknown version or type") {
    const bool version = GENERATE(true, false);
    inject(client, version ? encode_frame(client.frame_key(), client.send_direction(),
                                          FrameType::End, 0, hello, 2)
                           : frame(client, static_cast<FrameType>(7), 0, hello));
    CHECK(refusal([&] {
            server.receive(soon());
          }).find(version ? "unknown protocol version 2" : "unknown type 7") != std::string::npos);
  }
  SECTION("a frame the server sent, reflected back") {
    server.send(hello, soon());
    std::vector<unsigned char> reflected(kFrameHeaderBytes + hello.size() + kTagBytes);
    size_t got = 0;
    while (got < reflected.size()) {
      const ssize_t n =
          ::recv(client.native_handle(), reflected.data() + got, reflected.size() - got, 0);
      REQUIRE(n > 0);
      got += static_cast<size_t>(n);
    }
    inject(client, reflected);
    CHECK(refusal([&] { server.receive(soon()); }).find("bad tag") != std::string::npos);
  }
  SECTION("a peer that stops talking") {
    const auto start = ControlClock::now();
    const std::string message = refusal([&] { server.receive(ControlClock::now() + 200ms); });
    CHECK(message.find("deadline passed waiting for a frame header") != std::string::npos);
    CHECK(ControlClock::now() - start >= 200ms);
    CHECK(ControlClock::now() - start < 1500ms);
  }
}

TEST_CASE("a client that says nothing is refused at the handshake's deadline", "[hw-control]") {
  uint16_t port = 0;
  Socket listener = loopback_listener(port);
  Socket silent = connect_to(port);
  const std::string message = refusal([&] {
    SecureChannel::open_as_server(
        Socket(::accept(listener.fd(), nullptr, nullptr)), channel_config(),
        [](int) { return std::string(); }, ControlClock::now() + 200ms);
  });
  CHECK(message.find("client at 127.0.0.1:") == 0);
  CHECK(message.find("deadline passed waiting for the handshake's join") != std::string::npos);
}

TEST_CASE("the job token is read from a private file or the environment", "[hw-control]") {
  const auto path = temp_file("token");
  const JobToken made = write_new_token_file(path);
  CHECK(made.bytes.size() == kNewTokenBytes);
  CHECK((std::filesystem::status(path).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  const JobToken read = read_token_file(path);
  CHECK(read.bytes == made.bytes);
  CHECK(read.fingerprint().size() == 8);
  CHECK(read.fingerprint() == made.fingerprint());
  CHECK_THROWS_WITH(write_new_token_file(path), Catch::Contains("exists already"));

  // The known answer: SHA-256 of 32 zero bytes begins 66687aad.
  CHECK(token_fingerprint(std::vector<unsigned char>(32, 0)) == "66687aad");

  const auto open = temp_file("open-token");
  write_file(open, std::string(64, 'a'), 0644);
  CHECK_THROWS_WITH(read_token_file(open),
                    Catch::Contains("mode 0644 lets group or others access it"));
  const auto short_token = temp_file("short-token");
  write_file(short_token, std::string(62, 'b'), 0600);
  CHECK_THROWS_WITH(read_token_file(short_token),
                    Catch::Contains("31 bytes, expected at least 32"));
  CHECK_THROWS_WITH(read_token_file(temp_file("missing")), Catch::Contains("cannot be opened"));

  ::unsetenv(kTokenFileVariable);
  ::unsetenv(kTokenHexVariable);
  CHECK_THROWS_WITH(load_job_token(), Catch::Contains("no job token"));
  ::setenv(kTokenHexVariable, std::string(64, 'c').c_str(), 1);
  CHECK(load_job_token().bytes == std::vector<unsigned char>(32, 0xcc));
  ::setenv(kTokenFileVariable, path.c_str(), 1);
  CHECK(load_job_token().bytes == made.bytes);
  // An explicit --token-file comes before both variables.
  CHECK_THROWS_WITH(load_job_token(short_token.string()), Catch::Contains(short_token.string()));
  ::unsetenv(kTokenFileVariable);
  ::unsetenv(kTokenHexVariable);
}

TEST_CASE("peer fields outside their ranges or regions are refused", "[hw-control]") {
  CHECK(check_qpn(0x123456, "rank 1") == 0x123456);
  CHECK_THROWS_WITH(check_qpn(0x1000000, "rank 1", "qpn[3]"),
                    Catch::Contains("rank 1: field qpn[3]: expected a queue pair number in "
                                    "0x2..0xffffff, found 0x1000000"));
  CHECK_THROWS(check_qpn(1, "rank 1"));
  CHECK(check_psn(0xFFFFFF, "rank 1") == 0xFFFFFF);
  CHECK(check_psn(0, "rank 1") == 0);
  CHECK_THROWS_WITH(check_psn(0x1000000, "rank 2"), Catch::Contains("found 0x1000000"));
  CHECK(check_rkey(0xFFFFFFFF, "rank 1") == 0xFFFFFFFFu);
  CHECK_THROWS(check_rkey(0x100000000ull, "rank 1"));

  CHECK_NOTHROW(check_remote_region(0x1000, 0x100, 0x1000, 0x100, "rank 1"));
  CHECK_NOTHROW(check_remote_region(0x1080, 0x80, 0x1000, 0x100, "rank 1"));
  CHECK_THROWS_WITH(check_remote_region(0x1081, 0x80, 0x1000, 0x100, "rank 1"),
                    Catch::Contains("expected a region inside [0x1000, 0x1000+256), found "
                                    "[0x1081, 0x1081+128)"));
  CHECK_THROWS(check_remote_region(0xFFF, 0x10, 0x1000, 0x100, "rank 1"));
  CHECK_THROWS(check_remote_region(0x1000, 0, 0x1000, 0x100, "rank 1"));
  // A length that wraps the address space around would pass a naive end comparison.
  CHECK_THROWS(check_remote_region(0x1010, UINT64_MAX - 0x8, 0x1000, 0x100, "rank 1"));
  CHECK_THROWS(check_remote_region(0x10, 0x10, UINT64_MAX - 4, 0x100, "rank 1"));
  CHECK_NOTHROW(check_advertised_length(4096, 4096, "rank 1"));
  CHECK_THROWS_WITH(check_advertised_length(4095, 4096, "rank 3"),
                    Catch::Contains("at least 4096 bytes (the local plan's), found 4095 bytes"));
}
