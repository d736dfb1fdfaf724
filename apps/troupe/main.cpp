// troupe: trains neural networks with actors, from one JSON job file.
//
//   troupe run JOB.json [--out DIR] [--set PATH=VALUE ...] [--force] [--quiet]
//   troupe run --resume DIR (and troupe coordinator --resume DIR --listen HOST:PORT)
//   troupe validate JOB.json [--set PATH=VALUE ...]
//   troupe coordinator JOB.json --listen HOST:PORT [--token-file F] [--tls DIR] [run's options]
//   troupe node --join HOST:PORT [--name NAME] [--threads N] [--token-file F] [--tls DIR]
//   troupe certs init DIR | troupe certs issue DIR NAME
//   troupe report DIR [--serve HOST:PORT]
//   troupe help [SUBCOMMAND]
//
// Exit status: 0 success, 1 the run failed, 2 bad job file or command line.
#include "apps/troupe/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

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

// run and coordinator: a job file, or --resume DIR (whose checkpoint holds the job).
void add_job_or_resume(CLI::App& sub, troupe::run_command& cmd) {
  auto* job = add_job_options(sub, cmd.job, false);
  sub.add_option("--resume", cmd.resume,
                 "Continue the run in DIR from its newest checkpoint that verifies, with the "
                 "checkpoint's job (no job file)")
      ->excludes(job);
  sub.callback([&cmd] {
    if (cmd.job.path.empty() && cmd.resume.empty())
      throw CLI::RequiredError("a job file (or --resume DIR)");
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"troupe: train neural networks with actors, from one JSON job file"};
  app.name("troupe");
  app.set_version_flag("--version", "troupe " TROUPE_VERSION);
  app.require_subcommand(1);

  troupe::run_command run;
  auto* run_cmd = app.add_subcommand("run", "Train the job and write its outputs");
  add_job_or_resume(*run_cmd, run);
  run_cmd->add_option("--out", run.out, "Output folder (default: runs/NAME-TIMESTAMP)");
  run_cmd->add_flag("--force", run.force, "Reuse a non-empty output folder");
  run_cmd->add_flag("--quiet", run.quiet, "Print only the result, not the plan and progress");

  auto* local_nodes =
      run_cmd
          ->add_option("--local-nodes", run.local_nodes,
                       "Run across K node processes started on this machine (sets cluster.nodes)")
          ->check(CLI::Range(int64_t{1}, int64_t{64}));
  run_cmd
      ->add_flag("--tls", run.local_tls,
                 "The local nodes and the coordinator use mutual TLS, with a CA made for this run")
      ->needs(local_nodes);

  troupe::run_command coord;
  auto* coord_cmd =
      app.add_subcommand("coordinator", "Wait for the job's nodes to join, then train across them");
  add_job_or_resume(*coord_cmd, coord);
  coord_cmd->add_option("--listen", coord.listen, "HOST:PORT to listen on (default host 127.0.0.1)")
      ->required();
  coord_cmd->add_option("--out", coord.out, "Output folder (default: runs/NAME-TIMESTAMP)");
  coord_cmd->add_flag("--force", coord.force, "Reuse a non-empty output folder");
  coord_cmd->add_flag("--quiet", coord.quiet, "Print only the result, not the plan and progress");

  troupe::node_command node;
  auto* node_cmd =
      app.add_subcommand("node", "Join a coordinator and train the replicas it places here");
  node_cmd->add_option("--join", node.join, "HOST:PORT of the coordinator")->required();
  node_cmd->add_option("--name", node.name, "This node's name (default: HOSTNAME-PID)");
  node_cmd->add_option("--threads", node.threads, "Compute threads offered (default: all)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  node_cmd->add_option("--listen", node.listen,
                       "Address other nodes reach this one at (default 127.0.0.1)");
  node_cmd
      ->add_option("--connect-timeout", node.connect_timeout_s,
                   "Seconds to keep trying to reach the coordinator (default 30)")
      ->check(CLI::Range(0.0, 86400.0));
  // For tests of the version check only.
  node_cmd->add_option("--claim-version", node.claim_version)->group("");
  node_cmd->add_option("--claim-name", node.claim_name)->group("");
  const auto token_help = "File whose first line is the shared token (else $TROUPE_TOKEN)";
  coord_cmd->add_option("--token-file", coord.token_file, token_help);
  node_cmd->add_option("--token-file", node.token_file, token_help);
  coord_cmd->add_option("--tls", coord.tls_dir,
                        "Mutual TLS with every node: DIR/ca.pem, DIR/coordinator.pem and .key "
                        "(troupe certs)");
  node_cmd->add_option("--tls", node.tls_dir,
                       "Mutual TLS: DIR/ca.pem, DIR/NAME.pem and DIR/NAME.key (troupe certs)");
  const auto insecure_help = "Listen on an address other machines reach without TLS (warns)";
  coord_cmd->add_flag("--insecure", coord.insecure, insecure_help);
  node_cmd->add_flag("--insecure", node.insecure, insecure_help);

  troupe::certs_command certs;
  auto* certs_cmd = app.add_subcommand("certs", "Make a cluster's CA, keys and certificates");
  certs_cmd->require_subcommand(1);
  auto* init_cmd = certs_cmd->add_subcommand("init", "Make a CA in DIR (DIR/ca.pem, DIR/ca.key)");
  init_cmd->add_option("dir", certs.dir, "Certificate directory")->required();
  auto* issue_cmd = certs_cmd->add_subcommand(
      "issue",
      "Issue DIR/NAME.pem and DIR/NAME.key, signed by DIR's CA (NAME: a node's "
      "--name, or coordinator)");
  issue_cmd->add_option("dir", certs.dir, "Certificate directory")->required();
  issue_cmd->add_option("name", certs.name, "The node's name, or coordinator")->required();

  std::string help_topic;
  auto* help_cmd =
      app.add_subcommand("help", "Print this help, or a subcommand's (troupe help run)");
  help_cmd->add_option("command", help_topic, "The subcommand to explain");

  troupe::job_source validate;
  auto* validate_cmd = app.add_subcommand("validate", "Check the job file and print the plan");
  add_job_options(*validate_cmd, validate);

  troupe::report_command report;
  auto* report_cmd = app.add_subcommand(
      "report", "Draw a run's or a suite's output folder as one HTML page (DIR/report.html)");
  report_cmd->add_option("dir", report.folder, "The run's or suite's output folder")->required();
  report_cmd
      ->add_option("--serve", report.serve,
                   "Serve the page on HOST:PORT (default host 127.0.0.1; port 0: any) and "
                   "keep it current while the run writes, instead of writing the file")
      ->type_name("HOST:PORT");

  // Taken before parsing: afterwards CLI11's help() describes the subcommand that was parsed.
  const std::string overview = app.help();
  if (argc == 1) {  // `troupe` alone: what it can do, rather than "A subcommand is required"
    std::fputs(overview.c_str(), stderr);
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
  if (help_cmd->parsed()) {
    if (help_topic.empty()) {
      std::fputs(overview.c_str(), stdout);
      return troupe::exit_ok;
    }
    try {
      std::fputs(app.get_subcommand(help_topic)->help("troupe").c_str(), stdout);
      return troupe::exit_ok;
    } catch (const CLI::OptionNotFound&) {
      std::fprintf(stderr, "error: no subcommand %s (troupe help lists them)\n",
                   help_topic.c_str());
      return troupe::exit_usage;
    }
  }
  if (run_cmd->parsed())
    return troupe::run_job_command(run);
  if (coord_cmd->parsed())
    return troupe::run_job_command(coord);
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
