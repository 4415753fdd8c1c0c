// s3:// locations as requests, without a server: the URL of each addressing style, where the endpoint,
// region and credentials come from (the environment, AWS's credentials file), and a store's error document
// as a message.
#include "src/sources/s3_client.h"

#include <gtest/gtest.h>

#include <fstream>

#include "conveyor/error.h"
#include "src/sources/aws_credentials.h"
#include "src/sources/store_error.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using detail::AwsEnvironment;
using detail::S3Client;

AwsEnvironment keys() {
  AwsEnvironment environment;
  environment.access_key_id = "AKID";
  environment.secret_access_key = "SECRET";
  return environment;
}

TEST(S3Location, SplitsBucketAndKey) {
  const detail::S3Location object = detail::parse_s3_location("s3://data/train/shard-000001.tar");
  EXPECT_EQ(object.bucket, "data");
  EXPECT_EQ(object.key, "train/shard-000001.tar");
  EXPECT_EQ(detail::parse_s3_location("s3://data").key, "");
  EXPECT_THROW(detail::parse_s3_location("s3:///key"), InvalidArgument);
}

TEST(S3Client, AwsEndpointIsVirtualHostedAndSignedForTheRegion) {
  AwsEnvironment environment = keys();
  environment.region = "eu-west-1";
  const S3Client client({}, environment);
  const detail::RemoteRequest request = client.object({"data", "train/a b+c.tar"});
  EXPECT_EQ(request.url, "https://data.s3.eu-west-1.amazonaws.com/train/a%20b%2Bc.tar");
  EXPECT_EQ(request.name, "s3://data/train/a b+c.tar");
  EXPECT_EQ(request.aws_sigv4, "aws:amz:eu-west-1:s3");
  EXPECT_EQ(request.user_password, "AKID:SECRET");
  ASSERT_EQ(request.headers.size(), 1u);
  EXPECT_EQ(request.headers[0].rfind("x-amz-content-sha256: e3b0c442", 0), 0u);
  // A bucket with dots would break the certificate's wildcard: path-style.
  EXPECT_EQ(client.object({"my.data", "k"}).url, "https://s3.eu-west-1.amazonaws.com/my.data/k");
}

TEST(S3Client, ACustomEndpointIsPathStyleUnlessAsked) {
  AwsEnvironment environment = keys();
  environment.endpoint = "http://127.0.0.1:9000/";
  environment.endpoint_s3 = "";
  EXPECT_EQ(S3Client({}, environment).object({"b", "k.tar"}).url, "http://127.0.0.1:9000/b/k.tar");
  S3Options virtual_hosted;
  virtual_hosted.addressing = S3Addressing::virtual_hosted;
  EXPECT_EQ(S3Client(virtual_hosted, environment).object({"b", "k.tar"}).url,
            "http://b.127.0.0.1:9000/k.tar");
  // AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL, the option over both.
  environment.endpoint_s3 = "http://s3.local:1";
  EXPECT_EQ(S3Client({}, environment).endpoint(), "http://s3.local:1");
  S3Options chosen;
  chosen.endpoint = "https://store.example:8443";
  EXPECT_EQ(S3Client(chosen, environment).endpoint(), "https://store.example:8443");
  chosen.endpoint = "store.example";
  EXPECT_THROW(S3Client(chosen, environment), InvalidArgument);
}

TEST(S3Client, RegionFromTheOptionThenAwsRegionThenTheDefaultRegion) {
  AwsEnvironment environment = keys();
  EXPECT_EQ(S3Client({}, environment).region(), "us-east-1");
  environment.default_region = "ap-south-1";
  EXPECT_EQ(S3Client({}, environment).region(), "ap-south-1");
  environment.region = "eu-north-1";
  EXPECT_EQ(S3Client({}, environment).region(), "eu-north-1");
  S3Options options;
  options.region = "us-west-2";
  EXPECT_EQ(S3Client(options, environment).region(), "us-west-2");
}

