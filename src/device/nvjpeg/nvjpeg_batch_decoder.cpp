#include "src/device/nvjpeg/nvjpeg_batch_decoder.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/error.h"
#include "conveyor/progress_watch.h"
#include "src/core/phase_timeline.h"
#include "src/device/cuda_check.h"
#include "src/device/cuda_handles.h"
#include "src/device/nvjpeg/nvjpeg_objects.h"
#include "src/device/retained_host_buffer.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kNvjpegContext = "NvjpegBatchDecoder";
constexpr std::size_t kScratchAlignment = 256;

using nvjpeg::Owned;
using nvjpeg::Status;

using Clock = std::chrono::steady_clock;

// Seconds from `since` to now; moves `since` to now.
double lap(Clock::time_point& since) {
  const Clock::time_point now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - since).count();
  since = now;
  return seconds;
}

std::size_t align_up(std::size_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

nvjpeg::Backend backend_of(NvjpegSoftwareBackend software) {
  return software == NvjpegSoftwareBackend::hybrid ? nvjpeg::Backend::hybrid : nvjpeg::Backend::gpu_hybrid;
}

const char* name_of(NvjpegSoftwareBackend software) {
  return software == NvjpegSoftwareBackend::hybrid ? "hybrid (Huffman on the CPU)" : "GPU hybrid";
}

// What decode() works out for one request before any pixel is decoded.
struct Route {
  NvjpegPath path = NvjpegPath::fallback;
  int width = 0;  // of the decoded pixels: the window with ROI, the whole image without
  int height = 0;
  std::size_t offset = 0;  // in the scratch buffer
};

}  // namespace

const char* to_string(NvjpegPath path) noexcept {
  switch (path) {
    case NvjpegPath::hardware:
      return "hardware";
    case NvjpegPath::hardware_roi:
      return "hardware_roi";
    case NvjpegPath::software:
      return "software";
    case NvjpegPath::software_roi:
      return "software_roi";
    case NvjpegPath::fallback:
      return "fallback";
  }
  return "unknown";
}

// Member order is destruction order reversed: the library outlives every object made from it, the stream
// outlives the memory freed on it, each handle outlives the objects made from it, and states go first (as
// DALI's nvJPEG decoder tears down: states, decoders, bitstreams, buffers, parameters, handle).
struct NvjpegBatchDecoder::State {
  std::shared_ptr<const nvjpeg::Library> library;
  const nvjpeg::Library::Api& api;
  DeviceMemoryPool* pool;
  NvjpegDecoderOptions options;
  int channels = 3;
  nvjpeg::OutputFormat format = nvjpeg::OutputFormat::rgbi;
  std::string description;
  std::string setup_phases;

  std::optional<Stream> stream;  // every decode and resize runs here
  std::optional<Event> caller_ready, done;
  std::optional<Event> pinned_done[2];  // after the transfer that last read each pinned buffer
  bool done_pending = false;
  bool pinned_pending[2] = {false, false};

  // The hardware path (empty without it): batched decode on its own handle. Declared so that states die
  // first and handles last.
  Owned<nvjpeg::Handle> hw_handle;
  std::vector<Owned<nvjpeg::DecodeParams>> hw_params;
  Owned<nvjpeg::JpegStream> hw_header;  // parsed headers for nvjpegDecodeBatchedSupportedEx
  Owned<nvjpeg::State> hw_state;

  // One decoupled decoder with its state and the device buffer attached to it (declared so that the state
  // dies first). A member type rather than one of this file's own: State's fields may not have types of an
  // unnamed namespace (GCC's -Wsubobject-linkage when a unity build includes this file).
  struct Decoupled {
    Owned<nvjpeg::DeviceBuffer> device;
    Owned<nvjpeg::Decoder> decoder;
    Owned<nvjpeg::State> state;
  };

  // The software path: the decoupled API, two pinned buffers and bitstreams used in turn so that the host
  // phase of one image overlaps the transfer of the one before. `primary` has the backend asked for;
  // `secondary` (Huffman on the CPU) exists when that is GPU hybrid, and takes what GPU hybrid refuses.
  Owned<nvjpeg::Handle> sw_handle;
  std::vector<Owned<nvjpeg::DecodeParams>> sw_params;
  Owned<nvjpeg::PinnedBuffer> sw_pinned[2];
  Owned<nvjpeg::JpegStream> sw_streams[2];
  Owned<nvjpeg::JpegStream> sw_header;  // parsed headers when there is no hardware path
  Decoupled primary;
  std::optional<Decoupled> secondary;

