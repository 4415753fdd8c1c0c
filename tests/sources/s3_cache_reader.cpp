// A reader process for the test of one shard cache shared by several processes (s3_shards_test.cpp):
//   s3_cache_reader LOCATION CACHE_FOLDER
// reads every sample of the shards at LOCATION (an s3:// prefix; the endpoint and keys from the
// environment) through the cache and prints "samples N sum S hits H misses M uncached U", S being the sum
// of the samples' numbers (support/tar_files.h's numbered shards).
#include <cstdio>
#include <cstring>
#include <exception>

#include "conveyor/dataset.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: s3_cache_reader LOCATION CACHE_FOLDER\n");
    return 2;
  }
  try {
    conveyor::TarShardOptions options;
    options.cache.folder = argv[2];
    options.cache.max_bytes = std::uint64_t{1} << 30;
    conveyor::SampleIterator it = conveyor::Dataset::tar_shards({argv[1]}, options).begin();
    std::uint64_t samples = 0, sum = 0;
    while (std::optional<conveyor::Sample> sample = it.next()) {
      std::uint64_t number = 0;
      std::memcpy(&number, sample->encoded.data(), sizeof number);
      ++samples;
      sum += number;
    }
    const conveyor::RemoteReadStats remote = it.stats().remote;
    std::printf("samples %llu sum %llu hits %llu misses %llu uncached %llu\n",
                static_cast<unsigned long long>(samples), static_cast<unsigned long long>(sum),
                static_cast<unsigned long long>(remote.cache_hits),
                static_cast<unsigned long long>(remote.cache_misses),
                static_cast<unsigned long long>(remote.uncached));
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "s3_cache_reader: %s\n", error.what());
    return 1;
  }
}
