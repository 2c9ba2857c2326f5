// The views of simulated collectives: the nccl-tests table, --json, the HDF5 /collectives group
// and the Perfetto trace, on a result built by hand.
#include <hdf5.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include "test_support.h"

#include "sim/cli/nccl_table.h"
#include "sim/cli/report.h"
#include "sim/cli/trace.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMiB = 1 << 20;

CollectiveRow row(uint32_t generator, const std::string& op, int64_t size, int64_t count,
                  double time_us, double algbw, double busbw, std::vector<uint32_t> gpus) {
  CollectiveRow c;
  c.generator = generator;
  c.op = op;
  c.algorithm = "ring";
  c.protocol = "Simple";
  c.size = size;
  c.count = count;
  c.type = "float";
  c.redop = "sum";
  c.root = -1;
  c.ranks = static_cast<int>(gpus.size());
  c.gpus = std::move(gpus);
  c.channels = 2;
  c.iterations = 20;
  c.time_us = time_us;
  c.algbw = algbw;
  c.busbw = busbw;
  return c;
}

CollectiveStepRecord step(uint32_t row, uint32_t iteration, uint32_t rank, uint16_t channel,
                          uint16_t lane, uint32_t number, int32_t recv, int32_t send,
                          int64_t start_ps, int64_t end_ps) {
  return {row, iteration, rank, channel, lane, number, recv, send, kMiB, {start_ps}, {end_ps}};
}

CollectiveTransferRecord transfer(uint32_t row, uint16_t channel, CollectiveTransport transport,
                                  uint32_t src, uint32_t dst, int64_t posted_ps,
                                  int64_t arrived_ps) {
  return {row, 0, channel, transport, src, dst, kMiB, {posted_ps}, {arrived_ps}};
}

