#pragma once
/// Sizes checked before anything is allocated: a case whose networks, points, subdomains or
/// output grid would not fit in memory is refused with one line naming the key, the estimate and
/// the limit, from `tessera check` as from `tessera run`.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/geometry/box.hpp"
#include "tessera/io/case.hpp"

namespace tessera::app {

/// The memory one rank may use: TESSERA_MEMORY_PER_RANK (bytes, or with a K/M/G/T suffix) when
/// set, else the machine's physical memory or the memory limit of the job's control group
/// (Slurm's --mem), whichever is smaller. Throws on a malformed value.
double memory_limit_bytes();

/// A control group's memory limit from the text of its memory.max (cgroup v2: bytes or "max")
/// or memory.limit_in_bytes (v1: bytes, a huge count meaning none); nullopt for no limit.
std::optional<double> cgroup_limit_value(const std::string& text);

/// The limit files to read for a process whose /proc/self/cgroup holds `proc_self_cgroup`: the
/// memory limit file of its group and of every ancestor (a job's limit may sit on an ancestor of
/// the task's group), for cgroup v2 and v1.
std::vector<std::string> cgroup_limit_files(const std::string& proc_self_cgroup);

/// Bytes one collocation point holds during a training pass: its value and first and second
/// derivative streams through every hidden layer, kept for the backward pass.
double pass_bytes_per_point(const io::Case& c);

/// The points per part of a pass from training.batch (its `points`, or its `memory` over
/// pass_bytes_per_point), 0 without training.batch.
int64_t batch_points(const io::Case& c);

/// The memory one rank may use on its GPU: the device's free memory at the start, shared
/// evenly by the `ranks_sharing` ranks that train on it.
double gpu_memory_limit_bytes(double free_bytes, int ranks_sharing);

/// Throws when the estimated memory of one of `ranks` ranks exceeds `limit_bytes`; the message
/// names the key whose share is largest and `limit_source` (what the limit is). `space` is the
/// bounding box of the spatial domain, which sizes an output mesh.
void check_memory_estimate(
    const io::Case& c, int ranks, double limit_bytes, const geometry::Box& space,
    const std::string& limit_source =
        "this machine's memory or the job's limit, or TESSERA_MEMORY_PER_RANK");

}  // namespace tessera::app
