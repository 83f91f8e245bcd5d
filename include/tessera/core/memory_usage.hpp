#pragma once
/// The process's resident memory high-water mark, so that a run can report what its training
/// needed (and users can size training.batch). Linux: /proc/self/status and clear_refs.

namespace tessera::core {

/// Starts a new high-water mark at the current resident size and remembers that size (the
/// libraries, the case and the set-up), so that training's own share can be told apart; false
/// where the system does not allow the reset.
bool reset_peak_memory();

/// The resident high-water mark in bytes since the start or the last reset (0 if unknown).
double peak_memory_bytes();

/// The resident size at the last reset_peak_memory() (0 before one).
double memory_at_reset_bytes();

}  // namespace tessera::core
