// Splitting a data set across the ranks of a data-parallel job, and reading it from WebDataset-style tar
// shards on a local disk, an HTTP(S) server or an S3-compatible object store (see Dataset::tar_shards).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "conveyor/ranks.h"

namespace conveyor {

// What a split across ranks does with an epoch whose length n is not a multiple of the number of ranks.
// With pad or drop every rank gets the same number of elements in every epoch, so every rank runs the
// same number of steps and no collective waits for a rank that has run out. With more than one rank,
// batches then also keep their count when elements go missing: an element that fails under on_error =
// skip, or that a filter rejects, leaves its slot in the batch as padding (a copy of a sample of the same
// batch, flagged SampleInfo::padding) instead of closing the gap.
enum class ShardRemainder : std::uint8_t {
  uneven,  // ranks differ by at most one element; nothing is repeated or left out
  pad,     // every rank gets ceil(n / ranks): a rank that is one short repeats one element of the epoch's
           // start (torch's DistributedSampler rule), flagged Sample::padding / SampleInfo::padding
  drop,    // every rank gets floor(n / ranks): the epoch's last n mod ranks elements are left out
};

// Short, stable name of a ShardRemainder ("pad", ...).
const char* to_string(ShardRemainder remainder) noexcept;

// How an s3:// URL ("s3://bucket/key") becomes a request. The requests are signed by libcurl (AWS Signature
// Version 4, CURLOPT_AWS_SIGV4) with the credentials found the way AWS's own tools find them:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN when set), else the profile
// AWS_PROFILE (default "default") of the credentials file AWS_SHARED_CREDENTIALS_FILE (default
// ~/.aws/credentials). Without credentials the requests go unsigned (public buckets).
enum class S3Addressing : std::uint8_t {
  automatic,       // virtual-hosted ("https://bucket.s3.REGION.amazonaws.com/key") on AWS's own endpoint
                   // when the bucket name allows it (no dots), path-style on any other endpoint
  path,            // "ENDPOINT/bucket/key": what S3-compatible stores (MinIO, Ceph, R2, ...) all accept
  virtual_hosted,  // "SCHEME://bucket.ENDPOINT-HOST/key"
};

struct S3Options {
  // "https://host[:port]" of the store; empty: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS's
  // "https://s3.REGION.amazonaws.com".
  std::string endpoint;
  // The region requests are signed for; empty: AWS_REGION, else AWS_DEFAULT_REGION, else "us-east-1".
  std::string region;
  S3Addressing addressing = S3Addressing::automatic;
  // The credentials file's profile; empty: AWS_PROFILE, else "default". A profile named here or in
  // AWS_PROFILE that the file lacks is an error; a missing "default" means no credentials.
  std::string profile;
  // Unsigned requests even where credentials are found.
  bool anonymous = false;
};

// How shards are fetched over HTTP(S) (through libcurl).
struct HttpOptions {
  // Limit for establishing one connection.
  std::chrono::milliseconds connect_timeout{10'000};
  // A transfer that moves fewer than low_speed_bytes per second for low_speed_time is abandoned, as a
  // failure (and resumed when retries are left).
  std::size_t low_speed_bytes = 1;
  std::chrono::seconds low_speed_time{30};
  // Further attempts after a failure: a connection that fails before the first byte is made again, one
  // that fails later is resumed where it stopped (a Range request; a server that ignores it sends the
  // shard again and the bytes already delivered are passed over). Dropped connections, timeouts, HTTP 408,
  // 429 and 5xx (an object store's SlowDown, InternalError) are retried; other answers (403, 404, a bad
  // signature) fail at once with the URL and the server's reason (an object store's Code and Message).
  // The budget is per place in the stream: a retry that delivers new bytes starts it again.
  int retries = 4;
  // Wait before the first retry, doubled for each later one (at most 8 s), each wait drawn between half
  // and all of that (jitter, so that many readers that failed together do not come back together).
  std::chrono::milliseconds retry_delay{200};
  // Extra request headers, e.g. "Authorization: Bearer ...".
  std::vector<std::string> headers;
  // s3:// URLs (above).
  S3Options s3;
};

// A cache of remote shards (http(s):// and s3://) on local disk, shared by the processes of one host (the
// ranks of a job, later runs): a shard read once is read from disk afterwards, in this run's next epochs
// and in the next runs. Each shard is written to a file of its own as it streams in (nothing holds a whole
// shard in memory) and renamed into place once complete, so a process killed midway leaves no half shard
// that a later reader would take. An entry belongs to the object's size and ETag (from the prefix listing,
// else from a HEAD request once per shard and data set): an object that changed is fetched again. One
// process downloads a shard (a file lock); another that wants it meanwhile streams it from the store
// itself rather than wait. Over max_bytes, the least recently used shards are deleted. A shard larger than
// max_bytes, and a server that gives no size, are streamed and not kept.
struct ShardCacheOptions {
  std::uint64_t max_bytes = 0;  // 0: no cache
  // Empty: "shards" in conveyor's cache folder ($CONVEYOR_ALGORITHM_CACHE, else $XDG_CACHE_HOME/conveyor,
  // else ~/.cache/conveyor).
  std::filesystem::path folder;
};

// How Dataset::tar_shards reads its shards.
struct TarShardOptions {
  // This process's place in the job: it reads only its share of every epoch (see Dataset::tar_shards).
  Ranks ranks;
  ShardRemainder remainder = ShardRemainder::pad;
  // Shuffle the order of the shards every epoch (seeded from seed and the epoch); false: the given order.
  bool shuffle_shards = true;
  std::uint64_t seed = 0;
  // Shards read at once, ahead of the pipeline, each by a thread of its own (reading waits on disks and
  // networks, so it does not take the arena's cores), while as many threads open the shards that come
  // next and read their first samples ahead. Their samples are interleaved, one from each in
  // turn (tf.data's deterministic interleave with this cycle length): the order depends on this number and
  // the shards, never on timing, and the readers work side by side. This needs every shard's count (an
  // index gives them; local files are counted, headers only, when the set is made): URLs read without an
  // index, and a set with a shard that cannot be counted, are read one shard after another. 1: the
  // shards' own order, one after another.
  std::size_t parallel_shards = 4;
  // Samples read ahead per shard being read: the read-ahead holds at most 2 x parallel_shards x
  // queued_samples samples' bytes.
  std::size_t queued_samples = 32;
  // Members whose extension (after the first dot of the name, any case) is one of these are a sample's
  // image; a member with the label extension holds its label as decimal text. Other members are ignored.
  // ppm and pgm are images stored decoded (a data set prepared by make_shards --store raw;
  // conveyor/ops/raw_image.h): the decode ops read them as they read a JPEG.
  std::vector<std::string> image_extensions{"jpg", "jpeg", "ppm", "pgm"};
  // A sample without it has label -1, as one without any labels (segmentation, detection: jpg + mask.png
  // + json), unless require_label says that is an error ("no_label").
  std::string label_extension = "cls";  // empty: no labels (every label is -1)
  bool require_label = false;
  // A sample's other fields (conveyor/fields.h), off by default: the member with this extension is its mask
  // (a PNG of class ids, Sample::encoded_mask), e.g. "mask.png" ...
  std::string mask_extension;
  // ... and the one with this extension its boxes, as JSON in the image's pixels: {"boxes": [[x0, y0, x1,
  // y1], ...], "classes": [c, ...]}, optionally "crowd": [0 or 1, ...] and "tags": [t, ...] (multi-label),
  // e.g. "json". A sample without the member fails ("no_mask", "no_fields"), and so does a JSON that does
  // not say that ("bad_fields").
  std::string fields_extension;
  HttpOptions http;
  // Remote shards kept on local disk (off by default).
  ShardCacheOptions cache;
  // Local, uncompressed shards only: locate every sample once, when the dataset is made (the members'
  // headers and the labels' few bytes, one shard per task), then read each image with one pread() from its
  // shard in the pipeline's parallel read stage, as loose files are read (wids' and DALI's indexed way).
  // The dataset is then a table like image_folder's: shard after shard, each in stored order; shuffle()
  // permutes the whole epoch, and ranks split it with shard(ranks) as files are split (so ranks must stay
  // a single rank here); shuffle_shards, seed, parallel_shards and queued_samples do not apply. No reader
  // threads and no read-ahead. Samples that break the format fail when read, with the stream's kinds; a
  // shard that breaks off keeps its whole samples and adds one element that fails with the break's kind.
  // InvalidArgument for a URL or a compressed shard.
  bool random_access = false;
};

// The shard names a pattern stands for, in order:
// - brace ranges "shard-{000000..000099}.tar" (zero-padded to the width of the bounds) and brace lists
//   "{train,val}", several per pattern, expanded left to right;
// - then, for a local pattern (not http://, https:// or s3://) with *, ? or [...], the existing files that
//   match (glob), sorted.
// Throws InvalidArgument for unbalanced braces or a range whose bounds are not numbers, IoError when a glob
// matches nothing.
std::vector<std::string> expand_shard_pattern(const std::string& pattern);

}  // namespace conveyor
