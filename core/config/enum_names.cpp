#include "core/config/enum_names.hpp"

#include "core/job/job_config.hpp"

namespace troupe {

const std::vector<std::string> model_names{"mlp", "cnn", "torchscript"};
const std::vector<std::string> activation_names{"relu", "tanh", "gelu"};
const std::vector<std::string> data_names{"fashion_mnist", "synthetic", "tensors",
                                          "csv",           "npy",       "image_folder"};
const std::vector<std::string> optimizer_names{"sgd", "adam", "adamw", "rmsprop"};
const std::vector<std::string> policy_names{"sync", "local_sgd", "async", "schedule"};
const std::vector<std::string> compression_names{"none", "bf16", "int8"};
const std::vector<std::string> schedule_names{"gpipe", "1f1b"};
const std::vector<std::string> lr_schedule_names{"constant", "step", "cosine", "one_cycle"};
const std::vector<std::string> monitor_names{"validation_loss", "validation_accuracy"};
const std::vector<std::string> loss_names{"cross_entropy", "mse", "l1", "bce_with_logits"};
const std::vector<std::string> precision_names{"fp32", "bf16", "fp16"};

const char* to_string(model_kind x) {
  return model_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(activation_kind x) {
  return activation_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(data_kind x) {
  return data_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(optimizer_kind x) {
  return optimizer_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(compression_kind x) {
  return compression_names[static_cast<std::size_t>(x)].c_str();
}

const char* to_string(policy_kind x) {
  return policy_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(lr_schedule_kind x) {
  return lr_schedule_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(monitor_metric x) {
  return monitor_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(loss_kind x) {
  return loss_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(precision_kind x) {
  return precision_names[static_cast<std::size_t>(x)].c_str();
}
const char* to_string(node_collective x) {
  return x == node_collective::ring ? "ring" : "gloo";
}

const char* to_string(node_loss_policy x) {
  return x == node_loss_policy::fail ? "fail" : "continue";
}

}  // namespace troupe
