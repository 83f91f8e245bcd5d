#pragma once
/// What a run shows a person: the problem summary, the progress line, and the history record.
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "tessera/app/console.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/train/log_record.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

/// A LogRecord as one history.jsonl object (docs/output-format.md).
nlohmann::json history_json(const train::LogRecord& record);

/// Prints the resolved problem: coordinates, fields, derivatives needed, loss terms with their
/// point counts and weights, network and parameter count, subdomains and interfaces. Used by
/// `check` and at run start (rank 0).
void print_problem_summary(std::ostream& out, const Setup& setup, const ModelSummary& model);

/// A warning per interface that has the domain on both sides over only part of its facet
/// (a cut along a wall, or across a hole), with that part's share.
void warn_partial_interfaces(const Console& console, const Setup& setup);

/// Per-phase times (compute, exchange, wait, sync) as min/mean/max over ranks, so load
/// imbalance is visible; `out` is rank 0's console. Collective over comm.
void print_timing_table(const parallel::Communicator& comm, const train::LogRecord& record,
                        std::ostream& out);

/// The progress line on rank 0: iteration, stage, loss, relative errors, iterations/s, ETA.
class ProgressPrinter {
 public:
  /// `out`: rank 0's console (a null stream on the other ranks). `budget_s`: a budget ends
  /// training by then, which caps the time left shown.
  explicit ProgressPrinter(std::ostream& out, std::optional<double> budget_s = std::nullopt)
      : out_(out), budget_s_(budget_s) {}
  void print(const train::LogRecord& record);

 private:
  std::ostream& out_;
  std::optional<double> budget_s_;
  int64_t last_iteration_ = 0;
  double last_wall_ = 0;
};

}  // namespace tessera::app
