// XLA HLO text (as dumped by PyTorch/XLA, JAX and TensorFlow) into the syntax tree of hlo_ast.h, with
// the validation of hlo_validate.h. Accepted syntax and limits: docs/hlo.md.
#pragma once
#include <string>
#include <string_view>

#include "compiler/hlo/hlo_ast.h"

namespace tpusim::hlo {

// Parses and validates one module. `file` names the text in errors. Throws HloError (a ConfigError:
// file, line, column, instruction, what was expected) on any malformed or inconsistent input.
Module parse_hlo_module(std::string_view text, const std::string& file);
// Reads `path` (ConfigError if it cannot be read or exceeds kMaxTextBytes) and parses it.
Module parse_hlo_file(const std::string& path);

}  // namespace tpusim::hlo
