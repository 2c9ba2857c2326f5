// A record's field table as the flat columns of an output table: the HDF5 datasets, the
// --json report's records and the tables of docs/hdf5-schema.md. A member that is a record
// shows its fields in its place; an array of records shows each field over the elements,
// combined by the field's Merge rule (a port's counters summed, or the largest, over its
// priorities).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "sim/record_field.h"
#include "sim/units.h"

namespace fabtwin {

enum class CellType { Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float64, Text };

using Cell = std::variant<int64_t, uint64_t, double, bool, std::string>;

template <class R>
struct Column {
  std::string name;
  CellType type;
  int text_length;  // Text: the HDF5 field's fixed length
  std::string unit;
  std::string meaning;
  std::function<Cell(const R&)> get;
};

template <class T>
constexpr CellType cell_type() {
  if constexpr (std::is_same_v<T, Time> || std::is_same_v<T, Bytes> ||
                std::is_same_v<T, BitsPerSec>) {
    return CellType::Int64;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return CellType::Text;
  } else if constexpr (std::is_same_v<T, double>) {
    return CellType::Float64;
  } else if constexpr (std::is_enum_v<T>) {
    return cell_type<std::underlying_type_t<T>>();
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>) {
    return CellType::UInt8;
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    return CellType::UInt16;
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return CellType::UInt32;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return CellType::UInt64;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return CellType::Int32;
  } else {
    static_assert(std::is_same_v<T, int64_t>, "no column type for this field type");
    return CellType::Int64;
  }
}

template <class T>
Cell cell(const T& v) {
  if constexpr (std::is_same_v<T, Time>) {
    return v.ps;
  } else if constexpr (std::is_same_v<T, Bytes>) {
    return v.count;
  } else if constexpr (std::is_same_v<T, BitsPerSec>) {
    return v.bps;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<uint64_t>(v);
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                       std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<int64_t>(v);
  } else {
    return static_cast<uint64_t>(v);
  }
}

inline std::string cell_type_text(CellType type, int text_length) {
  switch (type) {
    case CellType::Int32:
      return "int32";
    case CellType::Int64:
      return "int64";
    case CellType::UInt8:
      return "uint8";
    case CellType::UInt16:
      return "uint16";
    case CellType::UInt32:
      return "uint32";
    case CellType::UInt64:
      return "uint64";
    case CellType::Float64:
      return "float64";
    case CellType::Text:
      return "string[" + std::to_string(text_length) + "]";
  }
  return "";
}

// Appends the columns of record type R, reached from an output row by `access` (a function of
// `const Row&` returning an R or a reference to one). `over`: for the fields of an array's
// elements, what they are combined over (added to the meaning).
template <class Row, class R, class Access>
void append_columns(std::vector<Column<Row>>& out, Access access, const std::string& over = "") {
  for_each_field<R>([&](const auto& f) {
    using T = entry_value_t<decltype(f)>;
    if constexpr (!is_stored<decltype(f)>) {
      out.push_back({f.name, cell_type<T>(), f.text_length, f.unit, f.meaning,
                     [access, get = f.get](const Row& row) { return cell(get(access(row))); }});
    } else if constexpr (Record<T>) {
      append_columns<Row, T>(
          out, [access, m = f.member](const Row& row) -> T { return access(row).*m; }, over);
    } else if constexpr (is_record_array<T>::value) {
      using Element = typename T::value_type;
      append_columns<Row, Element>(
          out,
          [access, m = f.member](const Row& row) {
            const T& elements = access(row).*m;
            Element total = elements[0];
            for (size_t i = 1; i < elements.size(); ++i) merge_record(total, elements[i]);
            return total;
          },
          f.meaning);
    } else {
      std::string meaning = f.meaning;
      if (!over.empty()) {
        meaning +=
            f.merge == Merge::Max ? " Largest over " + over + "." : " Sum over " + over + ".";
      }
      out.push_back({f.name, cell_type<T>(), f.text_length, f.unit, meaning,
                     [access, m = f.member, present = f.present](const Row& row) -> Cell {
                       const auto& record = access(row);
                       if (present != nullptr && !(record.*present)) return int64_t{-1};
                       return cell(record.*m);
                     }});
    }
  });
}

template <class R>
std::vector<Column<R>> columns_of() {
  std::vector<Column<R>> columns;
  append_columns<R, R>(columns, [](const R& r) -> const R& { return r; });
  return columns;
}

inline nlohmann::json cell_json(const Cell& c) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, c);
}

// One record as a JSON object keyed by column name.
template <class R>
nlohmann::json record_json(const std::vector<Column<R>>& columns, const R& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const Column<R>& c : columns) j[c.name] = cell_json(c.get(r));
  return j;
}

}  // namespace fabtwin
