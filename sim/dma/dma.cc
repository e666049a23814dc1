#include "sim/dma/dma.h"

#include <algorithm>


namespace tpusim {

using sc_core::sc_time;

Dma::Dma(sc_core::sc_module_name name) : sc_module(name), in("in"), done("done"), mem("mem"), cmem("cmem"), group_(this->name()) {
  SC_HAS_PROCESS(Dma);
  tag_ = new HbmRequestTag;
  trans_.set_extension(tag_);  // the payload owns and frees it
  trans_.set_data_ptr(nullptr);
  trans_.set_byte_enable_ptr(nullptr);
  stats_.declare(group_);
  SC_METHOD(step);
}

void Dma::configure(const ChipParams& chip, const ResolvedHw& r) {
  p_ = chip.core.dma;
  fixed_cycles_ = r.dma_fixed_cycles;
  cmem_fixed_cycles_ = r.cmem_dma_fixed_cycles;
  engines_.reset(p_.engines);
  tracks_.clear();
  for (uint32_t e = 0; e < p_.engines; ++e) tracks_.push_back(TraceNames::of(name(), std::to_string(e)));
}

void Dma::begin_run(isa::StreamView stream, const RunContext* run) {
  stream_ = stream;
  run_ = run;
  engines_.reset(p_.engines);
  holding_ = false;
  stats_.reset(p_.engines);
}

// Issue in stream order: the head transfer starts now on the engine DmaEngines picks; when none is
// free now, wake up when it says one is.
void Dma::step() {
  const uint64_t now = sc_core::sc_time_stamp().value();
  for (;;) {
    if (!holding_) {
      if (!stream_ || !in->nb_read(held_)) return next_trigger(in->data_written_event());
      holding_ = true;
    }
    const uint32_t q = DmaEngines::queue_of(stream_[held_]);
    const UnitPool::Pick p = engines_.pick(q, now);
    if (p.start > now) return next_trigger(sc_time::from_value(p.start - now));
    holding_ = false;
    start(held_, q, p);
  }
}

void Dma::start(uint32_t i, uint32_t q, const UnitPool::Pick& p) {
  const isa::Instr& ins = stream_[i];
  const sc_time now = sc_time::from_value(p.start);
  const uint32_t engine = p.unit;
  const bool in_cmem = ins.mem == isa::MemSpace::kCmem;
  uint64_t cycles = in_cmem ? cmem_fixed_cycles_ : fixed_cycles_;
  if (ins.bytes > 0) {
    tag_->bytes = ins.bytes;
    tag_->chunk_bytes = in_cmem ? 0 : p_.chunk_bytes;
    tag_->instr = i;
    tag_->label = ins.label;
    trans_.set_command(ins.op == isa::Op::kDmaLoad ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    const uint32_t len = uint32_t(std::min<uint64_t>(ins.bytes, UINT32_MAX));
    trans_.set_address(0);
    trans_.set_data_length(len);
    trans_.set_streaming_width(len);
    trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time delay = run_->clock.cycles(p_.setup_cycles);  // requests leave after the setup
    (in_cmem ? cmem : mem)->b_transport(trans_, delay);
    const uint64_t last_ps = delay.value();
    cycles = run_->clock.cycles_ceil(last_ps);  // the transfer completes on a cycle boundary
  }
  stats_.transfer(ins, cycles);
  if (run_->trace) {
    run_->trace->complete({tracks_[engine].process, tracks_[engine].track, ins.label, run_->cycle(now), cycles,
                           run_->clock_mhz, ins.bytes});
  }
  engines_.hold(q, p, (now + run_->clock.cycles(cycles)).value());
  done->complete(i, run_->clock.cycles(cycles));
}

}  // namespace tpusim
