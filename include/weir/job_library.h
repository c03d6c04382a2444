// Jobs built out of tree: a shared library with one entry point, which
// `weir run LIBRARY.so ARGS` uploads to a cluster (every JobManager and
// TaskManager process loads it and builds the same job graph from it) or,
// with --embedded, runs in the calling process.
//
//   #include <weir/job_library.h>
//
//   absl::Status build(weir::StreamEnvironment& env, const std::vector<std::string>& args) {
//     env.from_source<weir::TextLine>(...).map(...).sink_to(...);
//     return absl::OkStatus();
//   }
//   WEIR_JOB("my-job", build)
//
// weir parses its own job flags first (--parallelism, --checkpoint-dir,
// --restore, ...; see docs/cli.md); they arrive in env.config(), and `args`
// holds the rest in their order. The function runs in every process of the
// cluster and must build the same graph from the same arguments each time:
// no randomness, no dependence on the host. An error it returns (or an
// exception it throws) refuses the submission with that message.
//
// The library must be built against the headers of the weir that loads it
// (CMake: find_package(weir) and weir_add_job(), see examples/job-template);
// a library built against another release is refused when loaded, naming
// both.
#ifndef WEIR_JOB_LIBRARY_H_
#define WEIR_JOB_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "weir/connectors.h"
#include "weir/job_args.h"
#include "weir/version.h"
#include "weir/weir.h"

#define WEIR_DETAIL_STR2(x) #x
#define WEIR_DETAIL_STR(x) WEIR_DETAIL_STR2(x)

// What a library and the loading weir must share: the release (the headers'
// classes and their layout) and the C++ standard library's ABI.
#define WEIR_JOB_ABI                                                    \
  "weir " WEIR_VERSION ", libstdc++ " WEIR_DETAIL_STR(_GLIBCXX_RELEASE) \
  ", cxx11 abi " WEIR_DETAIL_STR(_GLIBCXX_USE_CXX11_ABI)

namespace weir {

using JobBuildFunction = absl::Status (*)(StreamEnvironment& env, const std::vector<std::string>& args);

// What the entry point returns. `abi` comes first and stays first in every
// release, so a loader can read it before trusting the rest.
struct JobLibraryEntry {
  const char* abi;
  const char* name;  // the job's name in listings
  JobBuildFunction build;
};

}  // namespace weir

// Defines the library's entry point, `weir_job_entry_v1`.
#define WEIR_JOB(NAME, FUNCTION)                                                            \
  extern "C" __attribute__((visibility("default"))) const ::weir::JobLibraryEntry*          \
  weir_job_entry_v1() {                                                                     \
    static const ::weir::JobLibraryEntry entry{WEIR_JOB_ABI, NAME, &FUNCTION};              \
    return &entry;                                                                          \
  }

#endif  // WEIR_JOB_LIBRARY_H_
