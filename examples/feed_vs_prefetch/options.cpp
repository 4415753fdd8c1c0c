#include "options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "device_option.h"
#include "feeder_options.h"
#include "plot_script.h"

namespace feed_vs_prefetch {

namespace {

// prefetch on a GPU: what runs after the pipeline, on the device (issue 20).
void add_device_work_options(CLI::App& app, Options& options) {
  app.add_option("--device-augment", options.device_augment,
                 "prefetch on a GPU: flip and distort on the GPU, fused with the normalize that makes the "
                 "model's input (1), or as CPU maps (0)")
      ->capture_default_str();
  app.add_option("--pipeline-deterministic", options.pipeline_deterministic,
                 "prefetch: the pipeline's deterministic option; with 0 the hybrid split moves the GPU's "
                 "share, batch by batch, to where neither the CPU workers nor the GPU decoder waits (the "
                 "batches then depend on timing); with 1 the same batches every run at --gpu-share (default: "
                 "0, or 1 with --deterministic or --record-loss)");
  app.add_option("--cpus", options.cpus,
                 "prefetch: the CPUs of the pipeline (PipelineOptions::cpus): gpu (the feeder's default: "
                 "under a launcher with several ranks on the host, the rank's share of the CPUs close to its GPU; "
                 "FeederOptions::host), all (wherever the process runs), auto (local rank r of the host's R gets "
                 "the r-th even share of the process's CPUs), or a list such as 0-15 or 0,2,4")
      ->capture_default_str();
  app.add_option("--memory-near-gpu", options.memory_near_gpu,
                 "prefetch on a GPU: page-locked batches bound to the GPU's NUMA node on a host of several "
                 "(HostPlacement::memory_near_gpu)")
      ->capture_default_str();
  app.add_option("--step-priority", options.step_priority,
                 "on a GPU: the step's stream at the default priority or the most urgent one, so that the "
                 "feeder's kernels yield to it (TrainerOptions::urgent_stream)")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "urgent"}));
  app.add_option("--resident", options.resident,
                 "prefetch: after the warm-up steps, every timed step trains on the last warm-up batch, which "
                 "stays on the GPU: the step's own rate (data parallel: its all-reduce included) without input")
      ->capture_default_str();
  app.add_option("--stall-report", options.stall_seconds,
                 "prefetch: after this many seconds without a step, write what every thread of the run waits "
                 "for to stderr (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--collective-timeout", options.collective_timeout,
                 "prefetch under a launcher: seconds a collective may go without progress before this rank "
                 "ends with an error (a rank killed or hung; DataParallelOptions::collective_timeout)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  example_support::add_feeder_lever_options(app, options, "prefetch on a GPU: ");
}

// prefetch's batches from the data service (issue 40).
void add_service_options(CLI::App& app, Options& options) {
  app.add_option(
      "--service", options.service,
      "prefetch: the chain the other flags describe (--data, --size, the augmentation, --seed) made by "
      "the data service at grpc://HOST:PORT (its dispatcher) instead of a pipeline here; flip and "
      "distort stay on the GPU with --device-augment 1, and nvJPEG decodes nothing");
  example_support::add_service_client_options(app, options, "prefetch with --service: ");
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  options.data = "data/generated/imagenet-like-1000/train";
  CLI::App app(
      "feed_vs_prefetch: trains the same model on the same data three ways and shows what the input\n"
      "pipeline gains:\n"
      "  feed      one image after another on the training thread, pageable memory, synchronous copy\n"
      "  parallel  the batch made by the parallel map on the thread pool, still no overlap with the step\n"
      "  prefetch  the full pipeline: parallel map into pinned buffers, prefetch, asynchronous copy\n"
      "With no arguments it uses the demo data of ./conveyor.sh demo and the GPU when there is one.");
  app.add_option("--data", options.data, "ImageFolder root: one folder of JPEGs per class")
      ->capture_default_str();
  app.add_option("--progress", options.progress,
                 "a progress bar per mode on stderr: 1 on, 0 off (default: when stderr is a terminal)")
      ->check(CLI::IsMember({-1, 0, 1}));
  app.add_option("--modes", options.modes, "the modes to run, in this order")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"feed", "parallel", "prefetch"}));
  app.add_option("--threads", options.threads, "threads of the parallel map (0: all cores)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--pipeline-nice", options.pipeline_nice,
                 "prefetch: the nice value of the pipeline's threads, so that the step's threads get a "
                 "core first (PipelineOptions::worker_nice; 0: the process's)")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  app.add_option("--batch", options.batch, "images per batch (0: 256 on a GPU, 32 on the CPU)")
      ->check(CLI::Range(0, 65536));
  app.add_option("--steps", options.steps, "timed steps per mode (0: 50 on a GPU, 6 on the CPU)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--warmup", options.warmup, "untimed steps per mode (0: 3 on a GPU, 1 on the CPU)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--model", options.model, "the network (default: resnet18 on a GPU, small on the CPU)")
      ->check(CLI::IsMember({"small", "resnet18"}));
  app.add_option("--size", options.size,
                 "crop size (0: 224 for resnet18, 64 for small on a GPU, 32 on the CPU)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--width", options.width,
                 "small: channels of its first stage (0: 32 on a GPU, 4 on the CPU)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--device", options.device, "where the model trains")
      ->capture_default_str()
      ->check(example_support::device_spec());
  app.add_option("--precision", options.precision, "arithmetic of the training step")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  app.add_option("--trace-dir", options.trace_dir,
                 "write a Chrome trace per mode (MODE.trace.json) into DIR");
  CLI::Option* json = app.add_option("--json", options.json, "write the results as JSON to FILE");
  app.add_option("--plot", options.plot,
                 "draw the results into FILE.png " + example_support::help_text("plot_feed_vs_prefetch.py"))
      ->needs(json);
  app.add_option("--seed", options.seed, "seed of the order, the augmentation and the weights")
      ->capture_default_str();
  add_device_work_options(app, options);
  add_service_options(app, options);
  app.add_flag("--deterministic", options.deterministic,
               "deterministic convolution algorithms (same losses every run)");
  CLI::Option* graph =
      app.add_flag("--graph", options.graph,
                   "on a GPU, replay the step as one CUDA graph in every mode (default: in "
                   "feed and parallel, and in prefetch unless nvJPEG decodes beside the step "
                   "of a lone process)");
  app.add_flag("--no-graph", options.no_graph,
               "on a GPU, launch the step kernel by kernel in every mode (default: in prefetch when nvJPEG "
               "decodes beside the step of a lone process, which then leaves the GPU less idle)")
      ->excludes(graph);
  app.add_flag("--record-loss", options.record_loss,
               "every step's loss in the JSON (reading it synchronises after each step)");
  try {
    app.parse(argc, argv);
    options.modes_given = app.count("--modes") > 0;
    // Losses compared run to run need the same batches too, not only the same convolution algorithms.
    if (app.count("--pipeline-deterministic") == 0 && (options.deterministic || options.record_loss))
      options.pipeline_deterministic = true;
  } catch (const CLI::ParseError& error) {
    std::exit(app.exit(error) == 0 ? 0 : 2);  // --help: 0; a usage error: its message and 2
  }
  return options;
}

}  // namespace feed_vs_prefetch
