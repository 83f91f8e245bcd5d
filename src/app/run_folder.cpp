#include "tessera/app/run_folder.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tessera/core/error.hpp"
#include "tessera/core/stop_signal.hpp"
#include "tessera/io/checkpoint_files.hpp"
#include "tessera/io/json_files.hpp"

namespace tessera::app {
namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

/// A run id that no other run shares: the start time, the host and the process.
/// A UTC time without its separators, for names: 20261204T072643Z.
std::string compact_time(const std::string& utc) {
  std::string compact;
  for (char c : utc)
    if (c != '-' && c != ':') compact += c;
  return compact;
}

std::string new_run_id(const std::string& started) {
  return compact_time(started) + "-" + host_name() + "-" + std::to_string(::getpid());
}

/// What an output folder already holds from earlier runs.
struct FolderContents {
  std::string latest_checkpoint;           ///< "" when no complete checkpoint (intact or not)
  std::optional<nlohmann::json> run_json;  ///< the last run's record, when readable
  bool history = false;
  bool results() const { return !latest_checkpoint.empty() || run_json || history; }
};

FolderContents inspect(const std::string& output) {
  FolderContents contents;
  contents.latest_checkpoint = io::latest_checkpoint(output);
  std::ifstream in(fs::path(output) / "run.json");
  if (in) {
    auto run = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    contents.run_json = run.is_object() ? run : nlohmann::json::object();
  }
  contents.history = fs::exists(fs::path(output) / "history.jsonl");
  return contents;
}

/// "run <id> of case <name>, <status>" for messages about a folder's earlier results.
std::string describe(const FolderContents& contents) {
  if (!contents.run_json) return "results without run.json";
  const auto& run = *contents.run_json;
  std::string text = "run " + run.value("run_id", std::string("(no id)"));
  if (run.contains("case") && run["case"].is_object())
    text += " of case '" + run["case"].value("name", std::string("?")) + "'";
  return text + ", " + run.value("status", std::string("status unknown"));
}

std::string choices(const std::string& output) {
  return "continue it with --restart latest (or --restart auto), replace it with --overwrite, "
         "or choose another output.directory than '" +
         output + "'";
}

/// The files a run writes into its folder, except the field files (rewritten at the end).
void remove_results(const std::string& output) {
  std::error_code error;
  fs::remove_all(fs::path(output) / "checkpoints", error);
  for (const char* name : {"history.jsonl", "run.json", "tessera.log"})
    fs::remove(fs::path(output) / name, error);
}

bool is_inside(const std::string& folder, const fs::path& parent) {
  // Canonical first: "checkpoints/00000300/" (a trailing slash) has the same parent.
  std::error_code folder_error, parent_error;
  const auto canonical = fs::weakly_canonical(folder, folder_error);
  const auto expected = fs::weakly_canonical(parent, parent_error);
  return !folder_error && !parent_error && canonical.parent_path() == expected;
}

/// --restart FOLDER into an output folder that already holds results: they must be the
/// checkpoint's own run's, or the continued run's history would be appended to another's.
void check_results_belong_to(const std::string& checkpoint, const std::string& output,
                             const FolderContents& contents) {
  if (!contents.results()) return;
  if (!contents.run_json && is_inside(checkpoint, fs::path(output) / "checkpoints")) return;
  const std::string folder_run = contents.run_json ? contents.run_json->value("run_id", "") : "";
  const std::string checkpoint_run = io::checkpoint_run_id(checkpoint);
  TESSERA_CHECK(!folder_run.empty() && folder_run == checkpoint_run,
                "--restart " << checkpoint << ": output folder '" << output << "' holds "
                             << describe(contents) << ", not the checkpoint's run "
                             << (checkpoint_run.empty() ? "(no id)" : checkpoint_run)
                             << "; continue it into its own output folder or an empty one, or "
                                "replace the results there with --overwrite first");
}

/// The newest complete and intact checkpoint of the folder ("" when there is none), after one
/// warning for each damaged one passed over on the way, naming its bad file and why.
std::string newest_intact(const std::string& output, Console& console) {
  const auto found = io::newest_intact_checkpoint(output);
  for (const auto& damaged : found.skipped)
    console.warning("checkpoint " + damaged.directory + " is damaged (" + damaged.reason + "); " +
                    (found.directory.empty() ? std::string("no older intact checkpoint either")
                                             : "continuing from " + found.directory));
  return found.directory;
}

/// --restart FOLDER: the folder must be a complete checkpoint whose files are the ones its
/// manifest records, or it would fail later in the archive reader with a less useful message,
/// or not at all (a changed byte).
void check_intact(const std::string& checkpoint) {
  io::read_manifest(checkpoint);  // its own message for a folder without one
  const std::string damage = io::checkpoint_damage(checkpoint, io::CheckDepth::checksums);
  TESSERA_CHECK(damage.empty(), "--restart " << checkpoint << ": the checkpoint is damaged ("
                                             << damage
                                             << "); continue from an older checkpoint, or use "
                                                "--restart latest, which skips damaged ones");
}

/// The checkpoint to continue from ("" for a fresh run), after the folder's contents and the
/// command line; throws with the folder and the choices where the two do not fit together.
std::string resolve_restart(const CommandLine& line, const std::string& output,
                            const FolderContents& contents, const std::string& hash,
                            Console& console) {
  if (line.overwrite) {
    TESSERA_CHECK(line.restart.empty(),
                  "--overwrite starts a new run and --restart continues one; give only one");
    if (contents.results()) {
      console.out() << "tessera: --overwrite: removing " << describe(contents) << " from '"
                    << output << "'\n";
      remove_results(output);
    }
    return "";
  }
  if (line.restart == restart_auto) {
    if (!contents.latest_checkpoint.empty()) {
      const std::string intact = newest_intact(output, console);
      if (!intact.empty()) return intact;
    }
    const bool same_case =
        contents.run_json && contents.run_json->value("case_hash", std::string()) == hash;
    TESSERA_CHECK(!contents.results() || same_case,
                  "--restart auto: output folder '"
                      << output << "' holds " << describe(contents)
                      << " with another case and no checkpoint to continue; replace it with "
                         "--overwrite, or choose another output.directory");
    if (contents.results())
      console.out() << "tessera: --restart auto: no complete checkpoint of this case in '" << output
                    << "'; starting it again from iteration 0\n";
    return "";
  }
  if (line.restart == latest_checkpoint) {
    TESSERA_CHECK(!contents.latest_checkpoint.empty(),
                  "--restart latest: no complete checkpoint under '"
                      << output
                      << "/checkpoints' (one counts only with its manifest.json); run without "
                         "--restart to start from scratch, or use --restart auto");
    const std::string intact = newest_intact(output, console);
    TESSERA_CHECK(!intact.empty(), "--restart latest: every complete checkpoint under '"
                                       << output
                                       << "/checkpoints' is damaged (see the warnings above); "
                                          "start again with --overwrite or --restart auto");
    return intact;
  }
  if (!line.restart.empty()) {
    check_results_belong_to(line.restart, output, contents);
    check_intact(line.restart);
    return line.restart;
  }
  TESSERA_CHECK(!contents.results(), "output folder '" << output << "' holds " << describe(contents)
                                                       << "; " << choices(output));
  return "";
}

/// The stage index and key of "training.stages.<k>.<key>", or nullopt for another path.
std::optional<std::pair<std::size_t, std::string>> stage_key(const std::string& path) {
  const std::string prefix = "training.stages.";
  if (path.rfind(prefix, 0) != 0) return std::nullopt;
  const std::size_t dot = path.find('.', prefix.size());
  if (dot == std::string::npos) return std::nullopt;
  const std::string index = path.substr(prefix.size(), dot - prefix.size());
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::make_pair(static_cast<std::size_t>(std::stoul(index)), path.substr(dot + 1));
}

/// Keys whose change leaves the trained past as it was: the description, where output goes, how
/// often the run reports, how subdomains are placed on ranks, and the schedule of the stages not
/// yet finished.
bool is_allowed_difference(const std::string& path, std::size_t stages, std::size_t open_stage) {
  if (path == "device" || path == "output" || path.rfind("output.", 0) == 0) return true;
  if (path == "description" || path.rfind("description.", 0) == 0) return true;
  // How the subdomains and points are spread over ranks does not change the results (slices:
  // beyond rounding, which the continued run notes).
  for (const char* key :
       {"training.log_every", "training.checkpoint_every", "training.time_limit",
        "decomposition.ranks_per_subdomain", "decomposition.balance", "decomposition.slices"})
    if (path == key) return true;
  const auto stage = stage_key(path);
  if (!stage) return false;
  const auto& [index, key] = *stage;
  if (index + 1 == stages && key == "iterations") return true;
  const bool schedule = key == "iterations" || key == "lr" || key == "clip" ||
                        key.rfind("decay", 0) == 0 || key.rfind("warmup", 0) == 0;
  return schedule && index >= open_stage;
}

void collect_differences(const nlohmann::json& before, const nlohmann::json& now,
                         const std::string& path, std::size_t stages, std::size_t open_stage,
                         std::vector<std::string>& out) {
  if (before == now || is_allowed_difference(path, stages, open_stage)) return;
  const auto child = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (before.is_object() && now.is_object()) {
    for (const auto& [key, value] : before.items())
      collect_differences(value, now.contains(key) ? now[key] : nlohmann::json(), child(key),
                          stages, open_stage, out);
    for (const auto& [key, value] : now.items())
      if (!before.contains(key))
        collect_differences(nlohmann::json(), value, child(key), stages, open_stage, out);
    return;
  }
  if (before.is_array() && now.is_array() && before.size() == now.size()) {
    for (std::size_t i = 0; i < before.size(); ++i)
      collect_differences(before[i], now[i], child(std::to_string(i)), stages, open_stage, out);
    return;
  }
  const auto shown = [](const nlohmann::json& v) { return v.is_null() ? "(absent)" : v.dump(); };
  out.push_back((path.empty() ? std::string("(the case)") : path) + ": " + shown(before) + " -> " +
                shown(now));
}

/// Throws when the checkpoint with `manifest` at `directory` was written for a case that
/// differs from this run's case `c` in a key that changes the run's past.
void check_same_run(const std::string& directory, const nlohmann::json& manifest,
                    const io::Case& c) {
  if (manifest.contains("run") && manifest["run"].contains("case")) {
    const int64_t open = manifest.value("stage", int64_t{0});
    // The open stage's length as it will run, also where the file leaves it to the default.
    nlohmann::json now = c.effective;
    if (open >= 0 && static_cast<std::size_t>(open) < c.training.stages.size() &&
        now.contains("training") && now["training"].contains("stages") &&
        now["training"]["stages"].is_array() &&
        static_cast<std::size_t>(open) < now["training"]["stages"].size())
      now["training"]["stages"][static_cast<std::size_t>(open)]["iterations"] =
          c.training.stages[static_cast<std::size_t>(open)].iterations;
    const auto differences = case_differences(manifest["run"]["case"], now, open,
                                              manifest.value("stage_step", int64_t{0}));
    std::string listed;
    for (const auto& difference : differences) listed += (listed.empty() ? "" : "; ") + difference;
    if (!differences.empty())
      TESSERA_FAIL("checkpoint '" << directory
                                  << "' was written for a different case; these keys differ: "
                                  << listed
                                  << ". Undo those changes to continue it, or start a new run "
                                     "(--overwrite, or another output.directory)");
  }
}

/// A run continued from an older checkpoint of this folder abandons the later ones: they move
/// to <output>/superseded/<this run's start>-<pid>/ (kept, not deleted), so that --restart
/// latest and pruning see only the continued line of checkpoints.
void set_aside_later_checkpoints(const std::string& output, const std::string& checkpoint,
                                 int64_t iteration, const std::string& started, Console& console) {
  if (!is_inside(checkpoint, fs::path(output) / "checkpoints")) return;
  const std::string into =
      (fs::path(output) / "superseded" / (compact_time(started) + "-" + std::to_string(::getpid())))
          .string();
  const auto moved = io::set_aside_checkpoints_after(output, iteration, into);
  if (moved.empty()) return;
  console.out() << "tessera: continuing from iteration " << iteration << "; moved the "
                << moved.size() << " later checkpoint(s) (" << moved.front()
                << (moved.size() > 1 ? " .. " + moved.back() : std::string()) << ") to '" << into
                << "'\n";
}

void write_record(const std::string& output, nlohmann::json record) {
  io::write_json_atomically((fs::path(output) / "run.json").string(), record);
}

}  // namespace

