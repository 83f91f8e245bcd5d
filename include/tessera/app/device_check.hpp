#pragma once
/// The ranks' devices checked together before training: one kind of device for the whole job,
/// a warning when ranks share a GPU, and the memory estimate against each GPU's share.
#include "tessera/app/console.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

/// Collective. Throws on every rank (the same line) when some ranks train on GPUs and others
/// on CPUs; rank 0 warns when ranks share a GPU; a rank whose estimate exceeds its share of its
/// GPU's free memory throws, and the others with it.
void check_devices(const parallel::Communicator& comm, const Setup& setup, Console& console);

}  // namespace tessera::app
