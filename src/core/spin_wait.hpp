// spin_wait.hpp: how a host thread waits for another thread's store to an atomic: it spins a little, then sleeps
// (a futex, through std::atomic::wait). Writers store, then notify.
#pragma once

#include <atomic>
#include <chrono>

namespace gknn::detail {

/// How long a waiting thread spins before it sleeps: the regions of one call follow each other closely, but idle
/// threads must not hold cores while the device computes (OpenMP's idle threads spin for milliseconds: with a
/// team of 16 kept alive on the H100's 16 cores, Garcia's search went from 2.9 to 12 ms of wall time).
constexpr auto kSpin = std::chrono::microseconds(50);

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Spins until `value` differs from `old` or kSpin has passed, then sleeps until it does; returns the new value.
template <class T>
T wait_change(const std::atomic<T>& value, T old) {
  T now = value.load(std::memory_order_acquire);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1; now == old; ++i) {
    relax();
    now = value.load(std::memory_order_acquire);
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
  }
  while (now == old) {
    value.wait(old, std::memory_order_acquire);
    now = value.load(std::memory_order_acquire);
  }
  return now;
}

/// Waits until done(value) holds (the writer notifies at least when it makes it hold); returns that value.
template <class T, class Done>
T wait_until(const std::atomic<T>& value, Done done) {
  T now = value.load(std::memory_order_acquire);
  while (!done(now)) now = wait_change(value, now);
  return now;
}

}  // namespace gknn::detail