// Two sizes of an all-reduce on four GPUs (the numbers of docs/references.md §4.2's example), and
// an all-gather on two of them, with a few steps and transfers.
RunResult collective_result() {
  RunResult r;
  r.scenario_file = "synthetic.json";
  r.topology = "rail";
  r.congestion_control = "none";
  r.gpus = {"node0/gpu0", "node0/gpu1", "node1/gpu0", "node1/gpu1"};
  r.collectives.push_back(
      row(0, "all_reduce", 134217728, 33554432, 652.5, 205.70, 359.97, {0, 1, 2, 3}));
  r.collectives.push_back(
      row(0, "all_reduce", 8589934592, 2147483648, 31350.0, 274.00, 479.50, {0, 1, 2, 3}));
  r.collectives.push_back(row(1, "all_gather", 1048576, 262144, 27.61, 37.98, 66.46, {3, 2}));
  r.collectives[0].start = {1'000'000};
  r.collectives[0].end = {20'000'000};
  r.collectives[1].start = {20'000'000};
  r.collectives[1].end = {900'000'000};
  r.collectives[2].type = "half";
  r.collectives[2].algorithm = "tree";
  r.collectives[2].start = {2'000'000};
  r.collectives[2].end = {3'000'000};
  r.collective_steps = {
      step(0, 0, 0, 0, 0, 0, -1, 1, 1'000'000, 3'500'000),
      step(0, 0, 1, 0, 0, 1, 0, 2, 4'000'000, 6'000'000),
      step(0, 21, 1, 1, 1, 0, 0, -1, 7'000'000, 8'000'000),
      step(2, 0, 0, 0, 0, 0, 1, 1, 2'000'000, 2'500'000),
  };
  r.collective_transfers = {
      transfer(0, 0, CollectiveTransport::NvLink, 0, 1, 3'500'000, 4'000'000),
      transfer(0, 0, CollectiveTransport::Net, 1, 2, 6'000'000, 9'000'000),
      transfer(0, 0, CollectiveTransport::Net, 1, 2, 7'000'000, 10'000'000),
  };
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

using testing::temp_dir;

// Reads a whole dataset through a memory type that names only the fields a check needs; HDF5
// matches the fields by name.
template <typename Row>
std::vector<Row> read_table(hid_t file, const char* name, hid_t memory_type) {
  const hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  REQUIRE(set >= 0);
  const hid_t space = H5Dget_space(set);
  hsize_t rows = 0;
  H5Sget_simple_extent_dims(space, &rows, nullptr);
  std::vector<Row> out(rows);
  if (rows > 0) {
    CHECK(H5Dread(set, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0);
  }
  H5Sclose(space);
  H5Dclose(set);
  return out;
}

}  // namespace

TEST_CASE("nccl-tests' getFloatStr fits a number to its column", "[collective_output]") {
  CHECK(nccl_float_text(652.5, 7) == " 652.50");
  CHECK(nccl_float_text(31350.0, 7) == "31350.0");
  CHECK(nccl_float_text(17.53, 7) == "  17.53");
  CHECK(nccl_float_text(123456.7, 7) == " 123457");
  CHECK(nccl_float_text(12345678.0, 7) == "1.2e+07");
  CHECK(nccl_float_text(0.0, 6) == "  0.00");
  CHECK(nccl_float_text(205.7, 6) == "205.70");
  CHECK(nccl_float_text(1234.5, 6) == "1234.5");
  CHECK(nccl_float_text(123456.0, 6) == "123456");
  CHECK(nccl_float_text(1234567.0, 6) == " 1e+06");
}

TEST_CASE("a generator's rows print in nccl-tests' current layout", "[collective_output]") {
  const RunResult r = collective_result();
  const std::vector<std::string> lines = lines_of(nccl_tests_table(r, 0));
  REQUIRE(lines.size() == 9);
  CHECK(lines[0] ==
        "# fabtwin simulated all_reduce_perf  (NCCL tuning model 2.30.7, protocol Simple)");
  // Row 0's records run to iteration 21 with 20 timed: two warm-up iterations.
  CHECK(lines[1] == "# nRanks 4  algorithm ring  channels 2  iters 20  warmup 2");
  CHECK(lines[2] == "#");
  // util.cu writeResultHeader's three lines, printed with its format strings.
  CHECK(lines[3] ==
        "#                                                              out-of-place              "
        "         in-place          ");
  CHECK(lines[4] ==
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong   "
        "  time   algbw   busbw  #wrong ");
  CHECK(lines[5] ==
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)           "
        "  (us)  (GB/s)  (GB/s)         ");
  // "%12li  %12li  %8s  %6s  %6s", then "  %7s  %6s  %6s    N/A" (no data check) twice, the
  // in-place fields all N/A.
  CHECK(lines[6] ==
        "   134217728      33554432     float     sum      -1   652.50  205.70  359.97    N/A    "
        "  N/A     N/A     N/A    N/A");
  CHECK(lines[7] ==
        "  8589934592    2147483648     float     sum      -1  31350.0  274.00  479.50    N/A    "
        "  N/A     N/A     N/A    N/A");
  // "# %-20s : %g %s" over the out-of-place busbw.
  CHECK(lines[8] == "# Avg bus bandwidth    : 419.735 ");

  const std::vector<std::string> gather = lines_of(nccl_tests_table(r, 1));
  REQUIRE(gather.size() == 8);
  CHECK(gather[0] ==
        "# fabtwin simulated all_gather_perf  (NCCL tuning model 2.30.7, protocol Simple)");
  CHECK(gather[1] == "# nRanks 2  algorithm tree  channels 2  iters 20  warmup 0");
  CHECK(gather[6] ==
        "     1048576        262144      half    none      -1    27.61   37.98   66.46    N/A    "
        "  N/A     N/A     N/A    N/A");
  CHECK(nccl_tests_table(r, 7).empty());
}

TEST_CASE("the summary ends with one table per generator", "[collective_output]") {
  const RunResult r = collective_result();
  std::ostringstream out;
  print_summary(r, out);
  const std::string text = out.str();
  const size_t first = text.find("\ncollective  traffic[0]: all_reduce on 4 GPUs, 2 sizes\n");
  const size_t second = text.find("\ncollective  traffic[1]: all_gather on 2 GPUs, 1 size\n");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(first < second);
  CHECK(text.find(nccl_tests_table(r, 0)) != std::string::npos);
  CHECK(second < text.find("\nengine "));

  RunResult plain = r;
  plain.collectives.clear();
  std::ostringstream without;
  print_summary(plain, without);
  CHECK(without.str().find("collective") == std::string::npos);
}