std::string case_hash(const nlohmann::json& effective) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : effective.dump()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::vector<std::string> case_differences(const nlohmann::json& before, const nlohmann::json& now,
                                          int64_t open_stage, int64_t steps_done) {
  std::size_t stages = 0;
  if (now.contains("training") && now["training"].contains("stages") &&
      now["training"]["stages"].is_array())
    stages = now["training"]["stages"].size();
  std::vector<std::string> out;
  collect_differences(before, now, "", stages,
                      static_cast<std::size_t>(std::max<int64_t>(open_stage, 0)), out);
  // A shorter open stage is a schedule change only while it still lies ahead.
  if (open_stage >= 0 && static_cast<std::size_t>(open_stage) < stages) {
    const auto& stage = now["training"]["stages"][static_cast<std::size_t>(open_stage)];
    if (stage.contains("iterations") && stage["iterations"].is_number_integer() &&
        stage["iterations"].get<int64_t>() < steps_done)
      out.push_back("training.stages." + std::to_string(open_stage) + ".iterations: " +
                    stage["iterations"].dump() + " is below the " + std::to_string(steps_done) +
                    " steps the checkpoint already took in that stage");
  }
  return out;
}

RunClaim claim_output_folder(const parallel::Communicator& comm, const Setup& setup,
                             const CommandLine& line, Console& console) {
  RunClaim claim;
  const auto& c = setup.input;
  const std::string& output = c.output.directory;
  if (comm.rank() == 0) {
    const std::string started = utc_now();
    claim.lock = io::OutputLock::try_acquire(output, "pid " + std::to_string(::getpid()) + " on " +
                                                         host_name() + ", case '" + c.name +
                                                         "', started " + started);
    TESSERA_CHECK(claim.lock, "output folder '" << output << "' is in use by another run ("
                                                << io::OutputLock::holder(output)
                                                << "); wait for it to end, or choose another "
                                                   "output.directory");
    const std::string hash = case_hash(c.effective);
    claim.restart = resolve_restart(line, output, inspect(output), hash, console);
    std::string run_id;
    if (!claim.restart.empty()) {
      const auto manifest = io::read_manifest(claim.restart);
      check_same_run(claim.restart, manifest, c);
      run_id = io::checkpoint_run_id(claim.restart);
      set_aside_later_checkpoints(output, claim.restart, manifest.value("iteration", int64_t{0}),
                                  started, console);
    }
    if (run_id.empty()) run_id = new_run_id(started);
    claim.record = {
        {"run_id", run_id},
        {"case_hash", hash},
        {"case", c.effective},
        {"case_file", c.file},
        {"case_folder", std::filesystem::absolute(c.folder).lexically_normal().string()},
        {"started", started}};
    auto running = claim.record;
    running["status"] = "running";
    write_record(output, running);
  }
  claim.restart = comm.broadcast_from_root(claim.restart);
  return claim;
}

