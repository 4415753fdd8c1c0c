#include "src/service/common/job_identity.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <xxhash.h>

#include <map>

#include "conveyor/error.h"
#include "src/core/hex.h"
#include "src/service/common/field_layout.h"

namespace conveyor::service::detail {
namespace {

std::string sha256(std::string_view salt, std::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(context.get(), salt.data(), salt.size()) != 1 ||
      EVP_DigestUpdate(context.get(), token.data(), token.size()) != 1 ||
      EVP_DigestFinal_ex(context.get(), digest, &length) != 1)
    throw Error("job token: SHA-256 failed (OpenSSL)");
  return std::string(reinterpret_cast<const char*>(digest), length);
}

}  // namespace

std::string describe_job(const v1::ChainSpec& chain, const v1::JobGeometry& geometry) {
  // A std::map sorts the parameters: the protobuf map's order is unspecified.
  const std::map<std::string, std::string> parameters(chain.parameters().begin(), chain.parameters().end());
  std::string text = "chain " + chain.name() + "\n";
  for (const auto& [key, value] : parameters) text += "parameter " + key + "=" + value + "\n";
  text += "seed " + std::to_string(chain.seed()) + "\nbatch " + std::to_string(geometry.batch_size()) +
          "\nsplit " + std::to_string(geometry.split_batches()) + "\nconsumers " +
          std::to_string(geometry.consumers()) + "\nepochs " + std::to_string(geometry.epochs()) +
          "\nshuffle " + std::to_string(geometry.shuffle()) + "\ndrop_remainder " +
          std::to_string(geometry.drop_remainder()) + "\ndrop_uneven " +
          std::to_string(geometry.drop_uneven()) + "\n";
  return text;
}

std::string fingerprint(const v1::ChainSpec& chain, const v1::JobGeometry& geometry) {
  const std::string text = describe_job(chain, geometry);
  return conveyor::detail::hex(XXH3_64bits(text.data(), text.size()));
}

v1::ChainDescription describe_chain(const Chain& chain) {
  v1::ChainDescription out;
  const Dataset& samples = chain.samples;
  const std::size_t n = samples.source_size();
  out.set_source_size(n);
  if (!chain.batching.sample_shape || chain.batching.sample_shape->empty())
    throw InvalidArgument("a service chain needs BatchOptions::sample_shape");
  const ImageShape shape = *chain.batching.sample_shape;
  out.set_height(shape.height);
  out.set_width(shape.width);
  out.set_channels(shape.channels);
  add_to_wire(field_tensor_layouts(chain), out);
  // Every element's path and label: another data set under the same name, or a folder that changed, differs.
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw Error("describe_chain: out of memory");
  const std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> owner(state, XXH3_freeState);
  XXH3_64bits_reset(state);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string path = samples.source_path(i);
    const std::int64_t label = samples.source_label(i);
    XXH3_64bits_update(state, path.data(), path.size() + 1);  // with its NUL: paths stay apart
    XXH3_64bits_update(state, &label, sizeof label);
  }
  out.set_data_identity(conveyor::detail::hex(XXH3_64bits_digest(state)));
  for (const std::string& name : samples.class_names()) out.add_class_names(name);
  return out;
}

std::string description_difference(const v1::ChainDescription& job, const v1::ChainDescription& here) {
  if (job.source_size() != here.source_size())
    return std::to_string(here.source_size()) + " samples here, " + std::to_string(job.source_size()) +
           " in the job";
  if (job.data_identity() != here.data_identity())
    return "the same number of samples but other paths or labels (data " + here.data_identity() + " here, " +
           job.data_identity() + " in the job)";
  if (job.height() != here.height() || job.width() != here.width() || job.channels() != here.channels())
    return "samples of " + std::to_string(here.height()) + "x" + std::to_string(here.width()) + "x" +
           std::to_string(here.channels()) + " here, " + std::to_string(job.height()) + "x" +
           std::to_string(job.width()) + "x" + std::to_string(job.channels()) + " in the job";
  if (const std::vector<FieldTensorLayout> job_fields = field_tensors_from_wire(job),
      here_fields = field_tensors_from_wire(here);
      job_fields != here_fields)
    return "other fields here (" + describe_field_tensors(here_fields) + ") than the job's (" +
           describe_field_tensors(job_fields) + ")";
  return {};
}

v1::ChainSpec to_wire(const ChainSpec& spec) {
  v1::ChainSpec out;
  out.set_name(spec.name);
  out.set_seed(spec.seed);
  for (const auto& [key, value] : spec.parameters) (*out.mutable_parameters())[key] = value;
  return out;
}

ChainSpec from_wire(const v1::ChainSpec& spec) {
  ChainSpec out;
  out.name = spec.name();
  out.seed = spec.seed();
  out.parameters = ChainParameters(spec.parameters().begin(), spec.parameters().end());
  return out;
}

TokenCheck protect_token(std::string_view token) {
  if (token.empty()) return {};
  TokenCheck check;
  check.salt.resize(16);
  if (RAND_bytes(reinterpret_cast<unsigned char*>(check.salt.data()), static_cast<int>(check.salt.size())) !=
      1)
    throw Error("job token: no random salt (OpenSSL RAND_bytes failed)");
  check.hash = sha256(check.salt, token);
  return check;
}

bool token_matches(const std::string& salt, const std::string& hash, std::string_view token) {
  if (hash.empty()) return true;  // the job has no token
  const std::string given = sha256(salt, token);
  return given.size() == hash.size() && CRYPTO_memcmp(given.data(), hash.data(), hash.size()) == 0;
}

}  // namespace conveyor::service::detail
