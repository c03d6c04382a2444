// Whether this build runs under a sanitizer, for the few tests whose
// subject the sanitizer itself changes (peak memory: AddressSanitizer keeps
// freed memory in quarantine and adds shadow memory).
#ifndef WEIR_TESTING_SANITIZERS_H_
#define WEIR_TESTING_SANITIZERS_H_

namespace weir::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace weir::testing

#endif  // WEIR_TESTING_SANITIZERS_H_
