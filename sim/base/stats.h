// Stats owned by blocks: plain counters on the hot path, declared with unit and description,
// derived figures computed by formula at dump time. Dumped as one JSON tree keyed by the block's
// hierarchical name (e.g. "slice.chip0.core0.mxu1").
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

class StatGroup {
 public:
  explicit StatGroup(std::string name) : name_(std::move(name)) {}

  // Registers a counter the block increments directly (the block owns the storage).
  void counter(const std::string& key, const uint64_t* value, std::string unit, std::string desc) {
    entries_.push_back({key, std::move(unit), std::move(desc), [value] { return double(*value); }});
  }
  // Registers a figure derived at dump time (utilization, GB/s, ...).
  void derived(const std::string& key, std::function<double()> f, std::string unit, std::string desc) {
    entries_.push_back({key, std::move(unit), std::move(desc), std::move(f)});
  }

  const std::string& name() const { return name_; }

  // {"busy_cycles": {"value": 123, "unit": "cycles", "desc": "..."}, ...}
  nlohmann::json dump() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : entries_) {
      double v = e.value();
      nlohmann::json jv = (v == double(uint64_t(v)) && v >= 0) ? nlohmann::json(uint64_t(v)) : nlohmann::json(v);
      j[e.key] = {{"value", jv}, {"unit", e.unit}, {"desc", e.desc}};
    }
    return j;
  }

 private:
  struct Entry {
    std::string key, unit, desc;
    std::function<double()> value;
  };
  std::string name_;
  std::vector<Entry> entries_;
};

}  // namespace tpusim
