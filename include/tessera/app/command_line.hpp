#pragma once
/// The `tessera` command line: `tessera run|check|partition CASE [--set path=value]...` and
/// `tessera evaluate RUN_DIR (--points FILE | --grid SPEC) [--out FILE] [--derivatives LIST]`,
/// `tessera export RUN_DIR [--out model.pt]`.
#include <string>
#include <vector>

namespace tessera::app {

enum class Command { run, check, partition, evaluate, export_model, schema, help, version };

struct CommandLine {
  Command command = Command::help;
  std::string case_file;               ///< the case; evaluate, export: the run's folder
  std::vector<std::string> overrides;  ///< --set path=value, in order
  std::vector<std::string> merges;     ///< --merge FILE: JSON merge patches, in order
  std::string restart;                 ///< --restart latest | auto | <checkpoint folder>
  bool overwrite = false;              ///< --overwrite: replace the output folder's results
  int ranks = 0;                       ///< partition: --ranks N (0: the job's size)
  std::string points;                  ///< evaluate: --points FILE (.h5 or .csv)
  std::string grid;                    ///< evaluate: --grid x=N,y=M (points per coordinate)
  std::string out;                     ///< evaluate, export: --out FILE ("": default name)
  std::string derivatives;             ///< evaluate: --derivatives u_x,lap(u)
  std::string help_for;                ///< help: the command asked about ("": all)
};

/// The value of --restart that names the newest complete checkpoint of the output folder.
inline const std::string latest_checkpoint = "latest";
/// The value of --restart that continues the newest checkpoint when there is one and starts
/// fresh when there is none (what a requeued batch job wants).
inline const std::string restart_auto = "auto";

/// Throws tessera::Error with the usage text on a malformed command line.
CommandLine parse_command_line(int argc, char** argv);

/// The help text: of every command, or of `command` alone ("run", "evaluate", ...).
std::string usage(const std::string& command = "");

/// Entry points of the commands; return the process exit status.
int run_command(const CommandLine& line);
int check_command(const CommandLine& line);
int partition_command(const CommandLine& line);
int evaluate_command(const CommandLine& line);
int export_command(const CommandLine& line);
/// `tessera schema`: the JSON Schema of the case format on standard output.
int schema_command(const CommandLine& line);

}  // namespace tessera::app
