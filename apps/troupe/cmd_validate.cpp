// `troupe validate JOB.json`: checks the job file, plans it and prints the plan, running nothing.
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/suite_commands.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/io/terminal_output.hpp"
#include "core/run/run_plan.hpp"

#include <fmt/format.h>

namespace troupe {

int validate_job(job_source source) {
  try {
    const auto json = load_job_json(source);
    if (is_suite(json))
      return validate_suite(source, json);
    const auto job = parse_loaded_job(source, json);
    // The data files' headers, not the published sizes: the plan states the data there is, and
    // a missing file is found now rather than when the run starts.
    const auto plan = plan_named(source, job, read_data_facts(job.data));
    print_to_terminal(stdout, "{}: valid\n{}", source.path, render_plan(plan));
    return exit_ok;
  } catch (const job_error& e) {
    print_problems(stderr, e);
    return exit_usage;
  } catch (const data_error& e) {
    print_to_terminal(stderr, "error: {}: data: {}\n", source.path, e.what());
    return exit_usage;
  }
}

}  // namespace troupe
