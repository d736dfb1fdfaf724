#include "actors/links/guarded_connections.hpp"

#include "actors/links/basp_frames.hpp"

#include <fmt/format.h>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/policy/tcp.hpp>

namespace troupe {
namespace {

namespace net = caf::io::network;

// The stream's byte mover: TLS or plain TCP, noting when bytes arrive.
struct link_policy {
  std::unique_ptr<tls_session> tls;
  watched_connection* watch;

  link_policy(const tls_context* context, net::native_socket fd, bool accepted,
              tls_observer* observer, watched_connection* w)
      : tls(context ? std::make_unique<tls_session>(*context, fd, accepted, observer) : nullptr),
        watch(w) {}

  net::rw_state read_some(size_t& result, net::native_socket fd, void* buf, size_t len) {
    const auto r = tls ? tls->read_some(result, fd, buf, len)
                       : caf::policy::tcp::read_some(result, fd, buf, len);
    if (r == net::rw_state::success && result > 0)
      watch->touch();
    return r;
  }
  net::rw_state write_some(size_t& result, net::native_socket fd, const void* buf, size_t len) {
    return tls ? tls->write_some(result, fd, buf, len)
               : caf::policy::tcp::write_some(result, fd, buf, len);
  }
  bool must_read_more(net::native_socket fd, size_t threshold) {
    return tls && tls->must_read_more(fd, threshold);
  }
};

// A connection handed to CAF's BASP broker. Runs on the multiplexer's thread once launched.
class guarded_scribe final : public caf::io::scribe, public tls_observer {
 public:
  guarded_scribe(net::default_multiplexer& mpx, net::native_socket fd,
                 std::shared_ptr<link_state> state, bool accepted)
      : scribe(net::conn_hdl_from_socket(fd)),
        state_(std::move(state)),
        watch_{fd, address_of(fd), accepted},
        stream_(mpx, fd, state_->tls.get(), fd, accepted, this, &watch_) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->connections.insert(&watch_);
  }

  ~guarded_scribe() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->connections.erase(&watch_);
    auto i = state_->names.find(watch_.peer);
    if (i != state_->names.end() && i->second.first == &watch_)
      state_->names.erase(i);
    state_->count_joined(watch_);
  }

  // BASP asks for a frame's payload here, before anything is allocated for it.
  void configure_read(caf::io::receive_policy::config config) override {
    const auto limit = state_->max_message_bytes.load();
    if (config.second > limit && !refused_) {
      refused_ = true;
      state_->close(
          watch_, link_event::oversized,
          fmt::format("it announced a message of {} bytes; the limit is {}", config.second, limit));
      config = caf::io::receive_policy::exactly(1);
    }
    stream_.configure_read(config);
    if (!launched_)
      launch();
  }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t num_bytes) override {
    if (!refused_) {
      const auto problem = frames_seen_.next(static_cast<const unsigned char*>(buf), num_bytes);
      if (!problem.empty()) {
        refused_ = true;
        state_->close(watch_, link_event::forged, problem);
      }
      if (watch_.accepted && !watch_.joined && frames_seen_.handshake_node()) {
        std::lock_guard<std::mutex> lock(state_->mutex);
        watch_.node = frames_seen_.handshake_node();
      }
    }
    const bool alive = !refused_ && scribe::consume(ctx, buf, num_bytes);
    if (refused_) {
      io_failure(ctx, net::operation::read);
      return false;
    }
    // A header and its payload: whatever the handshakes were, they are through. Where the
    // process judges joins, the connection stays pending until its node joined.
    if (++frames_ == 2 && !watch_.established.exchange(true)) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (!state_->has_joined)
        state_->count_joined(watch_);
    }
    return alive;
  }

  // Nothing goes out before the TLS handshake is done: written into the session early, the
  // stream would retry it on every writable event, spinning the multiplexer's thread.
  void flush() override {
    if (state_->tls && !tls_ready_)
      flush_wanted_ = true;
    else
      stream_.flush(this);
  }

  void tls_established(const std::string& peer_name) override {
    tls_ready_ = true;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->names[watch_.peer] = {&watch_, peer_name};
    }
    if (flush_wanted_) {
      flush_wanted_ = false;
      stream_.flush(this);
    }
  }

  void tls_failed(const std::string& why) override {
    if (!watch_.accepted && !tls_ready_) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->last_tls_failure = why;
    }
    if (watch_.closing.exchange(true))
      return;
    const std::string direction = watch_.accepted ? " from " : " to ";
    if (tls_ready_)
      state_->log(link_event::broken,
                  "the connection" + direction + watch_.peer + " broke: " + why);
    else if (watch_.accepted)
      state_->log(link_event::refused, "refused a connection from " + watch_.peer + ": " + why);
    else
      state_->log(link_event::refused, "the connection to " + watch_.peer + " failed: " + why);
  }

  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  std::string addr() const override {
    auto x = net::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string();
  }
  uint16_t port() const override {
    auto x = net::remote_port_of_fd(stream_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

 private:
  void launch() {
    launched_ = true;
    stream_.start(this);
    // A TLS client speaks first: an empty write sends its hello.
    if (state_->tls && !watch_.accepted)
      stream_.force_empty_write(this);
  }

  std::shared_ptr<link_state> state_;
  watched_connection watch_;
  bool launched_ = false;
  bool refused_ = false;
  bool tls_ready_ = false;
  bool flush_wanted_ = false;
  int frames_ = 0;
  basp_frame_reader frames_seen_;
  net::stream_impl<link_policy> stream_;
};

class guarded_doorman final : public net::doorman_impl {
 public:
  guarded_doorman(net::default_multiplexer& mpx, net::native_socket fd,
                  std::shared_ptr<link_state> state)
      : doorman_impl(mpx, fd), state_(std::move(state)) {}

  bool new_connection() override {
    if (detached())
      return false;
    auto& mpx = acceptor_.backend();
    const auto fd = acceptor_.accepted_socket();
    if (state_->pending.load() >= state_->limits.max_pending) {
      state_->log(link_event::crowded,
                  fmt::format("refused a connection from {}: {} connections are already in their "
                              "handshakes",
                              address_of(fd), state_->limits.max_pending));
      net::close_socket(fd);
      return true;
    }
    state_->pending.fetch_add(1);
    caf::io::scribe_ptr scribe;
    try {
      scribe = make_guarded_scribe(mpx, fd, state_, true);
    } catch (const std::exception& e) {  // the stream, built first, closed the socket
      state_->pending.fetch_sub(1);
      state_->log(link_event::refused, std::string("refused a connection: ") + e.what());
      return true;
    }
    const auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mpx, hdl);
  }

 private:
  std::shared_ptr<link_state> state_;
};

}  // namespace

caf::io::scribe_ptr make_guarded_scribe(net::default_multiplexer& mpx, net::native_socket fd,
                                        std::shared_ptr<link_state> state, bool accepted) {
  return caf::make_counted<guarded_scribe>(mpx, fd, std::move(state), accepted);
}

caf::io::doorman_ptr make_guarded_doorman(net::default_multiplexer& mpx, net::native_socket fd,
                                          std::shared_ptr<link_state> state) {
  return caf::make_counted<guarded_doorman>(mpx, fd, std::move(state));
}

}  // namespace troupe
