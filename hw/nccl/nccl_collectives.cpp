#include "hw/nccl/nccl_collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace fabtwin::hw {

namespace {

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    throw NcclRunError(std::string(call) + " failed: " + std::to_string(static_cast<int>(e)) +
                       " (" + cudaGetErrorString(e) + ")");
  }
}

void nccl_check(ncclResult_t r, const char* call, ncclComm_t comm = nullptr) {
  if (r != ncclSuccess && r != ncclInProgress) {
    const char* last = ncclGetLastError(comm);
    throw NcclRunError(std::string(call) + " failed: " + ncclGetErrorString(r) +
                       (last != nullptr && *last != '\0' ? std::string(": ") + last : ""));
  }
}

ncclDataType_t nccl_type(const std::string& type, uint32_t generator) {
  static const std::map<std::string, ncclDataType_t> types = {
      {"int8", ncclInt8},       {"uint8", ncclUint8},      {"int32", ncclInt32},
      {"int", ncclInt32},       {"uint32", ncclUint32},    {"int64", ncclInt64},
      {"uint64", ncclUint64},   {"half", ncclFloat16},     {"float16", ncclFloat16},
      {"float", ncclFloat32},   {"float32", ncclFloat32},  {"double", ncclFloat64},
      {"float64", ncclFloat64}, {"bfloat16", ncclBfloat16}};
  const auto it = types.find(type);
  if (it == types.end()) {
    throw NcclRunError("traffic[" + std::to_string(generator) + "].type: NCCL has no type '" +
                       type + "'");
  }
  return it->second;
}

ncclRedOp_t nccl_redop(const std::string& redop, uint32_t generator) {
  static const std::map<std::string, ncclRedOp_t> ops = {
      {"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin}, {"avg", ncclAvg}};
  const auto it = ops.find(redop);
  if (it == ops.end()) {
    throw NcclRunError("traffic[" + std::to_string(generator) + "].redop: NCCL has no '" + redop +
                       "'");
  }
  return it->second;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::vector<unsigned char> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string text_of(const std::vector<unsigned char>& b) {
  return {b.begin(), b.end()};
}

// Every rank's outcome of a step: throws on every rank naming each rank that failed.
void agree(ControlGroup& group, const std::string& step, const std::string& error) {
  const auto all = group.allgather(bytes_of(error));
  std::string failed;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    if (!failed.empty()) failed += "; ";
    failed += "rank " + std::to_string(r) + ": " + text_of(all[r]);
  }
  if (!failed.empty()) throw NcclRunError(step + ": " + failed);
}

// Waits for the stream like nccl-tests does: polling, with NCCL's asynchronous errors and a
// deadline (the communicator is aborted on either).
void complete(cudaStream_t stream, ncclComm_t comm, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda_check(e, "cudaStreamQuery");
    ncclResult_t async = ncclSuccess;
    nccl_check(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError", comm);
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(comm);
      throw NcclRunError(std::string("NCCL asynchronous error: ") + ncclGetErrorString(async));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ncclCommAbort(comm);
      throw NcclRunError("a collective did not complete within " + std::to_string(timeout.count()) +
                         " s (communicator aborted)");
    }
    std::this_thread::yield();
  }
}

// One call of `spec`'s op on `size` bytes, as nccl-tests issues it.
void launch(const CollectiveSpec& spec, int64_t size, int rank, int ranks, void* send, void* recv,
            ncclComm_t comm, cudaStream_t stream) {
  const NcclCallCounts n = nccl_call_counts(spec.op, size, spec.type_bytes, ranks);
  const ncclDataType_t type = nccl_type(spec.type, spec.generator);
  const auto count = static_cast<size_t>(n.call_count);
  switch (spec.op) {
    case nccl::Op::AllReduce:
      return nccl_check(ncclAllReduce(send, recv, count, type,
                                      nccl_redop(spec.redop, spec.generator), comm, stream),
                        "ncclAllReduce", comm);
    case nccl::Op::AllGather:
      return nccl_check(ncclAllGather(send, recv, count, type, comm, stream), "ncclAllGather",
                        comm);
    case nccl::Op::ReduceScatter:
      return nccl_check(ncclReduceScatter(send, recv, count, type,
                                          nccl_redop(spec.redop, spec.generator), comm, stream),
                        "ncclReduceScatter", comm);
    case nccl::Op::Broadcast:
      return nccl_check(ncclBroadcast(send, recv, count, type, spec.root, comm, stream),
                        "ncclBroadcast", comm);
    case nccl::Op::Reduce:
      return nccl_check(ncclReduce(send, recv, count, type, nccl_redop(spec.redop, spec.generator),
                                   spec.root, comm, stream),
                        "ncclReduce", comm);
    case nccl::Op::AllToAll: {
      const size_t chunk = count * static_cast<size_t>(spec.type_bytes);
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      for (int peer = 0; peer < ranks; ++peer) {
        nccl_check(
            ncclSend(static_cast<char*>(send) + peer * chunk, count, type, peer, comm, stream),
            "ncclSend", comm);
        nccl_check(
            ncclRecv(static_cast<char*>(recv) + peer * chunk, count, type, peer, comm, stream),
            "ncclRecv", comm);
      }
      return nccl_check(ncclGroupEnd(), "ncclGroupEnd", comm);
    }
    case nccl::Op::SendRecv: {
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      nccl_check(ncclSend(send, count, type, (rank + 1) % ranks, comm, stream), "ncclSend", comm);
      nccl_check(ncclRecv(recv, count, type, (rank + ranks - 1) % ranks, comm, stream), "ncclRecv",
                 comm);
      return nccl_check(ncclGroupEnd(), "ncclGroupEnd", comm);
    }
  }
}

std::string version_text(int code) {
  // 2.9 and later: major*10000 + minor*100 + patch; earlier: major*1000 + minor*100 + patch.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace

int require_cuda_devices() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) {
    throw NcclRunError("no CUDA device: cudaGetDeviceCount returned " +
                       std::to_string(static_cast<int>(e)) + " (" + cudaGetErrorString(e) + ")");
  }
  if (devices == 0) throw NcclRunError("no CUDA device: cudaGetDeviceCount returned 0 devices");
  return devices;
}

