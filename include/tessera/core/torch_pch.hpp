#pragma once
// Precompiled header: the LibTorch includes every module uses. Compiling torch/torch.h takes
// ~25 s per translation unit on the development machine (facts.md); this pays it once.
#include <torch/torch.h>
