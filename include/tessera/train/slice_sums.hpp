#pragma once
/// Sums over fixed slices of the points, taken in slice order. When several ranks share one
/// network (fbpinn), every point set is cut into a fixed number of slices and each rank
/// evaluates whole slices. A floating-point sum depends on how it is grouped, so the ranks
/// never add up partial sums of their own: each slice's figures and gradient are kept apart,
/// gathered, and added slice after slice. Every rank then holds the same bits, and so does a
/// run on any other number of ranks with the same slices.
#include <torch/types.h>

#include <vector>

#include "tessera/parallel/environment.hpp"

namespace tessera::train {

/// Which slices of every point set this rank evaluates: [first, end) of `count`, for rank
/// `index` of a group of `ranks` (contiguous runs, so rank order is slice order).
struct SliceShare {
  int count = 0;  ///< 0: the points are not shared out by slices
  int first = 0, end = 0;
  /// The ranks that share the slices (this rank alone when there is one).
  parallel::Communicator group = parallel::Communicator::self();

  bool on() const { return count > 0; }
  static SliceShare of(int count, int index, int ranks, parallel::Communicator group);
};

/// What one part of a pass (a slice, or a piece of one) contributes to the sums.
struct SliceRecord {
  torch::Tensor gradient;       ///< every trained tensor's gradient, flattened; undefined: none
  std::vector<double> figures;  ///< loss figures (and term gradients), in a fixed layout
};

/// Every rank's records of `group`, in rank order, each rank's in its own order, folded: the
/// first record plus the second, plus the third, and so on, gradients in their dtype and
/// figures in float64. All records have the same shape. Collective over `group`.
SliceRecord fold_slice_records(const parallel::Communicator& group,
                               const std::vector<SliceRecord>& mine);

/// The gradients of `tensors` flattened into one tensor of their dtype (zeros where a tensor
/// has none).
torch::Tensor flat_gradients(const std::vector<torch::Tensor>& tensors);

/// Sets each tensor's gradient to its piece of `flat` (the layout of flat_gradients()).
void set_gradients(const std::vector<torch::Tensor>& tensors, const torch::Tensor& flat);

}  // namespace tessera::train
