// troupe: trains neural networks with actors, from one JSON job file.
//
//   troupe run JOB.json [--out DIR] [--set PATH=VALUE ...] [--force] [--quiet]
//   troupe run --resume DIR (and troupe coordinator --resume DIR --listen HOST:PORT)
//   troupe validate JOB.json [--set PATH=VALUE ...]
//   troupe coordinator JOB.json --listen HOST:PORT [--token-file F] [--tls DIR] [run's options]
//   troupe node --join HOST:PORT [--name NAME] [--threads N] [--processes K] [--tls DIR] ...
//   troupe certs init DIR | troupe certs issue DIR NAME
//   troupe report DIR [--serve HOST:PORT]
//   troupe help [SUBCOMMAND]
//
// Exit status: 0 success, 1 the run failed, 2 bad job file or command line.
#include "actors/cluster/bounded_stop.hpp"
#include "apps/troupe/child_process.hpp"
#include "apps/troupe/commands.hpp"
#include "core/cluster/slurm_env.hpp"
#include "core/run/allocator_settings.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>

namespace {

CLI::Option* add_job_options(CLI::App& sub, troupe::job_source& job, bool required = true) {
  auto* path = sub.add_option("job", job.path, "Job file (JSON)");
  if (required)
    path->required();
  sub.add_option("--set", job.sets,
                 "Override a job key before validation, e.g. --set optimizer.lr=0.1 "
                 "(dotted path; the value is parsed as JSON, else taken as a string)")
      ->type_name("PATH=VALUE");
  return path;
}

// run and coordinator: a job file, or --resume DIR (whose checkpoint holds the job), and where
// the outputs go.
void add_job_or_resume(CLI::App& sub, troupe::run_command& cmd) {
  auto* job = add_job_options(sub, cmd.job, false);
  auto* resume = sub.add_option("--resume", cmd.resume,
                                "Continue the run in DIR from its newest checkpoint that "
                                "verifies, with the checkpoint's job (no job file)")
                     ->excludes(job);
  // A resumed run continues in its own folder: --out beside --resume was ignored without a word,
  // and an empty --out ("$OUT" unset) chose the default folder.
  auto* out = sub.add_option("--out", cmd.out, "Output folder (default: runs/NAME-TIMESTAMP)")
                  ->excludes(resume);
  auto* force = sub.add_flag("--force", cmd.force, "Reuse a non-empty output folder");
  force->excludes(resume);
  sub.callback([&cmd, out, resume] {
    if (resume->count() > 0 && cmd.resume.empty())
      throw CLI::ValidationError("--resume", "an empty folder name (is a variable unset?)");
    if (cmd.job.path.empty() && cmd.resume.empty())
      throw CLI::RequiredError("a job file (or --resume DIR)");
    if (out->count() > 0 && cmd.out.empty())
      throw CLI::ValidationError("--out", "an empty folder name (is a variable unset?)");
  });
  sub.add_flag("--quiet", cmd.quiet, "Print only the result, not the plan and progress");
}

// coordinator and node: who may join, and over what.
void add_security_options(CLI::App& sub, std::string& token_file, std::string& tls_dir,
                          bool& insecure, const std::string& tls_help) {
  sub.add_option("--token-file", token_file,
                 "File whose first line is the shared token (else $TROUPE_TOKEN)");
  sub.add_option("--tls", tls_dir, tls_help);
  sub.add_flag("--insecure", insecure,
               "Listen on an address other machines reach without TLS (warns)");
}

CLI::App* add_run(CLI::App& app, troupe::run_command& run) {
  auto* sub = app.add_subcommand("run", "Train the job and write its outputs");
  add_job_or_resume(*sub, run);
  auto* local_nodes =
      sub->add_option("--local-nodes", run.local_nodes,
                      "Run across K node processes started on this machine (sets cluster.nodes)")
          ->check(CLI::Range(int64_t{1}, int64_t{64}));
  sub->add_flag("--tls", run.local_tls,
                "The local nodes and the coordinator use mutual TLS, with a CA made for this run")
      ->needs(local_nodes);
  return sub;
}

CLI::App* add_coordinator(CLI::App& app, troupe::run_command& coord) {
  auto* sub =
      app.add_subcommand("coordinator", "Wait for the job's nodes to join, then train across them");
  add_job_or_resume(*sub, coord);
  sub->add_option("--listen", coord.listen, "HOST:PORT to listen on (default host 127.0.0.1)")
      ->required();
  add_security_options(*sub, coord.token_file, coord.tls_dir, coord.insecure,
                       "Mutual TLS with every node: DIR/ca.pem, DIR/coordinator.pem and .key "
                       "(troupe certs)");
  return sub;
}

CLI::App* add_node(CLI::App& app, troupe::node_command& node) {
  auto* sub =
      app.add_subcommand("node", "Join a coordinator and train the replicas it places here");
  sub->add_option("--join", node.join,
                  "HOST:PORT of the coordinator (default: $TROUPE_JOIN; in a Slurm job, the "
                  "first host of $SLURM_JOB_NODELIST at $TROUPE_PORT)");
  auto* name = sub->add_option("--name", node.name,
                               "This node's name (default: HOSTNAME-PID; in a Slurm step, "
                               "$SLURMD_NODENAME-task$SLURM_PROCID)");
  sub->add_option("--threads", node.threads,
                  "Compute threads offered (default: $SLURM_CPUS_PER_TASK, else all, shared out "
                  "among --processes)")
      ->check(CLI::Range(int64_t{1}, troupe::max_node_threads));
  sub->add_option("--processes", node.processes,
                  "Start K nodes here, NAME-0 .. NAME-(K-1), forked from one start so that they "
                  "share its loaded libraries (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--listen", node.listen,
                  "Address other nodes reach this one at (default 127.0.0.1; in a Slurm step, "
                  "$SLURMD_NODENAME)");
  sub->add_option("--connect-timeout", node.connect_timeout_s,
                  "Seconds to keep trying to reach the coordinator (default 30)")
      ->check(CLI::Range(0.0, 86400.0));
  // An empty --name ("$NAME" unset) became HOSTNAME-PID without a word; a NaN passes Range.
  sub->callback([&node, name] {
    if (name->count() > 0 && node.name.empty())
      throw CLI::ValidationError("--name", "an empty name (is a variable unset?)");
    if (!std::isfinite(node.connect_timeout_s))
      throw CLI::ValidationError("--connect-timeout", "must be a number of seconds");
  });
  // For tests of the version check only.
  sub->add_option("--claim-version", node.claim_version)->group("");
  sub->add_option("--claim-name", node.claim_name)->group("");
  add_security_options(*sub, node.token_file, node.tls_dir, node.insecure,
                       "Mutual TLS: DIR/ca.pem, DIR/NAME.pem and DIR/NAME.key (troupe certs)");
  return sub;
}

// certs init | certs issue: returns `init`, the other is issue.
CLI::App* add_certs(CLI::App& app, troupe::certs_command& certs, CLI::App*& certs_cmd) {
  certs_cmd = app.add_subcommand("certs", "Make a cluster's CA, keys and certificates");
  certs_cmd->require_subcommand(1);
  auto* init = certs_cmd->add_subcommand("init", "Make a CA in DIR (DIR/ca.pem, DIR/ca.key)");
  init->add_option("dir", certs.dir, "Certificate directory")->required();
  auto* issue = certs_cmd->add_subcommand(
      "issue",
      "Issue DIR/NAME.pem and DIR/NAME.key, signed by DIR's CA (NAME: a node's "
      "--name, or coordinator)");
  issue->add_option("dir", certs.dir, "Certificate directory")->required();
  issue->add_option("name", certs.name, "The node's name, or coordinator")->required();
  return init;
}

bool names_a_subcommand(CLI::App& app, const std::string& word) {
  const auto known = app.get_subcommands([](CLI::App*) { return true; });
  return std::any_of(known.begin(), known.end(),
                     [&word](const CLI::App* sub) { return sub->check_name(word); });
}

// What is wrong with a command line whose subcommand is missing or unknown (`troupe bogus`,
// `troupe trian`, `troupe -x`, `troupe ""`, `troupe certs bogus`): CLI11 said "A subcommand is
// required" for each, as if none had been given.
std::optional<std::string> misplaced_word(CLI::App& app, int argc, char** argv) {
  const std::string first = argv[1];
  if (first == "-h" || first == "--help" || first == "--version")
    return std::nullopt;
  if (first.empty() || first[0] == '-')
    return "troupe takes a subcommand first, not '" + first + "' (troupe help lists them)";
  if (!names_a_subcommand(app, first))
    return first + " is not a troupe subcommand (troupe help lists them)";
  auto* sub = app.get_subcommand(first);
  if (sub->get_subcommands([](CLI::App*) { return true; }).empty())
    return std::nullopt;
  if (argc == 2)
    return "troupe " + first + " takes a subcommand (troupe help " + first + " lists them)";
  const std::string second = argv[2];
  if (second == "-h" || second == "--help")
    return std::nullopt;
  if (second.empty() || second[0] == '-')
    return "troupe " + first + " takes a subcommand first, not '" + second + "' (troupe help " +
           first + " lists them)";
  if (!names_a_subcommand(*sub, second))
    return "'" + second + "' is not a troupe " + first + " subcommand (troupe help " + first +
           " lists them)";
  return std::nullopt;
}

CLI::App* add_report(CLI::App& app, troupe::report_command& report) {
  auto* sub = app.add_subcommand(
      "report", "Draw a run's or a suite's output folder as one HTML page (DIR/report.html)");
  sub->add_option("dir", report.folder, "The run's or suite's output folder")->required();
  auto* serve =
      sub->add_option("--serve", report.serve,
                      "Serve the page on HOST:PORT (default host 127.0.0.1; port 0: any) and "
                      "keep it current while the run writes, instead of writing the file")
          ->type_name("HOST:PORT");
  // An empty --serve ("$ADDR" unset) wrote the file and exited instead of serving.
  sub->callback([&report, serve] {
    if (serve->count() > 0 && report.serve.empty())
      throw CLI::ValidationError("--serve", "an empty address (is a variable unset?)");
  });
  return sub;
}

// `troupe help [COMMAND]`: `overview` is the whole program's help, taken before parsing.
int print_help(CLI::App& app, const std::string& topic, const std::string& overview) {
  if (topic.empty()) {
    std::fputs(overview.c_str(), stdout);
    return troupe::exit_ok;
  }
  try {
    std::fputs(app.get_subcommand(topic)->help("troupe").c_str(), stdout);
    return troupe::exit_ok;
  } catch (const CLI::OptionNotFound&) {
    std::fprintf(stderr, "error: no subcommand %s (troupe help lists them)\n", topic.c_str());
    return troupe::exit_usage;
  }
}

}  // namespace