  DeviceBuffer scratch;  // decoded pixels, each image at its Route::offset
  RetainedHostBuffer jobs_host;  // page-locked: grown, never freed while decoding
  DeviceBuffer jobs_device;
  std::size_t jobs_capacity = 0;
  std::size_t prepared = 0;    // images the hardware pool and the job buffers are sized for
  bool hardware_pool = false;  // nvjpegDecodeBatchedPreAllocate succeeded
  NvjpegHostTimes times;

  State(std::shared_ptr<const nvjpeg::Library> lib, DeviceMemoryPool& memory, NvjpegDecoderOptions opts)
      : library(std::move(lib)),
        api(library->api()),
        pool(&memory),
        options(opts),
        jobs_host(pinned_host_memory()) {}

  void check(Status status, const char* call) const { nvjpeg::check(status, call, kNvjpegContext); }
  void set_window(nvjpeg::DecodeParams params, bool roi, const ops::Rect& window) const;
  void ensure_params(std::size_t count);
  void ensure_scratch(std::size_t bytes);
  void ensure_jobs(std::size_t count);
  Route route(const NvjpegRequest& request, std::size_t index, NvjpegOutcome& outcome);
  void decode_hardware(std::span<const NvjpegRequest> requests, std::vector<Route>& routes,
                       std::vector<NvjpegOutcome>& outcomes);
  void decode_software(const NvjpegRequest& request, std::size_t index, std::size_t turn, Route& route,
                       NvjpegOutcome& outcome);
  nvjpeg::Image image_at(const Route& route) const;
};

void NvjpegBatchDecoder::State::set_window(nvjpeg::DecodeParams params, bool roi,
                                           const ops::Rect& window) const {
  check(api.decode_params_set_output_format(params, format), "nvjpegDecodeParamsSetOutputFormat");
  if (roi)
    check(api.decode_params_set_roi(params, window.x, window.y, window.width, window.height),
          "nvjpegDecodeParamsSetROI");
  else
    check(api.decode_params_set_roi(params, 0, 0, -1, -1), "nvjpegDecodeParamsSetROI");  // the whole image
}

void NvjpegBatchDecoder::State::ensure_params(std::size_t count) {
  while (sw_params.size() < count)
    sw_params.push_back(
        nvjpeg::make<nvjpeg::DecodeParams>(api.decode_params_create, api.decode_params_destroy,
                                           "nvjpegDecodeParamsCreate", kNvjpegContext, sw_handle.get()));
  while (hw_handle && hw_params.size() < count)
    hw_params.push_back(
        nvjpeg::make<nvjpeg::DecodeParams>(api.decode_params_create, api.decode_params_destroy,
                                           "nvjpegDecodeParamsCreate", kNvjpegContext, hw_handle.get()));
}

void NvjpegBatchDecoder::State::ensure_scratch(std::size_t bytes) {
  if (scratch && scratch.bytes() >= bytes) return;
  scratch.reset();  // freed in stream order: the previous call's resize has been waited for
  // A quarter more than asked, so that batches of slightly larger windows do not reallocate every time.
  scratch = pool->allocate(bytes + bytes / 4, stream->get(), "nvJPEG decoded pixels (one batch of windows)");
}

void NvjpegBatchDecoder::State::ensure_jobs(std::size_t count) {
  if (jobs_capacity >= count) return;
  jobs_device.reset();  // stream-ordered: the pool takes it back after the last resize that read it
  jobs_host.reserve(count * sizeof(CropResizeJob));
  jobs_device = pool->allocate(count * sizeof(CropResizeJob), stream->get(), "nvJPEG crop-resize jobs");
  jobs_capacity = count;
}

nvjpeg::Image NvjpegBatchDecoder::State::image_at(const Route& route) const {
  nvjpeg::Image image{};
  image.channel[0] = scratch.as<unsigned char>() + route.offset;
  image.pitch[0] = static_cast<std::size_t>(route.width) * static_cast<std::size_t>(channels);
  return image;
}

