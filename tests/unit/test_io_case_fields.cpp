// Fields of some of the inputs: "fields": [{"name": "a", "of": ["x", "y"]}].
#include <doctest/doctest.h>

#include "io_test_support.hpp"
#include "tessera/io/case.hpp"

using namespace tessera;
using io::testing::case_error;
using nlohmann::json;

namespace {

json space_time() {
  return json::parse(R"JSON({
    "name": "p", "coordinates": ["x", "y"], "time": {"range": [0, 1]},
    "fields": ["u", {"name": "a", "of": ["x", "y"]}],
    "geometry": {"box": [[0, 1], [0, 2]]},
    "equations": [{"residual": "u_t - a*lap(u)"}],
    "conditions": [{"type": "dirichlet", "field": "u", "value": "0"}],
    "training": {"stages": [{"optimizer": "adam", "iterations": 10}]}
  })JSON");
}

}  // namespace

TEST_CASE("a field object declares the field and keeps its inputs and widths") {
  json doc = space_time();
  doc["fields"][1]["hidden"] = {8, 8};
  doc["fields"].push_back({{"name", "b"}, {"of", {"y", "t"}}});
  const auto c = io::case_from_json(doc, "p.json");
  CHECK(c.fields == std::vector<std::string>{"u", "a", "b"});
  REQUIRE(c.field_inputs.size() == 2);
  CHECK(c.field_inputs.at("a").of == std::vector<std::string>{"x", "y"});
  CHECK(c.field_inputs.at("a").hidden == std::vector<int64_t>{8, 8});
  CHECK(c.field_inputs.at("b").of == std::vector<std::string>{"y", "t"});
  CHECK_FALSE(c.field_inputs.at("b").hidden);
  CHECK(c.field_inputs.count("u") == 0);
}

TEST_CASE("plain field names leave every field on every input") {
  json doc = space_time();
  doc["fields"] = {"u", "a"};
  CHECK(io::case_from_json(doc, "p.json").field_inputs.empty());
}

TEST_CASE("the inputs of a field are checked: known, once, in order, not empty") {
  json doc = space_time();
  doc["fields"][1]["of"] = {"x", "z"};
  const auto unknown = case_error(doc);
  CHECK(unknown.find("cases/p.json: fields[1].of[1]: 'z' is not an input of this case") !=
        std::string::npos);
  CHECK(unknown.find("'x', 'y', 't'") != std::string::npos);
  doc["fields"][1]["of"] = {"x", "x"};
  CHECK(case_error(doc).find("fields[1].of[1]: 'x' is named twice") != std::string::npos);
  doc["fields"][1]["of"] = {"t", "x"};
  CHECK(case_error(doc).find("fields[1].of[1]: 'x' is out of order") != std::string::npos);
  doc["fields"][1]["of"] = json::array();
  CHECK(case_error(doc).find("fields[1].of") != std::string::npos);
  doc["fields"][1].erase("of");
  CHECK(case_error(doc).find("fields[1]") != std::string::npos);
  doc["fields"][1]["of"] = {"x"};
  doc["fields"][1]["inputs"] = {"x"};
  CHECK(case_error(doc).find("fields[1].inputs: unknown key") != std::string::npos);
}

TEST_CASE("a field object's name follows the rules of every field name") {
  json doc = space_time();
  doc["fields"][1]["name"] = "u";
  CHECK(case_error(doc).find("fields[1].name: 'u' is already declared") != std::string::npos);
  doc["fields"][1]["name"] = "a_1";
  CHECK(case_error(doc).find("fields[1].name") != std::string::npos);
}

TEST_CASE("fields of some inputs are refused with fbpinn and with exact enforcement") {
  json doc = space_time();
  doc["decomposition"] = {{"method", "fbpinn"}, {"split", {{"x", 2}}}};
  CHECK(case_error(doc).find("fields[1].of: a field of some of the inputs") != std::string::npos);
  doc = space_time();
  doc["conditions"][0]["field"] = "a";
  doc["conditions"][0]["on"] = "x=0";
  doc["conditions"][0]["enforce"] = "exact";
  CHECK(case_error(doc).find("conditions[0].enforce: field 'a' depends on some of the inputs") !=
        std::string::npos);
}

TEST_CASE("a field's own widths must be equal with the modified MLP") {
  json doc = space_time();
  doc["network"] = {{"architecture", "modified_mlp"}, {"hidden", {16, 16}}};
  doc["fields"][1]["hidden"] = {8, 4};
  CHECK(case_error(doc).find("fields[1].hidden: the modified MLP needs equal hidden widths") !=
        std::string::npos);
  doc["fields"][1]["hidden"] = {8, 8};
  CHECK(case_error(doc) == "loaded");
}
