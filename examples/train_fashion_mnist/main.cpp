// train_fashion_mnist: trains the small ResNet on Fashion-MNIST for real, through the whole stack: JPEG
// files on disk, the pipeline (decode, pad + random crop 28, flip), pinned batches, the device feeder and
// the training step (cuDNN with the whole step replayed as a CUDA graph on a GPU, the CPU reference
// otherwise). Named recipes (--recipe, --list-recipes) and several seeds in one call (--seeds 1,2,3: the
// median is what counts); prints loss, train and test accuracy, images/s and the data-wait fraction per
// epoch; writes JSON, a CSV and a PNG of the curves when asked.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/library_versions.h"
#include "device_option.h"
#include "plot_script.h"
#include "recipes.h"
#include "training_run.h"

namespace {

struct Options {
  std::string data = "data/generated/fashion-mnist";
  int epochs = 0, batch = 0, width = 0;  // 0: the recipe's
  double lr = 0;
  std::vector<std::string> recipes{default_recipe().name};
  std::vector<std::uint64_t> seeds{1};
  int threads = 0, eval_every = 0;
  bool eager = false, list = false, input_only = false;
  std::string device = "auto", precision = "bf16", json, csv, plot, checkpoint, resume;
  std::size_t train_subset = 0, test_subset = 0;
  std::uint64_t checkpoint_every = 0;  // steps; 0: at the end of each epoch only
  std::uint64_t stop_after = 0;        // steps; 0: run to the end
  bool deterministic = true;
};

// A CLI11 check that accepts recipe names (recipes.h), naming the choices otherwise.
CLI::Validator recipe_name() {
  return CLI::Validator(
      [](const std::string& name) {
        try {
          find_recipe(name);
          return std::string();
        } catch (const std::exception& error) {
          return std::string(error.what());
        }
      },
      "NAME");
}

// On --help prints the usage and exits 0; on a bad argument says why and exits 2.
Options parse(int argc, char** argv) {
  Options o;
  std::string names;
  for (const Recipe& r : recipes()) names += "\n  " + r.name + ": " + r.summary;
  CLI::App app(
      "train_fashion_mnist: trains the small ResNet on Fashion-MNIST through the whole stack (JPEG files,\n"
      "the pipeline, pinned batches, the device feeder, the training step replayed as a CUDA graph) and\n"
      "prints loss, accuracy, images/s and the data-wait fraction per epoch. Every recipe runs once per\n"
      "seed, a fresh model each time; the summary gives each recipe's median final test accuracy and\n"
      "seconds (training and evaluation, warm-up excluded). Recipes:" +
      names);
  app.add_option("--data", o.data,
                 "folder with train.txt and test.txt (\"path label\" lines), as ./conveyor.sh data makes it")
      ->capture_default_str();
  app.add_option("--recipe", o.recipes, "recipes to run, comma-separated (--list-recipes prints them)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(recipe_name());
  app.add_option("--seeds,--seed", o.seeds, "seeds, comma-separated: each recipe once per seed")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--eval-every", o.eval_every,
                 "also evaluate the test split after every N-th epoch (0: after the last one only)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--device", o.device, "where the model trains")
      ->capture_default_str()
      ->check(example_support::device_spec());
  app.add_option("--threads", o.threads, "pipeline threads (0: all cores)")->check(CLI::Range(0, 4096));
  app.add_option("--train-subset", o.train_subset, "train on a random N of the training images (0: all)");
  app.add_option("--test-subset", o.test_subset, "test on the first N test images (0: all)");
  app.add_option("--precision", o.precision, "arithmetic of the training step")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  app.add_flag("--no-graph", o.eager,
               "run every step eagerly (default: replayed as one CUDA graph on a GPU)");
  app.add_option("--epochs", o.epochs, "override the recipes' passes over the training set")
      ->check(CLI::Range(1, 1000));
  app.add_option("--batch", o.batch, "override the recipes' images per step")->check(CLI::Range(1, 65536));
  app.add_option("--lr", o.lr, "override the recipes' peak learning rate")->check(CLI::Range(1e-9, 100.0));
  app.add_option("--width", o.width, "override the recipes' channels of the first stage")
      ->check(CLI::Range(1, 1024));
  app.add_option("--json", o.json, "write every run, epoch by epoch, and the summary to FILE");
  CLI::Option* csv = app.add_option("--csv", o.csv, "write one line per run and epoch to FILE");
  app.add_option("--plot", o.plot,
                 "draw the curves into FILE.png " + example_support::help_text("plot_training.py"))
      ->needs(csv);
  app.add_option("--checkpoint", o.checkpoint,
                 "save the run (model, optimizer, schedule, data position) to FILE after every epoch");
  app.add_option("--resume", o.resume,
                 "go on from the checkpoint FILE: its epoch, position in the data, schedule and model");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also save the checkpoint every STEPS steps")
      ->needs("--checkpoint");
  app.add_option("--stop-after", o.stop_after,
                 "end after STEPS steps with a checkpoint, as a preemption would")
      ->needs("--checkpoint");
  app.add_option(
         "--deterministic", o.deterministic,
         "GPU: cuDNN's heuristic choice among deterministic algorithms (a run repeats and resumes bit for "
         "bit; on this small network 3x faster than the timed search, measured on an H100); 0: "
         "cudnnFind's timed choice")
      ->capture_default_str();
  app.add_flag("--list-recipes", o.list, "print the recipes as JSON and exit");
  app.add_flag("--input-only", o.input_only,
               "run the recipe's input path alone for 3 epochs (read, decode, crop, flip, batch, copy to the "
               "device) and print images/s: the most the training loop can be fed");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::exit(app.exit(error) == 0 ? 0 : 2);  // --help: 0; a usage error: its message and 2
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json run_json(const RunResult& r) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochRecord& e : r.epochs)
    epochs.push_back(
        {{"epoch", e.epoch},
         {"loss", e.loss},
         {"train_accuracy", e.train_accuracy},
         {"test_accuracy", e.test_accuracy ? nlohmann::json(*e.test_accuracy) : nlohmann::json()},
         {"images_per_s", e.images_per_s},
         {"data_wait_fraction", e.data_wait_fraction},
         {"seconds", e.seconds}});
  const auto& w = r.warmup;
  return {{"recipe", r.recipe},
          {"seed", r.seed},
          {"placement", r.placement},
          {"final_test_accuracy", r.final_test_accuracy},
          {"seconds_training_and_evaluation", r.seconds},
          {"warmup",
           {{"seconds", w.seconds},
            {"context_seconds", w.context_seconds},
            {"prepare_seconds", w.prepare_seconds},
            {"first_step_seconds", w.first_step_seconds},
            {"capture_seconds", w.capture_seconds},
            {"cuda_graph", w.graph},
            {"graph_fallback", w.graph_fallback},
            {"algorithm_cache",
             {{"file", w.algorithm_cache.file},
              {"reused", w.algorithm_cache.reused},
              {"searched", w.algorithm_cache.searched},
              {"rejected", w.algorithm_cache.rejected},
              {"warnings", w.algorithm_cache.warnings}}}}},
          {"epochs", epochs}};
}

