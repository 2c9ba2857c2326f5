// Units, strict parsing and exact serialization arithmetic.
#include <catch2/catch.hpp>

#include "models/net/roce_framing.h"
#include "sim/units.h"

using namespace fabtwin;

TEST_CASE("a 4096 B packet at 100 Gb/s takes exactly 327,680 ps", "[units]") {
  CHECK(serialization_delay(Bytes{4096}, parse_rate("100Gbps")).ps == 327'680);
  CHECK(serialization_delay(Bytes{4096}, parse_rate("25Gbps")).ps == 1'310'720);
  CHECK(serialization_delay(Bytes{4096}, parse_rate("400Gbps")).ps == 81'920);
  // Not a whole number of picoseconds: rounded up, never down.
  CHECK(serialization_delay(Bytes{1}, BitsPerSec{3}).ps == 2'666'666'666'667);
  CHECK(bytes_in(Time{327'680}, parse_rate("100Gbps")).count == 4096);
}

TEST_CASE("times parse exactly in every unit", "[units]") {
  CHECK(parse_time("1.5us").ps == 1'500'000);
  CHECK(parse_time("1500ns").ps == 1'500'000);
  CHECK(parse_time("1 ms").ps == 1'000'000'000);
  CHECK(parse_time("2s").ps == 2'000'000'000'000);
  CHECK(parse_time("7ps").ps == 7);
  CHECK(parse_time("0.000001s").ps == 1'000'000);
  CHECK(parse_time("67.108864ms").ps == 67'108'864'000);
}

TEST_CASE("sizes distinguish decimal and binary prefixes", "[units]") {
  CHECK(parse_bytes("64KiB").count == 65'536);
  CHECK(parse_bytes("200KB").count == 200'000);
  CHECK(parse_bytes("1.5MB").count == 1'500'000);
  CHECK(parse_bytes("1GiB").count == 1'073'741'824);
  CHECK(parse_bytes("0B").count == 0);
}

TEST_CASE("rates and probabilities", "[units]") {
  CHECK(parse_rate("100Gbps").bps == 100'000'000'000);
  CHECK(parse_rate("40Mbps").bps == 40'000'000);
  CHECK(parse_rate("2.5Gb/s").bps == 2'500'000'000);
  CHECK(parse_probability("0.2") == Approx(0.2));
  CHECK(parse_probability("1") == 1.0);
}

TEST_CASE("bad quantities are refused with what was expected and found", "[units]") {
  CHECK_THROWS_WITH(parse_time("10"), Catch::Contains("with a unit") && Catch::Contains("\"10\""));
  CHECK_THROWS_WITH(parse_time("-1us"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_time("1.5ps"), Catch::Contains("not a whole number of picoseconds"));
  CHECK_THROWS_WITH(parse_time("1e3us"), Catch::Contains("expected a time"));
  CHECK_THROWS_WITH(parse_bytes("64kb"), Catch::Contains("KiB"));
  CHECK_THROWS_WITH(parse_rate("100G"), Catch::Contains("Gbps"));
  CHECK_THROWS_WITH(parse_rate("0Gbps"), Catch::Contains("positive"));
  CHECK_THROWS_WITH(parse_probability("1.2"), Catch::Contains("between 0 and 1"));
  CHECK_THROWS_WITH(parse_probability("20%"), Catch::Contains("no unit"));
  CHECK_THROWS_AS(parse_time(""), UnitError);
  CHECK_THROWS_AS(parse_time("1..5us"), UnitError);
}

TEST_CASE("huge quantities are refused, never wrapped into small ones", "[units]") {
  // These once wrapped in 128-bit arithmetic: 568 ms, 232 MB and 568 Gb/s.
  CHECK_THROWS_WITH(parse_time("340282366920938463463374608s"), Catch::Contains("too many digits"));
  CHECK_THROWS_WITH(parse_bytes("340282366920938463463374608GB"),
                    Catch::Contains("too many digits"));
  CHECK_THROWS_WITH(parse_rate("340282366920938463463374608Tbps"),
                    Catch::Contains("too many digits"));
  CHECK_THROWS_WITH(parse_time("0.0000000000000000001s"), Catch::Contains("too many digits"));
  CHECK_THROWS_WITH(parse_time("9223372036854775808ps"), Catch::Contains("too large"));
  CHECK_THROWS_WITH(parse_time("9223373s"), Catch::Contains("too large"));
  // The largest that fit still parse exactly.
  CHECK(parse_time("9223372036854775807ps").ps == INT64_MAX);
  CHECK(parse_time("9223372s").ps == 9'223'372'000'000'000'000);
  CHECK(parse_time("0.000000000001s").ps == 1);
}

TEST_CASE("quantities print in the largest fitting unit", "[units]") {
  CHECK(format_time(Time{1'500'000}) == "1.5us");
  CHECK(format_time(Time{4'388'949'760}) == "4.38894976ms");
  CHECK(format_bytes(Bytes{200'000}) == "200KB");
  CHECK(format_rate(BitsPerSec{100'000'000'000}) == "100Gbps");
  for (const char* t : {"1.5us", "67.108864ms", "7ps", "3s"}) {
    CHECK(parse_time(format_time(parse_time(t))) == parse_time(t));
  }
}

TEST_CASE("RoCEv2 framing adds 82 bytes to a middle packet on the wire", "[units][roce]") {
  CHECK(roce::data_frame(1000, false) == 1062);
  CHECK(roce::data_frame(1000, true) == 1078);  // RETH on the first packet
  // 4096 B payload + 62 B headers + 20 B preamble and gap at 100 Gb/s.
  CHECK(roce::wire_time(roce::data_frame(4096, false), parse_rate("100Gbps")).ps ==
        (4096 + 82) * 80);
  // Frames shorter than 64 B are padded.
  CHECK(roce::wire_time(roce::ack_frame(), parse_rate("100Gbps")).ps == (66 + 20) * 80);
  CHECK(roce::wire_time(10, parse_rate("100Gbps")).ps == (64 + 20) * 80);
}
