// The case-format reference and the validator agree: every key the validator accepts is a row
// of docs/case-format.md, and every key documented there is accepted.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/io/case.hpp"
#include "tessera/io/case_keys.hpp"

using namespace tessera;

namespace {

/// The key paths of docs/case-format.md: the first cell of a table row when that cell is one
/// backticked word, such as "| `training.stages[].lr` | number | ...".
std::set<std::string> documented_keys() {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/case-format.md");
  REQUIRE_MESSAGE(in.good(), "docs/case-format.md is missing");
  const std::regex row(R"(^\|\s*`([^`\s]+)`\s*\|)");
  std::set<std::string> keys;
  std::string line;
  std::smatch match;
  while (std::getline(in, line))
    if (std::regex_search(line, match, row)) keys.insert(match[1]);
  return keys;
}

std::set<std::string> accepted_keys() {
  std::set<std::string> keys;
  for (const auto& group : io::case_key_groups())
    for (const auto& key : group.keys)
      keys.insert(group.path.empty() ? key : group.path + "." + key);
  return keys;
}

}  // namespace

TEST_CASE("every key the validator accepts is documented in docs/case-format.md") {
  const auto documented = documented_keys();
  for (const auto& key : accepted_keys()) {
    CAPTURE(key);
    CHECK(documented.count(key) == 1);
  }
}

TEST_CASE("every key documented in docs/case-format.md is accepted by the validator") {
  const auto accepted = accepted_keys();
  for (const auto& key : documented_keys()) {
    CAPTURE(key);
    CHECK(accepted.count(key) == 1);
  }
}

TEST_CASE("the complete example of docs/case-format.md loads with the values it shows") {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/case-format.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const auto section = doc.find("## A complete example");
  REQUIRE(section != std::string::npos);
  const auto open = doc.find("```jsonc\n", section);
  REQUIRE(open != std::string::npos);
  const auto start = open + 9;
  const auto close = doc.find("```", start);
  REQUIRE(close != std::string::npos);
  const auto path = std::filesystem::temp_directory_path() / "tessera_doc_example.json";
  std::ofstream(path) << doc.substr(start, close - start);
  const io::Case c = io::load_case(path.string());
  std::filesystem::remove(path);
  CHECK(c.name == "poisson2d_xpinn");
  CHECK(c.decomposition.method == io::DecompositionMethod::xpinn);
  CHECK(c.decomposition.split.at("x") == 2);
  REQUIRE(c.training.stages.size() == 2);
  CHECK(c.training.stages[1].optimizer == io::find_optimizer("lbfgs"));
  CHECK(c.training.stages[1].collocation_points == 2048);
}

TEST_CASE("keys_at gives each object's keys and refuses an unknown object as a bug") {
  CHECK(io::keys_at("time") == std::vector<std::string>{"name", "range"});
  CHECK_THROWS_AS(io::keys_at("no.such.object"), InternalError);
}
