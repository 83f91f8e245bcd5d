#include "tessera/parallel/exchange.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/core/timer.hpp"

namespace tessera::parallel {
namespace {
// The receiver's side in the tag: both directions of one interface never match each other.
int tag_of(int id, int receiving_side) { return 2 * id + receiving_side; }
}  // namespace

InterfaceExchange::~InterfaceExchange() {
  // An exception between send and wait leaves requests open: cancel and complete them before
  // their buffers go away (MPI must not write into freed memory).
  for (auto& r : receives_) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  if (!sends_.empty())
    MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
}

void InterfaceExchange::add(int id, int side, int peer_rank, int64_t count) {
  TESSERA_CHECK(side == 0 || side == 1, "interface side must be 0 or 1");
  Channel channel;
  channel.peer = peer_rank;
  channel.count = count;
  channel.incoming.resize(static_cast<std::size_t>(count));
  channel.outgoing.resize(static_cast<std::size_t>(count));
  channels_[{id, side}] = std::move(channel);
}

void InterfaceExchange::start_receives() {
  {
    // The previous round's sends: long complete in practice; their buffers are reused below.
    core::ScopedTimer timer(wait_s_);
    if (!sends_.empty())
      MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
    sends_.clear();
  }
  core::ScopedTimer timer(exchange_s_);
  TESSERA_ASSERT(receives_.empty(), "exchange started twice without wait()");
  for (auto& [key, channel] : channels_) {
    if (channel.peer == comm_.rank()) continue;
    receives_.emplace_back();
    MPI_Irecv(channel.incoming.data(), static_cast<int>(channel.count), MPI_DOUBLE, channel.peer,
              tag_of(key.first, key.second), comm_.native(), &receives_.back());
  }
}

void InterfaceExchange::send(int id, int side, const double* values, int64_t count) {
  core::ScopedTimer timer(exchange_s_);
  auto it = channels_.find({id, side});
  TESSERA_ASSERT(it != channels_.end(),
                 "interface " << id << " side " << side << " not registered");
  Channel& channel = it->second;
  TESSERA_ASSERT(count == channel.count,
                 "interface " << id << " sends " << count << " values, expected " << channel.count);
  if (channel.peer == comm_.rank()) {
    auto& other = channels_.at({id, 1 - side});
    std::copy(values, values + count, other.incoming.begin());
    return;
  }
  std::copy(values, values + count, channel.outgoing.begin());
  sends_.emplace_back();
  MPI_Isend(channel.outgoing.data(), static_cast<int>(count), MPI_DOUBLE, channel.peer,
            tag_of(id, 1 - side), comm_.native(), &sends_.back());
}

void InterfaceExchange::progress() {
  if (receives_.empty()) return;
  core::ScopedTimer timer(exchange_s_);
  int done = 0;
  MPI_Testall(static_cast<int>(receives_.size()), receives_.data(), &done, MPI_STATUSES_IGNORE);
}

void InterfaceExchange::wait() {
  core::ScopedTimer timer(wait_s_);
  MPI_Waitall(static_cast<int>(receives_.size()), receives_.data(), MPI_STATUSES_IGNORE);
  receives_.clear();
}

bool InterfaceExchange::local(int id, int side) const {
  auto it = channels_.find({id, side});
  TESSERA_ASSERT(it != channels_.end(),
                 "interface " << id << " side " << side << " not registered");
  return it->second.peer == comm_.rank();
}

const std::vector<double>& InterfaceExchange::received(int id, int side) const {
  auto it = channels_.find({id, side});
  TESSERA_ASSERT(it != channels_.end(),
                 "interface " << id << " side " << side << " not registered");
  return it->second.incoming;
}

}  // namespace tessera::parallel
