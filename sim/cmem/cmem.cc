#include "sim/cmem/cmem.h"

namespace tpusim {

Cmem::Cmem(sc_core::sc_module_name name)
    : sc_module(name), target("target"), track_(TraceNames::of(this->name())), group_(this->name()) {
  target.register_b_transport(this, &Cmem::b_transport);
  stats_.declare(group_);
}

void Cmem::configure(const ChipParams& chip, const ResolvedHw& r) {
  r_ = r;
  clock_mhz_ = chip.core.clock_mhz;
  peak_gbyte_per_s_ = has_cmem(chip) ? chip.cmem->bandwidth_gbyte_per_s : 0.0;
}

void Cmem::begin_run(const RunContext* run) {
  run_ = run;
  server_.reset();
  stats_.reset(clock_mhz_, peak_gbyte_per_s_);
}

void Cmem::end_run(uint64_t chip_cycles) {
  stats_.run_cycles = chip_cycles;
  stats_.transfers = server_.transfers;
  stats_.bytes = server_.bytes;
  stats_.busy_cycles = server_.busy_cycles;
}

void Cmem::dump_stats(nlohmann::json& out) const {
  if (stats_.used()) out[group_.name()] = group_.dump();
}

void Cmem::b_transport(int, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const uint64_t period = run_->clock.period_ps;
  const uint64_t req = (sc_core::sc_time_stamp().value() + delay.value() - run_->start_ps) / period;
  const auto* tag = trans.get_extension<HbmRequestTag>();
  const uint64_t bytes = tag ? tag->bytes : trans.get_data_length();
  const CmemServer::Service s = server_.serve(r_, req, bytes);
  if (run_->trace)
    run_->trace->complete({track_.process, track_.track, tag ? tag->label : std::string_view("cmem"), s.begin, s.cycles,
                           run_->clock_mhz, bytes});
  delay = sc_core::sc_time::from_value(delay.value() + (s.begin + s.cycles + r_.cmem_latency_cycles - req) * period);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tpusim
