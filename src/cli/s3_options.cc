#include "cli/s3_options.h"

namespace weir::cli {

void add_s3_options(CLI::App* command, s3::S3Options* options) {
  command->add_option("--s3-endpoint", options->endpoint,
                      "http(s)://HOST[:PORT] of S3-compatible storage for s3:// paths (else $AWS_ENDPOINT_URL_S3, "
                      "$AWS_ENDPOINT_URL, else AWS's endpoint of the region)")
      ->type_name("URL");
  command->add_option("--s3-region", options->region, "S3 region (else $AWS_REGION, else us-east-1)")
      ->type_name("REGION");
  command->add_option("--s3-access-key", options->access_key,
                      "S3 access key id, with --s3-secret-key-file (else $AWS_ACCESS_KEY_ID)")
      ->type_name("KEY");
  command->add_option("--s3-secret-key-file", options->secret_key_file,
                      "File holding the S3 secret access key (else $AWS_SECRET_ACCESS_KEY)");
  command->add_option("--s3-ca-file", options->ca_file,
                      "PEM CA bundle for an https S3 endpoint (else $AWS_CA_BUNDLE, else the system's)");
}

const std::vector<std::string>& s3_option_names() {
  static const std::vector<std::string> kNames = {"--s3-endpoint", "--s3-region", "--s3-access-key",
                                                  "--s3-secret-key-file", "--s3-ca-file"};
  return kNames;
}

}  // namespace weir::cli
