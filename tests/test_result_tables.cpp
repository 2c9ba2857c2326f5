// Reading result files that `fabtwin compare` and `fabtwin calibrate` are given: a table is read
// only when it is a one-dimensional dataset of records small enough for this machine; anything
// else at a table's name is refused with a sentence naming the file, the table and what was
// found (a two-dimensional table once overran a one-element buffer and crashed `compare`).
#include <hdf5.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "sim/cli/report.h"
#include "sim/cli/result_tables.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

struct Row {
  int64_t id;
  char name[8];
};

// A compound type laid out like Row.
hid_t row_type() {
  const hid_t name = H5Tcopy(H5T_C_S1);
  H5Tset_size(name, sizeof(Row::name));
  H5Tset_strpad(name, H5T_STR_NULLPAD);
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(Row));
  H5Tinsert(t, "id", HOFFSET(Row, id), H5T_NATIVE_INT64);
  H5Tinsert(t, "name", HOFFSET(Row, name), name);
  H5Tclose(name);
  return t;
}

// A file with the root attribute of a result file (schema_version `version`) and whatever
// `make` puts at /flows.
fs::path result_file(const std::string& name, const std::function<void(hid_t)>& make,
                     int64_t version = kHdf5SchemaVersion) {
  const fs::path path = testing::temp_dir() / ("result_tables_" + name + ".h5");
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(f >= 0);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t attr =
      H5Acreate2(f, "schema_version", H5T_NATIVE_INT64, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, H5T_NATIVE_INT64, &version);
  H5Aclose(attr);
  H5Sclose(scalar);
  make(f);
  H5Fclose(f);
  return path;
}

// Writes `rows` Rows as /flows in a dataspace of `dims`.
void write_rows(hid_t f, const std::vector<hsize_t>& dims, const std::vector<Row>& rows) {
  const hid_t type = row_type();
  const hid_t space = dims.empty()
                          ? H5Screate(H5S_SCALAR)
                          : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t d = H5Dcreate2(f, "flows", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(d >= 0);
  REQUIRE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) >= 0);
  H5Dclose(d);
  H5Sclose(space);
  H5Tclose(type);
}

const std::vector<Row> kRows{{7, "seven"}, {8, "eight"}, {9, "nine"}, {10, "ten"}};

// How ResultFile's errors read: the file's name in quotes, then `rest`.
std::string about(const fs::path& file, const std::string& rest) {
  std::string text = "'";
  text.append(file.string()).append("' ").append(rest);
  return text;
}

const TableSpec& flows_spec() {
  const std::vector<TableSpec>& specs = table_specs();
  const auto flows = std::find_if(specs.begin(), specs.end(), [](const TableSpec& spec) {
    return std::string(spec.table) == "flows";
  });
  REQUIRE(flows != specs.end());
  return *flows;
}

std::string refusal(const fs::path& file, const std::function<void(const ResultFile&)>& read) {
  const ResultFile f(file.string());
  try {
    read(f);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(nothing refused)";
}

}  // namespace

TEST_CASE("a table of records is read by column, as text and as numbers", "[result_tables]") {
  const fs::path file = result_file("good", [](hid_t f) { write_rows(f, {4}, kRows); });
  const ResultFile f(file.string());
  CHECK(f.has_table("flows"));
  CHECK_FALSE(f.has_table("flows/x"));
  CHECK(f.rows("flows") == 4);
  CHECK(f.has_column("flows", "name"));
  CHECK_FALSE(f.has_column("flows", "size_bytes"));
  CHECK(f.text_column("flows", "name") ==
        std::vector<std::string>{"seven", "eight", "nine", "ten"});
  CHECK(f.text_column("flows", "id") == std::vector<std::string>{"7", "8", "9", "10"});
  CHECK(f.number_column("flows", "id") == std::vector<double>{7, 8, 9, 10});
  CHECK_THAT(refusal(file, [](const ResultFile& r) { r.number_column("flows", "name"); }),
             Catch::Equals(about(file, "cannot read the column name of /flows as numbers")));
  CHECK_THAT(refusal(file, [](const ResultFile& r) { r.text_column("flows", "src"); }),
             Catch::Contains("has no column src in /flows"));
}

