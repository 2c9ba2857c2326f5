// A thin RAII layer over the HDF5 C API: a file, scalar attributes, and tables of fixed-size
// rows written as compound datasets. Errors become std::runtime_error.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>
#include <vector>

namespace fabtwin {

// Describes one field of a row struct for a compound dataset.
struct Hdf5Field {
  const char* name;
  size_t offset;
  hid_t type;  // H5T_NATIVE_* or a string type from Hdf5File::fixed_string()
};

class Hdf5File {
 public:
  explicit Hdf5File(const std::string& path);  // creates (truncates) the file
  ~Hdf5File();
  Hdf5File(const Hdf5File&) = delete;
  Hdf5File& operator=(const Hdf5File&) = delete;

  void attribute(const std::string& name, const std::string& value);
  void attribute(const std::string& name, int64_t value);
  void attribute(const std::string& name, uint64_t value);
  void attribute(const std::string& name, double value);

  // Writes `rows` rows of `row_size` bytes each from `data` as dataset `name`.
  void table(const std::string& name, const void* data, size_t rows, size_t row_size,
             const std::vector<Hdf5Field>& fields);
  template <typename Row>
  void table(const std::string& name, const std::vector<Row>& rows,
             const std::vector<Hdf5Field>& fields) {
    table(name, rows.data(), rows.size(), sizeof(Row), fields);
  }

  // Creates group `name` (e.g. "collectives"), so that tables can be written as "name/table".
  void group(const std::string& name);

  // A NUL-padded fixed-length string type of `length` bytes (owned by this file object).
  hid_t fixed_string(size_t length);

  void close();

 private:
  hid_t file_ = -1;
  std::vector<hid_t> types_;
};

}  // namespace fabtwin
