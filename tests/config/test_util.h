// Helpers for asserting on ConfigError.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "base/config_error.h"

namespace tpusim::testing {

// Runs `f`, which must throw ConfigError; returns its info (and the message in `what`).
template <class F>
ConfigErrorInfo config_error_of(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const ConfigError& e) {
    if (what) *what = e.what();
    return e.info();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return {};
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace tpusim::testing