Route NvjpegBatchDecoder::State::route(const NvjpegRequest& request, std::size_t index,
                                       NvjpegOutcome& outcome) {
  const bool hardware = static_cast<bool>(hw_handle);
  const nvjpeg::Handle handle = hardware ? hw_handle.get() : sw_handle.get();
  const nvjpeg::JpegStream header = hardware ? hw_header.get() : sw_header.get();
  Route route;
  Status status = api.jpeg_stream_parse_header(handle, request.jpeg.data(), request.jpeg.size(), header);
  unsigned int width = 0, height = 0;
  if (status == Status::success) status = api.jpeg_stream_get_frame_dimensions(header, &width, &height);
  if (status != Status::success) {
    outcome = {NvjpegPath::fallback, GpuDecodeFallback::not_supported, status};
    return route;
  }
  const ops::Rect& window = request.window;
  if (!window.inside(static_cast<int>(width), static_cast<int>(height))) {
    // The window was drawn from libjpeg's reading of the header; nvJPEG reads other dimensions. The CPU,
    // which drew it, decodes this one.
    outcome = {NvjpegPath::fallback, GpuDecodeFallback::size_mismatch, Status::success};
    return route;
  }
  route.path = options.roi ? NvjpegPath::software_roi : NvjpegPath::software;
  if (hardware) {
    // nvjpegDecodeBatchedSupportedEx answers 0 when the engines can decode the stream with these parameters;
    // a failing call is taken as a no (the software path then has its own say).
    const nvjpeg::DecodeParams params = hw_params[index].get();
    const auto engines_take = [&](bool roi) {
      set_window(params, roi, window);
      int unsupported = 1;
      return api.decode_batched_supported_ex(handle, header, params, &unsupported) == Status::success &&
             unsupported == 0;
    };
    if (options.roi && engines_take(true))
      route.path = NvjpegPath::hardware_roi;
    else if (engines_take(false))
      route.path = NvjpegPath::hardware;
    else if (!options.software_beside_hardware) {
      outcome = {NvjpegPath::fallback, GpuDecodeFallback::engines_refused, Status::success};
      route.path = NvjpegPath::fallback;
      return route;
    }
  }
  const bool roi = route.path == NvjpegPath::hardware_roi || route.path == NvjpegPath::software_roi;
  route.width = roi ? window.width : static_cast<int>(width);
  route.height = roi ? window.height : static_cast<int>(height);
  outcome.path = route.path;
  return route;
}

void NvjpegBatchDecoder::State::decode_hardware(std::span<const NvjpegRequest> requests,
                                                std::vector<Route>& routes,
                                                std::vector<NvjpegOutcome>& outcomes) {
  std::vector<const unsigned char*> data;
  std::vector<std::size_t> lengths;
  std::vector<nvjpeg::Image> images;
  std::vector<nvjpeg::DecodeParams> params;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (routes[i].path != NvjpegPath::hardware && routes[i].path != NvjpegPath::hardware_roi) continue;
    data.push_back(requests[i].jpeg.data());
    lengths.push_back(requests[i].jpeg.size());
    images.push_back(image_at(routes[i]));
    params.push_back(hw_params[i].get());  // the window (or none) route() settled on
    which.push_back(i);
  }
  if (which.empty()) return;
  // What a stall report names if the engines' call never returns (progress_watch.h).
  const ProgressWatch::Doing doing("nvJPEG hardware decode (nvjpegDecodeBatchedEx), images:",
                                   static_cast<long long>(which.size()));
  Status status = api.decode_batched_initialize(hw_handle.get(), hw_state.get(),
                                                static_cast<int>(which.size()), 1, format);
  if (status == Status::success)
    status = api.decode_batched_ex(hw_handle.get(), hw_state.get(), data.data(), lengths.data(),
                                   images.data(), params.data(), stream->get());
  if (status == Status::success) return;
  // The batch failed as a whole and nvJPEG does not say which image made it fail: every image of it goes
  // the software way, each failing (and reported) on its own; without that way, back to the caller.
  for (const std::size_t i : which) {
    if (!options.software_beside_hardware) {
      routes[i].path = NvjpegPath::fallback;
      outcomes[i] = {NvjpegPath::fallback, GpuDecodeFallback::decode_failed, status};
      continue;
    }
    const bool roi = options.roi;
    routes[i].path = roi ? NvjpegPath::software_roi : NvjpegPath::software;
    routes[i].width = roi ? requests[i].window.width : routes[i].width;
    routes[i].height = roi ? requests[i].window.height : routes[i].height;
    outcomes[i].path = routes[i].path;
    outcomes[i].status = status;
  }
}

