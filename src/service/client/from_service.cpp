// from_service (conveyor/service/client.h): the job joined and described, its batches as a BatchSource.
#include "conveyor/batch_source.h"
#include "conveyor/error.h"
#include "conveyor/service/client.h"
#include "conveyor/version.h"
#include "src/service/client/service_stream.h"
#include "src/service/common/field_layout.h"
#include "src/service/common/job_identity.h"
#include "src/service/common/protocol.h"

namespace conveyor::service {
namespace {

using namespace detail;

class ServiceBatchSource final : public BatchSource {
 public:
  explicit ServiceBatchSource(std::shared_ptr<const JobInfo> job) : job_(std::move(job)) {}

  BatchSourceLayout layout() const override {
    const v1::ChainDescription& d = job_->definition.description();
    BatchSourceLayout layout;
    layout.batch_size = job_->definition.geometry().batch_size();
    layout.sample_shape = ImageShape{d.height(), d.width(), d.channels()};
    layout.field_tensors = field_tensors_from_wire(d);
    return layout;
  }

  // A state names the job, its data and the consumer: another job's (or rank's) state is refused.
  std::vector<std::string> describe() const override {
    const v1::JobDefinition& d = job_->definition;
    return {"data service job '" + d.name() + "' fingerprint " + d.fingerprint(),
            "data " + d.description().data_identity() + " samples " +
                std::to_string(d.description().source_size()),
            "fields " + describe_field_tensors(field_tensors_from_wire(d.description())),
            "consumer " + std::to_string(job_->join.consumer()) + " of " +
                std::to_string(d.geometry().consumers())};
  }

  std::unique_ptr<BatchStream> open(BatchBuffers buffers, const PipelineOptions& options,
                                    std::size_t prefetch, const BatchStreamPosition& start) const override {
    return std::make_unique<ServiceStream>(job_, std::move(buffers), options, prefetch, start);
  }

