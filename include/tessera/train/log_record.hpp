#pragma once
/// One logged iteration, as history.jsonl records it (docs/output-format.md). All numbers are
/// global: the same on every rank.
#include <cstdint>
#include <map>
#include <string>

namespace tessera::train {

/// Relative L2 errors against the exact solution or the reference.
struct RelativeErrors {
  std::map<std::string, double> fields;  ///< per field that has one
  /// sqrt(sum over those fields of sum (u - u_ref)^2 / sum over them of sum u_ref^2): the error
  /// of the fields stacked into one vector; -1 with fewer than two fields.
  double stacked = -1;
};

struct LogRecord {
  int64_t iteration = 0;
  int64_t total_iterations = 0;
  std::string stage;
  double wall_s = 0;
  double lr = 0;
  double loss = 0;                           ///< weighted sum of the terms
  std::map<std::string, double> terms;       ///< unweighted global mean squares
  std::map<std::string, double> weights;     ///< current weights (adaptive weighting moves them)
  std::map<std::string, double> rel_l2;      ///< per field, when an exact/reference exists
  double rel_l2_stacked = -1;                ///< over every field of rel_l2 (-1: fewer than 2)
  std::map<std::string, double> parameters;  ///< learned scalars
  std::map<std::string, double> time_s;      ///< compute, exchange, wait, sync (this rank)
  double interface_jump = -1;                ///< RMS field jump over all interfaces (-1: none)
  bool final = false;
};

}  // namespace tessera::train
