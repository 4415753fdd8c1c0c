// What a trainer asks the data service for, and how a worker builds it.
//
// A trainer names a chain and its parameters (ChainSpec); every worker builds it from its own ChainRegistry,
// as tf.data service's workers build the dataset a client registered. The standard chain, built in, takes the
// parameters pipeline_throughput's flags take; a team's own chain is registered by name in its worker
// program:
//
//   conveyor::service::ChainRegistry chains;
//   chains.add("my_chain", [](const conveyor::service::ChainParameters& p) {
//     return conveyor::service::Chain{conveyor::Dataset::image_folder(p.at("data")).map(my_decode()),
//                                     {.sample_shape = conveyor::ImageShape{224, 224, 3}}};
//   });
//   conveyor::service::run_worker({.dispatcher = "grpc://host:5000", .chains = chains});
//
// A chain is samples only: a source and maps (no ordering method, no filter). The service orders them: the
// whole-epoch shuffle from the seed, each rank's share, splits of it made anywhere (Dataset::epoch_range),
// so that every element has the index, seed and pixels a local run gives it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "conveyor/dataset.h"

namespace conveyor::service {

using ChainParameters = std::map<std::string, std::string>;

struct ChainSpec {
  std::string name = "standard";  // a chain registered in the workers
  ChainParameters parameters;
  std::uint64_t seed = 0;  // the pipeline seed: order and every op's draws
};

// A chain as built: the samples, and how they are batched (sample_shape is required: a worker makes many
// splits, and a probe per split would decode an element more each time).
struct Chain {
  Dataset samples;
  BatchOptions batching;
};

using ChainBuilder = std::function<Chain(const ChainParameters& parameters)>;

// The chains a worker (or a trainer running the chain on its own cores) can build, by name. A value: copy it,
// add to it, give it to run_worker or ServiceOptions. Not thread-safe while being added to.
class ChainRegistry {
 public:
  // Holds the standard chain ("standard").
  ChainRegistry();
  // Registers `builder` as `name`; throws InvalidArgument when the name is taken or empty.
  ChainRegistry& add(std::string name, ChainBuilder builder);
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;
  // Builds `spec`'s chain. Throws InvalidArgument for an unknown name or a bad parameter (naming it), and
  // what the builder throws (IoError for data that cannot be read).
  Chain build(const ChainSpec& spec) const;

 private:
  std::map<std::string, ChainBuilder> builders_;
};

// The standard chain, from pipeline_throughput's flags as parameters:
//   data      (required) an ImageFolder root, a list file, local tar shards (a pattern or a .json index; read
//             at random, as --shard-random-access 1), a segmentation root, or a COCO instances JSON
//   format    classification (default), segmentation or detection
//   images    detection: the images folder (default: images/ beside data)
//   size      crop size in pixels (224)
//   flip      probability of the horizontal flip (0.5; 0: none)
//   distort   brightness,contrast,saturation of the colour jitter (0.4,0.4,0.4; 0: none)
//   on_error  fail (default) or skip
// decode_random_resized_crop(size), flip_horizontal(flip), distort(...): the chain pipeline_throughput and
// feed_vs_prefetch run. Throws InvalidArgument naming an unknown or malformed parameter.
Chain standard_chain(const ChainParameters& parameters);

}  // namespace conveyor::service