TEST_CASE("the JSON report lists the collectives' rows", "[collective_output]") {
  const RunResult r = collective_result();
  const nlohmann::json j = json_report(r);
  REQUIRE(j.contains("collectives"));
  REQUIRE(j["collectives"].size() == 3);
  const nlohmann::json& c = j["collectives"][1];
  CHECK(c["generator"] == 0);
  CHECK(c["op"] == "all_reduce");
  CHECK(c["algorithm"] == "ring");
  CHECK(c["protocol"] == "Simple");
  CHECK(c["size"] == 8589934592);
  CHECK(c["count"] == 2147483648);
  CHECK(c["type"] == "float");
  CHECK(c["redop"] == "sum");
  CHECK(c["root"] == -1);
  CHECK(c["ranks"] == 4);
  CHECK(c["channels"] == 2);
  CHECK(c["iterations"] == 20);
  CHECK(c["time_us"] == 31350.0);
  CHECK(c["algbw"] == 274.0);
  CHECK(c["busbw"] == 479.5);
  CHECK(c["start_ps"] == 20'000'000);
  CHECK(c["end_ps"] == 900'000'000);
  CHECK(c.size() == 17);
  CHECK(j["collectives"][2]["redop"] == "none");

  RunResult plain = r;
  plain.collectives.clear();
  nlohmann::json without = json_report(plain);
  CHECK_FALSE(without.contains("collectives"));
  nlohmann::json with = j;
  with.erase("collectives");
  // The only other place the rows show: the metrics by collective row.
  CHECK(with["metrics"]["collective_time_us_by_row"]["1"] == 31350.0);
  CHECK(with["metrics"]["collective_busbw_by_row"]["1"] == 479.5);
  CHECK(without["metrics"]["collective_time_us_by_row"].empty());
  for (nlohmann::json* report : {&with, &without}) {
    (*report)["metrics"].erase("collective_time_us_by_row");
    (*report)["metrics"].erase("collective_busbw_by_row");
  }
  CHECK(with == without);
}