void NvjpegBatchDecoder::State::decode_software(const NvjpegRequest& request, std::size_t index,
                                                std::size_t turn, Route& route, NvjpegOutcome& outcome) {
  const auto fail = [&](GpuDecodeFallback why, Status status) {
    route.path = NvjpegPath::fallback;
    outcome = {NvjpegPath::fallback, why, status};
  };
  const ProgressWatch::Doing doing("nvJPEG software decode (decoupled API), request:",
                                   static_cast<long long>(index));
  const nvjpeg::DecodeParams params = sw_params[index].get();
  set_window(params, route.path == NvjpegPath::software_roi, request.window);
  const std::size_t b = turn % 2;
  // The transfer two images ago read this pinned buffer; the host phase below writes it.
  if (pinned_pending[b]) pinned_done[b]->synchronize();
  Status status = api.jpeg_stream_parse(sw_handle.get(), request.jpeg.data(), request.jpeg.size(), 0, 0,
                                        sw_streams[b].get());
  if (status != Status::success) return fail(GpuDecodeFallback::not_supported, status);
  const auto host_phase = [&](const Decoupled& d) {
    check(api.state_attach_pinned_buffer(d.state.get(), sw_pinned[b].get()), "nvjpegStateAttachPinnedBuffer");
    return api.decode_jpeg_host(sw_handle.get(), d.decoder.get(), d.state.get(), params, sw_streams[b].get());
  };
  const Decoupled* d = &primary;
  status = host_phase(*d);
  const auto refused = [](Status s) {
    return s == Status::jpeg_not_supported || s == Status::implementation_not_supported;
  };
  if (refused(status) && secondary) {
    d = &*secondary;
    status = host_phase(*d);
  }
  if (status != Status::success)
    return fail(refused(status) || status == Status::bad_jpeg ? GpuDecodeFallback::not_supported
                                                              : GpuDecodeFallback::decode_failed,
                status);
  status = api.decode_jpeg_transfer_to_device(sw_handle.get(), d->decoder.get(), d->state.get(),
                                              sw_streams[b].get(), stream->get());
  if (status != Status::success) return fail(GpuDecodeFallback::decode_failed, status);
  pinned_done[b]->record(stream->get());
  pinned_pending[b] = true;
  nvjpeg::Image image = image_at(route);
  status = api.decode_jpeg_device(sw_handle.get(), d->decoder.get(), d->state.get(), &image, stream->get());
  if (status != Status::success) return fail(GpuDecodeFallback::decode_failed, status);
}

