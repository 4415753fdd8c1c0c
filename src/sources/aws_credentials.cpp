#include "src/sources/aws_credentials.h"

#include <INIReader.h>

#include <cstdlib>
#include <filesystem>

#include "conveyor/error.h"

namespace conveyor::detail {
namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace

AwsEnvironment AwsEnvironment::of_process() {
  AwsEnvironment e;
  e.access_key_id = variable("AWS_ACCESS_KEY_ID");
  e.secret_access_key = variable("AWS_SECRET_ACCESS_KEY");
  e.session_token = variable("AWS_SESSION_TOKEN");
  e.profile = variable("AWS_PROFILE");
  e.credentials_file = variable("AWS_SHARED_CREDENTIALS_FILE");
  e.home = variable("HOME");
  e.region = variable("AWS_REGION");
  e.default_region = variable("AWS_DEFAULT_REGION");
  e.endpoint_s3 = variable("AWS_ENDPOINT_URL_S3");
  e.endpoint = variable("AWS_ENDPOINT_URL");
  return e;
}

std::optional<AwsCredentials> find_aws_credentials(const AwsEnvironment& environment,
                                                   const std::string& profile) {
  if (!environment.access_key_id.empty() || !environment.secret_access_key.empty()) {
    if (environment.access_key_id.empty() || environment.secret_access_key.empty())
      throw InvalidArgument(
          "AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together (one is empty)");
    return AwsCredentials{environment.access_key_id, environment.secret_access_key,
                          environment.session_token};
  }
  const std::string named = !profile.empty() ? profile : environment.profile;
  const std::string wanted = named.empty() ? "default" : named;
  std::filesystem::path file = environment.credentials_file;
  if (file.empty()) {
    if (environment.home.empty()) {
      if (!named.empty())
        throw InvalidArgument("AWS credentials: profile '" + named + "' asked for, but HOME is not set");
      return std::nullopt;
    }
    file = std::filesystem::path(environment.home) / ".aws" / "credentials";
  }
  std::error_code error;
  if (!std::filesystem::exists(file, error)) {
    if (!named.empty())
      throw InvalidArgument("AWS credentials: profile '" + named + "' asked for, but '" + file.string() +
                            "' does not exist");
    return std::nullopt;
  }
  const INIReader reader(file.string());
  if (reader.ParseError() == -1)
    throw InvalidArgument("AWS credentials: cannot read '" + file.string() + "'");
  if (reader.ParseError() != 0)
    throw InvalidArgument("AWS credentials: '" + file.string() + "' is not an INI file (line " +
                          std::to_string(reader.ParseError()) + ")");
  if (!reader.HasSection(wanted)) {
    if (!named.empty())
      throw InvalidArgument("AWS credentials: '" + file.string() + "' has no profile '" + named + "'");
    return std::nullopt;
  }
  AwsCredentials credentials{reader.Get(wanted, "aws_access_key_id", ""),
                             reader.Get(wanted, "aws_secret_access_key", ""),
                             reader.Get(wanted, "aws_session_token", "")};
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty())
    throw InvalidArgument("AWS credentials: profile '" + wanted + "' of '" + file.string() +
                          "' lacks aws_access_key_id or aws_secret_access_key");
  return credentials;
}

}  // namespace conveyor::detail
