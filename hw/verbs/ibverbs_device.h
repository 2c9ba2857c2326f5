// The verbs interface over rdma-core's libibverbs: the real NIC path.
#pragma once

#include <memory>

#include "hw/verbs/verbs_api.h"

namespace fabtwin::hw {

// The devices ibv_get_device_list sees. Opening one when there are none throws
// VerbsError("no RDMA device found (ibv_get_device_list returned none): ...").
std::unique_ptr<VerbsProvider> make_ibverbs_provider();

}  // namespace fabtwin::hw