TEST_CASE("the trace has a slice per row, step and transfer on the right tracks",
          "[collective_output]") {
  const RunResult r = collective_result();
  const fs::path file = temp_dir() / "trace.json";
  write_trace(r, file);
  const nlohmann::json trace = nlohmann::json::parse(std::ifstream(file));
  fs::remove(file);
  CHECK(trace["displayTimeUnit"] == "ns");
  const nlohmann::json& events = trace["traceEvents"];

  std::vector<nlohmann::json> slices;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, std::string> process_names;
  std::tuple<int, int, int> last{-1, -1, 0};
  for (const nlohmann::json& e : events) {
    const int pid = e["pid"], tid = e["tid"];
    const bool is_slice = e["ph"] == "X";
    // Sorted by pid and tid, each track's names before its slices.
    const std::tuple<int, int, int> key{pid, tid, is_slice ? 1 : 0};
    CHECK(last <= key);
    last = key;
    if (is_slice) {
      slices.push_back(e);
    } else if (e["name"] == "process_name") {
      process_names[pid] = e["args"]["name"];
    } else {
      thread_names[{pid, tid}] = e["args"]["name"];
    }
  }
  REQUIRE(slices.size() == 3 + 4 + 3);

  // pid 0: one slice per row, a thread per generator.
  CHECK(process_names[0] == "collectives");
  CHECK(thread_names[{0, 1}] == "traffic[0]");
  CHECK(slices[0]["name"] == "all_reduce 128 MiB ring");
  CHECK(slices[0]["ts"] == 1.0);
  CHECK(slices[0]["dur"] == 19.0);
  CHECK(slices[1]["name"] == "all_reduce 8 GiB ring");
  CHECK(slices[2]["name"] == "all_gather 1 MiB tree");
  CHECK(slices[2]["tid"] == 2);

  // A process per GPU (pid = GPU index + 1), a thread per (channel, lane).
  CHECK(process_names[1] == "rank 0 · node0/gpu0");
  CHECK(process_names[4] == "node1/gpu1");  // rank 3 of the all-reduce, rank 0 of the all-gather
  const nlohmann::json& first_step = slices[3];
  CHECK(first_step["pid"] == 1);
  CHECK(first_step["tid"] == 1);
  CHECK(first_step["name"] == "step 0 send 1");
  CHECK(first_step["ts"] == 1.0);
  CHECK(first_step["dur"] == 2.5);
  CHECK(first_step["args"]["bytes"] == kMiB);
  CHECK(first_step["args"]["row"] == 0);
  CHECK(first_step["args"]["iteration"] == 0);
  CHECK(first_step["args"]["op"] == "all_reduce");
  CHECK(slices[4]["pid"] == 2);
  CHECK(slices[4]["tid"] == 1);
  CHECK(slices[4]["name"] == "step 1 recv 0 → send 2");
  CHECK(slices[5]["pid"] == 2);
  CHECK(slices[5]["tid"] == 4);
  CHECK(thread_names[{2, 4}] == "channel 1 bcast");
  CHECK(thread_names[{2, 1}] == "channel 0");
  CHECK(slices[6]["pid"] == 4);  // the all-gather's rank 0 ran on GPU 3
  CHECK(slices[6]["name"] == "step 0 recv 1 → send 1");

  // Transfers: a process per channel, a thread per connection; overlapping messages on one
  // connection go to a second thread so that slices nest.
  CHECK(process_names[100000] == "channel 0 transfers");
  CHECK(thread_names[{100000, 1}] == "node0/gpu0 → node0/gpu1");
  CHECK(thread_names[{100000, 2}] == "node0/gpu1 → node1/gpu0");
  CHECK(thread_names[{100000, 3}] == "node0/gpu1 → node1/gpu0 #2");
  CHECK(slices[7]["name"] == "nvlink 1 MiB");
  CHECK(slices[7]["ts"] == 3.5);
  CHECK(slices[7]["dur"] == 0.5);
  CHECK(slices[7]["args"]["src"] == 0);
  CHECK(slices[7]["args"]["dst"] == 1);
  CHECK(slices[7]["args"]["bytes"] == kMiB);
  CHECK(slices[8]["name"] == "net 1 MiB");
  CHECK(slices[8]["tid"] == 2);
  CHECK(slices[9]["tid"] == 3);
  CHECK(slices[9]["ts"] == 7.0);
  CHECK(slices[9]["dur"] == 3.0);

  const nlohmann::json empty = trace_json(RunResult{});
  CHECK(empty["traceEvents"].empty());
}

