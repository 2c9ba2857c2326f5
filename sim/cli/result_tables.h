// Reading the keyed tables of a result file (a simulated run, an imported log or a hardware
// measurement: the same HDF5 schema): which columns key a row and which are its metrics, and
// the rows by key. `fabtwin compare` and `fabtwin calibrate` match two files' rows this way.
#pragma once

#include <hdf5.h>

#include <map>
#include <string>
#include <vector>

namespace fabtwin {

// A table with keyed metrics: which columns make a row's key, which are compared.
struct TableSpec {
  const char* table;
  std::vector<const char*> keys;     // text or integer columns
  std::vector<const char*> metrics;  // numeric columns
};

// The tables `fabtwin compare` compares, with their keys and metrics.
const std::vector<TableSpec>& table_specs();

// A read-only result file: its attributes and the columns of its compound tables. Throws
// std::runtime_error naming the file when it is not a fabtwin result file or cannot be read.
class ResultFile {
 public:
  explicit ResultFile(const std::string& path);
  ~ResultFile();
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;

  std::string text_attribute(const char* name) const;  // "" when absent or not text
  bool has_table(const std::string& name) const;
  size_t rows(const std::string& table) const;
  bool has_column(const std::string& table, const char* column) const;
  // A column as text: strings as stored (NULs cut), numbers in decimal.
  std::vector<std::string> text_column(const std::string& table, const char* column) const;
  std::vector<double> number_column(const std::string& table, const char* column) const;

 private:
  // An open table: a one-dimensional dataset of compound records, small enough to read into
  // this machine's memory; anything else at `name` fails, naming what was found.
  struct Table {
    Table(const ResultFile& file, const std::string& name);
    ~Table();
    Table(const Table&) = delete;
    Table& operator=(const Table&) = delete;
    hid_t dataset = -1, type = -1;
    size_t rows = 0;

   private:
    void close();
  };
  void check_schema_version() const;
  std::vector<double> read_numbers(const Table& t, const std::string& table,
                                   const char* column) const;
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  hid_t file_ = -1;
};

// A table's rows by key ("all_reduce float 1048576": the key columns joined by spaces): each
// key's metric values, NaN for a metric column the file lacks (the first row of a repeated key).
struct KeyedRows {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> values;
};
KeyedRows keyed_rows(const ResultFile& f, const TableSpec& spec);

}  // namespace fabtwin
