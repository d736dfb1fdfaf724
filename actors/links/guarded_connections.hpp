// The two kinds of connection CAF's BASP broker gets from actors/links/guarded_links: a scribe (one
// connection) whose bytes go through TLS or plain TCP under the link limits, and a doorman
// (a listening socket) that hands out such scribes and bounds the ones still in their
// handshakes. Both run on the multiplexer's thread once CAF has them.
#pragma once

#include "actors/links/link_state.hpp"

#include <caf/io/doorman.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/scribe.hpp>

#include <memory>

namespace troupe {

/// A connection on `fd`: `accepted` from a peer, or opened by this process. Throws
/// std::runtime_error when no TLS session can be made (the socket is closed then).
caf::io::scribe_ptr make_guarded_scribe(caf::io::network::default_multiplexer& mpx,
                                        caf::io::network::native_socket fd,
                                        std::shared_ptr<link_state> state, bool accepted);

/// A listening socket `fd` whose connections are guarded scribes.
caf::io::doorman_ptr make_guarded_doorman(caf::io::network::default_multiplexer& mpx,
                                          caf::io::network::native_socket fd,
                                          std::shared_ptr<link_state> state);

}  // namespace troupe
