#pragma once
/// The failure to write one of a run's result files.
#include "tessera/core/error.hpp"

namespace tessera::io {

/// A result file (the output .h5 and .xmf, history.jsonl, tessera.log, run.json) could not be
/// written: a full disk, a quota, an I/O error. The message names the file and the cause.
/// Nothing written before is touched, so the run can be continued from its last checkpoint.
class WriteError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessera::io
