// The command line: commands (schema, evaluate, export among them), options (--merge and --set
// among them), and help wherever it is asked for.
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

TEST_CASE("help is given wherever --help or -h stands") {
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"--help"}, {"-h"}, {"help"}, {"run", "--help"}, {"check", "case.json", "-h"}})
    CHECK(parse(words).command == app::Command::help);
}

TEST_CASE("run takes the case, overrides, a restart and --overwrite") {
  const auto line =
      parse({"run", "case.json", "--set", "seed=2", "--restart", "out/checkpoints/1"});
  CHECK(line.command == app::Command::run);
  CHECK(line.case_file == "case.json");
  CHECK(line.overrides == std::vector<std::string>{"seed=2"});
  CHECK(line.restart == "out/checkpoints/1");
  CHECK_THROWS_WITH_AS(parse({"run", "case.json", "--restart"}),
                       doctest::Contains("latest, auto, or a checkpoint folder"), Error);
  CHECK_THROWS_WITH_AS(parse({"run", "case.json", "--restat", "latest"}),
                       doctest::Contains("--restart"), Error);
}

TEST_CASE("the usage text names every form of --restart") {
  const std::string text = app::usage();
  for (const char* form : {"--restart latest", "--restart auto", "--restart FOLDER"})
    CHECK_MESSAGE(text.find(form) != std::string::npos, form);
}

TEST_CASE("a command's --help gives that command's usage and options only") {
  CHECK(parse({"run", "--help"}).help_for == "run");
  CHECK(parse({"help", "evaluate"}).help_for == "evaluate");
  CHECK(parse({"--help"}).help_for.empty());
  const std::string run = app::usage("run");
  CHECK(run.rfind("usage: tessera run CASE.json", 0) == 0);
  CHECK(run.find("--restart auto") != std::string::npos);
  CHECK(run.find("--points") == std::string::npos);
  const std::string evaluate = app::usage("evaluate");
  CHECK(evaluate.rfind("usage: tessera evaluate RUN_DIR", 0) == 0);
  CHECK(evaluate.find("--derivatives") != std::string::npos);
  CHECK(evaluate.find("--restart") == std::string::npos);
  // The whole text names every command.
  for (const char* command : {"run", "check", "partition", "evaluate", "export", "schema"})
    CHECK_MESSAGE(app::usage().find(std::string("tessera ") + command) != std::string::npos,
                  command);
}

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
