// Helpers of the HLO parser tests: the modules in tests/hlo/data, and the HloError of bad text.
#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_parser.h"

namespace tpusim::hlo::testing {

inline Module data_module(const std::string& name) { return parse_hlo_file(std::string(TPUSIM_HLO_DATA) + "/" + name); }

struct ErrorAt {
  int line = 0, column = 0;
  std::string instruction, message;
};

// Parses `text` (named "t.hlo"), which must fail with HloError; returns where and what.
inline ErrorAt error_of(const std::string& text) {
  try {
    parse_hlo_module(text, "t.hlo");
  } catch (const HloError& e) {
    return {e.line(), e.column(), e.instruction(), e.what()};
  }
  ADD_FAILURE() << "expected an HloError for:\n" << text;
  return {};
}

inline const Instruction& inst(const Module& m, const std::string& comp, const std::string& name) {
  const Computation* c = m.find(comp);
  if (!c) throw std::runtime_error("no computation " + comp);
  const Instruction* i = c->find(name);
  if (!i) throw std::runtime_error("no instruction " + name);
  return *i;
}

}  // namespace tpusim::hlo::testing
