// profile.h: the decode step's profile (ar_engine_profile), kept by the
// engine (engine.cpp), the decoder layer (layer.cpp) and the hand-written
// step (decode.cpp).
#pragma once

#include <chrono>
#include <cstdint>

namespace ar {

// StepProfile accumulates wall time (seconds) of decode steps by phase:
// products (every weight matrix, lm_head included), attention (RoPE, the
// cache write, scores, softmax and the weighted sum of values), sampling
// (choosing the tokens and their log-probabilities) and other (embedding,
// norms, activations, residuals, bookkeeping).
struct StepProfile {
  double products = 0, attention = 0, sampling = 0, other = 0;
  int64_t steps = 0;
};

// Lap adds the time since the previous lap (or its making) to one of a
// profile's phases: none when the profile or the phase is null.
struct Lap {
  using Clock = std::chrono::steady_clock;
  StepProfile *p;
  Clock::time_point t = Clock::now();
  void operator()(double StepProfile::*phase) {
    auto n = Clock::now();
    if (p != nullptr && phase != nullptr) p->*phase += std::chrono::duration<double>(n - t).count();
    t = n;
  }
};

}  // namespace ar
