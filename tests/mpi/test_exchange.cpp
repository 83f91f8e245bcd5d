// InterfaceExchange under MPI: several interfaces per rank, neighbours on the same rank and on
// other ranks, repeated rounds, without deadlock. Run by CTest as
//   mpiexec.mpich -n 2 test_exchange
//   mpiexec.mpich -n 4 test_exchange
// (main: mpi_doctest.hpp).
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "mpi_doctest.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/parallel/exchange.hpp"

using tessera::parallel::Communicator;
using tessera::parallel::InterfaceExchange;

namespace {

struct Link {
  int id, lower, upper;
};

/// The data subdomain `from` sends on side `side` of interface `id` in round `round`: every
/// value depends on all four, so a message that went to the wrong place, the wrong side or is
/// left over from another round shows.
double value(int from, int id, int side, int round, int64_t j) {
  return 1e6 * from + 1e4 * id + 1e3 * side + 10.0 * round + 0.001 * static_cast<double>(j);
}

/// Values per message: different on every interface, so a count mix-up shows.
int64_t count_of(int id) { return 3 + 7 * id; }

/// Ring of `n` subdomains: interface k joins k and k+1 (the last joins n-1 and 0).
std::vector<Link> ring(int n) {
  std::vector<Link> links;
  for (int k = 0; k < n; ++k) {
    const int a = k, b = (k + 1) % n;
    links.push_back({k, std::min(a, b), std::max(a, b)});
  }
  return links;
}

/// nx x ny grid, row-major (x fastest), interfaces by axis then lower id (as Partition does).
std::vector<Link> grid(int nx, int ny) {
  std::vector<Link> links;
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x + 1 < nx; ++x)
      links.push_back({static_cast<int>(links.size()), y * nx + x, y * nx + x + 1});
  for (int y = 0; y + 1 < ny; ++y)
    for (int x = 0; x < nx; ++x)
      links.push_back({static_cast<int>(links.size()), y * nx + x, (y + 1) * nx + x});
  return links;
}

/// Contiguous blocks (rank_of_subdomains without linking partition).
int rank_of(int subdomain, int subdomains, int ranks) {
  return subdomains >= ranks
             ? static_cast<int>(static_cast<int64_t>(subdomain) * ranks / subdomains)
             : subdomain;
}

/// Runs `rounds` exchanges over `links` between `subdomains` subdomains mapped to the ranks in
/// blocks and checks every received message. `reverse_sends` posts the sends in the opposite
/// order from the registrations. Returns how many messages this rank checked.
int64_t run_exchange(const std::vector<Link>& links, int subdomains, int rounds,
                     bool reverse_sends) {
  const auto comm = Communicator::world();
  const int rank = comm.rank(), size = comm.size();
  InterfaceExchange exchange(comm);
  struct Held {
    int id, side, self, other;
  };
  std::vector<Held> held;
  for (const auto& l : links) {
    if (rank_of(l.lower, subdomains, size) == rank) {
      exchange.add(l.id, 0, rank_of(l.upper, subdomains, size), count_of(l.id));
      held.push_back({l.id, 0, l.lower, l.upper});
    }
    if (rank_of(l.upper, subdomains, size) == rank) {
      exchange.add(l.id, 1, rank_of(l.lower, subdomains, size), count_of(l.id));
      held.push_back({l.id, 1, l.upper, l.lower});
    }
  }
  int64_t checked = 0;
  for (int round = 0; round < rounds; ++round) {
    exchange.start_receives();
    std::vector<Held> order = held;
    if (reverse_sends) std::reverse(order.begin(), order.end());
    for (const auto& h : order) {
      std::vector<double> out(static_cast<std::size_t>(count_of(h.id)));
      for (std::size_t j = 0; j < out.size(); ++j) out[j] = value(h.self, h.id, h.side, round, j);
      exchange.send(h.id, h.side, out.data(), static_cast<int64_t>(out.size()));
      // send() copies: scribbling over our buffer must not change what arrives.
      std::fill(out.begin(), out.end(), -1.0);
    }
    exchange.wait();
    for (const auto& h : held) {
      const auto& in = exchange.received(h.id, h.side);
      CAPTURE(h.id);
      CAPTURE(h.side);
      CAPTURE(round);
      CHECK(static_cast<int64_t>(in.size()) == count_of(h.id));
      bool all_equal = in.size() == static_cast<std::size_t>(count_of(h.id));
      for (std::size_t j = 0; all_equal && j < in.size(); ++j)
        all_equal = in[j] == value(h.other, h.id, 1 - h.side, round, j);
      CHECK(all_equal);
      ++checked;
    }
  }
  CHECK(exchange.exchange_seconds() >= 0.0);
  CHECK(exchange.wait_seconds() >= 0.0);
  return checked;
}

