// libFuzzer target of the sweep constraint language (sweep/constraint.h): the input is one
// expression over five axis names; when it parses, it is evaluated on a few points (numbers,
// strings, booleans as the sweep expands them). Bad input must be an ExprError (the sweep loader
// turns it into a ConfigError with the constraint's line and column); anything else escaping, a
// crash, a sanitizer report or a timeout is a bug.
//
// Built as a libFuzzer binary with -DTPUSIM_FUZZ=ON (preset "fuzz", clang); otherwise linked with
// fuzz_replay.cc and run by ctest over tests/fuzz/constraint_corpus/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sweep/constraint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim::sweep;
  static const std::vector<std::string> names = {"mxu", "batch", "padding", "torus", "hbm_gbps"};
  static const std::vector<std::vector<ExprValue>> points = {
      {expr_value("128"), expr_value("8"), expr_value("longest"), expr_value("[true, true]"), expr_value("900")},
      {expr_value("0"), expr_value("-1"), expr_value("max_length"), expr_value("true"), expr_value("1e308")},
      {expr_value("0.5"), expr_value("0"), expr_value(""), expr_value("false"), expr_value("nan")},
  };
  try {
    const Constraint c = Constraint::parse(std::string(reinterpret_cast<const char*>(data), size), names);
    for (const auto& p : points) {
      try {
        (void)c.holds(p);
      } catch (const ExprError&) {
        // A type error at this point (a string in arithmetic): reported per point by the loader.
      }
    }
  } catch (const ExprError&) {
  }
  return 0;
}
