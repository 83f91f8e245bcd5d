#pragma once
/// The coupling of neighbouring subdomains (XPINN, cPINN): each owned interface side's values
/// go to the neighbour in point-to-point messages (or, for a neighbour on the same rank, are
/// handed over on the device), and the interface loss terms compare this side's values (with
/// graph) with the neighbour's received ones (detached), so a subdomain's gradient never
/// depends on which rank trains its neighbour.
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessera/parallel/exchange.hpp"
#include "tessera/train/local_loss.hpp"
#include "tessera/train/subdomain_model.hpp"

namespace tessera::train {

class InterfaceCoupling {
 public:
  /// `exchange`: the channels of the owned interface sides (null: no interfaces).
  explicit InterfaceCoupling(parallel::InterfaceExchange* exchange) : exchange_(exchange) {}

  bool active() const { return exchange_ != nullptr; }

  /// Computes and sends every owned interface side's values; returns them (with graph where
  /// `create_graph[i]` for owned[i]), indexed like `owned`, then like each model's interfaces.
  std::vector<std::vector<torch::Tensor>> start(const std::vector<SubdomainModel*>& owned,
                                                const std::vector<bool>& create_graph);
  std::vector<std::vector<torch::Tensor>> start(const std::vector<SubdomainModel*>& owned,
                                                bool create_graph) {
    return start(owned, std::vector<bool>(owned.size(), create_graph));
  }
  /// Lets the messages in flight advance (between pieces of interior work).
  void progress();
  /// Waits for the neighbours' values and stores them in each model's `remote`.
  void finish(const std::vector<SubdomainModel*>& owned);

  /// Adds interface side `k`'s terms on part `chunk` of its points (`local`: this side's
  /// values there) against those rows of `model.remote[k]` to `loss`, and its field jump on
  /// the lower side (each interface counted once). A neighbour that diverged may send
  /// non-finite values until it is rolled back: the points where it did add nothing (no read).
  static void add_terms(LocalLoss& loss, const SubdomainModel& model, std::size_t k,
                        const torch::Tensor& local, const std::map<std::string, double>& weights,
                        const physics::Chunk& chunk = {});

  /// One whole interface side (no parts) of an owned subdomain and its values.
  struct SideValues {
    const SubdomainModel* model;
    std::size_t k;  ///< the side's index in model->interfaces
    torch::Tensor local;
  };
  /// add_terms for many whole sides at once (interface_terms.cpp): the sides whose terms read
  /// the same columns share one squared jump and one weighted sum, so the loss and its backward
  /// are a few operations whatever the number of sides. Every figure of a subdomain (its
  /// gradient, its logged sums) is formed from its own rows in a fixed order: the same bits
  /// whichever other sides share the call. `probes`: keep each term's probe (loss balancing).
  static void add_terms_together(LocalLoss& loss, const std::vector<SideValues>& sides,
                                 const std::map<std::string, double>& weights, bool probes);

  double exchange_seconds() const { return exchange_ ? exchange_->exchange_seconds() : 0.0; }
  double wait_seconds() const { return exchange_ ? exchange_->wait_seconds() : 0.0; }

 private:
  parallel::InterfaceExchange* exchange_;
  /// This round's values of the sides whose neighbour is on this rank, by (interface, side).
  std::map<std::pair<int, int>, torch::Tensor> handed_over_;
};

}  // namespace tessera::train
