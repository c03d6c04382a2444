// Linked into every executable of a ThreadSanitizer build (make tsan) and
// nowhere else.
//
// Debian's Abseil is built without TSan, so the synchronisation inside
// absl::Mutex, CondVar and Notification is invisible to it: every access a
// mutex orders looks like a race. This file interposes the entry points weir
// uses (an executable's definition wins over the shared library's) and tells
// TSan the happens-before edge each one makes, then calls the real function
// (found with dlsym(RTLD_NEXT)):
//   - acquiring a mutex (Lock, TryLock, ReaderLock, LockWhen..., and the
//     reacquisition at the end of Await... and CondVar::Wait...) acquires
//     from the mutex's address;
//   - releasing it (Unlock, ReaderUnlock, and the release at the start of
//     Await... and CondVar::Wait...) releases to it;
//   - Notification::Notify releases, a wait that saw the notification
//     acquires.
// Condition::Eval runs a waiter's predicate, sometimes on the thread that
// unlocks; Abseil's own TSan build treats that as inside the critical
// section. Here the predicate's reads are ignored instead, which can hide a
// race inside a predicate but never invents one.
//
// This models the mutex as plain release/acquire edges, so TSan checks data
// races, not lock-order inversions or double unlocks.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void AnnotateIgnoreReadsBegin(const char* file, int line);
void AnnotateIgnoreReadsEnd(const char* file, int line);
}

namespace {

#define WEIR_STR2(x) #x
#define WEIR_STR(x) WEIR_STR2(x)

// "_ZN4absl" "<len><inline namespace>" + rest: the mangled names of the
// Abseil build on this machine.
std::string mangled(const char* prefix, const char* rest) {
  const std::string ns = WEIR_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return std::string(prefix) + "4absl" + std::to_string(ns.size()) + ns + rest;
}

template <typename Fn>
Fn real(const char* prefix, const char* rest) {
  const std::string name = mangled(prefix, rest);
  void* f = ::dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found in Abseil\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

using absl::CondVar;
using absl::Condition;
using absl::Duration;
using absl::Mutex;
using absl::Notification;
using absl::Time;

void acquire(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
void release(const void* p) { __tsan_release(const_cast<void*>(p)); }

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static auto f = real<void (*)(Mutex*)>("_ZN", "5Mutex4LockEv");
  f(this);
  acquire(this);
}
void Mutex::ReaderLock() {
  static auto f = real<void (*)(Mutex*)>("_ZN", "5Mutex10ReaderLockEv");
  f(this);
  acquire(this);
}
bool Mutex::TryLock() {
  static auto f = real<bool (*)(Mutex*)>("_ZN", "5Mutex7TryLockEv");
  bool held = f(this);
  if (held) acquire(this);
  return held;
}
bool Mutex::ReaderTryLock() {
  static auto f = real<bool (*)(Mutex*)>("_ZN", "5Mutex13ReaderTryLockEv");
  bool held = f(this);
  if (held) acquire(this);
  return held;
}
void Mutex::Unlock() {
  static auto f = real<void (*)(Mutex*)>("_ZN", "5Mutex6UnlockEv");
  release(this);
  f(this);
}
void Mutex::ReaderUnlock() {
  static auto f = real<void (*)(Mutex*)>("_ZN", "5Mutex12ReaderUnlockEv");
  release(this);
  f(this);
}

void Mutex::LockWhen(const Condition& cond) {
  static auto f = real<void (*)(Mutex*, const Condition&)>("_ZN", "5Mutex8LockWhenERKNS0_9ConditionE");
  f(this, cond);
  acquire(this);
}
void Mutex::ReaderLockWhen(const Condition& cond) {
  static auto f = real<void (*)(Mutex*, const Condition&)>("_ZN", "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  f(this, cond);
  acquire(this);
}
// The ...WithTimeout/...WithDeadline forms hold the mutex on return whatever
// they return.
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static auto f = real<bool (*)(Mutex*, const Condition&, Duration)>(
      "_ZN", "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  bool r = f(this, cond, timeout);
  acquire(this);
  return r;
}
bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static auto f = real<bool (*)(Mutex*, const Condition&, Time)>(
      "_ZN", "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  bool r = f(this, cond, deadline);
  acquire(this);
  return r;
}
bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static auto f = real<bool (*)(Mutex*, const Condition&, Duration)>(
      "_ZN", "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  bool r = f(this, cond, timeout);
  acquire(this);
  return r;
}
bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static auto f = real<bool (*)(Mutex*, const Condition&, Time)>(
      "_ZN", "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  bool r = f(this, cond, deadline);
  acquire(this);
  return r;
}

void Mutex::Await(const Condition& cond) {
  static auto f = real<void (*)(Mutex*, const Condition&)>("_ZN", "5Mutex5AwaitERKNS0_9ConditionE");
  release(this);
  f(this, cond);
  acquire(this);
}
bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static auto f = real<bool (*)(Mutex*, const Condition&, Duration)>(
      "_ZN", "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  release(this);
  bool r = f(this, cond, timeout);
  acquire(this);
  return r;
}
bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static auto f = real<bool (*)(Mutex*, const Condition&, Time)>(
      "_ZN", "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  release(this);
  bool r = f(this, cond, deadline);
  acquire(this);
  return r;
}

void CondVar::Wait(Mutex* mu) {
  static auto f = real<void (*)(CondVar*, Mutex*)>("_ZN", "7CondVar4WaitEPNS0_5MutexE");
  release(mu);
  f(this, mu);
  acquire(mu);
}
bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static auto f = real<bool (*)(CondVar*, Mutex*, Duration)>(
      "_ZN", "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  release(mu);
  bool r = f(this, mu, timeout);
  acquire(mu);
  return r;
}
bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static auto f = real<bool (*)(CondVar*, Mutex*, Time)>(
      "_ZN", "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  release(mu);
  bool r = f(this, mu, deadline);
  acquire(mu);
  return r;
}

bool Condition::Eval() const {
  static auto f = real<bool (*)(const Condition*)>("_ZNK", "9Condition4EvalEv");
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  bool r = f(this);
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  return r;
}

void Notification::Notify() {
  static auto f = real<void (*)(Notification*)>("_ZN", "12Notification6NotifyEv");
  release(this);
  f(this);
}
void Notification::WaitForNotification() const {
  static auto f = real<void (*)(const Notification*)>("_ZNK", "12Notification19WaitForNotificationEv");
  f(this);
  acquire(this);
}
bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static auto f = real<bool (*)(const Notification*, Duration)>(
      "_ZNK", "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  bool r = f(this, timeout);
  if (r) acquire(this);
  return r;
}
bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static auto f = real<bool (*)(const Notification*, Time)>(
      "_ZNK", "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  bool r = f(this, deadline);
  if (r) acquire(this);
  return r;
}

ABSL_NAMESPACE_END
}  // namespace absl
