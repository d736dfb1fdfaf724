// `troupe certs init DIR` and `troupe certs issue DIR NAME`: a cluster's CA, and each process's
// key and certificate, made with OpenSSL's library (core/cluster/certs.hpp), so a cluster needs
// no openssl command. Nothing existing is ever overwritten (exit 2 instead).
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "core/cluster/certs.hpp"
#include "core/errors.hpp"
#include "core/io/terminal_output.hpp"

#include <fmt/format.h>

namespace troupe {

int run_certs_command(const certs_command& cmd) {
  try {
    if (cmd.action == "init") {
      make_authority(cmd.dir);
      print_to_terminal(
          stdout,
          "made a CA: {0}/ca.pem (every machine needs it) and {0}/ca.key (mode 0600: keep "
          "it where certificates are issued, not on the nodes)\n",
          cmd.dir);
    } else {
      issue_certificate(cmd.dir, cmd.name);
      print_to_terminal(stdout,
                        "issued {0}/{1}.pem and {0}/{1}.key (mode 0600) for {1}: copy both and "
                        "{0}/ca.pem to its machine\n",
                        cmd.dir, cmd.name);
    }
  } catch (const job_error& e) {
    print_problems(stderr, e);
    return exit_usage;
  }
  return exit_ok;
}

}  // namespace troupe
