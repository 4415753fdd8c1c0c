// Fixtures for the pipeline's tests: ops that make pixels deterministically from a sample's seed or
// decode real JPEGs with TurboJPEG, in-memory and on-disk datasets, and checksums of what came out.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/dataset.h"
#include "conveyor/sample.h"
#include "support/temp_dir.h"

namespace conveyor::testing {

// Writes a shape-sized image whose every byte is a hash of (seed, encoded bytes, position) through
// Sample::output, so it lands in the batch slot. Different seeds or bytes give different pixels.
SampleOp fill_from_seed(ImageShape shape, std::string name = "fill");
// Reads the current image and writes its negative as a new image through Sample::output: after a first
// op wrote the slot, this one writes scratch, and the pipeline has to copy it into the slot.
SampleOp negate_into_new_image(std::string name = "negate");
// Decodes the JPEG in sample.encoded (any size) into a scratch image, then crops a seeded size x size
// window into the slot.
SampleOp decode_and_crop(int size);
// Throws std::runtime_error("boom <index>") on the elements where fails(seed) is true.
SampleOp throw_when(bool (*fails)(std::uint64_t seed), std::string name = "explode");
// True for roughly one element in seven, decided by the seed alone.
bool one_in_seven(std::uint64_t seed);

// `count` in-memory buffers; buffer i holds the 8 bytes of i (so each element is recognisable), label
// i % classes.
Dataset numbered_memory(std::size_t count, std::int64_t classes = 10);
// The number a numbered_memory element carries.
std::uint64_t number_of(const Sample& sample);

// An ImageFolder tree of small JPEGs: `classes` folders "class_k" with `per_class` images each.
std::filesystem::path make_jpeg_folder(const TempDir& dir, int classes, int per_class, int height = 24,
                                       int width = 32);

// Runs the whole dataset and returns its BatchChecksum, with the batch sizes seen.
std::uint64_t checksum_of(const BatchedDataset& dataset, std::vector<std::size_t>* sizes = nullptr);

// Iteration counts of the stress tests: CONVEYOR_STRESS_ITERATIONS when set, `fallback` otherwise.
int stress_iterations(int fallback);

}  // namespace conveyor::testing
