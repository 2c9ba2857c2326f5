// A whole fabtwin-hw run over the verbs transport, on hwverbs' in-process fake provider: three
// ranks in threads, the settings from the scenario's `hw` section, the measurement file written.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hw/run/hw_runner.h"
#include "hw/run/local_control_group.h"
#include "hw/verbs/fake_verbs.h"
#include "hw/verbs/verbs_transport.h"
#include "sim/cli/compare.h"
#include "test_support.h"

using namespace fabtwin;
using namespace fabtwin::hw;
namespace fs = std::filesystem;

TEST_CASE("a whole run over the verbs transport (fake provider): three ranks, every flow", "[hw]") {
  const std::string verb = GENERATE("write", "send");
  const fs::path& dir = testing::temp_dir();
  const fs::path hosts = dir / "hosts";
  std::ofstream(hosts) << "10.0.0.1 0-1\n10.0.0.2 2-3\n10.0.0.3 4-5\n";
  const fs::path out = dir / "verbs.h5";
  fs::remove(out);
  FakeFabric fabric;
  for (int r = 0; r < 3; ++r) {
    fabric.add_device(
        fake_roce_device("fake_" + std::to_string(r), "10.0.0." + std::to_string(r + 1)));
  }
  std::shared_ptr<VerbsProvider> provider = fabric.provider();
  auto group = LocalControlGroup::create(3);
  std::vector<int> status(3, -1);
  std::vector<std::string> errors(3);
  std::vector<std::ostringstream> said(3);
  std::vector<VerbsSettings> settings(3);  // checked after the join: Catch2 asserts on one thread
  std::vector<std::thread> threads;
  int64_t planned = 0;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        RunOptions o;
        o.scenario = FABTWIN_SOURCE_DIR "/scenarios/hw/incast_permutation.json";
        o.sets = {"hw.transport=verbs",     "hw.hosts=" + hosts.string(), "hw.warmup=0B",
                  "hw.tx_depth=16",         "hw.start_delay=1ms",         "traffic[0].verb=" + verb,
                  "traffic[1].verb=" + verb};
        o.rank = r;
        o.out = out.string();
        const PreparedRun run = prepare_run(o);
        if (r == 0) {
          for (const PlannedMessage& m : run.plan.messages) planned += m.size.count;
        }
        VerbsSettings v = verbs_settings(run.config, run.plan);
        settings[r] = v;
        v.device = "fake_" + std::to_string(r);
        v.provider = provider;
        const auto transport = make_verbs_transport(v);
        status[r] = execute_run(run, *group[r], *transport, o, said[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        static_cast<LocalControlGroup&>(*group[r]).abandon(e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const VerbsSettings& v : settings) {
    CHECK(v.verb == (verb == "send" ? VerbsVerb::Send : VerbsVerb::Write));
    CHECK(v.tx_depth == 16);
    CHECK(v.inline_size == 220);
  }
  CHECK(errors == std::vector<std::string>(3, ""));
  CHECK(status == std::vector<int>{0, 0, 0});
  CHECK_THAT(said[0].str(), Catch::Contains("10 of 10 completed") && Catch::Contains("verbs"));
  // Every byte of the plan, written (or sent) once.
  CHECK((verb == "send" ? fabric.bytes_sent() : fabric.bytes_written()) == planned);
  const Comparison c = compare_files(out.string(), out.string());
  REQUIRE(c.tables.size() == 1);
  CHECK(c.tables[0].matched.size() == 10);
}

TEST_CASE("verbs settings: one verb per run, a plan with both refused", "[hw]") {
  const fs::path file = FABTWIN_SOURCE_DIR "/scenarios/hw/incast_permutation.json";
  const auto settings = [&](const std::vector<std::string>& sets) {
    RunOptions o;
    o.scenario = file.string();
    o.sets = sets;
    const PreparedRun run = prepare_run(o);
    return verbs_settings(run.config, run.plan);
  };
  CHECK(settings({}).verb == VerbsVerb::Write);
  CHECK(settings({"traffic[0].verb=send", "traffic[1].verb=send"}).verb == VerbsVerb::Send);
  CHECK_THROWS_WITH(settings({"traffic[0].verb=send"}),
                    Catch::Contains("both RDMA WRITE and SEND"));
}
