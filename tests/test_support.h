// Lets Catch print fabtwin quantities in failure messages.
#pragma once

#include <catch2/catch.hpp>

#include "sim/units.h"

namespace Catch {
template <>
struct StringMaker<fabtwin::Time> {
  static std::string convert(fabtwin::Time t) { return std::to_string(t.ps) + " ps"; }
};
}  // namespace Catch