TEST_CASE("what is not a one-dimensional table of records is refused, naming what it is",
          "[result_tables]") {
  const auto expect = [](const std::string& name, const std::function<void(hid_t)>& make,
                         const std::string& found) {
    const fs::path file = result_file(name, make);
    const std::string want = about(file,
                                   "has /flows but not as a table of records: expected a "
                                   "one-dimensional dataset of compound records, found " +
                                       found);
    // keyed_rows is what compare and calibrate call; a two-dimensional table crashed it.
    CHECK(refusal(file, [](const ResultFile& r) { keyed_rows(r, flows_spec()); }) == want);
    CHECK(refusal(file, [](const ResultFile& r) { r.rows("flows"); }) == want);
    CHECK(refusal(file, [](const ResultFile& r) { r.has_column("flows", "id"); }) == want);
    CHECK(refusal(file, [](const ResultFile& r) { r.number_column("flows", "id"); }) == want);
  };
  expect(
      "two_dimensions",
      [](hid_t f) {
        write_rows(f, {2, 2}, kRows);
      },
      "a dataset of 2 dimensions");
  expect(
      "no_dimension", [](hid_t f) { write_rows(f, {}, kRows); }, "a dataset of 0 dimensions");
  expect(
      "group",
      [](hid_t f) { H5Gclose(H5Gcreate2(f, "flows", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)); },
      "a group");
  expect(
      "numbers",
      [](hid_t f) {
        const hsize_t n = 3;
        const double values[3] = {1, 2, 3};
        const hid_t space = H5Screate_simple(1, &n, nullptr);
        const hid_t d =
            H5Dcreate2(f, "flows", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
        H5Dclose(d);
        H5Sclose(space);
      },
      "a dataset of values that are not records");
}

TEST_CASE("a table too large for this machine's memory is refused before it is read",
          "[result_tables]") {
  // 10^12 rows that were never written: HDF5 stores nothing for them, so the file is small,
  // but reading them would need some 24 TB; this once ended in "error: std::bad_alloc".
  const fs::path file = result_file("huge", [](hid_t f) {
    const hsize_t rows = 1000000000000, chunk = 1024;
    const hid_t space = H5Screate_simple(1, &rows, nullptr);
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(plist, 1, &chunk);
    const hid_t type = row_type();
    const hid_t d = H5Dcreate2(f, "flows", type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    REQUIRE(d >= 0);
    H5Dclose(d);
    H5Tclose(type);
    H5Pclose(plist);
    H5Sclose(space);
  });
  CHECK(fs::file_size(file) < 100000);
  const std::string said = refusal(file, [](const ResultFile& r) { keyed_rows(r, flows_spec()); });
  CHECK_THAT(said, Catch::StartsWith(about(file,
                                           "has /flows of 1,000,000,000,000 rows of 16 bytes, "
                                           "more than this machine's ")));
  CHECK_THAT(said, Catch::EndsWith(" GB of memory can read"));
}

TEST_CASE("a result file of a schema this fabtwin does not know is refused, not misread",
          "[result_tables]") {
  const auto write = [](hid_t f) { write_rows(f, {4}, kRows); };
  CHECK(ResultFile(result_file("version_1", write, 1).string()).rows("flows") == 4);
  CHECK(ResultFile(result_file("version_now", write).string()).rows("flows") == 4);
  for (const int64_t version : {int64_t{0}, int64_t{kHdf5SchemaVersion + 1}}) {
    const fs::path file = result_file("version_" + std::to_string(version), write, version);
    CHECK_THROWS_WITH(
        ResultFile(file.string()),
        about(file, "has schema_version " + std::to_string(version) +
                        "; this fabtwin reads versions 1 to " + std::to_string(kHdf5SchemaVersion) +
                        " (a newer file needs the fabtwin that wrote it)"));
  }
  const fs::path text = result_file("version_text", [](hid_t f) {
    H5Adelete(f, "schema_version");
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 5);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(f, "schema_version", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, "four");
    H5Aclose(attr);
    H5Sclose(scalar);
    H5Tclose(type);
  });
  CHECK_THROWS_WITH(ResultFile(text.string()),
                    about(text,
                          "has a schema_version that is not an integer: not a fabtwin "
                          "result file"));
}
