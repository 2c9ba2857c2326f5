// Integer quantities of the simulation: time in picoseconds, sizes in bytes, rates in bits/s.
#pragma once

#include <compare>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fabtwin {

// Simulated time, in picoseconds (int64 covers about 106 days).
struct Time {
  int64_t ps = 0;

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return {ps + o.ps}; }
  constexpr Time operator-(Time o) const { return {ps - o.ps}; }
  constexpr Time& operator+=(Time o) {
    ps += o.ps;
    return *this;
  }
  constexpr Time operator*(int64_t k) const { return {ps * k}; }
  static constexpr Time max() { return {INT64_MAX}; }
  double seconds() const { return static_cast<double>(ps) * 1e-12; }
};

constexpr Time picoseconds(int64_t v) {
  return {v};
}
constexpr Time nanoseconds(int64_t v) {
  return {v * 1000};
}
constexpr Time microseconds(int64_t v) {
  return {v * 1000 * 1000};
}
constexpr Time milliseconds(int64_t v) {
  return {v * 1000 * 1000 * 1000};
}

// A size in bytes.
struct Bytes {
  int64_t count = 0;

  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return {count + o.count}; }
  constexpr Bytes operator-(Bytes o) const { return {count - o.count}; }
  constexpr Bytes& operator+=(Bytes o) {
    count += o.count;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    count -= o.count;
    return *this;
  }
};

// A line or pacing rate, in bits per second.
struct BitsPerSec {
  int64_t bps = 0;

  constexpr auto operator<=>(const BitsPerSec&) const = default;
};

// Time to put `size` bytes on a wire of `rate`, rounded up to a whole picosecond.
// Exact integer arithmetic: 4096 B at 100 Gb/s is 327,680 ps.
constexpr Time serialization_delay(Bytes size, BitsPerSec rate) {
  const __int128 num = static_cast<__int128>(size.count) * 8 * 1'000'000'000'000LL;
  return {static_cast<int64_t>((num + rate.bps - 1) / rate.bps)};
}

// Whole bytes a wire of `rate` carries in `t` (rounded down).
constexpr Bytes bytes_in(Time t, BitsPerSec rate) {
  const __int128 num = static_cast<__int128>(t.ps) * rate.bps;
  return {static_cast<int64_t>(num / (8 * static_cast<__int128>(1'000'000'000'000LL)))};
}

// Raised by the parsers below; the message says what was expected and what was found.
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Strict parsers for quantities written as text in scenario files. A number (digits with at
// most one decimal point, no sign, no exponent), optional single space, then a unit:
//   time: ps ns us µs ms s      sizes: B KB MB GB (powers of 1000) KiB MiB GiB (powers of 1024)
//   rate: bps Kbps Mbps Gbps Tbps (also Gb/s style)
// The value must be a whole number of the base unit (1.5ps is refused).
Time parse_time(std::string_view text);
Bytes parse_bytes(std::string_view text);
BitsPerSec parse_rate(std::string_view text);
// A probability or fraction in [0, 1], written as a plain decimal ("0.2").
double parse_probability(std::string_view text);

// Shortest exact text for a quantity, in the largest unit that keeps it a whole or short decimal.
std::string format_time(Time t);
std::string format_bytes(Bytes b);
std::string format_rate(BitsPerSec r);

}  // namespace fabtwin
