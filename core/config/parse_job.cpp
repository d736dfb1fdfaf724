// Job validation: parse_job() checks every key of a job's JSON into a job_config,
// read_json_file() reports file and syntax errors by line (to_json() is in job_json.cpp).
#include "core/config/parse_job.hpp"

#include "core/config/enum_names.hpp"
#include "core/config/feature_rules.hpp"
#include "core/config/json_fields.hpp"
#include "core/config/parse_run_sections.hpp"
#include "core/data/preprocessing.hpp"
#include "core/errors.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace troupe {
namespace {

constexpr int64_t max_width = 65536;
constexpr int64_t max_channels = 1024;
// Each conv block halves the 28x28 image: 28 -> 14 -> 7 -> 3.
constexpr std::size_t max_conv_blocks = 3;

}  // namespace

// '=' and ',' spell a suite job's settings ("cnn-lr=0.05,seed=2", core/suite/job_names).
bool valid_run_name(const std::string& s) {
  if (s.empty() || s.size() > 64)
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string("_.-=,").find(c) == std::string::npos)
      return false;
  return s != "." && s != "..";
}

namespace {

bool non_empty(const std::string& s) {
  return !s.empty();
}

void read_model(object_reader r, model_config& m) {
  if (!read_enum(r, "type", model_names, m.kind))
    skip_all(r, {"channels", "kernel_size", "path", "init"});
  if (m.kind == model_kind::torchscript) {
    // The layers are the file's: nothing else describes them.
    if (!r.has("path"))
      r.object_problem(
          "a torchscript model needs \"path\": a file written by "
          "torch.jit.script(model).save(path)");
    r.string("path", m.path, non_empty, "a non-empty string (a file)");
    std::string init = m.init_from_seed ? "seed" : "saved";
    r.string(
        "init", init, [](const std::string& v) { return v == "saved" || v == "seed"; },
        "\"saved\" (the file's weights) or \"seed\" (drawn from the job's seed)");
    m.init_from_seed = init == "seed";
    r.finish({"type", "path", "init"});
    return;
  }
  if (m.kind == model_kind::cnn)
    m.hidden = {128};
  r.integer_array("hidden", m.hidden, 1, max_width, 0, SIZE_MAX);
  read_enum(r, "activation", activation_names, m.activation);
  if (m.kind == model_kind::cnn) {
    r.integer_array("channels", m.channels, 1, max_channels, 1, max_conv_blocks);
    if (r.has("kernel_size")) {
      int64_t k = m.kernel_size;
      if (r.integer("kernel_size", k, 1, 9) && k % 2 == 0)
        r.problem("kernel_size",
                  "must be odd (so padding keeps the image size), got " + std::to_string(k));
      else
        m.kernel_size = k;
    }
    r.finish({"type", "hidden", "activation", "channels", "kernel_size"});
  } else {
    r.finish({"type", "hidden", "activation"});
  }
}

// A fraction in (0, 1) or a whole number of rows.
void read_validation(object_reader& r, double& validation) {
  double v = validation;
  if (!r.number("validation", v, 0, false, 1e9, false))
    return;
  if (v >= 1 && v != std::floor(v))
    return r.problem("validation", "must be a fraction in (0, 1) or a whole number of rows, got " +
                                       render_value(v));
  validation = v;
}

// job.json states the preprocessing for whoever uses the weights; the file may be run again, so
// the key is accepted when it states what troupe does, and refused when it asks for anything else
// (troupe has one normalization per data set).
void read_preprocessing(object_reader& r, data_kind kind) {
  const auto* v = r.peek("preprocessing");
  if (v == nullptr)
    return;
  r.skip("preprocessing");
  const nlohmann::json fixed = preprocessing_json(kind);
  if (*v != fixed)
    r.problem("preprocessing",
              "states what troupe does to every image, " + fixed.value("formula", "") +
                  ", and cannot be changed; remove the key, got " + render_value(*v));
}

// {"x": "x.npy" or ["x0.npy", "x1.npy"], "y": ...}: a split's arrays, each one file or its shards.
void read_npy_files(object_reader r, npy_files& f) {
  if (!r.valid())
    return;
  if (!r.has("x") || !r.has("y"))
    r.object_problem(
        "needs \"x\" and \"y\": each a .npy file written by numpy.save, or a list of its "
        "shards in order");
  const char* expected = "a non-empty string (a .npy file)";
  r.string_or_strings("x", f.x, non_empty, expected, 4096);
  r.string_or_strings("y", f.y, non_empty, expected, 4096);
  r.finish({"x", "y"});
}

// {"size": [H, W], "channels": 3, "mean": [...], "std": [...], "center_crop": false}
void read_image(object_reader r, image_config& image) {
  if (!r.valid())
    return;
  if (!r.has("size"))
    r.object_problem("needs \"size\": [height, width], what every image is brought to");
  r.integer_array("size", image.size, 1, 4096, 2, 2);
  r.integer("channels", image.channels, 1, 3);
  if (image.channels == 2)
    r.problem("channels", "must be 1 (gray) or 3 (RGB), got 2");
  const auto channels = static_cast<std::size_t>(image.channels);
  r.number_array("mean", image.mean, -1e6, false, 1e6, channels);
  r.number_array("std", image.std, 1e-9, false, 1e6, channels);
  r.boolean("center_crop", image.center_crop);
  std::string cache = "memory";
  if (r.string(
          "cache", cache, [](const std::string& c) { return c == "memory" || c == "disk"; },
          "\"memory\" or \"disk\""))
    image.cache_on_disk = cache == "disk";
  r.string("cache_dir", image.cache_dir, non_empty, "a non-empty string (a folder)");
  if (r.has("cache_dir") && !image.cache_on_disk && r.valid())
    r.problem("cache_dir", "is where cache \"disk\" keeps the decoded images; give cache \"disk\"");
  r.finish({"size", "channels", "mean", "std", "center_crop", "cache", "cache_dir"});
}

void read_augment(object_reader r, augment_config& augment) {
  if (!r.valid())
    return;
  r.integer("random_crop_padding", augment.random_crop_padding, 0, 1024);
  r.boolean("horizontal_flip", augment.horizontal_flip);
  r.finish({"random_crop_padding", "horizontal_flip"});
}

void read_data(object_reader r, data_config& d) {
  if (!read_enum(r, "type", data_names, d.kind))
    skip_all(r, {"path", "train_samples", "test_samples", "noise", "train", "test", "label"});
  read_validation(r, d.validation);
  r.integer("prefetch", d.prefetch, 0, 64);
  if (d.kind == data_kind::fashion_mnist) {
    r.string("path", d.path, non_empty, "a non-empty string (a folder)");
    read_preprocessing(r, d.kind);
    r.finish({"type", "path", "validation", "prefetch", "preprocessing"});
  } else if (d.kind == data_kind::tensors) {
    if (!r.has("train") || !r.has("test"))
      r.object_problem(
          "data of type tensors needs \"train\" and \"test\": files written by "
          "torch.save({\"x\": X, \"y\": Y}, path)");
    r.string("train", d.train_file, non_empty, "a non-empty string (a file)");
    r.string("test", d.test_file, non_empty, "a non-empty string (a file)");
    read_preprocessing(r, d.kind);
    r.finish({"type", "train", "test", "validation", "prefetch", "preprocessing"});
  } else if (d.kind == data_kind::npy) {
    if (!r.has("train") || !r.has("test"))
      r.object_problem(
          "data of type npy needs \"train\" and \"test\": {\"x\": ..., \"y\": ...} each, "
          ".npy files written by numpy.save (a file, or a list of its shards in order)");
    read_npy_files(r.object("train"), d.train_arrays);
    read_npy_files(r.object("test"), d.test_arrays);
    read_preprocessing(r, d.kind);
    r.finish({"type", "train", "test", "validation", "prefetch", "preprocessing"});
  } else if (d.kind == data_kind::image_folder) {
    if (!r.has("train") || !r.has("test") || !r.has("image"))
      r.object_problem(
          "data of type image_folder needs \"train\" and \"test\" (folders of one folder per "
          "class) and \"image\": {\"size\": [height, width], ...}");
    r.string("train", d.train_file, non_empty, "a non-empty string (a folder)");
    r.string("test", d.test_file, non_empty, "a non-empty string (a folder)");
    read_image(r.object("image"), d.image);
    read_augment(r.object("augment"), d.augment);
    if (const auto i = r.choice("bad_images", {"error", "skip"}))
      d.skip_bad_images = *i == 1;
    read_preprocessing(r, d.kind);
    r.finish({"type", "train", "test", "image", "augment", "bad_images", "validation", "prefetch",
              "preprocessing"});
  } else if (d.kind == data_kind::csv) {
    if (!r.has("train") || !r.has("test"))
      r.object_problem(
          "data of type csv needs \"train\" and \"test\": tables with a header row, whose "
          "\"label\" column (default \"label\") is the target");
    r.string("train", d.train_file, non_empty, "a non-empty string (a file)");
    r.string("test", d.test_file, non_empty, "a non-empty string (a file)");
    r.string("label", d.label, non_empty, "a non-empty string (a column of the header row)");
    read_preprocessing(r, d.kind);
    r.finish({"type", "train", "test", "label", "validation", "prefetch", "preprocessing"});
  } else {
    r.integer("train_samples", d.train_samples, 1, 1000000);
    r.integer("test_samples", d.test_samples, 1, 1000000);
    r.number("noise", d.noise, 0, false, HUGE_VAL, false);
    r.finish({"type", "train_samples", "test_samples", "noise", "validation", "prefetch"});
  }
}

// "cosine", or {"type": "cosine", "min_lr": 1e-4, "warmup_steps": 100, ...}.
void read_lr_schedule(object_reader& parent, lr_schedule_config& s) {
  const auto* v = parent.peek("schedule");
  if (v == nullptr)
    return;
  if (v->is_string()) {
    read_enum(parent, "schedule", lr_schedule_names, s.kind);
    return;
  }
  auto r = parent.object("schedule");
  if (!r.has("type"))
    r.object_problem("needs a type: one of \"constant\", \"step\", \"cosine\", \"one_cycle\"");
  if (!read_enum(r, "type", lr_schedule_names, s.kind))
    return skip_all(r, {"every", "gamma", "min_lr", "warmup_steps", "warmup_start_factor",
                        "pct_start", "div_factor", "final_div_factor"});
  std::vector<std::string> known{"type"};
  if (s.kind == lr_schedule_kind::one_cycle) {
    r.number("pct_start", s.pct_start, 0, true, 1, true);
    r.number("div_factor", s.div_factor, 0, true, HUGE_VAL, false);
    r.number("final_div_factor", s.final_div_factor, 0, true, HUGE_VAL, false);
    known.insert(known.end(), {"pct_start", "div_factor", "final_div_factor"});
  } else {
    r.integer("warmup_steps", s.warmup_steps, 0, INT64_C(1) << 40);
    r.number("warmup_start_factor", s.warmup_start_factor, 0, true, 1, false);
    known.insert(known.end(), {"warmup_steps", "warmup_start_factor"});
  }
  if (s.kind == lr_schedule_kind::step) {
    r.integer("every", s.every, 1, INT64_C(1) << 40);
    r.number("gamma", s.gamma, 0, true, HUGE_VAL, false);
    known.insert(known.end(), {"every", "gamma"});
  }
  if (s.kind == lr_schedule_kind::cosine) {
    r.number("min_lr", s.min_lr, 0, false, HUGE_VAL, false);
    known.push_back("min_lr");
  }
  r.finish(known);
}

void read_optimizer(object_reader r, optimizer_config& o) {
  if (!read_enum(r, "type", optimizer_names, o.kind))
    skip_all(r, {"momentum", "nesterov", "betas", "eps", "alpha", "centered"});
  if (o.kind == optimizer_kind::adam || o.kind == optimizer_kind::adamw)
    o.lr = 0.001;  // torch.optim's defaults: 0.01 for sgd and rmsprop
  if (o.kind == optimizer_kind::adamw)
    o.weight_decay = 0.01;  // torch.optim.AdamW's default
  r.number("lr", o.lr, 0, true, HUGE_VAL, false);
  r.number("weight_decay", o.weight_decay, 0, false, HUGE_VAL, false);
  read_lr_schedule(r, o.schedule);
  if (o.kind == optimizer_kind::sgd) {
    // A bad momentum was not stored: comparing nesterov with the default would mislead.
    const bool momentum_ok = r.number("momentum", o.momentum, 0, false, 1, true);
    if (r.boolean("nesterov", o.nesterov) && momentum_ok && o.nesterov && o.momentum == 0)
      r.problem("nesterov", "needs momentum > 0, got true with momentum 0");
    r.finish({"type", "lr", "weight_decay", "momentum", "nesterov", "schedule"});
  } else if (o.kind == optimizer_kind::rmsprop) {
    r.number("momentum", o.momentum, 0, false, 1, true);
    r.number("alpha", o.alpha, 0, false, 1, true);
    r.number("eps", o.eps, 0, true, HUGE_VAL, false);
    r.boolean("centered", o.centered);
    r.finish({"type", "lr", "weight_decay", "momentum", "alpha", "eps", "centered", "schedule"});
  } else {
    std::vector<double> betas{o.beta1, o.beta2};
    r.number_array("betas", betas, 0, false, 1, 2);
    o.beta1 = betas[0];
    o.beta2 = betas[1];
    r.number("eps", o.eps, 0, true, HUGE_VAL, false);
    r.finish({"type", "lr", "weight_decay", "betas", "eps", "schedule"});
  }
}

}  // namespace

