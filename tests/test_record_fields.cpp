// The records' field tables (sim/record_field.h): merging by each field's rule, and the output
// columns they give (sim/cli/record_columns.h).
#include <set>

#include "models/fabric/run_result.h"
#include "sim/cli/record_columns.h"
#include "test_support.h"

using namespace fabtwin;

TEST_CASE("records merge field by field by their rules", "[records]") {
  PriorityCounters a, b;
  a.tx_packets = 3;
  b.tx_packets = 4;
  a.max_queue_bytes = 9'000;
  b.max_queue_bytes = 5'000;
  b.paused_time = Time{7};
  merge_record(a, b);
  CHECK(a.tx_packets == 7);           // Sum
  CHECK(a.max_queue_bytes == 9'000);  // Max
  CHECK(a.paused_time == Time{7});    // Sum of times

  FlowRecord requester, responder;
  requester.spec.id = 5;
  requester.completed = true;
  requester.finish = Time{100};
  requester.packets_sent = 10;
  responder.spec.id = 99;  // Same: the first record's is kept
  responder.bytes_received = 4'096;
  merge_record(requester, responder);
  CHECK(requester.spec.id == 5);
  CHECK(requester.completed);
  CHECK(requester.finish == Time{100});
  CHECK(requester.bytes_received == 4'096);
  CHECK(requester.packets_sent == 10);
}

TEST_CASE("a port's columns show every counter over its priorities", "[records]") {
  PortRecord p;
  p.node = "leaf0";
  p.counters[1].xoff_transitions = 2;
  p.counters[3].xoff_transitions = 5;
  p.counters[1].max_queue_bytes = 1'000;
  p.counters[3].max_queue_bytes = 3'000;
  const auto columns = columns_of<PortRecord>();
  const nlohmann::json j = record_json(columns, p);
  CHECK(j.at("node") == "leaf0");
  CHECK(j.at("xoff_transitions") == 7);     // summed
  CHECK(j.at("max_queue_bytes") == 3'000);  // the largest
  for_each_field<PriorityCounters>([&](const auto& f) {
    INFO(f.name);
    CHECK(j.contains(f.name));
  });
}

TEST_CASE("a flow's columns follow its spec, and mark what did not happen with -1", "[records]") {
  FlowRecord f;
  f.spec.generator = 2;
  f.spec.size = Bytes{1'000};
  f.finish = Time{123};
  const nlohmann::json j = record_json(columns_of<FlowRecord>(), f);
  CHECK(j.at("generator") == 2);
  CHECK(j.at("size_bytes") == 1'000);
  CHECK(j.at("finish_ps") == -1);  // not completed
  CHECK(j.at("fct_ps") == -1);
  CHECK(j.at("completed") == false);
}

TEST_CASE("every output column has a unique name and a meaning", "[records]") {
  const auto check = [](const auto& columns) {
    std::set<std::string> names;
    for (const auto& c : columns) {
      INFO(c.name);
      CHECK(names.insert(c.name).second);
      CHECK(!c.meaning.empty());
    }
  };
  check(columns_of<FlowRecord>());
  check(columns_of<PortRecord>());
  check(columns_of<PauseRecord>());
  check(columns_of<BufferRecord>());
  check(columns_of<RateSampleRecord>());
  check(columns_of<BufferSampleRecord>());
  check(columns_of<QueueDepthSample>());
  check(columns_of<CollectiveRow>());
  check(columns_of<CollectiveIterationRecord>());
  check(columns_of<CollectiveStepRecord>());
  check(columns_of<CollectiveTransferRecord>());
}
