// Errors raised when a workload fails on the simulated hardware (exit code 3), e.g. out of VMEM/HBM.
// Bad *input* is a ConfigError (base/config_error.h, exit code 2).
#pragma once
#include <stdexcept>
#include <string>

namespace tpusim {

class SimError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tpusim