job_config parse_job(const nlohmann::json& json) {
  std::vector<std::string> problems;
  job_config job;
  object_reader top(json, "", problems);
  top.string("name", job.name, valid_run_name, run_name_rule);
  {
    int64_t seed = 0;
    top.integer("seed", seed, 0, INT64_MAX);
    job.seed = static_cast<uint64_t>(seed);
  }
  read_model(top.object("model"), job.model);
  read_data(top.object("data"), job.data);
  read_optimizer(top.object("optimizer"), job.optimizer);
  read_training(top.object("training"), job.training);
  job.data.class_labels = job.training.loss == loss_kind::cross_entropy;
  read_parallelism(top.object("parallelism"), job.parallelism);
  read_ensemble(top.object("ensemble"), job.ensemble);
  read_cluster(top.object("cluster"), job.cluster);
  read_checkpoint(top.object("checkpoint"), job.checkpoint);
  read_faults(top.object("faults"), job.faults);
  read_device(top, job.device);
  top.boolean("deterministic", job.deterministic);
  double gpu_memory_mb = 0;
  if (top.has("gpu_memory_mb") && top.number("gpu_memory_mb", gpu_memory_mb, 0, true, 1e9, false))
    job.gpu_memory_mb = gpu_memory_mb;
  top.finish({"name", "seed", "model", "data", "optimizer", "training", "parallelism", "ensemble",
              "cluster", "checkpoint", "faults", "device", "deterministic", "gpu_memory_mb"});

  check_feature_combinations(job, problems);
  if (!problems.empty())
    throw job_error(std::move(problems));
  return job;
}

}  // namespace troupe
