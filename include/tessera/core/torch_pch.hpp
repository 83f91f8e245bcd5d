#pragma once
// Precompiled header: the LibTorch includes every module uses. Compiling torch/torch.h is slow
// enough to dominate the build if every translation unit pays for it; this pays it once
// (docs/benchmarks.md, "Precompiled LibTorch header").
#include <torch/torch.h>
