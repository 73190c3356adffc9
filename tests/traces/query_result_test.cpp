// QueryResult renderings: CSV, JSON and the text table.
#include "traces/query_result.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace terasim {
namespace {

QueryResult Sample() {
  QueryResult r;
  r.columns = {"strategy", "iteration_time_s", "dp", "note"};
  r.rows.push_back({std::string("terapipe"), 1.481, int64_t{1}, SqlValue()});
  r.rows.push_back({std::string("gpipe, flush"), 9.99, int64_t{2}, std::string("say \"hi\"")});
  return r;
}

TEST_CASE("Query CSV quotes fields with commas and quotes and leaves NULL empty") {
  // Header, then rows; NULL -> empty field; shortest digits for REAL.
  CHECK(FormatQueryCsv(Sample()) ==
        "strategy,iteration_time_s,dp,note\n"
        "terapipe,1.481,1,\n"
        "\"gpipe, flush\",9.99,2,\"say \"\"hi\"\"\"\n");
}

TEST_CASE("Query JSON is an array of objects that keep the column order") {
  std::string text = FormatQueryJson(Sample());
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);
  REQUIRE(doc.size() == 2);
  CHECK(doc[0].at("iteration_time_s").get<double>() == 1.481);
  CHECK(doc[0].at("note").is_null());
  CHECK(doc[1].at("dp") == 2);
  // Keys in column order, not sorted.
  std::vector<std::string> keys;
  for (const auto& [k, v] : doc[0].items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"strategy", "iteration_time_s", "dp", "note"});
}

TEST_CASE("Query table pads columns and counts rows") {
  QueryResult r;
  r.columns = {"name", "n"};
  r.rows.push_back({std::string("a"), int64_t{10}});
  // "name" is 4 wide; "n" is 2 wide ("10") and right-aligned.
  CHECK(FormatQueryTable(r) == "name   n\n----  --\na     10\n(1 row)\n");
}

}  // namespace
}  // namespace terasim
