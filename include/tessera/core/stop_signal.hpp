#pragma once
/// SIGTERM and SIGUSR1 (what Slurm sends before a job's time limit, with --signal) ask the run
/// to stop cleanly: the handler only records the signal; the trainer looks at it at its next log
/// iteration, agrees with every rank to stop there, writes a checkpoint and the output.
///
/// Where that clean stop cannot come in time (set-up has no iteration to stop at; an L-BFGS
/// log interval can last minutes), a watchdog thread ends the process: at once during set-up,
/// a grace period after the signal during training, never once the ranks have agreed to stop
/// (their checkpoint and output are being written). Complete checkpoints stay valid, since a
/// checkpoint counts only once its manifest, written last, exists.
#include <functional>

namespace tessera::core {

/// Installs the handlers (once; later calls do nothing).
void install_stop_handlers();
/// The signal received (SIGTERM or SIGUSR1), or 0.
int stop_signal();
/// "SIGTERM", "SIGUSR1" or "" for stop_signal().
const char* stop_signal_name();

/// What the process is doing, for the watchdog.
enum class RunPhase { setup, training, finishing };
void set_run_phase(RunPhase phase);
RunPhase run_phase();

/// Starts the watchdog (once): after a stop signal it waits, in the training phase, `grace_s`
/// seconds for SIGTERM and `warning_grace_s` for SIGUSR1 (a warning with time to spare), in
/// set-up `setup_delay_s`, and for ever while finishing; then it calls the forced-stop action
/// with the phase it interrupted and ends the process with `exit_code`.
void start_stop_watchdog(double grace_s, double warning_grace_s, double setup_delay_s,
                         int exit_code);
/// What the watchdog does before it ends the process (e.g. record the stop); replaces the
/// previous action. The action runs on the watchdog's thread and must not throw.
void set_forced_stop_action(std::function<void(RunPhase interrupted)> action);

}  // namespace tessera::core
