// troupe: trains neural networks with actors, from one JSON job file.
//
//   troupe run JOB.json [--out DIR] [--set PATH=VALUE ...] [--force] [--quiet]
//   troupe validate JOB.json [--set PATH=VALUE ...]
//
// Exit status: 0 success, 1 the run failed, 2 bad job file or command line.
#include "apps/troupe/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace {

void add_job_options(CLI::App& sub, troupe::job_source& job) {
  sub.add_option("job", job.path, "Job file (JSON)")->required();
  sub.add_option("--set", job.sets,
                 "Override a job key before validation, e.g. --set optimizer.lr=0.1 "
                 "(dotted path; the value is parsed as JSON, else taken as a string)")
      ->type_name("PATH=VALUE");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"troupe: train neural networks with actors, from one JSON job file"};
  app.set_version_flag("--version", "troupe 0.1.0");
  app.require_subcommand(1);

  troupe::run_command run;
  auto* run_cmd = app.add_subcommand("run", "Train the job and write its outputs");
  add_job_options(*run_cmd, run.job);
  run_cmd->add_option("--out", run.out, "Output folder (default: runs/NAME-TIMESTAMP)");
  run_cmd->add_flag("--force", run.force, "Reuse a non-empty output folder");
  run_cmd->add_flag("--quiet", run.quiet, "Print only the result, not the plan and progress");

  troupe::job_source validate;
  auto* validate_cmd = app.add_subcommand("validate", "Check the job file and print the plan");
  add_job_options(*validate_cmd, validate);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return troupe::exit_usage;
  }
  if (run_cmd->parsed())
    return troupe::run_job(run);
  return troupe::validate_job(validate);
}