int main(int argc, char** argv) {
  troupe::end_with_parent();  // a suite's job or a local node: not one moment past its parent
  // A write to a pipe whose reader left (`troupe run ... | head -1`), or past `ulimit -f`, fails
  // (EPIPE, EFBIG) instead of killing troupe mid-write: the run's files end as after a full disk.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  troupe::keep_step_memory_for_reuse();  // before LibTorch allocates (core/run/allocator_settings)
  CLI::App app{"troupe: train neural networks with actors, from one JSON job file"};
  app.name("troupe");
  app.set_version_flag("--version", "troupe " TROUPE_VERSION);
  app.require_subcommand(1);

  troupe::run_command run, coord;
  troupe::node_command node;
  troupe::certs_command certs;
  troupe::job_source validate;
  troupe::report_command report;
  std::string help_topic;
  auto* run_cmd = add_run(app, run);
  auto* coord_cmd = add_coordinator(app, coord);
  auto* node_cmd = add_node(app, node);
  CLI::App* certs_cmd = nullptr;
  auto* init_cmd = add_certs(app, certs, certs_cmd);
  auto* help_cmd =
      app.add_subcommand("help", "Print this help, or a subcommand's (troupe help run)");
  help_cmd->add_option("command", help_topic, "The subcommand to explain");
  add_job_options(*app.add_subcommand("validate", "Check the job file and print the plan"),
                  validate);
  auto* report_cmd = add_report(app, report);

  // Taken before parsing: afterwards CLI11's help() describes the subcommand that was parsed.
  const std::string overview = app.help();
  if (argc == 1) {  // `troupe` alone: what it can do, rather than "A subcommand is required"
    std::fputs(overview.c_str(), stderr);
    return troupe::exit_usage;
  }
  if (const auto problem = misplaced_word(app, argc, argv)) {
    std::fprintf(stderr, "error: %s\n", problem->c_str());
    return troupe::exit_usage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return troupe::exit_usage;
  }
  if (help_cmd->parsed())
    return print_help(app, help_topic, overview);
  if (run_cmd->parsed())
    return troupe::end_process(troupe::run_job_command(run));
  if (coord_cmd->parsed())
    return troupe::end_process(troupe::run_job_command(coord));
  if (node_cmd->parsed())
    return troupe::run_node_command(node);
  if (report_cmd->parsed())
    return troupe::run_report_command(report);
  if (certs_cmd->parsed()) {
    certs.action = init_cmd->parsed() ? "init" : "issue";
    return troupe::run_certs_command(certs);
  }
  return troupe::validate_job(validate);
}
