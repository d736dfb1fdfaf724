// Fuzz target: the cluster's text from the command line and from files: HOST:PORT
// (core/cluster/address, for --listen and --join) and the first line of a --token-file
// (core/cluster/token). An accepted address has a host and a port that reads back as given; a
// token has no surrounding whitespace and no line break.
#include "core/cluster/address.hpp"
#include "core/cluster/token.hpp"
#include "core/errors.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = troupe::fuzz::as_text(data, size);
  try {
    const auto hp = troupe::parse_host_port(text, "127.0.0.1", "--join");
    troupe::is_loopback(hp.host);
    if (hp.host.empty())
      troupe::fuzz::fail("an address without a host was accepted");
    const auto colon = text.rfind(':');
    const auto port = colon == std::string::npos ? text : text.substr(colon + 1);
    if (std::stoul(port) != hp.port)
      troupe::fuzz::fail("port " + std::to_string(hp.port) + " read from \"" + text + "\"");
  } catch (const troupe::job_error&) {
  }
  try {
    const auto token = troupe::load_token(troupe::fuzz::scratch_file("token", text));
    const std::string space = " \t\r\n";
    if (token.empty() || token.find('\n') != std::string::npos ||
        space.find(token.front()) != std::string::npos ||
        space.find(token.back()) != std::string::npos)
      troupe::fuzz::fail("load_token gave \"" + token + "\"");
  } catch (const troupe::job_error&) {
  }
  return 0;
}
