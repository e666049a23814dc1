#include "sim/ici/packet_server.h"

#include <algorithm>
#include <cmath>

#include "sim/ici/ici_timing.h"

namespace tpusim {

PacketServer::PacketServer(std::string name) : group_(std::move(name)), track_(TraceNames::of(group_.name())) {
  stats_.declare(group_);
}

void PacketServer::configure(double bytes_per_cycle, uint64_t latency_cycles) {
  rate_ = bytes_per_cycle;
  latency_ = double(latency_cycles);
}

void PacketServer::begin_run(const RunContext* run) {
  run_ = run;
  period_start_ = 0;
  period_bytes_ = 0;
  span_open_ = false;
  stats_.reset(rate_);
}

void PacketServer::pass(Train& t) {
  double first_start = 0, end = 0;
  for (uint32_t p = 0; p < t.packets; ++p) {
    const double free = period_start_ + double(period_bytes_) / rate_;
    double start = free;
    if (t.head[p] > free + kCycleEps) {  // idle until the packet arrives: a new busy period
      start = t.head[p];
      period_start_ = start;
      period_bytes_ = 0;
    }
    period_bytes_ += t.packet_size(p);
    end = period_start_ + double(period_bytes_) / rate_;
    if (t.tail[p] > end + kCycleEps) {  // paced by a slower upstream stage: busy until the tail
      end = t.tail[p];
      period_start_ = end;
      period_bytes_ = 0;
    }
    if (p == 0) first_start = start;
    t.head[p] = start + latency_;
    t.tail[p] = end + latency_;
  }
  if (t.stage++ == 0) t.injected = end;
  stats_.bytes += t.bytes;
  stats_.packets += t.packets;

  if (run_->trace) {
    if (span_open_ && span_flow_ == t.flow && first_start <= span_end_ + kCycleEps) {
      span_end_ = end;
      span_bytes_ += t.bytes;
    } else {
      flush();
      span_open_ = true;
      span_flow_ = t.flow;
      span_start_ = first_start;
      span_end_ = end;
      span_bytes_ = t.bytes;
      span_label_ = t.label;
    }
  }
}

// Span ends are rounded to the nearest cycle, so back-to-back spans never overlap on the track.
void PacketServer::flush() {
  if (!span_open_) return;
  span_open_ = false;
  const uint64_t start = uint64_t(std::llround(span_start_));
  const uint64_t stop = std::max<uint64_t>(uint64_t(std::llround(span_end_)), start);
  run_->trace->complete({track_.process, track_.track, span_label_, start, stop - start, run_->clock_mhz, span_bytes_});
}

void PacketServer::end_run(uint64_t run_cycles) {
  stats_.run_cycles = run_cycles;
  if (run_ && run_->trace) flush();
}

}  // namespace tpusim
