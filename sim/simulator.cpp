#include "sim/simulator.h"

#include <stdexcept>
#include <string>

namespace fabtwin {

ComponentId Simulator::add(std::unique_ptr<Component> component) {
  if (components_.size() >= kMaxComponents) throw std::length_error("too many components");
  const auto id = static_cast<ComponentId>(components_.size());
  component->sim_ = this;
  component->id_ = id;
  component->rng_ = Rng(seed_, id);
  components_.push_back(std::move(component));
  return id;
}

RunCounters Simulator::run(Time end, const Progress& progress) {
  RunCounters counters;
  constexpr uint64_t kProgressEvery = 1 << 18;
  while (!queue_.empty() && (foreground_pending_ > 0 || work_held_ > 0)) {
    if (queue_.top().time > end) {
      counters.reached_end = true;
      break;
    }
    const Event e = queue_.pop();
    if (e.time < now_) {
      throw std::logic_error("time went back: event at " + std::to_string(e.time.ps) +
                             " ps after " + std::to_string(now_.ps) + " ps");
    }
    now_ = e.time;
    if (kind_handler(e.kind) < kBackgroundHandler) --foreground_pending_;
    Component& c = *components_[e.target];
    // Rolling hash of (time, key, kind): cheap multiply-rotate, order sensitive.
    const uint64_t h = static_cast<uint64_t>(e.time.ps) * 0x9E3779B97F4A7C15ULL ^
                       e.key * 0xC2B2AE3D27D4EB4FULL ^ e.kind;
    c.fingerprint_ = ((c.fingerprint_ ^ h) * 0xFF51AFD7ED558CCDULL);
    c.fingerprint_ ^= c.fingerprint_ >> 29;
    c.handle(e);
    ++counters.events;
    if (progress && counters.events % kProgressEvery == 0) progress(now_, counters.events);
  }
  counters.last_event_time = now_;
  return counters;
}

uint64_t Simulator::fingerprint() const {
  uint64_t fp = mix64(seed_, components_.size());
  for (const auto& c : components_) fp = mix64(fp, c->fingerprint());
  return fp;
}

}  // namespace fabtwin
