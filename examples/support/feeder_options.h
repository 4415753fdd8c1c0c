// The command-line flags of the GPU feeder's levers and of the data service's client, shared by the programs
// that end a pipeline on a GPU (examples/feed_vs_prefetch, bench/pipeline/pipeline_throughput), so that a
// flag means the same in both and a new lever is declared once. Header-only, needing only CLI11: the
// benchmark includes it without linking the examples' library.
//
// Each function is a template over the program's own options struct, which names its fields as below
// (gpu_decode, gpu_share, ...): the programs keep their flat structs, and the field a flag fills has the
// flag's name.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace example_support {

// The GPU decoder's and the feeder's levers (DeviceDecode, DeviceFeeder, FeederOptions), each a flag whose
// default is the struct's value. `scope` begins every help text: when the flag applies ("prefetch on a GPU:
// ", or "" in a program that only runs there).
template <class Options>
void add_feeder_lever_options(CLI::App& app, Options& options, const std::string& scope) {
  // The on/off levers: 1 or 0, each measured against its baseline by turning it off (or on).
  struct Lever {
    const char* flag;
    bool Options::*field;
    const char* help;
  };
  const Lever levers[] = {
      {"--gpu-decode", &Options::gpu_decode,
       "nvJPEG decodes --gpu-share of the images while the CPU decodes the rest (the hybrid split; the "
       "decode must be the pipeline's last map, so the augmentation runs on the GPU too)"},
      {"--hardware-pipelining", &Options::hardware_pipelining,
       "let nvJPEG's hardware decoder buffer images beyond each batch (its own default; "
       "DeviceDecode::hardware_pipelining)"},
      {"--hardware-pool", &Options::hardware_pool,
       "nvJPEG's hardware decoder keeps its buffers in a pool sized at warm-up (1) or allocates and frees "
       "them in its decode calls (0; DeviceDecode::hardware_pool)"},
      {"--remember-split", &Options::remember_split,
       "an adapting split starts where the last run like this one settled, and is kept for the next "
       "(DeviceDecode::remember_share)"},
      {"--feeder-warmup", &Options::feeder_warmup,
       "make the feeder ready (ring, page-locked batches, nvJPEG and its kernels) before the first batch "
       "(DeviceFeeder::warmup)"},
      {"--start-at-once", &Options::start_at_once,
       "without --feeder-warmup, the pipeline not deterministic: the CPU decodes every image until nvJPEG is "
       "ready on a thread of the feeder, then the split opens (DeviceDecode::start_at_once); 0: nvJPEG is "
       "made ready first"},
      {"--open-before-second", &Options::open_before_second,
       "start at once: the split opens once the first of nvJPEG's two decoders is warm, the second joins "
       "when made (DeviceDecode::open_before_second); 0: both before the split opens"},
      {"--set-up-behind", &Options::set_up_behind,
       "the feeder makes its CUDA context, ring and kernels on a thread of its own while the CPU decodes the "
       "first batch (FeederOptions::set_up_behind); 0: in its constructor"},
      {"--gpu-hybrid", &Options::gpu_hybrid,
       "what the hardware engines refuse is decoded by nvJPEG's GPU hybrid path (1) or on the CPU (0: only "
       "the engines decode on the GPU; DeviceDecode::gpu_hybrid)"},
      {"--gpu-adapt", &Options::gpu_adapt,
       "a pipeline that is not deterministic moves the split batch by batch to where the CPU and the GPU "
       "take the same time (1; DeviceDecode::adapt); 0: the GPU decodes --gpu-share throughout"},
      {"--copy-whole-batch", &Options::copy_whole_batch,
       "copy the deferred samples' slots with the rest (1) or only the samples the pipeline decoded (0; "
       "DeviceDecode::copy_whole_batch)"},
  };
  for (const Lever& lever : levers)
    app.add_option(lever.flag, options.*lever.field, scope + lever.help)->capture_default_str();
  app.add_option("--gpu-share", options.gpu_share,
                 scope +
                     "the share of images the GPU decodes: fixed in deterministic runs, where adapting "
                     "starts otherwise")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--decode-threads", options.decode_threads,
                 scope +
                     "host threads submitting to nvJPEG: 2, its two decoders each take half of every batch "
                     "at the same time; 1, the feeder's thread submits each batch to them in turn "
                     "(DeviceDecode::decode_threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 2));
  app.add_option("--kernel-blocks", options.kernel_blocks,
                 scope +
                     "thread blocks per image of the feeder's kernels (augmentation, crop-resize); fewer "
                     "leave more of the GPU to the work beside them (FeederOptions::kernel_blocks_per_image; "
                     "0: one pass's worth)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--host-blocks-ahead", options.host_blocks_ahead,
                 scope +
                     "page-locked batch buffers kept ready once a pipeline waited for one "
                     "(FeederOptions::host_blocks_ahead; 0: each made when asked for)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
}

// How this process takes part in a data service job: the flags that go with --service (which each program
// declares itself, saying what chain the service makes for it).
template <class Options>
void add_service_client_options(CLI::App& app, Options& options, const std::string& scope) {
  app.add_option("--service-local-threads", options.service_local_threads,
                 scope +
                     "this process's own cores make splits too (local first, the workers the rest; 0: the "
                     "workers alone)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--service-local-gpu-first", options.service_local_gpu_first,
                 scope +
                     "while workers serve, this process's own splits leave every image its GPU decoder takes "
                     "to it (ServiceOptions::local_gpu_first); 0: the feeder's split decides, as locally")
      ->capture_default_str();
  app.add_option(
         "--service-streams", options.service_streams,
         scope +
             "streams to each worker, each on a connection of its own (ServiceOptions::streams_per_worker)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--service-keep-memory", options.service_keep_memory,
                 scope +
                     "fix glibc's malloc thresholds so the memory batches are received into is kept "
                     "(ServiceOptions::keep_received_memory); 0: glibc's defaults")
      ->capture_default_str();
  app.add_option("--service-shared-memory", options.service_shared_memory,
                 scope +
                     "a worker of this host lends its batches through shared memory "
                     "(ServiceOptions::shared_memory); 0: every batch through the socket")
      ->capture_default_str();
  app.add_option("--service-job", options.service_job, scope + "the job's name (default: its fingerprint)");
  app.add_option("--service-token", options.service_token, scope + "the job's token");
  app.add_option("--service-tls", options.service_tls,
                 scope + "TLS from DIR/ca.pem, DIR/cert.pem and DIR/key.pem");
}

}  // namespace example_support
