#include "conveyor/iterator_state.h"

#include <xxhash.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "conveyor/atomic_file.h"
#include "conveyor/error.h"
#include "src/core/hex.h"
#include "src/pipeline/iterator_state_data.h"

namespace conveyor {
namespace {

using detail::ConsumedElements;
using detail::hex;
using detail::IteratorStateData;
using detail::ShardFrontier;
using nlohmann::json;

constexpr const char* kFormat = "conveyor iterator state";
constexpr int kVersion = 1;

json frontier_json(const ShardFrontier& f) { return f.any ? json::array({f.epoch, f.index}) : json(nullptr); }

ShardFrontier frontier_of(const json& j) {
  if (j.is_null()) return {};
  if (!j.is_array() || j.size() != 2) throw InvalidArgument("a shard frontier is null or [epoch, index]");
  return {true, j.at(0).get<std::uint64_t>(), j.at(1).get<std::uint64_t>()};
}

json body_of(const IteratorStateData& d) {
  json body = {{"version", kVersion},    {"seed", d.seed},         {"order", d.order},
               {"stage_words", d.words}, {"batches", d.batches},   {"elements", d.elements},
               {"epoch", d.epoch},       {"combined", d.combined}, {"consumed", json::array()}};
  if (d.sharded)
    body["shard"] = {{"index", d.shard_index}, {"count", d.shard_count}, {"last", frontier_json(d.frontier)}};
  for (const ConsumedElements& set : d.consumed) {
    json family = json::array();
    for (const ShardFrontier& f : set.frontiers) family.push_back(frontier_json(f));
    body["consumed"].push_back(std::move(family));
  }
  return body;
}

std::uint64_t checksum_of(const json& body) {
  const std::string text = body.dump();
  return XXH64(text.data(), text.size(), 0);
}

IteratorStateData data_of(const json& body) {
  IteratorStateData d;
  if (body.at("version").get<int>() != kVersion)
    throw InvalidArgument("format version " + body.at("version").dump() + ", this build reads " +
                          std::to_string(kVersion));
  d.seed = body.at("seed").get<std::uint64_t>();
  d.order = body.at("order").get<std::vector<std::string>>();
  d.words = body.at("stage_words").get<std::vector<std::uint64_t>>();
  d.batches = body.at("batches").get<std::uint64_t>();
  d.elements = body.at("elements").get<std::uint64_t>();
  d.epoch = body.at("epoch").get<std::uint64_t>();
  d.combined = body.at("combined").get<bool>();
  if (body.contains("shard")) {
    const json& shard = body.at("shard");
    d.sharded = true;
    d.shard_index = shard.at("index").get<std::uint64_t>();
    d.shard_count = shard.at("count").get<std::uint64_t>();
    d.frontier = frontier_of(shard.at("last"));
    if (d.shard_count == 0 || d.shard_index >= d.shard_count)
      throw InvalidArgument("shard " + std::to_string(d.shard_index) + " of " +
                            std::to_string(d.shard_count));
  }
  for (const json& family : body.at("consumed")) {
    ConsumedElements set;
    for (const json& f : family) set.frontiers.push_back(frontier_of(f));
    if (set.frontiers.empty()) throw InvalidArgument("an empty set of consumed elements");
    d.consumed.push_back(std::move(set));
  }
  return d;
}

bool is_shard_line(const std::string& line) { return line.rfind("shard ", 0) == 0; }

// The first line where two chains differ (shard lines compared too unless `ignore_shards`), or "".
std::string first_difference(const std::vector<std::string>& saved, const std::vector<std::string>& here,
                             bool ignore_shards) {
  for (std::size_t i = 0; i < std::max(saved.size(), here.size()); ++i) {
    const std::string a = i < saved.size() ? saved[i] : "(nothing)";
    const std::string b = i < here.size() ? here[i] : "(nothing)";
    if (a == b || (ignore_shards && is_shard_line(a) && is_shard_line(b))) continue;
    return "step " + std::to_string(i) + " of the saved order is '" + a + "', this dataset has '" + b + "'";
  }
  return {};
}

}  // namespace

IteratorState::IteratorState() = default;

std::uint64_t IteratorState::batches() const noexcept { return data_ ? data_->batches : 0; }
std::uint64_t IteratorState::elements() const noexcept { return data_ ? data_->elements : 0; }
std::uint64_t IteratorState::epoch() const noexcept { return data_ ? data_->epoch : 0; }
std::uint64_t IteratorState::shard_index() const noexcept { return data_ ? data_->shard_index : 0; }
std::uint64_t IteratorState::shard_count() const noexcept { return data_ ? data_->shard_count : 1; }

std::string IteratorState::to_json() const {
  if (!data_) throw InvalidArgument("IteratorState::to_json: the start state has nothing to save");
  const json body = body_of(*data_);
  const json text = {{"format", kFormat}, {"xxh64", hex(checksum_of(body))}, {"state", body}};
  return text.dump(1) + "\n";
}

IteratorState IteratorState::from_json(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& error) {
    throw InvalidArgument(where + ": not an iterator state (truncated or not JSON: " + error.what() + ")");
  }
  try {
    if (!document.is_object() || document.value("format", "") != kFormat)
      throw InvalidArgument("not an iterator state (no \"format\": \"" + std::string(kFormat) + "\")");
    const json& body = document.at("state");
    const std::string expected = hex(checksum_of(body)), written = document.at("xxh64").get<std::string>();
    if (expected != written)
      throw InvalidArgument("checksum mismatch (written " + written + ", content gives " + expected +
                            "): the file was changed or damaged after it was written");
    return IteratorState(std::make_shared<IteratorStateData>(data_of(body)));
  } catch (const InvalidArgument& error) {
    throw InvalidArgument(where + ": " + error.what());
  } catch (const json::exception& error) {
    throw InvalidArgument(where + ": malformed iterator state: " + error.what());
  }
}

