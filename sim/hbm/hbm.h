// HBM: a chip's high-bandwidth memory, the target of its cores' DMA sockets (protocol in
// sim/hbm/hbm_protocol.h). Variants ("simple", ...) derive from Hbm and are chosen by name through
// make_hbm(); an unknown name is a ConfigError listing the known ones (sim/hbm/hbm_impls.h).
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "sim/base/sc_support.h"
#include "sim/hbm/hbm_impls.h"
#include "sim/hbm/hbm_protocol.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim {

class Hbm : public sc_core::sc_module {
 public:
  // Bound by every core's DMA, then by every core's transfer unit, each in core order: the socket
  // index modulo the chip's cores is the core index.
  tlm_utils::multi_passthrough_target_socket<Hbm> target;

  explicit Hbm(sc_core::sc_module_name name) : sc_module(name), target("target") {
    target.register_b_transport(this, &Hbm::b_transport);
  }

  virtual void configure(const ChipParams& chip, const ResolvedHw& r) = 0;
  virtual void begin_run(const RunContext* run) = 0;
  // `chip_cycles`: the chip's cycles in this run (its slowest core), for derived stats.
  virtual void end_run(uint64_t chip_cycles) = 0;
  // Adds this block's stat groups ({"slice.chip0.hbm": ..., "slice.chip0.hbm.ch3": ...}).
  virtual void dump_stats(nlohmann::json& out) const = 0;

 protected:
  virtual void serve(int core, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) = 0;

 private:
  void b_transport(int core, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) { serve(core, trans, delay); }
};

// Builds the variant `impl` (ConfigError if unknown).
std::unique_ptr<Hbm> make_hbm(const std::string& impl, sc_core::sc_module_name name);

}  // namespace tpusim