CollectiveMeasurement run_nccl_collectives(const FabricSpec& spec, ControlGroup& group,
                                           const NcclRunSettings& settings) {
  const CollectiveSetup& setup = spec.collectives;
  if (setup.empty()) {
    throw NcclRunError("the scenario has no `collective` traffic generator to run through NCCL");
  }
  const int rank = group.rank(), ranks = group.ranks();
  // Every rank finds its device (or says why not) before any NCCL call: a rank without a GPU
  // stops the whole job with its reason instead of leaving the others waiting.
  std::string error;
  int device = settings.device;
  const std::string host = host_name();
  const auto hosts = group.allgather(bytes_of(host));
  try {
    const int devices = require_cuda_devices();
    if (device < 0) {
      device = 0;
      for (int r = 0; r < rank; ++r) device += text_of(hosts[static_cast<size_t>(r)]) == host;
    }
    if (device >= devices) {
      throw NcclRunError("CUDA device " + std::to_string(device) + " wanted on " + host +
                         ", which has " + std::to_string(devices));
    }
    for (const CollectiveSpec& c : setup.specs) {
      if (static_cast<int>(c.gpus.size()) != ranks) {
        throw NcclRunError("traffic[" + std::to_string(c.generator) + "] has " +
                           std::to_string(c.gpus.size()) + " ranks; the job has " +
                           std::to_string(ranks) + " processes (one per GPU rank expected)");
      }
    }
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
  } catch (const std::exception& e) {
    error = e.what();
  }
  agree(group, "NCCL collectives cannot start", error);

  // NCCL reads its debug settings at its first call: the file is named before it.
  const std::filesystem::path dir =
      settings.debug_dir.empty() ? std::filesystem::temp_directory_path() : settings.debug_dir;
  const std::filesystem::path debug_file =
      dir / ("fabtwin-nccl-" + host + "-" + std::to_string(::getpid()) + ".log");
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", settings.debug_subsys.c_str(), 1);
  setenv("NCCL_DEBUG_FILE", debug_file.c_str(), 1);

  CollectiveMeasurement m;
  int version = 0;
  nccl_check(ncclGetVersion(&version), "ncclGetVersion");
  m.nccl_version = version_text(version);

  std::vector<double> my_time_us(setup.ops.size(), 0);
  for (size_t s = 0; s < setup.specs.size(); ++s) {
    const CollectiveSpec& c = setup.specs[s];
    if (c.algorithm == "ring" || c.algorithm == "tree") {
      setenv("NCCL_ALGO", c.algorithm == "ring" ? "Ring" : "Tree", 1);
    } else {
      unsetenv("NCCL_ALGO");
    }
    ncclUniqueId id{};
    std::vector<unsigned char> id_bytes(sizeof id);
    if (rank == 0) {
      nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      std::memcpy(id_bytes.data(), &id, sizeof id);
    }
    id_bytes = group.broadcast(id_bytes, 0);
    if (id_bytes.size() != sizeof id) {
      throw NcclRunError("the NCCL unique id from rank 0 has " + std::to_string(id_bytes.size()) +
                         " bytes, expected " + std::to_string(sizeof id));
    }
    std::memcpy(&id, id_bytes.data(), sizeof id);
    ncclComm_t comm = nullptr;
    nccl_check(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");

    int64_t largest = 0;
    for (const uint32_t op : setup.spec_ops[s]) largest = std::max(largest, setup.ops[op].size);
    const NcclCallCounts most = nccl_call_counts(c.op, largest, c.type_bytes, ranks);
    void* send = nullptr;
    void* recv = nullptr;
    cudaStream_t stream = nullptr;
    cuda_check(cudaMalloc(&send, std::max<size_t>(1, most.send_count * c.type_bytes)),
               "cudaMalloc");
    cuda_check(cudaMalloc(&recv, std::max<size_t>(1, most.recv_count * c.type_bytes)),
               "cudaMalloc");
    cuda_check(cudaMemset(send, 0, std::max<size_t>(1, most.send_count * c.type_bytes)),
               "cudaMemset");
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    try {
      for (const uint32_t op : setup.spec_ops[s]) {
        const int64_t size = setup.ops[op].size;
        for (int i = 0; i < std::max(1, c.warmup); ++i)
          launch(c, size, rank, ranks, send, recv, comm, stream);
        complete(stream, comm, settings.timeout);
        group.barrier();
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < c.iterations; ++i)
          launch(c, size, rank, ranks, send, recv, comm, stream);
        complete(stream, comm, settings.timeout);
        const auto end = std::chrono::steady_clock::now();
        my_time_us[op] = std::chrono::duration<double, std::micro>(end - start).count() /
                         std::max(1, c.iterations);
      }
    } catch (...) {
      cudaStreamDestroy(stream);
      cudaFree(send);
      cudaFree(recv);
      throw;
    }
    cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    cuda_check(cudaFree(send), "cudaFree");
    cuda_check(cudaFree(recv), "cudaFree");
    nccl_check(ncclCommDestroy(comm), "ncclCommDestroy");
  }

  const nlohmann::json mine = {{"host", host}, {"device", device}, {"time_us", my_time_us}};
  const auto all = group.gather(bytes_of(mine.dump()));
  if (rank != 0) {
    for (size_t op = 0; op < my_time_us.size(); ++op) {
      m.rank_times.push_back(
          {static_cast<uint32_t>(op), static_cast<uint32_t>(rank), my_time_us[op]});
    }
    return m;
  }
  std::vector<std::vector<double>> times(setup.ops.size());
  for (size_t r = 0; r < all.size(); ++r) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text_of(all[r]));
      const auto t = j.at("time_us").get<std::vector<double>>();
      if (t.size() != setup.ops.size()) throw NcclRunError("time_us: wrong length");
      for (size_t op = 0; op < t.size(); ++op) {
        times[op].push_back(t[op]);
        m.rank_times.push_back({static_cast<uint32_t>(op), static_cast<uint32_t>(r), t[op]});
      }
      m.gpus.push_back(
          {j.at("host").get<std::string>() + "/gpu" + std::to_string(j.at("device").get<int>())});
    } catch (const std::exception& e) {
      throw NcclRunError("rank " + std::to_string(r) +
                         "'s collective times: expected {host, device, time_us[" +
                         std::to_string(setup.ops.size()) + "]}, " + e.what());
    }
  }

  std::ifstream in(debug_file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const NcclDebugCapture capture = read_nccl_debug_text(text.str());
  if (settings.debug_dir.empty()) std::filesystem::remove(debug_file);
  m.nccl_info = capture.log.info;
  m.network = capture.log.network;
  for (size_t op = 0; op < setup.ops.size(); ++op) {
    const CollectiveSpec& c = setup.specs[setup.ops[op].spec];
    CollectiveRow row = nccl_result_row(c, setup.ops[op].size, times[op], capture.choices);
    if (row.channels == 0 && capture.log.channels > 0)
      row.channels = static_cast<int>(capture.log.channels);
    m.rows.push_back(row);
    for (int r = 0; r < ranks; ++r) {
      m.rank_gpus.push_back(
          {static_cast<uint32_t>(op), static_cast<uint32_t>(r), static_cast<uint32_t>(r)});
    }
  }
  return m;
}

}  // namespace fabtwin::hw