/// Every message sent is received exactly once: each interface is checked twice (both sides)
/// per round, summed over the ranks.
void check_total(int64_t checked, std::size_t links, int rounds) {
  std::vector<double> total{static_cast<double>(checked)};
  Communicator::world().sum_in_place(total);
  CHECK(total[0] == static_cast<double>(2 * links * rounds));
}

}  // namespace

TEST_CASE("a ring of 8 subdomains in rank blocks exchanges id-dependent data 50 times") {
  const auto links = ring(8);
  check_total(run_exchange(links, 8, 50, /*reverse_sends=*/false), links.size(), 50);
}

TEST_CASE("a 4x2 grid of subdomains exchanges correctly when sends come in reverse order") {
  const auto links = grid(4, 2);
  CHECK(links.size() == 10);
  check_total(run_exchange(links, 8, 50, /*reverse_sends=*/true), links.size(), 50);
}

TEST_CASE("neighbours on the same rank go through the exchange like remote ones") {
  // The blocks above already put neighbours on one rank (0-1, 2-3, ...); here every rank also
  // runs a private ring of 3 subdomains on MPI_COMM_SELF, where every message is to self.
  InterfaceExchange exchange(Communicator(MPI_COMM_SELF));
  const auto links = ring(3);
  for (const auto& l : links) {
    exchange.add(l.id, 0, 0, count_of(l.id));
    exchange.add(l.id, 1, 0, count_of(l.id));
  }
  for (int round = 0; round < 50; ++round) {
    exchange.start_receives();
    for (const auto& l : links)
      for (int side = 0; side < 2; ++side) {
        std::vector<double> out(static_cast<std::size_t>(count_of(l.id)));
        const int self = side == 0 ? l.lower : l.upper;
        for (std::size_t j = 0; j < out.size(); ++j) out[j] = value(self, l.id, side, round, j);
        exchange.send(l.id, side, out.data(), static_cast<int64_t>(out.size()));
      }
    exchange.wait();
    for (const auto& l : links)
      for (int side = 0; side < 2; ++side) {
        const int other = side == 0 ? l.upper : l.lower;
        const auto& in = exchange.received(l.id, side);
        bool ok = static_cast<int64_t>(in.size()) == count_of(l.id);
        for (std::size_t j = 0; ok && j < in.size(); ++j)
          ok = in[j] == value(other, l.id, 1 - side, round, j);
        CAPTURE(l.id);
        CAPTURE(side);
        CHECK(ok);
      }
  }
}

TEST_CASE("ranks that own no subdomain take part without deadlock") {
  // 2 subdomains on 2 or 4 ranks: ranks 2 and 3 register nothing and still call every step.
  const std::vector<Link> links{{0, 0, 1}};
  check_total(run_exchange(links, 2, 50, /*reverse_sends=*/false), links.size(), 50);
}

TEST_CASE("sending on an unregistered interface or with the wrong count is an error") {
  InterfaceExchange exchange(Communicator(MPI_COMM_SELF));
  exchange.add(0, 0, 0, 4);
  exchange.add(0, 1, 0, 4);
  std::vector<double> data(5, 1.0);
  CHECK_THROWS(exchange.add(1, 2, 0, 4));
  CHECK_THROWS(exchange.received(7, 0));
  exchange.start_receives();
  CHECK_THROWS(exchange.send(7, 0, data.data(), 4));
  CHECK_THROWS(exchange.send(0, 0, data.data(), 5));
  // Complete the round properly so nothing is left in flight.
  exchange.send(0, 0, data.data(), 4);
  exchange.send(0, 1, data.data(), 4);
  exchange.wait();
  CHECK(exchange.received(0, 1) == std::vector<double>(4, 1.0));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int status = run_doctest_on_all_ranks(argc, argv, "test_exchange");
  MPI_Finalize();
  return status;
}