void record_forced_stops(const RunClaim& claim, const std::string& output) {
  if (!claim.lock) return;
  core::set_forced_stop_action([record = claim.record, output](core::RunPhase interrupted) {
    try {
      const std::string latest = io::latest_checkpoint(output);
      const bool ours =
          !latest.empty() && io::checkpoint_run_id(latest) == record.value("run_id", "");
      const char* phase = interrupted == core::RunPhase::setup ? "set-up" : "training";
      std::fprintf(stderr, "tessera: %s during %s: stopped without a new checkpoint; %s\n",
                   core::stop_signal_name(), phase,
                   ours
                       ? ("continue from " + latest + " with --restart auto").c_str()
                       : "no checkpoint of this run to continue from; --restart auto starts again");
      auto stopped = record;
      stopped["status"] = "stopped";
      stopped["stop_reason"] = core::stop_signal_name();
      stopped["stopped_in"] = phase;
      stopped["finished"] = utc_now();
      if (ours)
        stopped["checkpoint"] = fs::path(latest).lexically_relative(output).generic_string();
      write_record(output, stopped);
    } catch (...) {
      // The process ends either way; run.json then still says "running".
    }
  });
}

void record_failure(const RunClaim& claim, const std::string& output, const std::string& message) {
  if (!claim.lock) return;
  try {
    auto failed = claim.record;
    failed["status"] = "failed";
    failed["finished"] = utc_now();
    failed["message"] = message;
    write_record(output, failed);
  } catch (const std::exception&) {
    // The failure being reported matters more than the record of it.
  }
}

}  // namespace tessera::app