void write_csv(const std::string& path, const std::vector<RunResult>& runs) {
  std::ofstream csv(path);
  // The first seven columns are those of the single-run CSV before recipes existed.
  csv << "epoch,loss,train_accuracy,test_accuracy,images_per_s,data_wait_fraction,seconds,recipe,seed\n";
  for (const RunResult& r : runs)
    for (const EpochRecord& e : r.epochs) {
      csv << e.epoch << ',' << e.loss << ',' << e.train_accuracy << ',';
      if (e.test_accuracy) csv << *e.test_accuracy;
      csv << ',' << e.images_per_s << ',' << e.data_wait_fraction << ',' << e.seconds << ',' << r.recipe
          << ',' << r.seed << '\n';
    }
  if (!csv) throw conveyor::IoError("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  if (o.list) {
    // 234 steps per epoch: the full training split in batches of 256.
    std::printf("%s\n", recipes_json(234).c_str());
    return 0;
  }
  RunSettings settings;
  settings.placement = conveyor::resolve(conveyor::DeviceSpec::parse(o.device));
  settings.precision = conveyor::train::parse_precision(o.precision);
  settings.threads = o.threads ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  settings.eval_every = o.eval_every;
  settings.cuda_graph = !o.eager;
  settings.checkpoint = o.checkpoint;
  settings.resume = o.resume;
  settings.checkpoint_every = o.checkpoint_every;
  settings.stop_after = o.stop_after;
  settings.deterministic = o.deterministic;
  if ((!o.checkpoint.empty() || !o.resume.empty()) && (o.recipes.size() != 1 || o.seeds.size() != 1))
    throw conveyor::InvalidArgument("--checkpoint and --resume belong to one run: one recipe and one seed");

  const std::filesystem::path root(o.data);
  if (!std::filesystem::exists(root / "train.txt"))
    throw conveyor::IoError("no " + (root / "train.txt").string() +
                            " (./conveyor.sh data makes it from Debian's dataset-fashion-mnist)");
  FashionData data{conveyor::Dataset::list_file(root / "train.txt"),
                   conveyor::Dataset::list_file(root / "test.txt"), 0};
  data.train_size = data.train.source_size();
  if (o.train_subset) {
    // The same subset for every run: chosen with a fixed seed, not the run's.
    data.train = data.train.shuffle(conveyor::Dataset::whole_epoch, 1).take(o.train_subset);
    data.train_size = std::min(o.train_subset, data.train_size);
  }
  if (o.test_subset) data.test = data.test.take(o.test_subset);
  std::printf("%s\ndata: %zu training images, %s; %d threads\n", settings.placement.description.c_str(),
              data.train_size, o.data.c_str(), settings.threads);

  std::vector<RunResult> runs;
  for (const std::string& name : o.recipes) {
    Recipe recipe = find_recipe(name);
    if (o.epochs) recipe.epochs = o.epochs;
    if (o.batch) recipe.batch = o.batch;
    if (o.width) recipe.width = o.width;
    if (o.lr) recipe.peak_lr = o.lr;
    if (o.input_only) {
      input_images_per_s(recipe, o.seeds.front(), data, settings, 3);
      continue;
    }
    for (const std::uint64_t seed : o.seeds) runs.push_back(train_once(recipe, seed, data, settings));
  }
  if (o.input_only) return 0;
  if (!runs.empty() && runs.back().stopped) return 0;  // --stop-after: the checkpoint is the result

  std::printf("\n%-10s %-12s %10s %12s %s\n", "recipe", "seeds", "median acc", "median s",
              "(accuracy, seconds)");
  nlohmann::json summary = nlohmann::json::object();
  for (const std::string& name : o.recipes) {
    std::vector<double> accuracy, seconds;
    std::string seeds, each;
    for (const RunResult& r : runs)
      if (r.recipe == name) {
        accuracy.push_back(r.final_test_accuracy);
        seconds.push_back(r.seconds);
        if (!seeds.empty()) seeds += ',';
        seeds += std::to_string(r.seed);
        char one[48];
        std::snprintf(one, sizeof one, "%s%.2f%% %.2fs", each.empty() ? "" : ", ",
                      100 * r.final_test_accuracy, r.seconds);
        each += one;
      }
    std::printf("%-10s %-12s %9.2f%% %11.2fs (%s)\n", name.c_str(), seeds.c_str(), 100 * median(accuracy),
                median(seconds), each.c_str());
    summary[name] = {{"seeds", seeds},
                     {"median_final_test_accuracy", median(accuracy)},
                     {"median_seconds_training_and_evaluation", median(seconds)},
                     {"final_test_accuracies", accuracy},
                     {"seconds", seconds}};
  }

  if (!o.json.empty()) {
    nlohmann::json recipes_used = nlohmann::json::array();
    nlohmann::json table = nlohmann::json::parse(recipes_json(234));
    for (const auto& r : table["recipes"])
      if (std::find(o.recipes.begin(), o.recipes.end(), r["name"].get<std::string>()) != o.recipes.end())
        recipes_used.push_back(r);
    nlohmann::json all = nlohmann::json::array();
    for (const RunResult& r : runs) all.push_back(run_json(r));
    const conveyor::LibraryVersions v = conveyor::train::library_versions();
    nlohmann::json versions = nlohmann::json::object();
    for (const conveyor::LibraryVersion* l :
         {&v.cuda_driver, &v.cuda_runtime, &v.cudnn, &v.cublas, &v.libjpeg_turbo, &v.tbb, &v.opencv})
      if (!l->name.empty()) versions[l->name] = l->loaded.to_string();
    std::ofstream out(o.json);
    out << nlohmann::json(
               {{"bench", "train_fashion_mnist"},
                {"placement", settings.placement.description},
                {"threads", settings.threads},
                {"data", o.data},
                {"train_images", data.train_size},
                {"eval_every", o.eval_every},
                {"overrides",
                 {{"epochs", o.epochs}, {"batch", o.batch}, {"width", o.width}, {"peak_lr", o.lr}}},
                {"cuda_graph", !o.eager},
                {"libraries", versions},
                {"recipes", recipes_used},
                {"runs", all},
                {"summary", summary}})
               .dump(1)
        << '\n';
    if (!out) throw conveyor::IoError("cannot write " + o.json);
  }
  if (!o.csv.empty()) write_csv(o.csv, runs);
  if (!o.plot.empty()) example_support::plot("plot_training.py", o.csv, o.plot);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
  return 1;
}
