// The rows of /collectives/rank_gpus and /collectives/gpus, written alike by a simulated run and
// by an nccl-tests import.
#pragma once

#include <cstdint>
#include <string>

#include "sim/record_field.h"

namespace fabtwin {

// /collectives/rank_gpus: which GPU each rank of each result ran on.
struct RankGpuRow {
  uint32_t result_index = 0;
  uint32_t rank = 0;
  uint32_t gpu_index = 0;
};

constexpr auto record_fields(std::type_identity<RankGpuRow>) {
  return std::tuple{
      field("result_index", &RankGpuRow::result_index, "", "Row of `/collectives/results`."),
      field("rank", &RankGpuRow::rank, "", "Rank in that collective's communicator."),
      field("gpu_index", &RankGpuRow::gpu_index, "", "Row of `/collectives/gpus`."),
  };
}

struct GpuRow {
  std::string name;
};

constexpr auto record_fields(std::type_identity<GpuRow>) {
  return std::tuple{
      text("name", &GpuRow::name, 32, "The GPU's name, its node and local index: `node3/gpu5`."),
  };
}

}  // namespace fabtwin
