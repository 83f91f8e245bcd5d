#pragma once
/// Neighbour exchange of interface data: non-blocking point-to-point messages, posted before
/// the interior work and waited for after it. A channel whose two sides live on the same rank
/// is local: its values never pass through MPI (send() copies them straight to the other side,
/// and the trainer hands its tensors over on the device instead, train/interface_coupling.hpp).
/// Values travel as float64, which holds every float32 and float64 value exactly, so the
/// result does not depend on how subdomains map to ranks.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "tessera/parallel/environment.hpp"

namespace tessera::parallel {

class InterfaceExchange {
 public:
  explicit InterfaceExchange(Communicator comm) : comm_(comm) {}
  ~InterfaceExchange();
  InterfaceExchange(const InterfaceExchange&) = delete;
  InterfaceExchange& operator=(const InterfaceExchange&) = delete;

  /// This rank holds `side` (0 or 1) of interface `id`; the other side lives on `peer_rank`;
  /// each message carries `count` doubles.
  void add(int id, int side, int peer_rank, int64_t count);

  /// Whether both sides of interface `id` live on this rank (`side` is this rank's).
  bool local(int id, int side) const;

  /// Posts every receive. Call before send().
  void start_receives();
  /// Sends this side's values to the other side (non-blocking; `values` is copied).
  void send(int id, int side, const double* values, int64_t count);
  /// Lets MPI move messages in flight without blocking. MPICH (ch4, UCX) has no progress
  /// thread: a message posted with Isend moves only while the sender or receiver is inside an
  /// MPI call, so the trainer calls this between pieces of interior work.
  void progress();
  /// Waits for every receive posted by start_receives(). Sends are completed at the next
  /// start_receives() (or in the destructor): their completion may need the receiver's
  /// acknowledgement, which is no reason to hold up this rank's training. Collective in
  /// effect: every neighbour must send.
  void wait();
  /// What the other side sent to `side` of interface `id`.
  const std::vector<double>& received(int id, int side) const;

  /// Seconds spent posting/packing (exchange) and blocked in wait (wait), cumulative.
  double exchange_seconds() const { return exchange_s_; }
  double wait_seconds() const { return wait_s_; }

 private:
  struct Channel {
    int peer = 0;
    int64_t count = 0;
    std::vector<double> incoming, outgoing;
  };
  Communicator comm_;
  std::map<std::pair<int, int>, Channel> channels_;
  std::vector<MPI_Request> receives_, sends_;
  double exchange_s_ = 0, wait_s_ = 0;
};

}  // namespace tessera::parallel
