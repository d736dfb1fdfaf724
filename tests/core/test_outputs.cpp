// What a run leaves on disk: atomic files, the weights file round trip, the run folder rules
// (one run at a time in a folder), the evaluation schedule and the report's figures.
#include "core/errors.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/weights_file.hpp"
#include "core/run/run_directory.hpp"
#include "core/train/run_tracker.hpp"
#include "temp_folder.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_SUITE("outputs") {
  TEST_CASE("an atomic write replaces the whole file and leaves no temporary") {
    temp_folder t;
    const auto file = (t.path / "x.json").string();
    write_file_atomically(file, "first");
    write_file_atomically(file, "second");
    CHECK(read_all(file) == "second");
    int entries = 0;
    for (const auto& e : fs::directory_iterator(t.path))
      entries += e.is_regular_file();
    CHECK(entries == 1);
    // The message names the file asked for, not its temporary (x.tmp.PID).
    CHECK_THROWS_WITH_AS(write_file_atomically((t.path / "no/such/x").string(), "y"),
                         doctest::Contains("no/such/x: cannot create: No such file"),
                         std::runtime_error);
  }

  // Found probing as a hostile user: root's save_weights to /dev/full replaced the device with
  // a file (the rename replaces whatever the name holds).
  TEST_CASE("an atomic write replaces only a regular file") {
    temp_folder t;
    const auto fifo = t.path / "pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_directory(t.path / "folder");
    fs::create_symlink("/dev/null", t.path / "link");
    for (const char* name : {"pipe", "folder", "link"}) {
      CAPTURE(name);
      CHECK_THROWS_WITH_AS(write_file_atomically((t.path / name).string(), "x"),
                           doctest::Contains("exists and is not a regular file"),
                           std::runtime_error);
    }
    CHECK(fs::is_fifo(fs::symlink_status(fifo)));
    CHECK(fs::is_symlink(fs::symlink_status(t.path / "link")));
  }

  TEST_CASE("weights round trip with names, shapes and values") {
    temp_folder t;
    const auto file = (t.path / "w.pt").string();
    std::vector<std::pair<std::string, at::Tensor>> named{{"fc1.weight", at::randn({3, 4})},
                                                          {"fc1.bias", at::randn({3})}};
    save_weights(file, named);
    auto back = load_weights(file);
    REQUIRE(back.size() == 2);
    for (const auto& [name, tensor] : named) {
      auto it = std::find_if(back.begin(), back.end(), [&](auto& p) { return p.first == name; });
      REQUIRE(it != back.end());
      CHECK(at::equal(it->second, tensor));
    }
  }

  TEST_CASE("a run folder is created, and a non-empty one is refused unless forced") {
    temp_folder t;
    const auto out = (t.path / "a/b").string();
    {
      run_directory dir(out, false);
      CHECK(fs::is_directory(out));
      job_config job;
      dir.write_job(job);
      CHECK(fs::exists(dir.file("job.json")));
    }
    CHECK_THROWS_WITH_AS(run_directory(out, false), doctest::Contains("not empty"), job_error);
    run_directory again(out, true);
    CHECK(!fs::exists(again.file("job.json")));
    std::ofstream(t.path / "file") << "x";
    CHECK_THROWS_WITH_AS(run_directory((t.path / "file").string(), true),
                         doctest::Contains("not a folder"), job_error);
  }

  // Found probing as a hostile user: a forced run of 2 members left an earlier run's member_3.pt,
  // which load_model read as this run's; a forced run into a suite's folder left the suite's
  // leaderboard beside its own summary.
  TEST_CASE("the default folder of a run started in the same second as another is a new one") {
    temp_folder f;
    const auto before = fs::current_path();
    fs::current_path(f.path);
    std::string first, second;
    // Within one second (a second that ticks in between makes new names: tried again).
    for (int tries = 0; tries < 5; ++tries) {
      first = default_run_directory("job");
      fs::create_directories(first);
      second = default_run_directory("job");
      if (second.rfind(first, 0) == 0)
        break;
    }
    fs::create_directories(second);
    const auto third = default_run_directory("job");
    fs::current_path(before);
    CHECK(first.rfind("runs/job-", 0) == 0);
    CHECK(second == first + "-2");
    CHECK((third == first + "-3" || third.rfind(first, 0) != 0));
  }

  TEST_CASE("an --out that links to nothing is named as such") {
    temp_folder f;
    fs::create_symlink(f.path / "missing", f.path / "out");
    CHECK_THROWS_WITH(run_directory((f.path / "out").string(), false),
                      doctest::Contains("which does not exist"));
  }

  TEST_CASE("--force removes every output of the run before, and refuses the other kind's") {
    temp_folder t;
    const auto out = (t.path / "run").string();
    {
      run_directory dir(out, false);
      dir.write_job(job_config());
      for (const char* name : {"member_0.pt", "member_3.pt", "plan.txt", "report.html"})
        std::ofstream(fs::path(out) / name) << "old";
      std::ofstream(fs::path(out) / "member_notes.pt") << "the user's";
    }
    {
      run_directory again(out, true);
      for (const char* name : {"member_0.pt", "member_3.pt", "plan.txt", "report.html", "job.json"})
        CHECK_FALSE(fs::exists(fs::path(out) / name));
      CHECK(fs::exists(fs::path(out) / "member_notes.pt"));  // not troupe's: left alone
      again.write_job(job_config());
    }
    CHECK_THROWS_WITH_AS(run_directory(out, true, folder_kind::suite),
                         doctest::Contains("holds a run's outputs, and --force reuses a folder "
                                           "only for another run"),
                         job_error);
    const auto suite = (t.path / "suite").string();
    fs::create_directories(suite);
    std::ofstream(fs::path(suite) / "suite.json") << "{}";
    CHECK_THROWS_WITH_AS(run_directory(suite, true), doctest::Contains("holds a suite's outputs"),
                         job_error);
    run_directory suite_again(suite, true, folder_kind::suite);
    CHECK_FALSE(fs::exists(fs::path(suite) / "suite.json"));
  }

  // Found probing as a hostile user: a second run with --force into a folder a run still wrote
  // cleared it under the first, and two resumes at once wrote one checkpoint twice.
  TEST_CASE("a folder a run holds is refused to a second run until the first lets it go") {
    temp_folder t;
    const auto out = (t.path / "run").string();
    const std::string held =
        ": another troupe run is writing to this folder now; wait for it to end, or choose "
        "another folder";
    std::optional<run_directory> first(run_directory(out, false));
    std::ofstream(first->file("metrics.jsonl")) << "{}\n";
    CHECK_THROWS_WITH_AS(run_directory(out, true), ("--out " + out + held).c_str(), job_error);
    CHECK(fs::exists(first->file("metrics.jsonl")));  // --force removed nothing
    CHECK_THROWS_WITH_AS(run_directory::reopen(out), ("--resume " + out + held).c_str(), job_error);
    {
      const auto copy = *first;  // copies share the lock
      first.reset();
      CHECK_THROWS_AS(run_directory::reopen(out), job_error);
    }
    const auto lock = std::make_shared<folder_lock>(out, "--resume");
    CHECK(run_directory::reopen(out, lock).path() == out);  // a lock taken already is reused
    CHECK_THROWS_AS(run_directory(out, true), job_error);
  }

  TEST_CASE("evaluation schedule: every interval, or every epoch, and always at the end") {
    CHECK(step_rules(100, 30, 10).evaluates_after(9));
    CHECK(!step_rules(100, 30, 10).evaluates_after(10));
    CHECK(step_rules(100, 30, 0).evaluates_after(29));
    CHECK(!step_rules(100, 30, 0).evaluates_after(28));
    CHECK(step_rules(100, 30, 0).evaluates_after(99));
    CHECK(step_rules(5, 30, 1000).evaluates_after(4));
    const auto last = step_rules(5, 30, 1000).outcome_of(4);
    CHECK(last.step == 4);
    CHECK(last.evaluate);
    CHECK(last.last);
    CHECK(!step_rules(5, 30, 1000).outcome_of(3).last);
  }

  TEST_CASE("the tracker folds steps, worker timings and evaluation shards into the report") {
    run_tracker tracker(2, step_rules(4, 2, 0), nullptr);
    tracker.on_step_complete(0, {{0, 1.0, 3}, {1, 2.0, 1}}, 0.0);
    tracker.on_worker_step(0, 0, 0.5, 0.1, 0.01);
    tracker.on_worker_step(1, 0, 0.25, 0.2, 0.01);
    CHECK(!tracker.on_eval_shard(0, 0, 10.0, 7, 10, 0.1, 2));
    auto p = tracker.on_eval_shard(1, 0, 5.0, 2, 5, 0.2, 2);
    REQUIRE(p);
    CHECK(*p->accuracy == doctest::Approx(9.0 / 15.0));
    CHECK(p->loss == doctest::Approx(1.25));  // (3 * 1.0 + 1 * 2.0) / 4
    auto r = tracker.report("", at::Tensor());
    CHECK(r.status == run_status::succeeded);
    CHECK(r.steps == 1);
    CHECK(r.samples == 4);
    CHECK(*r.final_train_loss == doctest::Approx(1.25));
    CHECK(*r.test_loss == doctest::Approx(1.0));
    CHECK(r.workers[0].samples == 3);
    CHECK(r.workers[1].comm_s == doctest::Approx(0.2));
    auto failed = tracker.report("worker 1 failed: boom", at::Tensor());
    CHECK(failed.status == run_status::failed);
    CHECK(to_json(failed)["error"] == "worker 1 failed: boom");
  }

  TEST_CASE("rows per epoch: what each sum held where the parts say, recounted for local SGD") {
    run_tracker tracker(3, step_rules(6, 2, 0), nullptr);  // epochs of 2 steps
    // Every worker reported, none says what a sum held (the driver summed): the parts' rows.
    tracker.on_step_complete(0, {{0, 1.0, 10}, {1, 1.0, 10}, {2, 1.0, 10}}, 0.0);
    // Worker 2 was lost after its gradient was summed but before it reported: the survivors'
    // reports say the sum held 30 rows, its 10 too.
    step_part a{0, 1.0, 10};
    step_part b{1, 1.0, 10};
    a.sum_rows = b.sum_rows = 30;
    tracker.on_step_complete(1, {a, b}, 0.0);
    // Then the two share the batch.
    tracker.on_step_complete(2, {{0, 1.0, 15}, {1, 1.0, 15}}, 0.0);
    // A local SGD replica was lost: 7 rows of step 2 were counted and never averaged, 5 of
    // step 1 averaged and never reported.
    tracker.recount(2, -7);
    tracker.recount(1, 5);
    const auto r = tracker.report("", at::Tensor());
    CHECK(r.rows_per_epoch == std::vector<int64_t>{65, 23});
    CHECK(r.samples == 88);
    CHECK(to_json(r)["rows_per_epoch"] == nlohmann::json::array({65, 23}));
  }

  TEST_CASE("rows per epoch under async: a push's rows count in its own batch's epoch") {
    run_tracker tracker(2, step_rules(6, 2, 0), nullptr);  // epochs of 2 steps
    // Worker 0 runs ahead: global step 0 completes with its batches 0 and 1; step 1 with its
    // batch 2 (epoch 1) and worker 1's batch 0.
    step_part ahead{0, 1.0, 10};
    ahead.batch = 0;
    step_part next = ahead;
    next.batch = 1;
    tracker.on_step_complete(0, {ahead, next}, 0.0);
    step_part far = ahead;
    far.batch = 2;
    step_part behind{1, 1.0, 6};
    behind.batch = 0;
    tracker.on_step_complete(1, {far, behind}, 0.0);
    const auto r = tracker.report("", at::Tensor());
    CHECK(r.rows_per_epoch == std::vector<int64_t>{26, 10});
    CHECK(r.samples == 36);
  }
}