NvjpegBatchDecoder::NvjpegBatchDecoder(std::shared_ptr<const nvjpeg::Library> library, DeviceMemoryPool& pool,
                                       NvjpegDecoderOptions options) {
  if (!library) throw InvalidArgument(std::string(kNvjpegContext) + ": no nvJPEG library");
  if (options.color != ops::ColorMode::rgb && options.color != ops::ColorMode::gray)
    throw InvalidArgument(std::string(kNvjpegContext) +
                          ": ColorMode::keep gives each image its own channel count; use rgb or gray");
  if (pool.device() != options.device)
    throw InvalidArgument(std::string(kNvjpegContext) + " on gpu:" + std::to_string(options.device) +
                          " was given the memory pool of gpu:" + std::to_string(pool.device()));
  detail::PhaseTimeline timeline;  // where the construction's time went (setup_phases())
  state_ = std::make_unique<State>(std::move(library), pool, options);
  State& s = *state_;
  const nvjpeg::Library::Api& api = s.api;
  s.channels = options.color == ops::ColorMode::gray ? 1 : 3;
  s.format = options.color == ops::ColorMode::gray ? nvjpeg::OutputFormat::y : nvjpeg::OutputFormat::rgbi;
  DeviceGuard guard(options.device);
  s.stream.emplace();
  s.caller_ready.emplace();
  s.done.emplace();
  s.pinned_done[0].emplace();
  s.pinned_done[1].emplace();
  timeline.done("stream and events");

  std::string hardware_note = "hardware decoder not asked for";
  if (options.hardware) {
    nvjpeg::Handle handle = nullptr;
    const unsigned int flags =
        options.hardware_pipelining ? nvjpeg::kFlagsDefault : nvjpeg::kFlagsHwDecodeNoPipeline;
    const Status status = api.create_ex(nvjpeg::Backend::hardware, nullptr, nullptr, flags, &handle);
    if (status == Status::success) {
      s.hw_handle = Owned<nvjpeg::Handle>(handle, api.destroy);
      s.hw_state = nvjpeg::make<nvjpeg::State>(api.jpeg_state_create, api.jpeg_state_destroy,
                                               "nvjpegJpegStateCreate", kNvjpegContext, handle);
      s.hw_header = nvjpeg::make<nvjpeg::JpegStream>(api.jpeg_stream_create, api.jpeg_stream_destroy,
                                                     "nvjpegJpegStreamCreate", kNvjpegContext, handle);
      unsigned int engines = 0, cores = 0;
      hardware_note = "hardware decoder";
      if (api.get_hardware_decoder_info != nullptr &&
          api.get_hardware_decoder_info(handle, &engines, &cores) == Status::success)
        hardware_note += " (" + std::to_string(engines) + " engines x " + std::to_string(cores) + " cores)";
      if (!options.hardware_pipelining) hardware_note += ", one batch at a time";
      if (options.hardware_pool && api.decode_batched_pre_allocate == nullptr)
        hardware_note += ", no pool (this nvJPEG has no nvjpegDecodeBatchedPreAllocate)";
    } else {
      hardware_note = std::string("no hardware decoder (nvjpegCreateEx with NVJPEG_BACKEND_HARDWARE: ") +
                      nvjpeg::to_string(status) + ")";
    }
  }
  if (options.hardware) timeline.done("hardware handle");
  s.sw_handle =
      nvjpeg::make<nvjpeg::Handle>(api.create_ex, api.destroy, "nvjpegCreateEx", kNvjpegContext,
                                   nvjpeg::Backend::automatic, static_cast<nvjpeg::DevAllocator*>(nullptr),
                                   static_cast<nvjpeg::PinnedAllocator*>(nullptr), nvjpeg::kFlagsDefault);
  const nvjpeg::Handle sw = s.sw_handle.get();
  // Padding only rounds sizes up; a library without it allocates exactly what each image needs.
  for (const nvjpeg::Handle handle : {sw, s.hw_handle.get()}) {
    if (handle == nullptr) continue;
    if (api.set_device_memory_padding != nullptr && options.device_padding > 0)
      s.check(api.set_device_memory_padding(options.device_padding, handle), "nvjpegSetDeviceMemoryPadding");
    if (api.set_pinned_memory_padding != nullptr && options.pinned_padding > 0)
      s.check(api.set_pinned_memory_padding(options.pinned_padding, handle), "nvjpegSetPinnedMemoryPadding");
  }
  timeline.done("software handle");
  const auto decoupled = [&](nvjpeg::Backend backend) {
    State::Decoupled d;
    d.device = nvjpeg::make<nvjpeg::DeviceBuffer>(api.buffer_device_create, api.buffer_device_destroy,
                                                  "nvjpegBufferDeviceCreate", kNvjpegContext, sw,
                                                  static_cast<nvjpeg::DevAllocator*>(nullptr));
    d.decoder = nvjpeg::make<nvjpeg::Decoder>(api.decoder_create, api.decoder_destroy, "nvjpegDecoderCreate",
                                              kNvjpegContext, sw, backend);
    d.state = nvjpeg::make<nvjpeg::State>(api.decoder_state_create, api.jpeg_state_destroy,
                                          "nvjpegDecoderStateCreate", kNvjpegContext, sw, d.decoder.get());
    s.check(api.state_attach_device_buffer(d.state.get(), d.device.get()), "nvjpegStateAttachDeviceBuffer");
    return d;
  };
  s.primary = decoupled(backend_of(options.software));
  if (options.software == NvjpegSoftwareBackend::gpu_hybrid) s.secondary = decoupled(nvjpeg::Backend::hybrid);
  timeline.done("software decoders");
  for (int i = 0; i < 2; ++i) {
    s.sw_pinned[i] = nvjpeg::make<nvjpeg::PinnedBuffer>(api.buffer_pinned_create, api.buffer_pinned_destroy,
                                                        "nvjpegBufferPinnedCreate", kNvjpegContext, sw,
                                                        static_cast<nvjpeg::PinnedAllocator*>(nullptr));
    s.sw_streams[i] = nvjpeg::make<nvjpeg::JpegStream>(api.jpeg_stream_create, api.jpeg_stream_destroy,
                                                       "nvjpegJpegStreamCreate", kNvjpegContext, sw);
  }
  s.sw_header = nvjpeg::make<nvjpeg::JpegStream>(api.jpeg_stream_create, api.jpeg_stream_destroy,
                                                 "nvjpegJpegStreamCreate", kNvjpegContext, sw);
  timeline.done("buffers and bitstreams");
  s.setup_phases = timeline.line();
  const std::string software = s.hw_handle && !options.software_beside_hardware
                                   ? ", nothing else on the GPU (what the engines refuse: the CPU)"
                                   : std::string(s.hw_handle ? ", then " : "; ") + name_of(options.software) +
                                         (s.secondary ? " (hybrid for what it refuses)" : "");
  s.description = "nvJPEG " + s.library->version() + " (" + s.library->path() + ") on gpu:" +
                  std::to_string(options.device) + ": " + hardware_note + software +
                  (options.roi ? ", ROI decode" : ", whole-image decode");
}

