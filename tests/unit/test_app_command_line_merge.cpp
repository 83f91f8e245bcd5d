// The command line's `schema` command and `--merge` option (a file of its own, beside
// test_app_command_line.cpp, so that each reads as one topic).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tessera/app/command_line.hpp"
#include "tessera/core/error.hpp"

using namespace tessera;

namespace {

app::CommandLine parse(std::vector<std::string> words) {
  words.insert(words.begin(), "tessera");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return app::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("schema takes nothing else; a misspelt command suggests it") {
  CHECK(parse({"schema"}).command == app::Command::schema);
  CHECK_THROWS_WITH_AS(parse({"schema", "case.json"}), doctest::Contains("takes no case file"),
                       Error);
  CHECK_THROWS_WITH_AS(parse({"schem"}), doctest::Contains("did you mean 'schema'"), Error);
  CHECK(app::usage().find("tessera schema") != std::string::npos);
}

TEST_CASE("--merge files are kept in order, in both spellings, beside --set") {
  const auto line =
      parse({"check", "case.json", "--merge", "a.json", "--set", "seed=2", "--merge=b.json"});
  CHECK(line.command == app::Command::check);
  CHECK(line.merges == std::vector<std::string>{"a.json", "b.json"});
  CHECK(line.overrides == std::vector<std::string>{"seed=2"});
  CHECK_THROWS_WITH_AS(parse({"run", "case.json", "--merge"}), doctest::Contains("needs a file"),
                       Error);
  CHECK_THROWS_WITH_AS(parse({"run", "case.json", "--merg", "a.json"}),
                       doctest::Contains("did you mean '--merge'"), Error);
}