TEST(S3Client, ListingQueryIsInCanonicalOrderAndEncoded) {
  AwsEnvironment environment = keys();
  environment.endpoint = "http://127.0.0.1:9000";
  const S3Client client({}, environment);
  EXPECT_EQ(client.list_page("b", "train/", "", 0).url,
            "http://127.0.0.1:9000/b?list-type=2&prefix=train%2F");
  EXPECT_EQ(client.list_page("b", "x y/", "t/1+=", 2).url,
            "http://127.0.0.1:9000/b?continuation-token=t%2F1%2B%3D&list-type=2&max-keys=2&prefix=x%20y%2F");
}

TEST(S3Client, SessionTokenIsSentAndAnonymousIsUnsigned) {
  AwsEnvironment environment = keys();
  environment.session_token = "TOKEN";
  const detail::RemoteRequest request = S3Client({}, environment).object({"b", "k"});
  ASSERT_EQ(request.headers.size(), 2u);
  EXPECT_EQ(request.headers[1], "x-amz-security-token: TOKEN");
  S3Options anonymous;
  anonymous.anonymous = true;
  const detail::RemoteRequest unsigned_request = S3Client(anonymous, environment).object({"b", "k"});
  EXPECT_TRUE(unsigned_request.aws_sigv4.empty());
  EXPECT_TRUE(unsigned_request.headers.empty());
}

TEST(AwsCredentials, EnvironmentKeysFirstAndBothOrNone) {
  const std::optional<detail::AwsCredentials> found = detail::find_aws_credentials(keys(), "");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->access_key_id, "AKID");
  AwsEnvironment half;
  half.access_key_id = "AKID";
  EXPECT_THROW(detail::find_aws_credentials(half, ""), InvalidArgument);
}

TEST(AwsCredentials, ProfilesOfTheCredentialsFile) {
  testing::TempDir dir;
  {
    std::ofstream file(dir / "credentials");
    file << "[default]\naws_access_key_id = DEF\naws_secret_access_key = DEFSECRET\n\n"
            "[training]\naws_access_key_id=TRN\naws_secret_access_key=TRNSECRET\naws_session_token=TOK\n";
  }
  AwsEnvironment environment;
  environment.credentials_file = (dir / "credentials").string();
  EXPECT_EQ(detail::find_aws_credentials(environment, "")->access_key_id, "DEF");
  environment.profile = "training";
  const detail::AwsCredentials training = *detail::find_aws_credentials(environment, "");
  EXPECT_EQ(training.secret_access_key, "TRNSECRET");
  EXPECT_EQ(training.session_token, "TOK");
  // A profile asked for by name must exist; the option wins over AWS_PROFILE.
  try {
    detail::find_aws_credentials(environment, "nope");
    FAIL() << "a missing named profile";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("has no profile 'nope'"), std::string::npos) << error.what();
  }
  // HOME's ~/.aws/credentials when no file is named; none at all: no credentials (unsigned requests).
  AwsEnvironment home;
  home.home = dir.path().string();
  EXPECT_FALSE(detail::find_aws_credentials(home, "").has_value());
}

TEST(AwsCredentials, AFileThatIsNotIniNamesItsLine) {
  testing::TempDir dir;
  std::ofstream(dir / "credentials") << "[default]\naws_access_key_id = A\nthis line is no key\n";
  AwsEnvironment environment;
  environment.credentials_file = (dir / "credentials").string();
  try {
    detail::find_aws_credentials(environment, "");
    FAIL() << "not INI";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("(line 3)"), std::string::npos) << error.what();
  }
}

TEST(StoreError, TheStoresCodeAndMessageMakeTheReason) {
  EXPECT_EQ(detail::describe_http_failure(
                403,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
                "<Message>Access Denied</Message><RequestId>1</RequestId></Error>"),
            "HTTP 403 (AccessDenied: Access Denied)");
  EXPECT_EQ(detail::parse_store_error("<Error><Code>SlowDown</Code></Error>").code, "SlowDown");
  EXPECT_EQ(detail::describe_http_failure(404, ""), "HTTP 404");
  EXPECT_EQ(detail::describe_http_failure(502, "Bad gateway\nmore"), "HTTP 502 (Bad gateway)");
}

}  // namespace
}  // namespace conveyor