NvjpegBatchDecoder::~NvjpegBatchDecoder() {
  if (!state_) return;
  try {
    DeviceGuard guard(state_->options.device);
    state_->stream->synchronize();  // nvJPEG's objects and the scratch may still be in use on the stream
  } catch (const Error&) {
    // A destructor cannot report; the context is broken if this failed.
  }
}

bool NvjpegBatchDecoder::hardware() const noexcept { return static_cast<bool>(state_->hw_handle); }

std::size_t NvjpegBatchDecoder::prepared() const noexcept { return state_->prepared; }

void NvjpegBatchDecoder::prepare(std::size_t images, int width, int height) {
  State& s = *state_;
  if (images == 0 || images <= s.prepared) return;
  DeviceGuard guard(s.options.device);
  // The previous batch may still read the jobs and the hardware state.
  if (s.done_pending) s.done->synchronize();
  if (s.hw_handle && s.options.hardware_pool && s.api.decode_batched_pre_allocate != nullptr) {
    // 4:4:4 is the largest intermediate a frame of that size can need. Called again for a larger batch only
    // (a ring that was resized): that once, nvJPEG may free its old pool.
    s.check(s.api.decode_batched_pre_allocate(s.hw_handle.get(), s.hw_state.get(), static_cast<int>(images),
                                              std::max(width, 1), std::max(height, 1),
                                              nvjpeg::ChromaSubsampling::css_444, s.format),
            "nvjpegDecodeBatchedPreAllocate");
    s.hardware_pool = true;
  }
  s.ensure_params(images);
  s.ensure_jobs(images);
  s.prepared = images;
}

const std::string& NvjpegBatchDecoder::description() const noexcept { return state_->description; }

const std::string& NvjpegBatchDecoder::setup_phases() const noexcept { return state_->setup_phases; }

const NvjpegHostTimes& NvjpegBatchDecoder::host_times() const noexcept { return state_->times; }

