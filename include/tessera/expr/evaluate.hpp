#pragma once
/// Walking a parsed tree on tensors.
#include <string>

#include <torch/types.h>

#include "tessera/expr/ast.hpp"
#include "tessera/expr/coordinate_cache.hpp"
#include "tessera/expr/environment.hpp"

namespace tessera::expr {

/// Evaluates `node` with autograd intact. Returns a tensor in env.coordinates' dtype and
/// device that is 0-d (constant subtree) or [n]. Missing or misshapen inputs throw with `key`.
/// With a `cache` built for this tree, its subtrees of coordinates only are computed once per
/// point set (coordinate_cache.hpp).
torch::Tensor evaluate_tree(const Node& node, const Environment& env, const std::string& key,
                            CoordinateCache* cache = nullptr);

}  // namespace tessera::expr
