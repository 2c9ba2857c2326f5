#include "sim/units.h"

#include <array>
#include <cstdio>
#include <utility>

namespace fabtwin {
namespace {

// A decimal number as mantissa × 10^-decimals, read without floating point.
struct Decimal {
  __int128 mantissa = 0;
  int decimals = 0;
};

struct UnitScale {
  std::string_view name;
  int64_t factor;  // base units per one of this unit
};

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

// Splits "12.5 Gbps" into a decimal number and the unit text; throws on anything else.
// Numbers in scenarios have at most 19 significant digits and 18 decimals: the mantissa (below
// 10^19) times a unit's factor (up to 10^12) and the divisor (up to 10^18) then fit the 128-bit
// arithmetic of scaled().
constexpr __int128 kMaxMantissa = static_cast<__int128>(1'000'000'000'000'000'000) * 10;

std::pair<Decimal, std::string_view> split_number(std::string_view text, const char* what) {
  Decimal d;
  size_t i = 0;
  bool digits = false, point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      if (d.mantissa >= kMaxMantissa / 10 || (point && d.decimals >= 18)) {
        throw UnitError("expected " + std::string(what) + ", found " + quoted(text) +
                        " (too many digits)");
      }
      d.mantissa = d.mantissa * 10 + (c - '0');
      if (point) ++d.decimals;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) {
    const bool negative = !text.empty() && text[0] == '-';
    throw UnitError("expected " + std::string(what) + ", found " + quoted(text) +
                    (negative ? " (negative values are not allowed)" : ""));
  }
  std::string_view unit = text.substr(i);
  if (!unit.empty() && unit[0] == ' ') unit.remove_prefix(1);
  return {d, unit};
}

int64_t scaled(std::string_view text, const char* what, std::string_view base,
               std::initializer_list<UnitScale> units) {
  auto [number, unit] = split_number(text, what);
  for (const UnitScale& u : units) {
    if (u.name != unit) continue;
    __int128 value = number.mantissa * u.factor;
    __int128 divisor = 1;
    for (int k = 0; k < number.decimals; ++k) divisor *= 10;
    if (value % divisor != 0) {
      throw UnitError("expected " + std::string(what) + ", found " + quoted(text) +
                      " (not a whole number of " + std::string(base) + ")");
    }
    value /= divisor;
    if (value > INT64_MAX) {
      throw UnitError("expected " + std::string(what) + ", found " + quoted(text) + " (too large)");
    }
    return static_cast<int64_t>(value);
  }
  std::string names;
  for (const UnitScale& u : units) names += (names.empty() ? "" : ", ") + std::string(u.name);
  throw UnitError("expected " + std::string(what) + " with a unit (" + names + "), found " +
                  quoted(text));
}

// Prints value in the largest unit not above it, e.g. 1500000 ps -> "1.5us" (12 significant
// digits, enough to be exact for the values a run produces).
std::string with_unit(int64_t value, std::initializer_list<UnitScale> units_large_first) {
  for (const UnitScale& u : units_large_first) {
    if (value >= u.factor) {
      char buf[64];
      const double v = static_cast<double>(value) / static_cast<double>(u.factor);
      std::snprintf(buf, sizeof buf, "%.12g%s", v, std::string(u.name).c_str());
      return buf;
    }
  }
  const UnitScale& base = *(units_large_first.end() - 1);
  return std::to_string(value) + std::string(base.name);
}

}  // namespace

Time parse_time(std::string_view text) {
  return {scaled(text, "a time like \"1.5us\"", "picoseconds",
                 {{"ps", 1},
                  {"ns", 1000},
                  {"us", 1000'000},
                  {"\xC2\xB5s", 1000'000},
                  {"ms", 1000'000'000},
                  {"s", 1000'000'000'000}})};
}

Bytes parse_bytes(std::string_view text) {
  return {scaled(text, "a size like \"64KiB\" or \"200KB\"", "bytes",
                 {{"B", 1},
                  {"KB", 1000},
                  {"MB", 1000'000},
                  {"GB", 1000'000'000},
                  {"KiB", 1024},
                  {"MiB", 1024 * 1024},
                  {"GiB", 1024LL * 1024 * 1024}})};
}

BitsPerSec parse_rate(std::string_view text) {
  const int64_t v = scaled(text, "a rate like \"100Gbps\"", "bits per second",
                           {{"bps", 1},
                            {"Kbps", 1000},
                            {"Mbps", 1000'000},
                            {"Gbps", 1000'000'000},
                            {"Tbps", 1000'000'000'000},
                            {"b/s", 1},
                            {"Kb/s", 1000},
                            {"Mb/s", 1000'000},
                            {"Gb/s", 1000'000'000},
                            {"Tb/s", 1000'000'000'000}});
  if (v == 0) throw UnitError("expected a positive rate, found " + quoted(text));
  return {v};
}

double parse_probability(std::string_view text) {
  auto [number, unit] = split_number(text, "a probability like \"0.2\"");
  if (!unit.empty()) {
    throw UnitError("expected a probability like \"0.2\" (no unit), found " + quoted(text));
  }
  double v = static_cast<double>(number.mantissa);
  for (int k = 0; k < number.decimals; ++k) v /= 10.0;
  if (v > 1.0) throw UnitError("expected a probability between 0 and 1, found " + quoted(text));
  return v;
}

std::string format_time(Time t) {
  if (t.ps < 0) {  // INT64_MIN has no positive counterpart: one ps less is printed
    std::string text = format_time({t.ps == INT64_MIN ? INT64_MAX : -t.ps});
    text.insert(text.begin(), '-');
    return text;
  }
  return with_unit(
      t.ps,
      {{"s", 1000'000'000'000}, {"ms", 1000'000'000}, {"us", 1000'000}, {"ns", 1000}, {"ps", 1}});
}

std::string format_bytes(Bytes b) {
  return with_unit(b.count, {{"GB", 1000'000'000}, {"MB", 1000'000}, {"KB", 1000}, {"B", 1}});
}

std::string format_rate(BitsPerSec r) {
  return with_unit(r.bps, {{"Tbps", 1000'000'000'000},
                           {"Gbps", 1000'000'000},
                           {"Mbps", 1000'000},
                           {"Kbps", 1000},
                           {"bps", 1}});
}

}  // namespace fabtwin
