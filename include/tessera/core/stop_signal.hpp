#pragma once
/// SIGTERM and SIGUSR1 (what Slurm sends before a job's time limit, with --signal) ask the run
/// to stop cleanly: the handler only records the signal; the trainer looks at it at its next log
/// iteration, agrees with every rank to stop there, writes a checkpoint and the output.

namespace tessera::core {

/// Installs the handlers (once; later calls do nothing).
void install_stop_handlers();
/// The signal received (SIGTERM or SIGUSR1), or 0.
int stop_signal();
/// "SIGTERM", "SIGUSR1" or "" for stop_signal().
const char* stop_signal_name();

}  // namespace tessera::core
