#pragma once
/// The values of an expression's subtrees that read only coordinates and numbers (a source term
/// such as 2 pi^2 sin(pi x) sin(pi y)), kept per point set. Training evaluates the same
/// expressions on the same points every iteration until the points are redrawn, and these
/// subtrees give the same values every time: computing them once per point set saves their
/// operations (a dozen per evaluation for the seed problem's source term) on every iteration
/// after the first. The values are the very tensors the first evaluation computed, so results
/// are the same bits either way.
#include <vector>

#include <torch/types.h>

#include "tessera/expr/ast.hpp"

namespace tessera::expr {

class CoordinateCache {
 public:
  /// Caches every largest subtree of `root` that applies an operation to coordinates and
  /// numbers only, except the root itself (a caller may modify the result in place).
  explicit CoordinateCache(const Node& root);

  /// The slot of `node`, or -1 when it is not cached.
  int slot(const Node* node) const;

  /// The values of the cached subtrees at the points `x` (one per slot; undefined until the
  /// first evaluation stores it), or null when nothing is cached for x: no subtree qualifies,
  /// or x requires a gradient (then the subtrees carry a graph that must be built each time).
  /// A point set is known by its storage (held weakly: an entry goes when its points do), its
  /// view of that storage and its version counter, so points redrawn or modified in place
  /// start afresh. Not thread-safe: one thread evaluates a rank's expressions.
  std::vector<torch::Tensor>* values_at(const torch::Tensor& x);

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    int64_t offset = 0, version = 0;
    std::vector<int64_t> sizes, strides;
    torch::ScalarType dtype;
    torch::Device device;
    std::vector<torch::Tensor> values;
  };
  bool same_points(const Entry& entry, const torch::Tensor& x) const;

  std::vector<const Node*> subtrees_;
  std::vector<Entry> entries_;
};

}  // namespace tessera::expr
