// Models: layer order and names (PyTorch state_dict keys), shapes, flat parameter buffers.
#include "core/model/flat_parameters.hpp"
#include "core/model/model_builder.hpp"
#include "core/model/network.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>

using namespace troupe;

namespace {

std::vector<std::string> child_names(const torch::nn::Sequential& m) {
  std::vector<std::string> names;
  for (const auto& c : m->named_children())
    names.push_back(c.key());
  return names;
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("mlp: named layers and state_dict parameter names and shapes") {
    model_config c;
    c.hidden = {256, 128};
    auto m = build_model(c, 10);
    CHECK(child_names(m) ==
          std::vector<std::string>{"flatten", "fc1", "act1", "fc2", "act2", "out"});
    flat_parameters flat(*m);
    const std::vector<std::pair<std::string, std::vector<int64_t>>> expected{
        {"fc1.weight", {256, 784}}, {"fc1.bias", {256}},       {"fc2.weight", {128, 256}},
        {"fc2.bias", {128}},        {"out.weight", {10, 128}}, {"out.bias", {10}}};
    CHECK(flat.layout() == expected);
    CHECK(flat.size() == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
    CHECK(m->forward(at::zeros({3, 1, 28, 28})).sizes() == at::IntArrayRef({3, 10}));
  }

  TEST_CASE("mlp without hidden layers is a linear classifier") {
    model_config c;
    c.hidden = {};
    auto m = build_model(c, 10);
    CHECK(child_names(m) == std::vector<std::string>{"flatten", "out"});
  }

  TEST_CASE("cnn: conv blocks then classifier, with PyTorch names and shapes") {
    model_config c;
    c.kind = model_kind::cnn;
    c.channels = {16, 32};
    c.kernel_size = 5;
    c.hidden = {128};
    c.activation = activation_kind::gelu;
    auto m = build_model(c, 10);
    CHECK(child_names(m) == std::vector<std::string>{"conv1", "cact1", "pool1", "conv2", "cact2",
                                                     "pool2", "flatten", "fc1", "act1", "out"});
    flat_parameters flat(*m);
    CHECK(flat.layout().front() ==
          std::pair<std::string, std::vector<int64_t>>{"conv1.weight", {16, 1, 5, 5}});
    CHECK(flat.layout()[4] ==
          std::pair<std::string, std::vector<int64_t>>{"fc1.weight", {128, 32 * 7 * 7}});
    CHECK(m->forward(at::zeros({2, 1, 28, 28})).sizes() == at::IntArrayRef({2, 10}));
    auto rows = summarize_layers(m);
    CHECK(rows[0].parameters == 16 * 25 + 16);
    CHECK(rows[0].kind == "Conv2d");
    CHECK(rows[2].kind == "MaxPool2d");
    CHECK(rows[1].parameters == 0);
  }

  TEST_CASE("flat buffers alias the parameters and receive backward's gradients") {
    model_config c;
    c.hidden = {8};
    auto m = build_model(c, 10);
    flat_parameters flat(*m);
    auto params = m->parameters();
    CHECK(params[0].data_ptr() == flat.weights().data_ptr());
    {
      torch::NoGradGuard no_grad;
      flat.weights().fill_(0.5);
    }
    CHECK(params[1].allclose(at::full({8}, 0.5)));
    auto loss = m->forward(at::ones({4, 1, 28, 28})).sum();
    loss.backward();
    CHECK(flat.grads().abs().sum().item<double>() > 0);
    CHECK(params[0].grad().data_ptr() == flat.grads().data_ptr());
  }

  TEST_CASE("the gradient moves into storage of its own: kept so far, backward writes there") {
    model_config c;
    c.hidden = {8};
    auto m = build_model(c, 10);
    flat_parameters flat(*m);
    m->forward(at::ones({4, 1, 28, 28})).sum().backward();
    flat.set_rows(4);
    const auto before = flat.gradient_with_rows().clone();
    auto storage = at::empty({flat.size() + 1});
    flat.move_grads_into(storage);
    CHECK(flat.grads().data_ptr() == storage.data_ptr());
    CHECK(flat.gradient_with_rows().data_ptr() == storage.data_ptr());
    CHECK(at::equal(storage, before));
    CHECK(rows_in(storage) == 4);
    auto params = m->parameters();
    CHECK(params[1].grad().data_ptr() == storage.narrow(0, params[0].numel(), 8).data_ptr());
    m->forward(at::ones({4, 1, 28, 28})).sum().backward();  // accumulates, in place
    const auto n = flat.size();
    CHECK(at::allclose(storage.narrow(0, 0, n), 2 * before.narrow(0, 0, n)));
    CHECK(rows_in(storage) == 4);  // backward leaves the rows slot alone
    CHECK_THROWS_AS(flat.move_grads_into(at::empty({flat.size()})), std::invalid_argument);
    CHECK_THROWS_AS(flat.move_grads_into(at::empty({flat.size() + 1}, at::kDouble)),
                    std::invalid_argument);
  }

  TEST_CASE("a sum of gradients with their rows slots says how many rows it holds") {
    model_config c;
    c.hidden = {8};
    auto m = build_model(c, 10);
    flat_parameters flat(*m);
    CHECK(flat.gradient_with_rows().numel() == flat.size() + 1);
    CHECK(flat.grads().numel() == flat.size());
    CHECK(rows_in(flat.gradient_with_rows()) == 0);
    flat.set_rows(20);
    auto sum = flat.gradient_with_rows().clone();
    flat.set_rows(19);
    sum.add_(flat.gradient_with_rows());
    CHECK(rows_in(sum) == 39);
    // Exact as far as float32 counts: a step of 2^24 rows.
    flat.set_rows(int64_t{1} << 24);
    CHECK(rows_in(flat.gradient_with_rows()) == (int64_t{1} << 24));
    CHECK_THROWS_AS(rows_in(at::empty({0})), std::invalid_argument);
  }

  TEST_CASE("unflatten gives owned tensors with the layout's names and shapes") {
    model_config c;
    c.hidden = {4};
    auto m = build_model(c, 10);
    flat_parameters flat(*m);
    auto named = unflatten(flat.weights(), flat.layout());
    REQUIRE(named.size() == 4);
    CHECK(named[0].first == "fc1.weight");
    CHECK(named[0].second.sizes() == at::IntArrayRef({4, 784}));
    CHECK(named[0].second.data_ptr() != flat.weights().data_ptr());
    CHECK(at::equal(named[3].second, flat.weights().narrow(0, flat.size() - 10, 10)));
    CHECK_THROWS(unflatten(flat.weights().narrow(0, 0, 10), flat.layout()));
  }

  TEST_CASE("buffers ride behind the parameters: weighted into the gradient, adopted back") {
    torch::nn::Sequential m;
    m->push_back("fc", torch::nn::Linear(3, 2));
    m->push_back("bn", torch::nn::BatchNorm1d(2));
    named_tensors params, buffers;
    for (const auto& p : m->named_parameters())
      params.emplace_back(p.key(), p.value());
    for (const auto& b : m->named_buffers())
      buffers.emplace_back(b.key(), b.value());
    flat_parameters flat(params, buffers);
    const int64_t p = 3 * 2 + 2 + 2 + 2;  // fc weight and bias, bn weight and bias
    CHECK(flat.parameter_count() == p);
    CHECK(flat.size() == p + 2 + 2 + 1);  // running mean, running var, batches tracked
    CHECK(flat.layout().back().first == "bn.num_batches_tracked");
    CHECK(flat.parameter_grads().numel() == p);

    m->train();
    m->forward(at::randn({4, 3}));  // updates the running statistics and the count
    flat.gather_buffers(0.25);
    const auto mean = m->named_buffers()["bn.running_mean"].clone();
    CHECK(at::equal(flat.weights().narrow(0, p, 2), mean));
    CHECK(at::allclose(flat.grads().narrow(0, p, 2), mean * 0.25));
    CHECK(flat.grads()[flat.size() - 1].item<double>() == 0.25);

    // What a sum over four replicas holding the same statistics would hand back: a count of
    // 0.25 * 4 within rounding, and the mean.
    {
      torch::NoGradGuard no_grad;
      flat.grads().narrow(0, p, flat.size() - p).mul_(4.0).add_(1e-7);
    }
    flat.adopt_combined_buffers();
    CHECK(m->named_buffers()["bn.num_batches_tracked"].item<int64_t>() == 1);
    CHECK(at::allclose(m->named_buffers()["bn.running_mean"], mean, 1e-5, 1e-6));

    // Setting the weights sets the buffers.
    {
      torch::NoGradGuard no_grad;
      flat.weights().narrow(0, p, 2).fill_(7);
    }
    flat.load_buffers();
    CHECK(at::equal(m->named_buffers()["bn.running_mean"], at::full({2}, 7.0)));
  }

  TEST_CASE("a torchscript file that cannot be read is refused by name") {
    model_config c;
    c.kind = model_kind::torchscript;
    c.path = "/nonexistent/net.pt";
    CHECK_THROWS_WITH_AS(network(c, 10),
                         "/nonexistent/net.pt: cannot be opened (no such file, or not readable)",
                         model_file_error);
  }
}
