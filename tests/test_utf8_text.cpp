// UTF-8 text for the outputs (sim/utf8_text.h): the check that refuses a --set assignment, the
// repair of recorded names and log text, the cut of a fixed-length HDF5 text cell, and the JSON
// documents the commands write.
#include "sim/utf8_text.h"

#include <catch2/catch.hpp>

using namespace fabtwin;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
const std::string kE = "\xC3\xA9";                // U+00E9, two bytes
const std::string kEuro = "\xE2\x82\xAC";         // U+20AC, three bytes
}  // namespace

TEST_CASE("utf8_problem accepts UTF-8 and names the first byte that is not", "[utf8]") {
  CHECK(utf8_problem("").empty());
  CHECK(utf8_problem("run.seed=42").empty());
  CHECK(utf8_problem("description=caf" + kE + " " + kEuro).empty());
  CHECK(utf8_problem("run.x\xABz=1") == "invalid UTF-8 byte at index 5: 0xAB");
  // A sequence cut short, an overlong form of '/', an encoded surrogate.
  CHECK(utf8_problem("ab\xE2\x82") == "incomplete UTF-8 string; last byte: 0x82");
  CHECK_THAT(utf8_problem("\xC0\xAF"), Catch::Contains("index 0") && Catch::Contains("0xC0"));
  CHECK_THAT(utf8_problem("\xED\xA0\x80"), Catch::Contains("0xED") || Catch::Contains("0xA0"));
}

TEST_CASE("valid_utf8 keeps UTF-8 and replaces each invalid byte with U+FFFD", "[utf8]") {
  CHECK(valid_utf8("plain") == "plain");
  CHECK(valid_utf8("caf" + kE + kEuro) == "caf" + kE + kEuro);
  CHECK(valid_utf8("s\xAB.json") == "s" + kReplacement + ".json");
  CHECK(valid_utf8("\xFF\xFE") == kReplacement + kReplacement);
  CHECK(utf8_problem(valid_utf8("a\xE2\x82")).empty());
}

TEST_CASE("utf8_prefix cuts at a character boundary, never inside one", "[utf8]") {
  CHECK(utf8_prefix("abcdef", 4) == "abcd");
  CHECK(utf8_prefix("abc", 8) == "abc");
  const std::string s = "ab" + kEuro + "c";  // bytes: a b E2 82 AC c
  CHECK(utf8_prefix(s, 2) == "ab");
  CHECK(utf8_prefix(s, 3) == "ab");  // the euro sign does not fit: left out whole
  CHECK(utf8_prefix(s, 4) == "ab");
  CHECK(utf8_prefix(s, 5) == "ab" + kEuro);
  CHECK(utf8_prefix(kE + kE, 3) == kE);
}

TEST_CASE("json_document writes invalid UTF-8 as U+FFFD and ends with a newline", "[utf8]") {
  const nlohmann::json j = {{"scenario_file", "s\xAB.json"}, {"n", 1}};
  CHECK_THROWS(j.dump());  // what the writers met before
  CHECK(json_document(j, -1) == "{\"n\":1,\"scenario_file\":\"s" + kReplacement + ".json\"}\n");
  CHECK(json_document(j) ==
        "{\n  \"n\": 1,\n  \"scenario_file\": \"s" + kReplacement + ".json\"\n}\n");
  CHECK(nlohmann::json::parse(json_document(j))["scenario_file"] == "s" + kReplacement + ".json");
}