void IteratorState::save(const std::filesystem::path& file) const { write_file_atomically(file, to_json()); }

IteratorState IteratorState::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError("cannot read iterator state '" + file.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw IoError("reading iterator state '" + file.string() + "' failed");
  return from_json(text.str(), "iterator state '" + file.string() + "'");
}

IteratorState IteratorState::combine(std::span<const IteratorState> shards) {
  if (shards.empty()) throw InvalidArgument("IteratorState::combine: no states");
  const IteratorStateData* first = shards.front().data_.get();
  if (first == nullptr || !first->sharded)
    throw InvalidArgument(
        "IteratorState::combine: the states must come from iterators of a dataset with one shard() that "
        "splits by index (ShardRemainder::uneven; pad and drop even the shards out per epoch, so their "
        "states "
        "restore only at the same shard count)");
  const std::uint64_t count = first->shard_count;
  if (shards.size() != count)
    throw InvalidArgument("IteratorState::combine: " + std::to_string(shards.size()) + " states for " +
                          std::to_string(count) + " shards (one state per shard)");
  std::vector<const IteratorStateData*> by_index(count, nullptr);
  for (const IteratorState& state : shards) {
    const IteratorStateData* d = state.data_.get();
    if (d == nullptr || !d->sharded || d->combined)
      throw InvalidArgument("IteratorState::combine: every state must come from a sharded iterator");
    if (d->shard_count != count)
      throw InvalidArgument("IteratorState::combine: states of " + std::to_string(count) + " and " +
                            std::to_string(d->shard_count) + " shards");
    if (d->seed != first->seed)
      throw InvalidArgument("IteratorState::combine: states with pipeline seeds " +
                            std::to_string(first->seed) + " and " + std::to_string(d->seed));
    if (const std::string difference = first_difference(first->order, d->order, true); !difference.empty())
      throw InvalidArgument("IteratorState::combine: the states belong to different datasets: " + difference);
    if (by_index[d->shard_index] != nullptr)
      throw InvalidArgument("IteratorState::combine: two states of shard " + std::to_string(d->shard_index));
    by_index[d->shard_index] = d;
  }
  // The shard furthest behind: the new iterators restart the order where it stood, and skip what the others
  // delivered beyond that point.
  const IteratorStateData* slowest = by_index.front();
  for (const IteratorStateData* d : by_index)
    if (d->frontier.before(slowest->frontier)) slowest = d;
  auto combined = std::make_shared<IteratorStateData>(*slowest);
  combined->combined = true;
  combined->frontier = {};
  combined->batches = combined->elements = 0;
  combined->consumed.clear();
  ConsumedElements mine;
  for (const IteratorStateData* d : by_index) {
    mine.frontiers.push_back(d->frontier);
    combined->batches += d->batches;
    combined->elements += d->elements;
    combined->epoch = std::max(combined->epoch, d->epoch);
    // Sets from earlier elastic restores: each shard carries those still ahead of it.
    for (const ConsumedElements& set : d->consumed)
      if (set.matters_after(slowest->frontier) &&
          std::find(combined->consumed.begin(), combined->consumed.end(), set) == combined->consumed.end())
        combined->consumed.push_back(set);
  }
  combined->consumed.push_back(std::move(mine));
  return IteratorState(std::move(combined));
}

namespace detail {

std::vector<ConsumedElements> restore_order(const IteratorStateData& state,
                                            const std::vector<std::string>& description, std::uint64_t seed,
                                            ElementOrder& order) {
  if (state.seed != seed)
    throw InvalidArgument("iterator state saved with pipeline seed " + std::to_string(state.seed) +
                          ", this dataset's seed is " + std::to_string(seed));
  const std::string exact = first_difference(state.order, description, false);
  if (!exact.empty()) {
    const std::string difference = first_difference(state.order, description, true);
    if (!difference.empty()) throw InvalidArgument("iterator state of another dataset: " + difference);
    if (!state.combined)
      throw InvalidArgument(
          "iterator state of shard " + std::to_string(state.shard_index) + " of " +
          std::to_string(state.shard_count) + " (" + exact +
          "): starting another shard or shard count needs the states of all shards, IteratorState::combine");
  }
  order.restore(state.words);
  if (state.combined) {
    order.exclude(state.consumed);  // also forgets the slowest shard's own frontier: it is not ours
  } else if (!state.consumed.empty()) {
    order.exclude(state.consumed, /*keep_frontier=*/true);
  }
  return state.consumed;
}

}  // namespace detail
}  // namespace conveyor
