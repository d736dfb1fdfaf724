// Checkpoints without actors: the encoding of a run's state, archives checked before LibTorch
// reads them, optimizer bytes, and the figures the tracker and the keeper carry over. The store
// (writing, verification, fallback, retention, crash safety): test_checkpoint_store.cpp. The pure
// pieces that decide when a checkpoint is taken and how far workers run ahead:
// test_step_schedules.cpp.
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/checkpoint/run_checkpoint.hpp"
#include "core/io/archive_check.hpp"
#include "core/optim/make_optimizer.hpp"
#include "core/optim/optimizer_bytes.hpp"
#include "core/train/run_tracker.hpp"
#include "core/train/validation_keeper.hpp"
#include "temp_folder.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <doctest/doctest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/optim/adam.h>
#include <torch/serialize/archive.h>

#include <filesystem>
#include <sstream>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

// A PyTorch archive (what an optimizer's state and state.pt are) holding `values` floats.
std::string an_archive(int64_t values) {
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("t", at::arange(values, at::kFloat));
  const auto bytes = torch::jit::pickle_save(dict);
  return {bytes.data(), bytes.size()};
}

}  // namespace

TEST_SUITE("checkpoint") {
  TEST_CASE("a run's state encodes to files and decodes to the same tensors and bytes") {
    run_checkpoint c;
    c.step = 41;
    c.job = {{"name", "demo"}};
    c.progress = {{"tracker", {{"completed_steps", 42}}}, {"keeper", nullptr}};
    c.parts.push_back({0, at::arange(6, at::kFloat), an_archive(3)});
    c.parts.push_back({1, at::arange(6, 10, at::kFloat), an_archive(5)});
    c.best_weights = at::ones({10});
    const parameter_layout layout{{"a.weight", {2, 3}}, {"a.bias", {4}}};
    const auto stored = encode_checkpoint(c, 2, layout);
    REQUIRE(stored.find("weights.pt"));
    const auto back = decode_checkpoint(stored);
    CHECK(back.step == 41);
    CHECK(back.job == c.job);
    CHECK(back.progress == c.progress);
    REQUIRE(back.parts.size() == 2);
    CHECK(at::equal(back.parts[0].weights, c.parts[0].weights));
    CHECK(back.parts[0].optimizer == c.parts[0].optimizer);
    CHECK(back.parts[1].optimizer == c.parts[1].optimizer);
    CHECK(at::equal(back.best_weights, c.best_weights));
    stored_checkpoint broken = stored;
    broken.files.erase(broken.files.begin());
    CHECK_THROWS_WITH(decode_checkpoint(broken), "no state.json");
  }

  TEST_CASE("a checkpoint names its job and its step: another job's, or another step, is refused") {
    // Issue 39, row 5: a checkpoint copied in from another run was resumed as this one's, and
    // a state.json edited to another step resumed "after 51 steps" with step 117's weights.
    run_checkpoint c;
    c.step = 116;
    c.job = {{"name", "demo"}, {"model", {{"hidden", {64}}}}, {"cluster", {{"nodes", 2}}}};
    c.parts.push_back({0, at::arange(6, at::kFloat), ""});
    auto stored = encode_checkpoint(c, 1, {});
    CHECK(stored.job_sha256 == job_digest(c.job));
    // The node count is not the job's identity: a resume may change it (--local-nodes).
    auto other_nodes = c.job;
    other_nodes["cluster"]["nodes"] = 3;
    CHECK(job_digest(other_nodes) == job_digest(c.job));
    auto wider = c.job;
    wider["model"]["hidden"] = {128};
    CHECK(job_digest(wider) != job_digest(c.job));
    // state.json edited to another step than the manifest's.
    auto edited = stored;
    for (auto& f : edited.files)
      if (f.name == "state.json") {
        auto meta = nlohmann::json::parse(f.bytes);
        meta["step"] = 50;
        f.bytes = meta.dump();
      }
    CHECK_THROWS_WITH(decode_checkpoint(edited), "state.json names step 50, its manifest step 116");
    // state.json's job edited, the manifest left naming the first one.
    edited = stored;
    for (auto& f : edited.files)
      if (f.name == "state.json") {
        auto meta = nlohmann::json::parse(f.bytes);
        meta["job"] = wider;
        f.bytes = meta.dump();
      }
    CHECK_THROWS_WITH(decode_checkpoint(edited),
                      "state.json's job is not the one its manifest names");
    // On disk: a newer checkpoint of another job is skipped, by name, for this run's own.
    const temp_folder dir;
    write_checkpoint(dir.path.string(), stored, 5);
    run_checkpoint theirs = c;
    theirs.step = 200;
    theirs.job = wider;
    write_checkpoint(dir.path.string(), encode_checkpoint(theirs, 1, {}), 5);
    std::vector<std::string> notes;
    const auto read = read_latest_checkpoint(
        dir.path.string(), [&](const std::string& line) { notes.push_back(line); },
        job_digest(c.job));
    REQUIRE(read);
    CHECK(read->step == 116);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].rfind("checkpoint step-200 skipped: it belongs to another job", 0) == 0);
    CHECK(read_latest_checkpoint(dir.path.string(), nullptr)->step == 200);  // no job named: newest
  }

  TEST_CASE("archives reach LibTorch only when every offset they state lies inside them") {
    const auto good = an_archive(100);
    CHECK(archive_problem(good) == "");
    CHECK(archive_problem(an_archive(0)) == "");
    CHECK(archive_problem("") == "not a zip archive (no end-of-central-directory record)");
    CHECK(archive_problem(good.substr(0, good.size() - 1)) ==
          "not a zip archive (no end-of-central-directory record)");
    CHECK(archive_problem(good.substr(0, good.size() / 2)) != "");
    const auto end = good.rfind(std::string("PK\x05\x06", 4));
    REQUIRE(end != std::string::npos);
    auto forged = good;  // the central directory's offset moved past the end
    forged[end + 16] = '\xff';
    forged[end + 17] = '\xff';
    CHECK(archive_problem(forged) ==
          "the zip archive its zip64 record disagrees with its end record");
    forged = good;  // the same in the zip64 record too
    const auto wide = good.rfind(std::string("PK\x06\x06", 4));
    REQUIRE(wide != std::string::npos);
    forged[wide + 48 + 3] = '\x7f';
    CHECK(archive_problem(forged) != "");
    // Every single byte flipped: refused here, or left to LibTorch, which may throw but reads
    // inside the buffer (under ASan, tests/fuzz/checkpoint_files checks that).
    int refused = 0;
    for (std::size_t at = 0; at < good.size(); at += 7) {
      auto flipped = good;
      flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
      if (!archive_problem(flipped).empty()) {
        ++refused;
        continue;
      }
      try {
        torch::jit::pickle_load(std::vector<char>(flipped.begin(), flipped.end()));
      } catch (const std::exception&) {
      }
    }
    CHECK(refused > 0);
    // An optimizer's state: its TorchScript code entries are deflated.
    optimizer_config adam;
    adam.kind = optimizer_kind::adam;
    auto weights = at::ones({5}).set_requires_grad(true);
    auto optimizer = make_optimizer(adam, {weights});
    weights.mutable_grad() = at::ones({5});
    optimizer->step();
    // LibTorch's own archive, as checkpoints written before troupe's format hold it.
    torch::serialize::OutputArchive archive;
    optimizer->save(archive);
    std::ostringstream archived;
    archive.save_to(archived);
    const auto state = archived.str();
    CHECK(archive_problem(state) == "");
    CHECK(optimizer_state_problem(state) == "");
    CHECK_NOTHROW(load_optimizer(*optimizer, state));
    CHECK_THROWS_WITH(load_optimizer(*optimizer, state.substr(0, state.size() - 3)),
                      "optimizer state does not load: not a zip archive (no "
                      "end-of-central-directory record)");
    // Decoding a checkpoint checks the optimizer state inside state.pt as well.
    run_checkpoint c;
    c.step = 1;
    c.parts.push_back({0, at::zeros({2}), "not an archive"});
    CHECK_THROWS_WITH(decode_checkpoint(encode_checkpoint(c, 1, {})),
                      "state.pt: part0/optimizer: not a zip archive (no end-of-central-directory "
                      "record)");
  }

  TEST_CASE("the tracker carries its figures over: a resumed run counts every step once") {
    const step_rules rules(10, 5, 0);
    run_tracker first(2, rules, nullptr);
    for (int64_t s = 0; s < 4; ++s) {
      first.on_worker_step(0, s, 0.1, 0.0, 0.0);
      first.on_step_complete(s, {{0, 1.0 + static_cast<double>(s), 8}, {1, 2.0, 8}}, 0.0);
    }
    first.on_eval_shard(0, 4, 5.0, 3, 10, 0.5, 1);
    const auto saved = first.save();
    run_tracker resumed(2, rules, nullptr);
    resumed.restore(saved);
    CHECK(resumed.elapsed_s() >= saved.at("elapsed_s").get<double>());
    const auto a = first.report("", {});
    const auto b = resumed.report("", {});
    CHECK(b.steps == 4);
    CHECK(b.samples == a.samples);
    CHECK(a.rows_per_epoch == std::vector<int64_t>{64});  // 4 steps of 16 rows, epoch 0
    CHECK(b.rows_per_epoch == a.rows_per_epoch);
    CHECK(b.final_train_loss == a.final_train_loss);
    CHECK(b.test_accuracy == a.test_accuracy);
    CHECK(b.workers[0].steps == 4);
    CHECK(b.workers[0].compute_s == doctest::Approx(0.4));
    CHECK(resumed.evaluated(4));
    run_tracker other(3, rules, nullptr);
    CHECK_THROWS_WITH(other.restore(saved), "the checkpoint's tracker has 2 workers, the run 3");
  }

  TEST_CASE("a step's evaluation joins its checkpoint's figures, not the steps done since") {
    // Async: step 3's figures are taken when it completes; step 4 completes while step 3 is
    // evaluated. The checkpoint of step 3 counts 4 steps and the evaluation.
    run_tracker tracker(2, step_rules(10, 5, 0), nullptr);
    for (int64_t s = 0; s < 4; ++s)
      tracker.on_step_complete(s, {{0, 1.0, 8}, {1, 1.0, 8}}, 0.0);
    auto saved = tracker.save();
    tracker.on_step_complete(4, {{0, 1.0, 8}, {1, 1.0, 8}}, 0.0);
    tracker.on_eval_shard(0, 3, 5.0, 3, 10, 0.5, 1);
    tracker.add_evaluation_to(saved);
    run_tracker resumed(2, step_rules(10, 5, 0), nullptr);
    resumed.restore(saved);
    const auto r = resumed.report("", {});
    CHECK(r.steps == 4);
    CHECK(r.samples == 64);
    CHECK(r.rows_per_epoch == std::vector<int64_t>{64});
    CHECK(r.test_accuracy == doctest::Approx(0.3));
    CHECK(r.workers[0].eval_s == doctest::Approx(0.5));
    CHECK(resumed.evaluated(3));
  }

  TEST_CASE("a checkpoint and the summary count the workers' steps the run completed") {
    // Replicas run ahead: worker 0 has timed steps 0..3, worker 1 steps 0..1, the run completed
    // steps 0 and 1. The checkpoint of step 1 counts 2 steps for each; resumed, steps 2 and 3
    // are done again and counted once.
    run_tracker tracker(2, step_rules(10, 5, 0), nullptr);
    for (int64_t s = 0; s < 4; ++s)
      tracker.on_worker_step(0, s, 1.0, 0.5, 0.25, 0.125);
    for (int64_t s = 0; s < 2; ++s)
      tracker.on_worker_step(1, s, 2.0, 0.5, 0.25, 0.0);
    for (int64_t s = 0; s < 2; ++s)
      tracker.on_step_complete(s, {{0, 1.0, 8}, {1, 1.0, 8}}, 0.0);
    const auto saved = tracker.save();
    CHECK(saved["workers"][0]["steps"] == 2);
    CHECK(saved["workers"][0]["compute_s"] == doctest::Approx(2.0));
    CHECK(saved["workers"][1]["steps"] == 2);
    // The summary of a run that ended there (an early stop) counts the same.
    const auto ended = tracker.report("", {});
    CHECK(ended.workers[0].steps == 2);
    CHECK(ended.workers[0].data_wait_s == doctest::Approx(0.25));
    run_tracker resumed(2, step_rules(10, 5, 0), nullptr);
    resumed.restore(saved);
    for (int64_t s = 2; s < 4; ++s) {
      resumed.on_worker_step(0, s, 1.0, 0.5, 0.25, 0.125);
      resumed.on_worker_step(1, s, 2.0, 0.5, 0.25, 0.0);
      resumed.on_step_complete(s, {{0, 1.0, 8}, {1, 1.0, 8}}, 0.0);
    }
    const auto r = resumed.report("", {});
    CHECK(r.workers[0].steps == 4);
    CHECK(r.workers[1].steps == 4);
    CHECK(r.workers[0].compute_s == doctest::Approx(4.0));
  }

  TEST_CASE("the keeper carries its best and its patience over") {
    early_stopping_config stop;
    stop.patience = 2;
    validation_keeper first(monitor_metric::validation_loss, stop);
    first.on_evaluation(0, 1.0, 0.5);
    first.on_snapshot(0, 0, 1, at::full({3}, 7.0));
    first.on_evaluation(1, 1.5, 0.4);  // worse: one evaluation since the best
    first.on_snapshot(1, 0, 1, at::zeros({3}));
    CHECK(first.settled(1));
    validation_keeper resumed(monitor_metric::validation_loss, stop);
    resumed.restore(first.save(), first.best_weights());
    CHECK(resumed.best_step() == std::optional<int64_t>(0));
    CHECK(resumed.best_value() == std::optional<double>(1.0));
    CHECK(at::equal(resumed.best_weights(), at::full({3}, 7.0)));
    resumed.on_evaluation(2, 1.2, 0.4);  // still worse: patience 2 is used up
    CHECK_FALSE(resumed.settled(2));
    resumed.on_snapshot(2, 0, 1, at::zeros({3}));
    CHECK(resumed.stopped_at() == std::optional<int64_t>(2));
  }

  TEST_CASE("a better evaluation is the best only once its weights are in") {
    validation_keeper keeper(monitor_metric::validation_loss, std::nullopt);
    keeper.on_evaluation(7, 1.4, 0.25);
    keeper.on_snapshot(7, 0, 1, at::full({3}, 7.0));
    keeper.on_evaluation(14, 1.2, 0.45);  // better, its weights still on their way
    CHECK_FALSE(keeper.settled(14));
    CHECK(keeper.best_step() == std::optional<int64_t>(7));
    CHECK(keeper.best_value() == std::optional<double>(1.4));  // step 7's figure, not 14's
    keeper.on_snapshot(14, 0, 1, at::full({3}, 14.0));
    CHECK(keeper.best_step() == std::optional<int64_t>(14));
    CHECK(keeper.best_value() == std::optional<double>(1.2));
    CHECK(at::equal(keeper.best_weights(), at::full({3}, 14.0)));
  }
}

