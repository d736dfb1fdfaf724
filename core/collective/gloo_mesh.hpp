// Gloo's halving-doubling all-reduce (Debian's libgloo, its TCP transport) as troupe's sum among
// processes when the job says cluster.collective "gloo": 2 log2(N) steps a sum where the socket
// ring takes 2(N - 1), for the same bytes per rank, so it wins where a step's latency, not its
// bandwidth, is what many ranks pay (docs/benchmarks.md measures where).
//
// Forming follows the socket ring's three steps, the coordinator relaying what gloo's
// rendezvous store would: on "open" each rank makes gloo's connection to every other rank, each
// listening on a port of its own (`address`: where, as opaque bytes); on "connect" it is given
// every rank's and the connections are made on a thread of its own; "join" waits until they all
// are. Gloo's connections carry no secret and no encryption: a run under --tls refuses "gloo",
// and a network where strangers can reach the nodes' ports should keep the socket ring.
//
// Every rank ends a sum with the same bits (halving-doubling reduces each slice on one rank and
// hands it out), but in another order than the ring's, so the two agree to rounding.
//
// Thread safety: forming (address, connect, join) from one thread; all_reduce from one thread
// at a time; interrupt from any.
#pragma once

#include "core/collective/cross_process_sum.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

/// Whether this build has gloo (CMake option TROUPE_GLOO); without it a mesh refuses to form.
bool gloo_built_in();

/// Why a run across nodes cannot sum through gloo (under TLS, `tls`; or without gloo built
/// in), as the words after "cluster.collective"; "" when it can.
std::string gloo_refusal(bool tls);

class gloo_mesh final : public cross_process_sum {
 public:
  /// Starts forming rank `rank` of `ranks` on `host` (a name or address of this node's): its
  /// listeners. Each connection and each wait of a sum gives up after `timeout_s`. Throws
  /// ring_link_error when it cannot listen there.
  gloo_mesh(const std::string& host, int64_t rank, int64_t ranks, double timeout_s);
  /// Closes the connections; a forming under way ends on its own thread soon after.
  ~gloo_mesh() override;
  gloo_mesh(const gloo_mesh&) = delete;
  gloo_mesh& operator=(const gloo_mesh&) = delete;

  /// This rank's part of the rendezvous: where each other rank reaches it.
  std::string address();
  /// Every rank's part, by rank: the connections are made in the background. Throws
  /// std::invalid_argument for parts that do not fit, or a second time.
  void connect(const std::vector<std::string>& addresses);
  /// Waits until every connection is made. Throws ring_link_error when one fails or
  /// `timeout_s` passes (the mesh is then broken), std::invalid_argument before connect.
  void join(double timeout_s);

  void all_reduce(int64_t round, at::Tensor buffer, double idle_timeout_s,
                  const std::atomic<bool>* abort = nullptr) override;
  int64_t rank() const override { return rank_; }
  int64_t ranks() const override { return ranks_; }
  int64_t received() const override;
  void interrupt() override;

 private:
  struct forming;  // the context and its connecting thread's state, shared with the thread
  struct summing;  // the formed context and gloo's algorithm for the buffer in use

  int64_t rank_;
  int64_t ranks_;
  std::shared_ptr<forming> forming_;
  std::unique_ptr<summing> summing_;
};

}  // namespace troupe
