#include "core/collective/gloo_mesh.hpp"

#include "core/collective/ring_sockets.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#if TROUPE_HAVE_GLOO
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/context.h>
#include <gloo/transport/tcp/device.h>
#endif

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace troupe {

std::string gloo_refusal(bool tls) {
  if (tls)
    return "\"gloo\" cannot run under --tls: gloo's connections are plain TCP (\"ring\", the "
           "socket ring, is encrypted)";
  if (!gloo_built_in())
    return "\"gloo\": this troupe is built without gloo (CMake option TROUPE_GLOO)";
  return "";
}

#if TROUPE_HAVE_GLOO

bool gloo_built_in() {
  return true;
}

namespace {

// `host` as a numeric address. gloo's own lookup reads past a getaddrinfo that failed (an
// unknown name crashed it): it is handed one that cannot fail.
std::string numeric_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rv = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rv != 0 || found == nullptr)
    throw ring_link_error("gloo cannot listen on " + host + ": " +
                          (rv != 0 ? ::gai_strerror(rv) : "no address"));
  char text[NI_MAXHOST];
  const int named = ::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0,
                                  NI_NUMERICHOST);
  ::freeaddrinfo(found);
  if (named != 0)
    throw ring_link_error("gloo cannot listen on " + host + ": " + ::gai_strerror(named));
  return text;
}

std::chrono::milliseconds milliseconds_of(double seconds) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(seconds));
}

void put_length(std::string& out, std::size_t n) {
  const auto n32 = static_cast<uint32_t>(n);
  out.append(reinterpret_cast<const char*>(&n32), sizeof n32);
}

// Reads a length-prefixed field of `in` at `at`; false when `in` ends first.
bool take_field(const std::string& in, std::size_t& at, std::string& field) {
  uint32_t n = 0;
  if (in.size() - at < sizeof n)
    return false;
  std::memcpy(&n, in.data() + at, sizeof n);
  at += sizeof n;
  if (in.size() - at < n)
    return false;
  field = in.substr(at, n);
  at += n;
  return true;
}

// gloo's Context with the rendezvous done by the coordinator's three steps instead of a store:
// listen makes this rank's connection to each other rank (each listening on a port of its own)
// and says where; connect_to makes one of them, whichever side of it connects.
class relayed_context final : public gloo::Context {
 public:
  relayed_context(int rank, int size) : gloo::Context(rank, size) {}

  // Where each other rank reaches this one, by rank ("" for this rank).
  std::vector<std::string> listen(const std::shared_ptr<gloo::transport::Device>& device) {
    auto context = device->createContext(rank, size);
    context->setTimeout(getTimeout());
    std::vector<std::string> addresses(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i)
      if (i != rank) {
        const auto bytes = context->createPair(i)->address().bytes();
        addresses[static_cast<std::size_t>(i)].assign(bytes.begin(), bytes.end());
      }
    device_ = device;
    transportContext_ = std::move(context);
    return addresses;
  }

  void connect_to(int peer, const std::string& address) {
    getPair(peer)->connect(std::vector<char>(address.begin(), address.end()));
  }
};

std::string encode_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    put_length(out, p.size());
    out += p;
  }
  return out;
}

// `count` length-prefixed parts. Throws std::invalid_argument when `in` is not that.
std::vector<std::string> decode_parts(const std::string& in, std::size_t count) {
  std::vector<std::string> parts(count);
  std::size_t at = 0;
  for (auto& p : parts)
    if (!take_field(in, at, p))
      throw std::invalid_argument("a gloo rendezvous part is cut short");
  if (at != in.size())
    throw std::invalid_argument("a gloo rendezvous part holds more than its ranks");
  return parts;
}

}  // namespace

struct gloo_mesh::forming {
  std::shared_ptr<relayed_context> context;
  std::string part;  ///< encode_parts of where each rank reaches this one
  std::mutex mutex;
  std::condition_variable finished;
  bool started = false;  ///< connecting, on a thread of its own
  bool done = false;
  std::string error;  ///< why a connection failed, once done
};

struct gloo_mesh::summing {
  // gloo's algorithm registers its buffer with the connections under a slot that every rank
  // draws in the same order: one is made per size, over a buffer of its own, the first time a
  // sum of that size comes (every rank sums the same sizes in the same order).
  struct sized {
    at::Tensor staging;
    std::unique_ptr<gloo::AllreduceHalvingDoubling<float>> algorithm;
  };
  std::shared_ptr<gloo::Context> context;
  std::map<int64_t, sized> by_size;
  std::atomic<int64_t> rounds{0};
  std::atomic<bool> broken{false};
};

gloo_mesh::gloo_mesh(const std::string& host, int64_t rank, int64_t ranks, double timeout_s)
    : rank_(rank), ranks_(ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks || ranks > INT_MAX)
    throw std::invalid_argument("gloo_mesh: rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks));
  if (ranks == 1)
    return;
  auto f = std::make_shared<forming>();
  const auto address = numeric_address(host);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    f->context = std::make_shared<relayed_context>(static_cast<int>(rank), static_cast<int>(ranks));
    f->context->setTimeout(milliseconds_of(timeout_s));
    f->part = encode_parts(f->context->listen(device));
  } catch (const std::exception& e) {
    throw ring_link_error(std::string("gloo could not listen on ") + host + ": " + e.what());
  }
  forming_ = std::move(f);
}