TEST_SUITE("checkpoint") {
  TEST_CASE("an optimizer's state as plain bytes loads back bit for bit, and bad bytes are named") {
    // Two optimizers over equal parameters: one saved after 3 steps and loaded into a fresh one;
    // both then take the same 2 steps and must hold the same parameters, bit for bit.
    const auto run = [](const optimizer_config& config, bool amsgrad) {
      const auto make = [&](std::vector<at::Tensor>& params) {
        params = {at::arange(6, at::kFloat).reshape({2, 3}).set_requires_grad(true),
                  at::full({4}, 0.5f).set_requires_grad(true)};
        auto o = make_optimizer(config, params);
        if (amsgrad)
          static_cast<torch::optim::AdamOptions&>(o->param_groups()[0].options()).amsgrad(true);
        return o;
      };
      const auto step = [](torch::optim::Optimizer& o, std::vector<at::Tensor>& params, int k) {
        for (std::size_t i = 0; i < params.size(); ++i)
          params[i].mutable_grad() =
              at::sin(at::arange(params[i].numel(), at::kFloat) * (k + 1) + static_cast<float>(i))
                  .reshape(params[i].sizes());
        o.step();
      };
      std::vector<at::Tensor> a_params, b_params;
      auto a = make(a_params);
      auto b = make(b_params);
      for (int k = 0; k < 3; ++k)
        step(*a, a_params, k);
      set_learning_rate(*a, 0.25 * config.lr);  // a schedule's rate travels with the state
      const auto bytes = save_optimizer(*a);
      CHECK(is_optimizer_bytes(bytes));
      CHECK(optimizer_bytes_problem(bytes) == "");
      {
        torch::NoGradGuard no_grad;
        for (std::size_t i = 0; i < a_params.size(); ++i)
          b_params[i].copy_(a_params[i]);
      }
      load_optimizer(*b, bytes);
      CHECK(save_optimizer(*b) == bytes);  // no addresses inside: equal states, equal bytes
      for (int k = 3; k < 5; ++k) {
        step(*a, a_params, k);
        step(*b, b_params, k);
      }
      for (std::size_t i = 0; i < a_params.size(); ++i)
        CHECK(at::equal(a_params[i], b_params[i]));
      return bytes;
    };
    optimizer_config adam;
    adam.kind = optimizer_kind::adam;
    adam.lr = 0.01;
    optimizer_config sgd;
    sgd.kind = optimizer_kind::sgd;
    sgd.lr = 0.1;
    sgd.momentum = 0.9;
    sgd.nesterov = true;
    const auto adam_bytes = run(adam, false);
    run(adam, true);
    optimizer_config adamw = adam;
    adamw.kind = optimizer_kind::adamw;
    adamw.weight_decay = 0.01;
    const auto adamw_bytes = run(adamw, false);
    optimizer_config rmsprop;
    rmsprop.kind = optimizer_kind::rmsprop;
    rmsprop.lr = 0.01;
    rmsprop.momentum = 0.5;
    rmsprop.centered = true;
    rmsprop.weight_decay = 0.01;
    const auto rmsprop_bytes = run(rmsprop, false);
    rmsprop.momentum = 0;
    rmsprop.centered = false;
    run(rmsprop, false);  // square_avg only
    const auto sgd_bytes = run(sgd, false);
    optimizer_config plain = sgd;
    plain.momentum = 0;
    plain.nesterov = false;
    run(plain, false);  // no momentum buffers: parameters without state

    std::vector<at::Tensor> params = {at::zeros({2, 3}).set_requires_grad(true),
                                      at::zeros({4}).set_requires_grad(true)};
    auto fresh = make_optimizer(adam, params);
    const auto refused = [&](const std::string& bytes, const std::string& why) {
      CHECK_THROWS_WITH(load_optimizer(*fresh, bytes),
                        ("optimizer state does not load: " + why).c_str());
    };
    refused(adam_bytes.substr(0, adam_bytes.size() - 3),
            "a parameter's state: 4 elements run past the end");
    refused(adam_bytes + "x", "bytes follow the last parameter's state");
    refused(sgd_bytes, "the state is of sgd, the optimizer is adam");
    refused(adamw_bytes, "the state is of adamw, the optimizer is adam");
    refused(rmsprop_bytes, "the state is of rmsprop, the optimizer is adam");
    auto other_kind = adam_bytes;
    other_kind[16] = 7;
    refused(other_kind, "unknown optimizer kind 7");
    CHECK(optimizer_bytes_problem(adam_bytes.substr(0, 20)) ==
          "the group count: the state ends early");
    CHECK(optimizer_state_problem("troupe-optim-v1\n") == "the kind: the state ends early");
    // Parameters of other sizes: refused, and the optimizer is unchanged.
    std::vector<at::Tensor> other = {at::zeros({3, 3}).set_requires_grad(true),
                                     at::zeros({4}).set_requires_grad(true)};
    auto mismatched = make_optimizer(adam, other);
    const auto before = save_optimizer(*mismatched);
    CHECK_THROWS_WITH(load_optimizer(*mismatched, adam_bytes),
                      "optimizer state does not load: parameter 0 of group 0: 6 Float values for a "
                      "parameter of 9 Float");
    CHECK(save_optimizer(*mismatched) == before);
  }
}  // TEST_SUITE
