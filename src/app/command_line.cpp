#include "tessera/app/command_line.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"

namespace tessera::app {

std::string usage() {
  return "usage: tessera <command> CASE.json [--merge FILE]... [--set path=value]...\n"
         "       tessera schema\n"
         "\n"
         "commands:\n"
         "  run     train the case and write results to output.directory\n"
         "  check   validate the case and print the resolved problem, without training\n"
         "  partition  print the subdomain -> rank map and write <name>_partition.xmf\n"
         "  schema  print the JSON Schema (draft 2020-12) of the case format\n"
         "\n"
         "options:\n"
         "  --merge FILE       apply FILE, a JSON merge patch (RFC 7386), to the case before "
         "--set (repeatable)\n"
         "  --set path=value   override a case key, e.g. --set training.stages.0.iterations=200\n"
         "                     (value parsed as JSON when it parses, else a string; repeatable)\n"
         "  --restart latest   (run) continue from the newest complete checkpoint in the output "
         "folder\n"
         "  --restart auto     (run) continue the folder's checkpoint (same case), or start "
         "fresh when there is none\n"
         "  --restart FOLDER   (run) continue from that checkpoint folder (any rank count)\n"
         "  --overwrite        (run) replace the results of an earlier run in the output folder\n"
         "  --ranks N          partition, check: for N ranks (default: the job's size)\n"
         "  --help, --version\n"
         "\n"
         "examples:\n"
         "  tessera run cases/poisson2d.json\n"
         "  mpiexec.mpich -n 4 tessera run cases/poisson2d.json --set "
         "output.directory=results/p4\n";
}

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine line;
  std::vector<std::string> args(argv + 1, argv + argc);
  TESSERA_CHECK(!args.empty(), "no command given\n" << usage());
  // `tessera run --help` asks for help as `tessera --help` does, wherever the flag stands.
  const auto asks_help = [](const std::string& a) { return a == "--help" || a == "-h"; };
  if (args[0] == "help" || std::any_of(args.begin(), args.end(), asks_help)) {
    line.command = Command::help;
    return line;
  }
  if (args[0] == "--version") {
    line.command = Command::version;
    return line;
  }
  if (args[0] == "schema") {
    TESSERA_CHECK(args.size() == 1, "schema takes no case file or options, got '"
                                        << args[1] << "' (usage: tessera schema)");
    line.command = Command::schema;
    return line;
  }
  const std::vector<std::string> commands{"run", "check", "partition", "schema"};
  TESSERA_CHECK(std::count(commands.begin(), commands.end(), args[0]),
                "unknown command '" << args[0] << "'" << core::did_you_mean(args[0], commands)
                                    << "; use run, check, partition or schema (tessera --help)");
  line.command = args[0] == "run"     ? Command::run
                 : args[0] == "check" ? Command::check
                                      : Command::partition;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--set") {
      TESSERA_CHECK(i + 1 < args.size(), "--set needs path=value");
      line.overrides.push_back(args[++i]);
    } else if (a.rfind("--set=", 0) == 0) {
      line.overrides.push_back(a.substr(6));
    } else if (a == "--merge") {
      TESSERA_CHECK(i + 1 < args.size(), "--merge needs a file: a JSON merge patch of the case");
      line.merges.push_back(args[++i]);
    } else if (a.rfind("--merge=", 0) == 0) {
      line.merges.push_back(a.substr(8));
    } else if (a == "--restart") {
      TESSERA_CHECK(i + 1 < args.size(),
                    "--restart needs a value: latest, auto, or a checkpoint folder");
      line.restart = args[++i];
    } else if (a == "--overwrite") {
      line.overwrite = true;
    } else if (a == "--ranks") {
      TESSERA_CHECK(i + 1 < args.size(), "--ranks needs a number");
      const std::string value = args[++i];
      TESSERA_CHECK(value.find_first_not_of("0123456789") == std::string::npos && !value.empty() &&
                        std::stoi(value) > 0,
                    "--ranks: expected a positive integer, got '" << value << "'");
      line.ranks = std::stoi(value);
    } else if (a.rfind("--", 0) == 0) {
      TESSERA_FAIL("unknown option '" << a << "'"
                                      << core::did_you_mean(a, {"--set", "--merge", "--restart",
                                                                "--overwrite", "--ranks"})
                                      << " (tessera --help)");
    } else {
      TESSERA_CHECK(line.case_file.empty(),
                    "more than one case file given ('" << line.case_file << "' and '" << a << "')");
      line.case_file = a;
    }
  }
  TESSERA_CHECK(!line.case_file.empty(), "no case file given\n" << usage());
  return line;
}

}  // namespace tessera::app
