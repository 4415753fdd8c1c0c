// Named training recipes for the small ResNet on Fashion-MNIST. bench/peers/torch_fashion_mnist.py holds
// the same table for the PyTorch anchors; a test (tests/bench/test_fashion_recipes.py) checks through
// both programs' --list-recipes that names, settings and learning-rate schedules agree.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

struct Recipe {
  std::string name;
  std::string summary;
  int epochs = 15;
  int batch = 256;  // the training remainder of each epoch is dropped
  int width = 32;   // channels of the first stage (then 2x and 4x)
  // Learning rate: linear from peak / steps_of_warm-up up to peak over warmup_epochs, then a cosine from
  // peak to 0 at the last step; set before every step.
  double peak_lr = 0.1;
  double warmup_epochs = 0;
  double momentum = 0.9;
  bool nesterov = true;
  double weight_decay = 5e-4;  // on every parameter, as torch.optim.SGD(weight_decay=...) does
  double label_smoothing = 0;
  int crop_padding = 4;         // pad with zeros, then a random 28x28 crop (0: no crop)
  bool train_flip = true;       // random horizontal flip with p 0.5
  bool test_time_flip = false;  // evaluation averages the logits of each image and its mirror image
};

// Every recipe, the default first.
const std::vector<Recipe>& recipes();
const Recipe& default_recipe();
// The recipe of that name; InvalidArgument naming the choices otherwise.
const Recipe& find_recipe(std::string_view name);

// The rate of step `step` (0-based over the whole run) with `steps_per_epoch` steps per epoch.
double learning_rate(const Recipe& recipe, std::size_t step, std::size_t steps_per_epoch);
// Steps of linear warm-up: warmup_epochs x steps_per_epoch, rounded.
std::size_t warmup_steps(const Recipe& recipe, std::size_t steps_per_epoch);

// The table as JSON (what --list-recipes prints): every field, and the rate at a few steps of a run with
// `steps_per_epoch` steps per epoch, so that another implementation can be checked against it.
std::string recipes_json(std::size_t steps_per_epoch);
