// `fabtwin describe`: the parameter reference, as text, as Markdown (docs/model-reference.md)
// or as a JSON Schema for editors (scenarios/fabtwin.schema.json), all from the declarations;
// and the HDF5 tables' fields (docs/hdf5-schema.md) from the records' field tables.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/params.h"

namespace fabtwin {

void describe_text(const std::vector<const ParamGroup*>& groups, std::ostream& out);
void describe_markdown(const std::vector<const ParamGroup*>& groups, std::ostream& out);
nlohmann::json scenario_json_schema(const std::vector<const ParamGroup*>& groups);

int command_describe(const std::vector<std::string>& args);

}  // namespace fabtwin
