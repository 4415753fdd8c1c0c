// AWS credentials, found where AWS's own tools look: the environment first, then a profile of the shared
// credentials file (an INI file, read with libinih's INIReader).
#pragma once

#include <optional>
#include <string>

namespace conveyor::detail {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: long-term keys
};

// The variables that say where credentials, the region and the endpoint come from, as read once from the
// process's environment (tests pass their own). Empty: unset.
struct AwsEnvironment {
  std::string access_key_id, secret_access_key, session_token;  // AWS_ACCESS_KEY_ID, ...
  std::string profile;                                          // AWS_PROFILE
  std::string credentials_file;                                 // AWS_SHARED_CREDENTIALS_FILE
  std::string home;                                             // HOME
  std::string region, default_region;                           // AWS_REGION, AWS_DEFAULT_REGION
  std::string endpoint_s3, endpoint;                            // AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL

  static AwsEnvironment of_process();
};

// AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) when both are set; else the profile
// (`profile`, else AWS_PROFILE, else "default") of the credentials file (AWS_SHARED_CREDENTIALS_FILE, else
// ~/.aws/credentials): aws_access_key_id, aws_secret_access_key, aws_session_token. nullopt when there
// are none (no file, or no "default" profile): requests then go unsigned. Throws InvalidArgument when a
// profile asked for by name is missing, when only one of the two keys is set, and for a file that is not
// INI (naming the file and the line).
std::optional<AwsCredentials> find_aws_credentials(const AwsEnvironment& environment,
                                                   const std::string& profile);

}  // namespace conveyor::detail
