// A sweep file (`NAME.sweep.json`): a base scenario, axes over any scenario path, a design that
// combines them into points, seeds, constraints, metrics and objectives; and its expansion into
// the points' scenario documents, each made with the same overrides as `--set`.
// The format is described in docs/sweeps.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/scenario_file.h"

namespace fabtwin::sweep {

// A sweep that cannot run as written: the sweep file's key (or the point and the scenario path)
// and what is wrong. The command exits with status 2.
class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An axis value split into its number and its unit as written ("20KB" -> 20, "KB"); a JSON
// number has no unit.
struct Quantity {
  double number = 0;
  std::string unit;
};
std::optional<Quantity> split_quantity(const nlohmann::json& value);
// The number with its unit, as a scenario value: a JSON number without a unit, else text.
nlohmann::json join_quantity(double number, const std::string& unit, bool integer);
// A value in base units for tables and comparisons: numbers as they are, times in ps, sizes in
// bytes, rates in b/s; nullopt for anything else. `dimension` says which ("", "time", ...).
std::optional<double> base_value(const nlohmann::json& value, std::string* dimension = nullptr);

struct Axis {
  enum class Kind { Values, Range, Tie };
  std::string path;
  Kind kind = Kind::Values;
  std::vector<nlohmann::json> values;  // Values, and a Range's steps (the grid's values)
  // Range: from/to as numbers in the unit both are written in; integer ends round every value.
  double from = 0, to = 0;
  std::string unit;
  bool integer = false;
  bool log = false;
  int steps = 0;  // 0: none given (random and Latin-hypercube designs only)
  // Tie: the value of the axis `tie_to` times `times`.
  std::string tie_to;
  size_t tie_axis = 0;
  double times = 1;
};

struct Constraint {
  struct Side {
    double factor = 1;
    std::string path;         // a scenario path, or empty for a literal
    nlohmann::json constant;  // a number or a quantity text
  };
  std::string text;
  Side left, right;
  std::string op;  // < <= > >= == !=
};

struct Objective {
  std::string metric;
  bool maximize = false;
};
Objective parse_objective(const std::string& text, const std::string& where);

struct SweepFile {
  std::filesystem::path file;      // the sweep file
  std::filesystem::path scenario;  // the base scenario, relative to the working directory
  std::string text;                // the sweep file's bytes (its hash keys the manifest)
  std::string description;
  std::vector<std::string> set;  // "path=json" overrides, in the file's order
  std::vector<Axis> axes;
  enum class Design { Grid, Random, LatinHypercube };
  Design design = Design::Grid;
  size_t points = 0;  // random, latin_hypercube
  uint64_t design_seed = 1;
  std::vector<uint64_t> seeds{1};
  std::vector<Constraint> constraints;
  std::vector<std::string> metrics;  // empty: every single-figure metric of the catalogue
  std::vector<Objective> objectives;
};

// Reads and checks a sweep file; throws SweepError naming the key.
SweepFile read_sweep_file(const std::filesystem::path& file);
SweepFile parse_sweep(const nlohmann::json& j, const std::filesystem::path& file);

struct Point {
  size_t index = 0;                    // 0-based, in the order of the expansion
  std::vector<nlohmann::json> values;  // one per axis
  nlohmann::json root;                 // the base scenario with the point's overrides
};

// The overrides of a point: its axis values as "path=json".
std::vector<std::string> point_overrides(const SweepFile& s, const std::vector<nlohmann::json>& v);

// The design's axis values for every point, before constraints (grid: the cross product, first
// axis slowest; random and latin_hypercube: `points` draws from the design's own seeded
// generator). Ties are filled in.
std::vector<std::vector<nlohmann::json>> design_values(const SweepFile& s);

// Every point: the base document (`base`, the scenario with `set` applied) with its axis values
// applied, the points that break a constraint left out (random designs draw again). Throws
// SweepError when an override cannot apply (naming the point and the path) or when every point
// breaks a constraint.
std::vector<Point> expand(const SweepFile& s, const nlohmann::json& base);

// Whether the point's document satisfies constraint `c`; throws SweepError when a path is
// missing or the two sides are not comparable.
bool satisfies(const Constraint& c, const nlohmann::json& root, size_t index);

// "path=value, path=value" of a point, for messages and tables.
std::string describe_point(const SweepFile& s, const std::vector<nlohmann::json>& values);

// 64-bit FNV-1a of `text`, finished with SplitMix64, as 16 hex digits: the key of a resolved
// scenario's text and of a sweep file's bytes.
std::string text_hash(const std::string& text);
// A run's key in the store: the hash of the fabtwin version that runs it and its scenario text,
// so that results of another version are never taken for this one's.
std::string run_key(const std::string& version, const nlohmann::json& scenario);

}  // namespace fabtwin::sweep