 private:
  std::shared_ptr<const JobInfo> job_;
};

v1::JobGeometry geometry_of(const ServiceOptions& o) {
  if (o.batch_size == 0) throw InvalidArgument("ServiceOptions: batch_size must be at least 1");
  if (o.ranks.world_size < 1 || o.ranks.rank < 0 || o.ranks.rank >= o.ranks.world_size)
    throw InvalidArgument("ServiceOptions: rank " + std::to_string(o.ranks.rank) + " of world size " +
                          std::to_string(o.ranks.world_size));
  if (o.remainder == ShardRemainder::uneven)
    throw InvalidArgument(
        "ServiceOptions: the ranks' shares are evened (pad or drop): every rank takes as many steps");
  v1::JobGeometry g;
  g.set_batch_size(o.batch_size);
  g.set_split_batches(o.split_batches > 0 ? o.split_batches : default_split_batches(o.batch_size));
  g.set_consumers(static_cast<std::uint64_t>(o.ranks.world_size));
  g.set_epochs(o.epochs);
  g.set_shuffle(o.shuffle);
  g.set_drop_remainder(o.drop_remainder);
  g.set_drop_uneven(o.remainder == ShardRemainder::drop);
  return g;
}

// The job's chain description from a worker that can build it (the trainer cannot), given to the dispatcher.
v1::JobDefinition described_by_a_worker(const JobInfo& job, const v1::JoinJobResponse& joined,
                                        DispatcherLink& dispatcher) {
  std::string reasons;
  for (const v1::WorkerAddress& w : joined.workers()) {
    try {
      v1::DescribeChainRequest request;
      *request.mutable_caller() = job.join.caller();
      request.set_job_id(joined.job().job_id());
      const v1::ChainDescription d =
          connect_worker(w.address(), job.link)->describe_chain(request).description();
      v1::DescribeJobRequest describe;
      *describe.mutable_caller() = job.join.caller();
      describe.set_job_id(joined.job().job_id());
      *describe.mutable_description() = d;
      return dispatcher.describe_job(describe).job();
    } catch (const ServiceError& error) {
      reasons += std::string("\n  ") + error.what();
    }
  }
  throw ServiceError(ServiceError::Kind::unavailable,
                     "job '" + joined.job().name() +
                         "': this process cannot build its chain and no worker could" +
                         (reasons.empty() ? std::string(" (none is registered)") : reasons));
}

}  // namespace

BatchedDataset from_service(const std::string& url, const ChainSpec& chain, const ServiceOptions& options) {
  auto job = std::make_shared<JobInfo>();
  job->dispatcher = parse_address(url);
  job->options = options;
  job->link = LinkOptions{.tls = options.tls, .call_timeout = options.timeout};
  v1::JoinJobRequest& join = job->join;
  join.mutable_caller()->set_protocol(kProtocolVersion);
  join.mutable_caller()->set_version(CONVEYOR_VERSION_STRING);
  join.mutable_caller()->set_token(options.token);
  join.set_job_name(options.job);
  *join.mutable_chain() = to_wire(chain);
  *join.mutable_geometry() = geometry_of(options);
  join.set_fingerprint(fingerprint(join.chain(), join.geometry()));
  join.set_consumer(static_cast<std::uint64_t>(options.ranks.rank));
  // The chain built here when this process can (local threads, the fallback, and the data's description).
  std::string not_here;
  try {
    job->local_chain = options.chains.build(chain);
    join.set_described(true);
    *join.mutable_description() = describe_chain(*job->local_chain);
  } catch (const std::exception& error) {
    not_here = error.what();
  }
  const std::unique_ptr<DispatcherLink> dispatcher = connect_dispatcher(job->dispatcher, job->link);
  try {
    const v1::JoinJobResponse joined = dispatcher->join_job(join);
    job->definition =
        joined.job().described() ? joined.job() : described_by_a_worker(*job, joined, *dispatcher);
  } catch (const ServiceError& error) {
    if (error.kind() != ServiceError::Kind::unavailable || !job->local_chain)
      throw ServiceError(error.kind(),
                         std::string(error.what()) +
                             (not_here.empty() ? "" : "; and the chain cannot be built here: " + not_here));
    // No dispatcher now: the job as this trainer sees it, joined once the dispatcher answers (the stream
    // trains on local cores meanwhile).
    v1::JobDefinition& d = job->definition;
    d.set_name(options.job.empty() ? join.fingerprint() : options.job);
    *d.mutable_chain() = join.chain();
    *d.mutable_geometry() = join.geometry();
    d.set_fingerprint(join.fingerprint());
    d.set_described(true);
    *d.mutable_description() = join.description();
  }
  if (job->local_chain)
    if (const std::string difference =
            description_difference(job->definition.description(), join.description());
        !difference.empty())
      throw ServiceError(
          ServiceError::Kind::refused,
          "job '" + job->definition.name() + "': the data here differs from the job's: " + difference);
  // The largest frame a worker may send: a batch of this layout twice over, and room for what pads (boxes,
  // keypoints: their count per sample changes from batch to batch). Anything larger is refused before it is
  // read.
  const v1::ChainDescription& d = job->definition.description();
  const std::size_t pixels = static_cast<std::size_t>(d.height()) * static_cast<std::size_t>(d.width());
  std::size_t per_sample = pixels * static_cast<std::size_t>(d.channels()) + 64;
  for (const FieldTensorLayout& tensor : field_tensors_from_wire(d)) {
    std::size_t bytes = dtype_size(tensor.dtype);
    for (const std::int64_t extent : tensor.shape) bytes *= extent < 0 ? 1 : static_cast<std::size_t>(extent);
    per_sample += bytes;
  }
  job->link.max_frame_bytes = 2 * options.batch_size * per_sample + (std::size_t{64} << 20);
  // The pipeline's deterministic option says what the job's does: a consumer that adapts to timing (a
  // DeviceFeeder's hybrid split, which otherwise stays at its starting share) may do so when the job does.
  return BatchedDataset::from_source(std::make_shared<ServiceBatchSource>(std::move(job)))
      .with_options({.deterministic = options.deterministic})
      .prefetch(std::max<std::size_t>(1, options.prefetch));
}

}  // namespace conveyor::service