std::vector<NvjpegOutcome> NvjpegBatchDecoder::decode(std::span<const NvjpegRequest> requests,
                                                      const DeviceSlots& out, cudaStream_t stream) {
  State& s = *state_;
  if (out.shape.channels != s.channels)
    throw InvalidArgument(std::string(kNvjpegContext) + ": the output has " +
                          std::to_string(out.shape.channels) + " channels, the decoder makes " +
                          std::to_string(s.channels));
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (requests[i].slot >= out.count)
      throw InvalidArgument(std::string(kNvjpegContext) + ": request " + std::to_string(i) + " is for slot " +
                            std::to_string(requests[i].slot) + " of " + std::to_string(out.count));
  std::vector<NvjpegOutcome> outcomes(requests.size());
  if (requests.empty()) return outcomes;
  DeviceGuard guard(s.options.device);
  Clock::time_point since = Clock::now();
  // The previous call's resize has finished: its scratch, jobs and nvJPEG states are free again.
  if (s.done_pending) {
    const ProgressWatch::Doing doing("waiting for this nvJPEG decoder's previous batch on the GPU");
    s.done->synchronize();
  }
  s.times.wait += lap(since);
  // A batch larger than warm-up prepared for (or no warm-up): size the pool and buffers for it now.
  if (requests.size() > s.prepared) prepare(std::max(requests.size(), out.count), 0, 0);

  std::vector<Route> routes(requests.size());
  std::size_t scratch_bytes = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    routes[i] = s.route(requests[i], i, outcomes[i]);
    if (routes[i].path == NvjpegPath::fallback) continue;
    // Room for what this route decodes. A failed hardware batch re-routes its images to the software path,
    // which never needs more (the window with ROI, the whole image without).
    routes[i].offset = scratch_bytes;
    scratch_bytes += align_up(static_cast<std::size_t>(routes[i].width) * routes[i].height * s.channels);
  }
  s.times.check += lap(since);
  // Reads of the slots the caller queued before this call come first.
  s.caller_ready->record(stream);
  CONVEYOR_CUDA(cudaStreamWaitEvent(s.stream->get(), s.caller_ready->get(), 0), kNvjpegContext);
  try {
    s.ensure_scratch(scratch_bytes);

    if (s.hw_handle) s.decode_hardware(requests, routes, outcomes);
    std::size_t turn = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (routes[i].path == NvjpegPath::software || routes[i].path == NvjpegPath::software_roi)
        s.decode_software(requests[i], i, turn++, routes[i], outcomes[i]);
    }
    s.times.decode += lap(since);

    std::size_t jobs = 0;
    for (const Route& route : routes) jobs += route.path != NvjpegPath::fallback ? 1 : 0;
    if (jobs > 0) {
      s.ensure_jobs(jobs);
      auto* host = reinterpret_cast<CropResizeJob*>(s.jobs_host.data());  // ensure_jobs sized it
      std::size_t j = 0;
      for (std::size_t i = 0; i < requests.size(); ++i) {
        const Route& route = routes[i];
        if (route.path == NvjpegPath::fallback) continue;
        const bool roi = route.path == NvjpegPath::hardware_roi || route.path == NvjpegPath::software_roi;
        CropResizeJob job;
        job.source = s.scratch.as<std::uint8_t>() + route.offset;
        job.source_pitch = static_cast<std::size_t>(route.width) * static_cast<std::size_t>(s.channels);
        job.x = roi ? 0 : requests[i].window.x;
        job.y = roi ? 0 : requests[i].window.y;
        job.width = requests[i].window.width;
        job.height = requests[i].window.height;
        job.slot = requests[i].slot;
        new (host + j++) CropResizeJob(job);
      }
      CONVEYOR_CUDA(cudaMemcpyAsync(s.jobs_device.data(), host, jobs * sizeof(CropResizeJob),
                                    cudaMemcpyHostToDevice, s.stream->get()),
                    kNvjpegContext);
      crop_resize_linear(s.jobs_device.as<CropResizeJob>(), jobs, out, s.stream->get(),
                         s.options.blocks_per_image);
    }
    s.times.resize += lap(since);
  } catch (...) {
    // Work may be queued on the stream already: the next call waits for it before reusing anything.
    s.done->record(s.stream->get());
    s.done_pending = true;
    throw;
  }
  s.done->record(s.stream->get());
  s.done_pending = true;
  CONVEYOR_CUDA(cudaStreamWaitEvent(stream, s.done->get(), 0), kNvjpegContext);
  return outcomes;
}

}  // namespace conveyor::cuda
