#include "tessera/app/command_line.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"

namespace tessera::app {

namespace {

struct CommandHelp {
  const char* name;
  const char* synopsis;  ///< after "usage: "
  const char* what;
};

const std::vector<CommandHelp> command_help{
    {"run",
     "tessera run CASE.json [--merge FILE]... [--set path=value]...\n"
     "                   [--restart latest|auto|FOLDER] [--overwrite]",
     "train the case and write results to output.directory"},
    {"check", "tessera check CASE.json [--merge FILE]... [--set path=value]... [--ranks N]",
     "validate the case and print the resolved problem, without training"},
    {"partition", "tessera partition CASE.json [--merge FILE]... [--set path=value]... [--ranks N]",
     "print the subdomain -> rank map and write <name>_partition.xmf"},
    {"evaluate",
     "tessera evaluate RUN_DIR (--points FILE | --grid x=N,...) [--out FILE]\n"
     "                        [--derivatives u_x,lap(u)] [--set path=value]...",
     "the trained model of the run in RUN_DIR (its output folder) at points"},
    {"export", "tessera export RUN_DIR [--out model.pt] [--set path=value]...",
     "the trained model as one TorchScript file (torch.jit.load), one process"},
    {"schema", "tessera schema", "print the JSON Schema (draft 2020-12) of the case format"},
};

struct OptionHelp {
  std::vector<std::string> commands;  ///< the commands it belongs to
  const char* text;
};

const std::vector<OptionHelp> option_help{
    {{"run", "check", "partition"},
     "  --merge FILE       apply FILE, a JSON merge patch (RFC 7386), to the case before --set\n"
     "                     (repeatable)\n"},
    {{"run", "check", "partition", "evaluate", "export"},
     "  --set path=value   override a case key, e.g. --set training.stages.0.iterations=200\n"
     "                     (value parsed as JSON when it parses, else a string; repeatable)\n"},
    {{"run"},
     "  --restart latest   (run) continue from the newest complete checkpoint in the output\n"
     "                     folder\n"
     "  --restart auto     (run) continue the folder's checkpoint (same case), or start fresh\n"
     "                     when there is none\n"
     "  --restart FOLDER   (run) continue from that checkpoint folder (any rank count)\n"
     "  --overwrite        (run) replace the results of an earlier run in the output folder\n"},
    {{"check", "partition"},
     "  --ranks N          partition, check: for N ranks (default: the job's size)\n"},
    {{"evaluate"},
     "  --points FILE      (evaluate) points to evaluate at: HDF5 /points [n, dims], or CSV\n"
     "                     with a column per coordinate (a header row naming them optional)\n"
     "  --grid x=N,t=M     (evaluate) a grid over the domain's box, N points along x\n"
     "                     (101 along coordinates not named; 11 above 3 inputs),\n"
     "                     instead of --points\n"},
    {{"evaluate", "export"},
     "  --out FILE         (evaluate) .h5 or .csv (default: the points file's name with\n"
     "                     _values, or <case name>_grid.h5); (export) default\n"
     "                     <case name>_model.pt\n"},
    {{"evaluate"},
     "  --derivatives L    (evaluate) expressions of the fields to add, comma-separated,\n"
     "                     written as equations are, e.g. u_x,lap(u)\n"},
};

bool belongs(const OptionHelp& option, const std::string& command) {
  return command.empty() || std::count(option.commands.begin(), option.commands.end(), command);
}

}  // namespace

std::string usage(const std::string& command) {
  std::string text;
  for (const auto& c : command_help)
    if (command.empty() || command == c.name)
      text += std::string(text.empty() ? "usage: " : "       ") + c.synopsis + "\n";
  text += "\n";
  if (command.empty()) {
    text += "commands:\n";
    for (const auto& c : command_help) {
      std::string name = c.name;
      name.resize(11, ' ');
      text += "  " + name + c.what + "\n";
    }
  } else {
    for (const auto& c : command_help)
      if (command == c.name) text += std::string(c.what) + "\n";
  }
  text += "\noptions:\n";
  for (const auto& option : option_help)
    if (belongs(option, command)) text += option.text;
  text += "  --help, --version\n";
  if (command.empty())
    text +=
        "\n"
        "examples:\n"
        "  tessera run cases/poisson2d.json\n"
        "  mpiexec.mpich -n 4 tessera run cases/poisson2d.json --set "
        "output.directory=results/p4\n"
        "  tessera evaluate results/poisson2d --points probes.csv --derivatives u_x,u_y\n";
  return text;
}

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine line;
  std::vector<std::string> args(argv + 1, argv + argc);
  TESSERA_CHECK(!args.empty(), "no command given\n" << usage());
  // `tessera run --help` asks for help as `tessera --help` does, wherever the flag stands.
  const auto asks_help = [](const std::string& a) { return a == "--help" || a == "-h"; };
  if (args[0] == "help" || std::any_of(args.begin(), args.end(), asks_help)) {
    line.command = Command::help;
    // `tessera run --help` and `tessera help run`: that command's usage.
    const std::string& named = args[0] == "help" && args.size() > 1 ? args[1] : args[0];
    for (const auto& c : command_help)
      if (named == c.name) line.help_for = named;
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
  const std::vector<std::string> commands{"run",      "check",  "partition",
                                          "evaluate", "export", "schema"};
  TESSERA_CHECK(std::count(commands.begin(), commands.end(), args[0]),
                "unknown command '" << args[0] << "'" << core::did_you_mean(args[0], commands)
                                    << "; use run, check, partition, evaluate, export or schema "
                                       "(tessera --help)");
  line.command = args[0] == "run"         ? Command::run
                 : args[0] == "check"     ? Command::check
                 : args[0] == "partition" ? Command::partition
                 : args[0] == "evaluate"  ? Command::evaluate
                                          : Command::export_model;
  const bool reads_a_run =
      line.command == Command::evaluate || line.command == Command::export_model;
  // The options that take a value, and where it goes.
  const std::vector<std::pair<std::string, std::string*>> valued{
      {"--points", &line.points},
      {"--grid", &line.grid},
      {"--out", &line.out},
      {"--derivatives", &line.derivatives}};
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
    } else if (auto it = std::find_if(valued.begin(), valued.end(),
                                      [&a](const auto& option) { return option.first == a; });
               it != valued.end()) {
      TESSERA_CHECK(line.command == Command::evaluate ||
                        (a == "--out" && line.command == Command::export_model),
                    a << " is an option of tessera evaluate (tessera --help)");
      TESSERA_CHECK(i + 1 < args.size(), a << " needs a value (tessera --help)");
      *it->second = args[++i];
    } else if (a.rfind("--", 0) == 0) {
      TESSERA_FAIL("unknown option '"
                   << a << "'"
                   << core::did_you_mean(
                          a, {"--set", "--merge", "--restart", "--overwrite", "--ranks", "--points",
                              "--grid", "--out", "--derivatives"})
                   << " (tessera --help)");
    } else {
      TESSERA_CHECK(line.case_file.empty(),
                    "more than one case file given ('" << line.case_file << "' and '" << a << "')");
      line.case_file = a;
    }
  }
  if (reads_a_run) {
    TESSERA_CHECK(!line.case_file.empty(), args[0] << ": no run folder given: tessera " << args[0]
                                                   << " RUN_DIR (tessera --help)");
    TESSERA_CHECK(line.restart.empty() && !line.overwrite && line.ranks == 0 && line.merges.empty(),
                  args[0] << ": --restart, --overwrite, --ranks and --merge belong to run, check "
                             "and partition");
  }
  if (line.command == Command::evaluate)
    TESSERA_CHECK(line.points.empty() != line.grid.empty(),
                  "evaluate: give either --points FILE or --grid x=N,... (tessera --help)");
  TESSERA_CHECK(!line.case_file.empty(), "no case file given\n" << usage());
  return line;
}

}  // namespace tessera::app
