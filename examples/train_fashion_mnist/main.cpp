// train_fashion_mnist: trains the small ResNet on Fashion-MNIST for real, through the whole stack: JPEG
// files on disk, the pipeline (decode, pad + random crop 28, flip), pinned batches, the device feeder and
// the training step (cuDNN with the whole step replayed as a CUDA graph on a GPU, the CPU reference
// otherwise). Named recipes (--recipe, --list-recipes) and several seeds in one call (--seeds 1,2,3: the
// median is what counts); prints loss, train and test accuracy, images/s and the data-wait fraction per
// epoch; writes JSON, a CSV and a PNG of the curves when asked.
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
#include "recipes.h"
#include "training_run.h"

namespace {

constexpr const char* kUsage =
    "usage: train_fashion_mnist [--data DIR] [--recipe NAME[,NAME...]] [--seeds K[,K...]] [--eval-every N]\n"
    "                           [--device auto|cpu|gpu:N] [--threads N] [--train-subset N] [--test-subset "
    "N]\n"
    "                           [--precision bf16|fp16|fp32] [--no-graph] [--json FILE] [--csv FILE]\n"
    "                           [--plot FILE.png] [--checkpoint FILE] [--resume FILE]\n"
    "                           [--epochs E] [--batch B] [--lr PEAK] [--width W]   (override the recipes)\n"
    "       train_fashion_mnist --list-recipes\n"
    "       train_fashion_mnist --input-only [--data DIR] [--recipe NAME] [--threads N] [--device ...]\n"
    "DIR holds train.txt and test.txt (\"path label\" lines), as ./conveyor.sh demo makes them under\n"
    "data/generated/fashion-mnist. Every recipe runs once per seed, a fresh model each time; the summary "
    "gives\n"
    "each recipe's median final test accuracy and seconds (training and evaluation, warm-up excluded).\n"
    "--eval-every N evaluates the test split after every N-th epoch too (default 0: after the last only).\n"
    "--input-only runs the recipe's input path alone for 3 epochs (read, decode, crop, flip, batch, copy to "
    "the\n"
    "device) and prints images/s: the most the training loop can be fed.\n";

struct Options {
  std::string data = "data/generated/fashion-mnist";
  int epochs = 0, batch = 0, width = 0;  // 0: the recipe's
  double lr = 0;
  std::vector<std::string> recipes{default_recipe().name};
  std::vector<std::uint64_t> seeds{1};
  int threads = 0, eval_every = 0;
  bool graph = true, list = false, input_only = false;
  std::string device = "auto", precision = "bf16", json, csv, plot, checkpoint, resume;
  std::size_t train_subset = 0, test_subset = 0;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "train_fashion_mnist: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--list-recipes") {
      o.list = true;
      continue;
    }
    if (flag == "--input-only") {
      o.input_only = true;
      continue;
    }
    if (flag == "--no-graph") {
      o.graph = false;
      continue;
    }
    if (i + 1 >= argc) usage_error(std::string(flag) + " needs a value");
    const std::string value = argv[++i];
    auto number = [&](const std::string& text, double lo, double hi) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || v < lo || v > hi)
        usage_error(std::string(flag) + ": bad value " + text);
      return v;
    };
    if (flag == "--data") {
      o.data = value;
    } else if (flag == "--recipe") {
      o.recipes = split(value);
      if (o.recipes.empty()) usage_error("--recipe: no name");
      for (const std::string& name : o.recipes) try {
          find_recipe(name);
        } catch (const conveyor::InvalidArgument& e) {
          usage_error(e.what());
        }
    } else if (flag == "--seeds" || flag == "--seed") {
      o.seeds.clear();
      for (const std::string& s : split(value))
        o.seeds.push_back(static_cast<std::uint64_t>(number(s, 0, 1e18)));
      if (o.seeds.empty()) usage_error(std::string(flag) + ": no seed");
    } else if (flag == "--epochs") {
      o.epochs = static_cast<int>(number(value, 1, 1000));
    } else if (flag == "--batch") {
      o.batch = static_cast<int>(number(value, 1, 65536));
    } else if (flag == "--width") {
      o.width = static_cast<int>(number(value, 1, 1024));
    } else if (flag == "--lr") {
      o.lr = number(value, 1e-9, 100);
    } else if (flag == "--eval-every") {
      o.eval_every = static_cast<int>(number(value, 0, 1000));
    } else if (flag == "--device") {
      o.device = value;
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(number(value, 0, 4096));
    } else if (flag == "--train-subset") {
      o.train_subset = static_cast<std::size_t>(number(value, 0, 1e9));
    } else if (flag == "--test-subset") {
      o.test_subset = static_cast<std::size_t>(number(value, 0, 1e9));
    } else if (flag == "--precision") {
      o.precision = value;
    } else if (flag == "--json") {
      o.json = value;
    } else if (flag == "--csv") {
      o.csv = value;
    } else if (flag == "--plot") {
      o.plot = value;
    } else if (flag == "--checkpoint") {
      o.checkpoint = value;
    } else if (flag == "--resume") {
      o.resume = value;
    } else {
      usage_error("unknown option " + std::string(flag));
    }
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
  if (!o.plot.empty() && o.csv.empty())
    throw conveyor::InvalidArgument("--plot needs --csv (it is drawn from it)");
  RunSettings settings;
  settings.placement = conveyor::resolve(conveyor::DeviceSpec::parse(o.device));
  settings.precision = conveyor::train::parse_precision(o.precision);
  settings.threads = o.threads ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  settings.eval_every = o.eval_every;
  settings.cuda_graph = o.graph;
  settings.checkpoint = o.checkpoint;
  settings.resume = o.resume;

  const std::filesystem::path root(o.data);
  if (!std::filesystem::exists(root / "train.txt"))
    throw conveyor::IoError("no " + (root / "train.txt").string() +
                            " (./conveyor.sh data makes it from Debian's dataset-fashion-mnist)");
  FashionData data{conveyor::Dataset::list_file(root / "train.txt"),
                   conveyor::Dataset::list_file(root / "test.txt"), 0};
  data.train_size = data.train.source_size();
  if (o.train_subset) {
    // The same subset for every run: chosen with a fixed seed, not the run's.
    data.train = data.train.shuffle(data.train.source_size(), 1).take(o.train_subset);
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
                {"cuda_graph", o.graph},
                {"libraries", versions},
                {"recipes", recipes_used},
                {"runs", all},
                {"summary", summary}})
               .dump(1)
        << '\n';
    if (!out) throw conveyor::IoError("cannot write " + o.json);
  }
  if (!o.csv.empty()) write_csv(o.csv, runs);
  if (!o.plot.empty()) {
    const std::string command = "'" + std::string(CONVEYOR_SOURCE_DIR) + "/bench/plot.sh' '" +
                                std::string(CONVEYOR_SOURCE_DIR) + "/bench/plot_training.py' '" + o.csv +
                                "' '" + o.plot + "'";
    if (std::system(command.c_str()) != 0) throw conveyor::Error("plotting failed: " + command);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
  return 1;
}
