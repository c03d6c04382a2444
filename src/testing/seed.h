// The seed of a randomised test: $WEIR_TEST_SEED when set, so a failure is
// replayed by running the test again with the seed it printed
// (WEIR_TEST_SEED=N ctest -R NAME), else a fresh random one. Every test that
// takes one prints it when it fails ("seed N").
#ifndef WEIR_TESTING_SEED_H_
#define WEIR_TESTING_SEED_H_

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace weir::testing {

inline uint64_t test_seed() {
  if (const char* s = std::getenv("WEIR_TEST_SEED"); s != nullptr && *s != '\0') {
    return std::strtoull(s, nullptr, 10);
  }
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

}  // namespace weir::testing

#endif  // WEIR_TESTING_SEED_H_
