// `tpusim models [--json|--markdown]`: every model preset of the family registry (models/families.h), with its family,
// parameter count, shape and whether tpusim can simulate it yet.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/commands.h"
#include "config/suggest.h"
#include "models/families.h"

namespace tpusim::app {
namespace {

nlohmann::json presets_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : models::model_presets()) {
    nlohmann::json o = {{"name", p.name},
                        {"family", models::family_name(p.family)},
                        {"parameters", models::model_parameters(p)},
                        {"parameters_class", p.counted_class},
                        {"layers", p.layers},
                        {"hidden", p.hidden},
                        {"heads", p.heads},
                        {"kv_heads", p.kv_heads},
                        {"vocab", p.vocab ? nlohmann::json(p.vocab) : nlohmann::json(nullptr)},
                        {"simulated", models::family_simulated(p.family)}};
    if (p.decoder_layers) o["decoder_layers"] = p.decoder_layers;  // `layers` is the encoder's
    list.push_back(o);
  }
  return list;
}

std::string presets_table() {
  std::string s = fmt::format("{:<30} {:<10} {:>15} {:>7} {:>6} {:>5} {:>7}  {}\n", "name", "family", "parameters",
                              "layers", "hidden", "heads", "vocab", "simulated");
  for (const auto& p : models::model_presets()) {
    const std::string layers = p.decoder_layers ? fmt::format("{}+{}", p.layers, p.decoder_layers) : std::to_string(p.layers);
    s += fmt::format("{:<30} {:<10} {:>15} {:>7} {:>6} {:>5} {:>7}  {}\n", p.name, models::family_name(p.family),
                     models::with_thousands(models::model_parameters(p)), layers, p.hidden, p.heads,
                     p.vocab ? std::to_string(p.vocab) : "-", models::family_simulated(p.family) ? "yes" : "not yet");
  }
  s += "\nparameters: of the Hugging Face class that holds the preset (encoders: the base model with its pooler;\n"
       "language models: the LM class, a tied head counted once); layers a+b: encoder + decoder.\n"
       "simulated families today: " + config::join(models::simulated_family_names()) + "\n";
  return s;
}

}  // namespace

Subcommand add_models_command(CLI::App& cli) {
  auto json = std::make_shared<bool>(false);
  auto markdown = std::make_shared<bool>(false);
  CLI::App* cmd = cli.add_subcommand("models", "List the model presets: family, parameters, shape, simulated or not yet");
  cmd->add_flag("--json", *json, "A JSON list of objects (name, family, parameters, layers, hidden, heads, vocab, simulated)");
  cmd->add_flag("--markdown", *markdown, "The presets table of docs/models.md");
  return {cmd, [json, markdown] {
            if (*json && *markdown) throw input_error("--markdown", "cannot be combined with --json", "", "give one of them");
            if (*json)
              std::cout << presets_json().dump(2) << "\n";
            else if (*markdown)
              std::cout << models::model_presets_markdown();
            else
              std::cout << presets_table();
            return 0;
          }};
}

}  // namespace tpusim::app
