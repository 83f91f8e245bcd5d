#pragma once
/// The global loss figures of a log record, reduced from every rank's local ones: per term its
/// mean over all the job's points (sums and counts, never averages of averages), the weighted
/// loss, and the RMS field jump over all interfaces.
#include <map>
#include <string>
#include <vector>

#include "tessera/train/local_loss.hpp"
#include "tessera/train/log_record.hpp"
#include "tessera/train/reduction.hpp"

namespace tessera::train {

/// Fills `record`'s terms, loss and interface_jump from this rank's `loss`. Collective.
void reduce_loss_figures(const LocalLoss& loss, const std::vector<std::string>& term_names,
                         const std::map<std::string, double>& weights, Reduction& reduction,
                         LogRecord& record);

}  // namespace tessera::train
