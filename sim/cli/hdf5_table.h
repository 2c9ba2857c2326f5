// Writing a list of records as an HDF5 table: a compound dataset laid out like a C struct of the
// record's columns (sim/cli/record_columns.h), the way every fabtwin result file writes its tables.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "sim/cli/record_columns.h"
#include "sim/hdf5_file.h"
#include "sim/utf8_text.h"

namespace fabtwin {

inline size_t cell_size(CellType type, int text_length) {
  switch (type) {
    case CellType::UInt8:
      return 1;
    case CellType::UInt16:
      return 2;
    case CellType::Int32:
    case CellType::UInt32:
      return 4;
    case CellType::Int64:
    case CellType::UInt64:
    case CellType::Float64:
      return 8;
    case CellType::Text:
      return static_cast<size_t>(text_length);
  }
  return 0;
}

inline hid_t hdf5_type(Hdf5File& h5, CellType type, int text_length) {
  switch (type) {
    case CellType::Int32:
      return H5T_NATIVE_INT32;
    case CellType::Int64:
      return H5T_NATIVE_INT64;
    case CellType::UInt8:
      return H5T_NATIVE_UINT8;
    case CellType::UInt16:
      return H5T_NATIVE_UINT16;
    case CellType::UInt32:
      return H5T_NATIVE_UINT32;
    case CellType::UInt64:
      return H5T_NATIVE_UINT64;
    case CellType::Float64:
      return H5T_NATIVE_DOUBLE;
    case CellType::Text:
      return h5.fixed_string(static_cast<size_t>(text_length));
  }
  return -1;
}

template <class T>
void put(char* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

inline void write_cell(char* at, CellType type, int text_length, const Cell& c) {
  const auto integer = [&] {
    return std::holds_alternative<int64_t>(c)    ? std::get<int64_t>(c)
           : std::holds_alternative<uint64_t>(c) ? static_cast<int64_t>(std::get<uint64_t>(c))
                                                 : int64_t{std::get<bool>(c)};
  };
  switch (type) {
    case CellType::Int32:
      return put(at, static_cast<int32_t>(integer()));
    case CellType::Int64:
      return put(at, integer());
    case CellType::UInt8:
      return put(at, static_cast<uint8_t>(integer()));
    case CellType::UInt16:
      return put(at, static_cast<uint16_t>(integer()));
    case CellType::UInt32:
      return put(at, static_cast<uint32_t>(integer()));
    case CellType::UInt64:
      return put(at, static_cast<uint64_t>(integer()));
    case CellType::Float64:
      return put(at, std::get<double>(c));
    case CellType::Text: {
      const std::string text = valid_utf8(std::get<std::string>(c));
      const std::string_view s = utf8_prefix(text, static_cast<size_t>(text_length));
      std::memcpy(at, s.data(), s.size());
      return;
    }
  }
}

// Writes `rows` as a compound dataset laid out like a C struct of its columns.
template <class R>
void write_table(Hdf5File& h5, const std::string& name, const std::vector<R>& rows) {
  const std::vector<Column<R>> columns = columns_of<R>();
  std::vector<Hdf5Field> fields;
  std::vector<size_t> offsets;
  size_t size = 0, align = 1;
  for (const Column<R>& c : columns) {
    const size_t n = cell_size(c.type, c.text_length), a = c.type == CellType::Text ? 1 : n;
    size = (size + a - 1) / a * a;
    offsets.push_back(size);
    fields.push_back({c.name.c_str(), size, hdf5_type(h5, c.type, c.text_length)});
    size += n;
    align = std::max(align, a);
  }
  size = (size + align - 1) / align * align;
  std::vector<char> data(rows.size() * size, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t k = 0; k < columns.size(); ++k) {
      const Column<R>& c = columns[k];
      write_cell(data.data() + i * size + offsets[k], c.type, c.text_length, c.get(rows[i]));
    }
  }
  h5.table(name, data.data(), rows.size(), size, fields);
}

}  // namespace fabtwin
