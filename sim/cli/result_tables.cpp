#include "sim/cli/result_tables.h"

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "models/fabric/memory_estimate.h"
#include "sim/cli/report.h"

namespace fabtwin {

const std::vector<TableSpec>& table_specs() {
  static const std::vector<TableSpec> specs{
      {"collectives/results", {"op", "type", "size"}, {"time_us", "algbw", "busbw"}},
      {"flows", {"id", "src", "dst", "size_bytes"}, {"fct_ps", "goodput_bps"}},
      {"perftest/bandwidth",
       {"test", "sl", "bytes"},
       {"bw_average_bps", "bw_peak_bps", "msg_rate_mpps"}},
      {"perftest/latency",
       {"test", "bytes"},
       {"t_typical_ps", "t_avg_ps", "t_min_ps", "t_max_ps", "t_p99_ps", "t_p999_ps"}},
  };
  return specs;
}

ResultFile::ResultFile(const std::string& path) : path_(path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(path.c_str()) <= 0) fail("is not an HDF5 file");
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) fail("cannot be opened");
  try {
    check_schema_version();
  } catch (...) {
    H5Fclose(file_);  // the destructor does not run for an object whose constructor throws
    throw;
  }
}

// The tables read here keep their columns' names and meanings from version 1 on; a newer layout
// may not, and is refused rather than misread (docs/hdf5-schema.md, "Versioning").
void ResultFile::check_schema_version() const {
  if (H5Aexists(file_, "schema_version") <= 0)
    fail("has no schema_version: not a fabtwin result file");
  int64_t version = 0;
  const hid_t a = H5Aopen(file_, "schema_version", H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  const bool integer =
      H5Tget_class(type) == H5T_INTEGER && H5Aread(a, H5T_NATIVE_INT64, &version) >= 0;
  H5Tclose(type);
  H5Aclose(a);
  if (!integer) fail("has a schema_version that is not an integer: not a fabtwin result file");
  if (version < 1 || version > kHdf5SchemaVersion) {
    fail("has schema_version " + std::to_string(version) + "; this fabtwin reads versions 1 to " +
         std::to_string(kHdf5SchemaVersion) + " (a newer file needs the fabtwin that wrote it)");
  }
}

ResultFile::~ResultFile() {
  if (file_ >= 0) H5Fclose(file_);
}

std::string ResultFile::text_attribute(const char* name) const {
  if (H5Aexists(file_, name) <= 0) return "";
  const hid_t a = H5Aopen(file_, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  std::string value;
  if (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0) {
    char* s = nullptr;
    const hid_t mem = H5Tcopy(H5T_C_S1);
    H5Tset_size(mem, H5T_VARIABLE);
    H5Tset_cset(mem, H5Tget_cset(type));
    if (H5Aread(a, mem, &s) >= 0 && s != nullptr) value = s;
    if (s != nullptr) H5free_memory(s);
    H5Tclose(mem);
  }
  H5Tclose(type);
  H5Aclose(a);
  return value;
}

bool ResultFile::has_table(const std::string& name) const {
  size_t from = 0;
  while (true) {
    const size_t slash = name.find('/', from);
    const std::string prefix = name.substr(0, slash);
    if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    from = slash + 1;
  }
}

namespace {

// Bytes that reading one row of a table holds besides the record itself: its key as text and
// in the map of keyed rows, its metrics as numbers.
constexpr int64_t kReadBytesPerRow = 256;

std::string object_kind(hid_t file, const std::string& name) {
  H5O_info_t info;
  if (H5Oget_info_by_name(file, name.c_str(), &info, H5P_DEFAULT) < 0) return "an object";
  return info.type == H5O_TYPE_GROUP ? "a group" : "a named datatype";
}

}  // namespace

ResultFile::Table::Table(const ResultFile& file, const std::string& name) {
  const auto refuse = [&](const std::string& found) {
    close();
    file.fail("has /" + name + " but not as a table of records: expected a one-dimensional " +
              "dataset of compound records, found " + found);
  };
  dataset = H5Dopen2(file.file_, name.c_str(), H5P_DEFAULT);
  if (dataset < 0) refuse(object_kind(file.file_, name));
  type = H5Dget_type(dataset);
  const hid_t space = H5Dget_space(dataset);
  const int dimensions = H5Sget_simple_extent_ndims(space);
  hsize_t n = 0;
  if (dimensions == 1) H5Sget_simple_extent_dims(space, &n, nullptr);
  H5Sclose(space);
  if (dimensions != 1) refuse("a dataset of " + std::to_string(dimensions) + " dimensions");
  if (H5Tget_class(type) != H5T_COMPOUND) refuse("a dataset of values that are not records");
  const int64_t record = static_cast<int64_t>(H5Tget_size(type));
  const int64_t memory = machine_memory_bytes();
  if (memory > 0 && n > static_cast<hsize_t>(memory / (record + kReadBytesPerRow))) {
    close();
    file.fail("has /" + name + " of " +
              with_commas(static_cast<int64_t>(std::min<hsize_t>(n, INT64_MAX))) + " rows of " +
              std::to_string(record) + " bytes, more than this machine's " + gigabytes(memory) +
              " of memory can read");
  }
  rows = static_cast<size_t>(n);
}

ResultFile::Table::~Table() {
  close();
}

void ResultFile::Table::close() {
  if (type >= 0) H5Tclose(type);
  if (dataset >= 0) H5Dclose(dataset);
  type = dataset = -1;
}

size_t ResultFile::rows(const std::string& table) const {
  return Table(*this, table).rows;
}

bool ResultFile::has_column(const std::string& table, const char* column) const {
  return H5Tget_member_index(Table(*this, table).type, column) >= 0;
}

std::vector<std::string> ResultFile::text_column(const std::string& table,
                                                 const char* column) const {
  const Table t(*this, table);
  const int index = H5Tget_member_index(t.type, column);
  if (index < 0) fail("has no column " + std::string(column) + " in /" + table);
  const hid_t member = H5Tget_member_type(t.type, static_cast<unsigned>(index));
  std::vector<std::string> out(t.rows);
  if (H5Tget_class(member) == H5T_STRING) {
    const size_t width = H5Tget_size(member);
    const hid_t mem = H5Tcreate(H5T_COMPOUND, width);
    const hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, width);
    H5Tset_strpad(str, H5T_STR_NULLPAD);
    H5Tinsert(mem, column, 0, str);
    std::vector<char> data(t.rows * width);
    const bool read =
        t.rows == 0 || H5Dread(t.dataset, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0;
    H5Tclose(str);
    H5Tclose(mem);
    H5Tclose(member);
    if (!read) fail("cannot read /" + table);
    for (size_t i = 0; i < t.rows; ++i) {
      const char* s = data.data() + i * width;
      out[i] = std::string(s, strnlen(s, width));
    }
  } else {
    H5Tclose(member);
    const std::vector<double> numbers = read_numbers(t, table, column);
    for (size_t i = 0; i < t.rows; ++i) {
      std::ostringstream text;
      text << std::setprecision(17) << numbers[i];
      out[i] = text.str();
    }
  }
  return out;
}

std::vector<double> ResultFile::number_column(const std::string& table, const char* column) const {
  return read_numbers(Table(*this, table), table, column);
}

std::vector<double> ResultFile::read_numbers(const Table& t, const std::string& table,
                                             const char* column) const {
  const hid_t mem = H5Tcreate(H5T_COMPOUND, sizeof(double));
  H5Tinsert(mem, column, 0, H5T_NATIVE_DOUBLE);
  std::vector<double> out(t.rows);
  const bool read =
      t.rows == 0 || H5Dread(t.dataset, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0;
  H5Tclose(mem);
  if (!read)
    fail("cannot read the column " + std::string(column) + " of /" + table + " as numbers");
  return out;
}

void ResultFile::fail(const std::string& what) const {
  throw std::runtime_error("'" + path_ + "' " + what);
}

KeyedRows keyed_rows(const ResultFile& f, const TableSpec& spec) {
  KeyedRows out;
  if (!f.has_table(spec.table)) return out;
  std::vector<std::vector<std::string>> keys;
  for (const char* k : spec.keys) keys.push_back(f.text_column(spec.table, k));
  std::vector<std::vector<double>> metrics;
  for (const char* m : spec.metrics) {
    metrics.push_back(
        f.has_column(spec.table, m)
            ? f.number_column(spec.table, m)
            : std::vector<double>(f.rows(spec.table), std::numeric_limits<double>::quiet_NaN()));
  }
  for (size_t i = 0; i < f.rows(spec.table); ++i) {
    std::string key;
    for (const auto& column : keys) key += (key.empty() ? "" : " ") + column[i];
    if (out.values.count(key)) continue;
    std::vector<double> v;
    for (const auto& column : metrics) v.push_back(column[i]);
    out.order.push_back(key);
    out.values[key] = v;
  }
  return out;
}

}  // namespace fabtwin