TEST_CASE("HDF5 schema 4 stores the collectives under /collectives", "[collective_output]") {
  const fs::path dir = temp_dir();
  RunResult r = collective_result();
  write_hdf5(r, dir / "with.h5");
  r.collective_steps.clear();
  r.collective_transfers.clear();
  write_hdf5(r, dir / "no_timeline.h5");
  r.collectives.clear();
  write_hdf5(r, dir / "without.h5");

  const hid_t file = H5Fopen((dir / "with.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  int64_t schema = 0;
  const hid_t attr = H5Aopen(file, "schema_version", H5P_DEFAULT);
  H5Aread(attr, H5T_NATIVE_INT64, &schema);
  H5Aclose(attr);
  CHECK(schema == 4);

  const hid_t word = H5Tcopy(H5T_C_S1);
  H5Tset_size(word, 16);
  H5Tset_strpad(word, H5T_STR_NULLPAD);
  const hid_t name32 = H5Tcopy(H5T_C_S1);
  H5Tset_size(name32, 32);
  H5Tset_strpad(name32, H5T_STR_NULLPAD);

  struct Result {
    uint32_t generator;
    char op[16];
    char redop[16];
    int64_t size;
    int32_t root, ranks;
    double time_us, busbw;
    int64_t end_ps;
  };
  const hid_t result_type = H5Tcreate(H5T_COMPOUND, sizeof(Result));
  H5Tinsert(result_type, "generator", HOFFSET(Result, generator), H5T_NATIVE_UINT32);
  H5Tinsert(result_type, "op", HOFFSET(Result, op), word);
  H5Tinsert(result_type, "redop", HOFFSET(Result, redop), word);
  H5Tinsert(result_type, "size", HOFFSET(Result, size), H5T_NATIVE_INT64);
  H5Tinsert(result_type, "root", HOFFSET(Result, root), H5T_NATIVE_INT32);
  H5Tinsert(result_type, "ranks", HOFFSET(Result, ranks), H5T_NATIVE_INT32);
  H5Tinsert(result_type, "time_us", HOFFSET(Result, time_us), H5T_NATIVE_DOUBLE);
  H5Tinsert(result_type, "busbw", HOFFSET(Result, busbw), H5T_NATIVE_DOUBLE);
  H5Tinsert(result_type, "end_ps", HOFFSET(Result, end_ps), H5T_NATIVE_INT64);
  const auto results = read_table<Result>(file, "/collectives/results", result_type);
  REQUIRE(results.size() == 3);
  CHECK(std::string(results[1].op, strnlen(results[1].op, 16)) == "all_reduce");
  CHECK(std::string(results[2].redop, strnlen(results[2].redop, 16)) == "none");
  CHECK(results[1].generator == 0);
  CHECK(results[2].generator == 1);
  CHECK(results[1].size == 8589934592);
  CHECK(results[1].root == -1);
  CHECK(results[2].ranks == 2);
  CHECK(results[1].time_us == 31350.0);
  CHECK(results[1].busbw == 479.5);
  CHECK(results[1].end_ps == 900'000'000);

  struct RankGpu {
    uint32_t result_index, rank, gpu_index;
  };
  const hid_t rank_gpu_type = H5Tcreate(H5T_COMPOUND, sizeof(RankGpu));
  H5Tinsert(rank_gpu_type, "result_index", HOFFSET(RankGpu, result_index), H5T_NATIVE_UINT32);
  H5Tinsert(rank_gpu_type, "rank", HOFFSET(RankGpu, rank), H5T_NATIVE_UINT32);
  H5Tinsert(rank_gpu_type, "gpu_index", HOFFSET(RankGpu, gpu_index), H5T_NATIVE_UINT32);
  const auto rank_gpus = read_table<RankGpu>(file, "/collectives/rank_gpus", rank_gpu_type);
  REQUIRE(rank_gpus.size() == 10);
  CHECK(rank_gpus[8].result_index == 2);
  CHECK(rank_gpus[8].rank == 0);
  CHECK(rank_gpus[8].gpu_index == 3);

  struct Gpu {
    char name[32];
  };
  const hid_t gpu_type = H5Tcreate(H5T_COMPOUND, sizeof(Gpu));
  H5Tinsert(gpu_type, "name", HOFFSET(Gpu, name), name32);
  const auto gpus = read_table<Gpu>(file, "/collectives/gpus", gpu_type);
  REQUIRE(gpus.size() == 4);
  CHECK(std::string(gpus[3].name, strnlen(gpus[3].name, 32)) == "node1/gpu1");

  struct Step {
    uint32_t result_index, iteration, rank;
    uint16_t channel, lane;
    uint32_t step;
    int32_t recv_peer, send_peer;
    int64_t bytes, start_ps, end_ps;
  };
  const hid_t step_type = H5Tcreate(H5T_COMPOUND, sizeof(Step));
  H5Tinsert(step_type, "result_index", HOFFSET(Step, result_index), H5T_NATIVE_UINT32);
  H5Tinsert(step_type, "iteration", HOFFSET(Step, iteration), H5T_NATIVE_UINT32);
  H5Tinsert(step_type, "rank", HOFFSET(Step, rank), H5T_NATIVE_UINT32);
  H5Tinsert(step_type, "channel", HOFFSET(Step, channel), H5T_NATIVE_UINT16);
  H5Tinsert(step_type, "lane", HOFFSET(Step, lane), H5T_NATIVE_UINT16);
  H5Tinsert(step_type, "step", HOFFSET(Step, step), H5T_NATIVE_UINT32);
  H5Tinsert(step_type, "recv_peer", HOFFSET(Step, recv_peer), H5T_NATIVE_INT32);
  H5Tinsert(step_type, "send_peer", HOFFSET(Step, send_peer), H5T_NATIVE_INT32);
  H5Tinsert(step_type, "bytes", HOFFSET(Step, bytes), H5T_NATIVE_INT64);
  H5Tinsert(step_type, "start_ps", HOFFSET(Step, start_ps), H5T_NATIVE_INT64);
  H5Tinsert(step_type, "end_ps", HOFFSET(Step, end_ps), H5T_NATIVE_INT64);
  const auto steps = read_table<Step>(file, "/collectives/steps", step_type);
  REQUIRE(steps.size() == 4);
  CHECK(steps[2].result_index == 0);
  CHECK(steps[2].iteration == 21);
  CHECK(steps[2].rank == 1);
  CHECK(steps[2].channel == 1);
  CHECK(steps[2].lane == 1);
  CHECK(steps[2].recv_peer == 0);
  CHECK(steps[2].send_peer == -1);
  CHECK(steps[2].bytes == kMiB);
  CHECK(steps[2].start_ps == 7'000'000);
  CHECK(steps[2].end_ps == 8'000'000);
  CHECK(steps[3].result_index == 2);

  struct Transfer {
    uint8_t transport;
    uint32_t src_rank, dst_rank;
    int64_t posted_ps, arrived_ps;
  };
  const hid_t transfer_type = H5Tcreate(H5T_COMPOUND, sizeof(Transfer));
  H5Tinsert(transfer_type, "transport", HOFFSET(Transfer, transport), H5T_NATIVE_UINT8);
  H5Tinsert(transfer_type, "src_rank", HOFFSET(Transfer, src_rank), H5T_NATIVE_UINT32);
  H5Tinsert(transfer_type, "dst_rank", HOFFSET(Transfer, dst_rank), H5T_NATIVE_UINT32);
  H5Tinsert(transfer_type, "posted_ps", HOFFSET(Transfer, posted_ps), H5T_NATIVE_INT64);
  H5Tinsert(transfer_type, "arrived_ps", HOFFSET(Transfer, arrived_ps), H5T_NATIVE_INT64);
  const auto transfers = read_table<Transfer>(file, "/collectives/transfers", transfer_type);
  REQUIRE(transfers.size() == 3);
  CHECK(transfers[0].transport == 1);
  CHECK(transfers[1].transport == 2);
  CHECK(transfers[1].src_rank == 1);
  CHECK(transfers[1].dst_rank == 2);
  CHECK(transfers[2].posted_ps == 7'000'000);
  CHECK(transfers[2].arrived_ps == 10'000'000);
  H5Fclose(file);

  // Without steps and transfers the two tables are present and empty.
  const hid_t bare = H5Fopen((dir / "no_timeline.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(bare >= 0);
  CHECK(read_table<Result>(bare, "/collectives/results", result_type).size() == 3);
  CHECK(read_table<Step>(bare, "/collectives/steps", step_type).empty());
  CHECK(read_table<Transfer>(bare, "/collectives/transfers", transfer_type).empty());
  H5Fclose(bare);

  // Without collectives there is no group.
  const hid_t plain = H5Fopen((dir / "without.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(plain >= 0);
  CHECK(H5Lexists(plain, "collectives", H5P_DEFAULT) == 0);
  CHECK(H5Lexists(plain, "flows", H5P_DEFAULT) > 0);
  H5Fclose(plain);

  for (hid_t t : {word, name32, result_type, rank_gpu_type, gpu_type, step_type, transfer_type}) {
    H5Tclose(t);
  }
  fs::remove_all(dir);
}