gloo_mesh::~gloo_mesh() {
  interrupt();
}

std::string gloo_mesh::address() {
  return forming_ ? forming_->part : "";
}

void gloo_mesh::connect(const std::vector<std::string>& addresses) {
  if (static_cast<int64_t>(addresses.size()) != ranks_)
    throw std::invalid_argument("gloo_mesh: " + std::to_string(addresses.size()) +
                                " rendezvous parts for " + std::to_string(ranks_) + " ranks");
  if (!forming_)
    return;
  // Where each other rank listens for this one.
  std::vector<std::string> peers(addresses.size());
  for (std::size_t r = 0; r < addresses.size(); ++r)
    if (static_cast<int64_t>(r) != rank_)
      peers[r] = decode_parts(addresses[r], addresses.size()).at(static_cast<std::size_t>(rank_));
  {
    std::lock_guard<std::mutex> lock(forming_->mutex);
    if (forming_->started)
      throw std::invalid_argument("gloo_mesh: connected already");
    forming_->started = true;
  }
  // Detached: each connection waits for its peer (at most the mesh's timeout), and the
  // node's other ranks connect meanwhile; it owns what it uses.
  std::thread([f = forming_, peers = std::move(peers), rank = rank_] {
    std::string error;
    try {
      for (std::size_t i = 0; i < peers.size(); ++i)
        if (static_cast<int64_t>(i) != rank)
          f->context->connect_to(static_cast<int>(i), peers[i]);
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> lock(f->mutex);
    f->done = true;
    f->error = std::move(error);
    f->finished.notify_all();
  }).detach();
}

void gloo_mesh::join(double timeout_s) {
  if (!forming_)
    return;
  auto& f = *forming_;
  std::unique_lock<std::mutex> lock(f.mutex);
  if (!f.started)
    throw std::invalid_argument("gloo_mesh: joined before it was connected");
  if (!f.finished.wait_for(lock, milliseconds_of(timeout_s), [&] { return f.done; })) {
    lock.unlock();
    f.context->closeConnections();  // the connecting thread gives up now
    throw ring_link_error(fmt::format("the gloo mesh was not formed within {} s", timeout_s));
  }
  if (!f.error.empty())
    throw ring_link_error("the gloo mesh could not be formed: " + f.error);
  summing_ = std::make_unique<summing>();
  summing_->context = f.context;
}

void gloo_mesh::all_reduce(int64_t, at::Tensor buffer, double, const std::atomic<bool>* abort) {
  if (ranks_ == 1)
    return;
  if (!summing_)
    throw std::logic_error("gloo_mesh: a sum before the mesh was joined");
  if (buffer.scalar_type() != at::kFloat || buffer.dim() != 1 || !buffer.is_contiguous())
    throw std::invalid_argument("gloo_mesh: sums contiguous 1-d float32 buffers");
  if (buffer.numel() > INT_MAX)
    throw std::invalid_argument("gloo_mesh: more than 2^31 elements");
  auto& s = *summing_;
  if (abort != nullptr && abort->load())
    throw ring_link_error("the sum was aborted");
  if (s.broken)
    throw ring_link_error("the gloo mesh is broken by an earlier failure");
  const auto count = buffer.numel();
  try {
    auto& sum = s.by_size[count];
    if (!sum.algorithm) {
      sum.staging = at::empty({count}, at::kFloat);
      sum.algorithm = std::make_unique<gloo::AllreduceHalvingDoubling<float>>(
          s.context, std::vector<float*>{sum.staging.data_ptr<float>()}, static_cast<int>(count));
    }
    sum.staging.copy_(buffer);
    sum.algorithm->run();
    if (abort != nullptr && abort->load())  // the buffer's owner may have moved on
      throw ring_link_error("the sum was aborted");
    buffer.copy_(sum.staging);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    s.broken = true;
    throw ring_link_error(std::string("gloo: ") + e.what());
  }
  s.rounds.fetch_add(1, std::memory_order_relaxed);
}

int64_t gloo_mesh::received() const {
  return summing_ ? summing_->rounds.load(std::memory_order_relaxed) : 0;
}

void gloo_mesh::interrupt() {
  if (forming_)
    forming_->context->closeConnections();
}

#else  // a build without gloo (TROUPE_GLOO=OFF): every mesh refuses to form

bool gloo_built_in() {
  return false;
}

struct gloo_mesh::forming {};
struct gloo_mesh::summing {};

gloo_mesh::gloo_mesh(const std::string&, int64_t rank, int64_t ranks, double)
    : rank_(rank), ranks_(ranks) {
  throw ring_link_error("this troupe is built without gloo (CMake option TROUPE_GLOO)");
}
gloo_mesh::~gloo_mesh() = default;
std::string gloo_mesh::address() {
  return "";
}
void gloo_mesh::connect(const std::vector<std::string>&) {}
void gloo_mesh::join(double) {}
void gloo_mesh::all_reduce(int64_t, at::Tensor, double, const std::atomic<bool>*) {}
int64_t gloo_mesh::received() const {
  return 0;
}
void gloo_mesh::interrupt() {}

#endif

}  // namespace troupe
