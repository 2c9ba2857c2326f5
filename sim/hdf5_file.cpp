#include "sim/hdf5_file.h"

#include <algorithm>
#include <stdexcept>

#include "sim/utf8_text.h"

namespace fabtwin {
namespace {
void check(herr_t status, const std::string& what) {
  if (status < 0) throw std::runtime_error("HDF5: " + what + " failed");
}
hid_t checked(hid_t id, const std::string& what) {
  if (id < 0) throw std::runtime_error("HDF5: " + what + " failed");
  return id;
}
}  // namespace

Hdf5File::Hdf5File(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors are reported by exceptions instead
  file_ =
      checked(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "creating " + path);
}

Hdf5File::~Hdf5File() {
  try {
    close();
  } catch (...) {
  }
}

void Hdf5File::close() {
  for (hid_t t : types_) H5Tclose(t);
  types_.clear();
  if (file_ >= 0) {
    const herr_t status = H5Fclose(file_);
    file_ = -1;
    check(status, "closing the file");
  }
}

hid_t Hdf5File::fixed_string(size_t length) {
  const hid_t t = checked(H5Tcopy(H5T_C_S1), "string type");
  H5Tset_size(t, length);
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  types_.push_back(t);
  return t;
}

void Hdf5File::group(const std::string& name) {
  const hid_t g = checked(H5Gcreate2(file_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                          "group " + name);
  H5Gclose(g);
}

namespace {
template <typename Write>
void scalar_attribute(hid_t file, const std::string& name, hid_t type, Write write) {
  const hid_t space = checked(H5Screate(H5S_SCALAR), "attribute space");
  const hid_t attr = H5Acreate2(file, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Sclose(space);
  checked(attr, "attribute " + name);
  const herr_t status = write(attr);
  H5Aclose(attr);
  check(status, "writing attribute " + name);
}
}  // namespace

void Hdf5File::attribute(const std::string& name, const std::string& value) {
  const hid_t type = checked(H5Tcopy(H5T_C_S1), "string type");
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const std::string utf8 = valid_utf8(value);  // a file name or a log's text may be raw bytes
  const char* text = utf8.c_str();
  scalar_attribute(file_, name, type, [&](hid_t a) { return H5Awrite(a, type, &text); });
  H5Tclose(type);
}
void Hdf5File::attribute(const std::string& name, int64_t value) {
  scalar_attribute(file_, name, H5T_NATIVE_INT64,
                   [&](hid_t a) { return H5Awrite(a, H5T_NATIVE_INT64, &value); });
}
void Hdf5File::attribute(const std::string& name, uint64_t value) {
  scalar_attribute(file_, name, H5T_NATIVE_UINT64,
                   [&](hid_t a) { return H5Awrite(a, H5T_NATIVE_UINT64, &value); });
}
void Hdf5File::attribute(const std::string& name, double value) {
  scalar_attribute(file_, name, H5T_NATIVE_DOUBLE,
                   [&](hid_t a) { return H5Awrite(a, H5T_NATIVE_DOUBLE, &value); });
}

void Hdf5File::table(const std::string& name, const void* data, size_t rows, size_t row_size,
                     const std::vector<Hdf5Field>& fields) {
  const hid_t type = checked(H5Tcreate(H5T_COMPOUND, row_size), "compound type " + name);
  for (const Hdf5Field& f : fields) {
    check(H5Tinsert(type, f.name, f.offset, f.type), "field " + std::string(f.name));
  }
  const hsize_t dims[1] = {rows};
  const hid_t space = checked(H5Screate_simple(1, dims, nullptr), "dataspace " + name);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (rows > 0) {
    const hsize_t chunk[1] = {std::min<hsize_t>(rows, 65536)};
    H5Pset_chunk(dcpl, 1, chunk);
    H5Pset_deflate(dcpl, 4);
  }
  const hid_t set = H5Dcreate2(file_, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  herr_t status = set < 0 ? -1 : 0;
  if (set >= 0 && rows > 0) status = H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  if (set >= 0) H5Dclose(set);
  H5Sclose(space);
  H5Tclose(type);
  check(status, "writing dataset " + name);
}

}  // namespace fabtwin
