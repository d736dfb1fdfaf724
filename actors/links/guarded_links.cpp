#include "actors/links/guarded_links.hpp"

#include "actors/links/guarded_connections.hpp"
#include "actors/links/link_state.hpp"

#include <fmt/format.h>
#include <caf/actor_system.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <condition_variable>
#include <thread>

namespace troupe {
namespace {

namespace net = caf::io::network;

int64_t nanoseconds(double s) {
  return static_cast<int64_t>(s * 1e9);
}

// CAF's middleman actor, with our connections instead of its own.
class guarded_middleman final : public caf::io::middleman_actor_impl {
 public:
  guarded_middleman(caf::actor_config& cfg, caf::actor broker, std::shared_ptr<link_state> state)
      : middleman_actor_impl(cfg, std::move(broker)), state_(std::move(state)) {}

  const char* name() const override { return "troupe_middleman"; }

 protected:
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host, uint16_t port) override {
    auto fd = net::new_tcp_connection(host, port);
    if (!fd)
      return std::move(fd.error());
    try {
      return make_guarded_scribe(mpx(), *fd, state_, false);
    } catch (const std::exception& e) {
      return caf::make_error(caf::sec::cannot_connect_to_node, e.what());
    }
  }

  caf::expected<caf::io::doorman_ptr> open(uint16_t port, const char* addr, bool reuse) override {
    auto fd = net::new_tcp_acceptor_impl(port, addr, reuse);
    if (!fd)
      return std::move(fd.error());
    return make_guarded_doorman(mpx(), *fd, state_);
  }

 private:
  net::default_multiplexer& mpx() {
    return static_cast<net::default_multiplexer&>(system().middleman().backend());
  }

  std::shared_ptr<link_state> state_;
};

// Counts connections whose node joined as joined; closes connections past their handshake or join
// deadline, or silent past the idle timeout.
void sweep(link_state& st) {
  const auto now = link_clock::now();
  const auto handshake = std::chrono::nanoseconds(nanoseconds(st.limits.handshake_timeout_s));
  const auto join = std::chrono::nanoseconds(nanoseconds(st.limits.join_timeout_s));
  const auto idle_ns = st.idle_timeout_ns.load();
  std::lock_guard<std::mutex> lock(st.mutex);
  for (auto* c : st.connections) {
    if (c->closing)
      continue;
    if (c->accepted && !c->joined && st.has_joined && c->node && st.has_joined(c->node))
      st.count_joined(*c);
    if (!c->established && now - c->opened > handshake)
      st.close(*c, link_event::late,
               fmt::format("no handshake within {:g} s", st.limits.handshake_timeout_s));
    else if (c->accepted && !c->joined && now - c->opened > join)
      st.close(*c, link_event::unjoined,
               fmt::format("its node did not join the run within {:g} s of connecting",
                           st.limits.join_timeout_s));
    else if (c->established &&
             now - link_clock::time_point(link_clock::duration(c->last_read.load())) >
                 std::chrono::nanoseconds(idle_ns))
      st.close(*c, link_event::silent,
               fmt::format("nothing arrived for {:g} s", static_cast<double>(idle_ns) / 1e9));
  }
}

// After this process was stopped (Ctrl-Z, SIGSTOP) or starved for a second or more, every
// connection counts as heard from now: the silence was its own, and judged by the clock alone a
// run suspended past node_timeout_s failed on resuming, each side blaming the other.
void forgive_own_stall(link_state& st, link_clock::time_point now) {
  std::lock_guard<std::mutex> lock(st.mutex);
  for (auto* c : st.connections)
    c->last_read.store(now.time_since_epoch().count());
}

}  // namespace

// A thread of its own: the multiplexer has no timers, and a stranger who connects and says
// nothing never gives it an event to act on.
struct guarded_links::warden {
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;

  explicit warden(std::shared_ptr<link_state> state)
      : thread([this, state] {
          std::unique_lock<std::mutex> lock(mutex);
          auto last = link_clock::now();
          while (!wake.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop; })) {
            // Ten periods missed: this process did not run (the steady clock goes on while it is
            // stopped).
            const auto now = link_clock::now();
            if (now - last > std::chrono::seconds(1))
              forgive_own_stall(*state, now);
            last = now;
            sweep(*state);
          }
        }) {}

  ~warden() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    thread.join();
  }
};

std::string peer_names::at(const std::string& addr, uint16_t port) const {
  if (!state_)
    return "";
  std::lock_guard<std::mutex> lock(state_->mutex);
  const auto i = state_->names.find(addr + ":" + std::to_string(port));
  return i == state_->names.end() ? "" : i->second.second;
}

guarded_links::guarded_links(caf::actor_system& system, link_options options)
    : state_(std::make_shared<link_state>()) {
  auto& st = *state_;
  st.limits = options.limits;
  st.log_line = std::move(options.log);
  st.max_message_bytes = options.limits.max_message_bytes;
  st.idle_timeout_ns = nanoseconds(options.limits.idle_timeout_s);
  if (options.tls)
    st.tls = std::make_unique<tls_context>(*options.tls);
  auto broker = system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  middleman_ =
      system.spawn<guarded_middleman, caf::detached + caf::hidden>(std::move(broker), state_);
  warden_ = std::make_unique<warden>(state_);
}

guarded_links::~guarded_links() {
  warden_.reset();
  // kill: CAF's middleman actor ignores ordinary exit messages.
  caf::anon_send_exit(middleman_, caf::exit_reason::kill);
}

caf::expected<uint16_t> guarded_links::publish(const caf::actor& whom, uint16_t port,
                                               const std::string& host) {
  auto& system = whom.home_system();
  caf::scoped_actor self{system};
  caf::expected<uint16_t> result{caf::sec::cannot_publish_invalid_actor};
  // SO_REUSEADDR (the last argument): without it the connections this port accepted leave it
  // in TIME_WAIT for a minute after the run, and a coordinator started again on it (the
  // --resume its interrupt suggests) could not bind it. Linux still refuses a second listener.
  self->request(middleman_, std::chrono::seconds(10), caf::publish_atom_v, port,
                caf::actor_cast<caf::strong_actor_ptr>(whom), system.message_types(whom), host,
                true)
      .receive([&](uint16_t actual) { result = actual; },
               [&](caf::error& e) { result = std::move(e); });
  return result;
}

void guarded_links::unpublish(const caf::actor& whom, uint16_t port) {
  caf::anon_send(middleman_, caf::unpublish_atom_v, whom.address(), port);
}

std::string guarded_links::last_tls_failure() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->last_tls_failure;
}

bool guarded_links::tls() const {
  return state_->tls != nullptr;
}

ssl_ctx_st* guarded_links::tls_native() const {
  return state_->tls ? state_->tls->native() : nullptr;
}

peer_names guarded_links::names() const {
  return peer_names(state_);
}

void guarded_links::set_max_message_bytes(uint64_t bytes) {
  state_->max_message_bytes = bytes;
}

void guarded_links::judge_joins_by(std::function<bool(const caf::node_id&)> has_joined) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->has_joined = std::move(has_joined);
}

void guarded_links::set_idle_timeout(double seconds) {
  state_->idle_timeout_ns = nanoseconds(seconds);
}

}  // namespace troupe
