#include "models/optimizers.h"

#include <cmath>

#include "base/config_error.h"
#include "config/suggest.h"
#include "models/losses.h"

namespace tpusim::models {

const NameTable<OptimizerKind>& enum_names(OptimizerKind) {
  static const NameTable<OptimizerKind> t = {{OptimizerKind::kAdamW, "adamw"},
                                             {OptimizerKind::kSgd, "sgd"},
                                             {OptimizerKind::kLamb, "lamb"},
                                             {OptimizerKind::kAdafactor, "adafactor"}};
  return t;
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Appends one optimizer's ops. Scalars broadcast to each parameter's shape inside its fusion.
class Builder {
 public:
  Builder(Graph& g, const OptimizerConfig& cfg) : g_(g), cfg_(cfg), st_(cfg.state_dtype) {}

  OptimizerGraph run(const Gradients& grads) {
    lr_ = scalar_input("optimizer.lr");
    if (cfg_.kind == OptimizerKind::kAdamW || cfg_.kind == OptimizerKind::kAdafactor) {
      if (cfg_.kind == OptimizerKind::kAdafactor) {
        // Adafactor's step count is a Python int in its state: beta2_t = 1 - t^-0.8 and 1 - beta2_t
        // are host scalars of each step (mul_(beta2t).add_(x, alpha=1 - beta2t)).
        beta2t_ = scalar_input("optimizer.beta2t");
        one_minus_beta2t_ = scalar_input("optimizer.one_minus_beta2t");
      } else {
      // torch.optim.AdamW: step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
      step_size_ = scalar_input("optimizer.step_size");
      bc2_sqrt_ = scalar_input("optimizer.bias_correction2_sqrt");
      }
      // Decoupled decay (Adafactor: p.add_(p, alpha=-wd * lr), the same factor) multiplies every decayed parameter by 1 - lr*wd (one scalar, shared).
      if (cfg_.weight_decay > 0)
        decay_factor_ = ew(EwOp::kAdd, ew(EwOp::kMul, lr_, c(-cfg_.weight_decay, st_), "optimizer.decay_factor"),
                           c(1, st_), "optimizer.decay_factor");
    } else if (cfg_.kind == OptimizerKind::kLamb) {
      bc1_ = scalar_input("optimizer.bias_correction1");  // 1 - beta1^t
      bc2_sqrt_ = scalar_input("optimizer.bias_correction2_sqrt");
    }
    std::vector<int> gs = grads.grads;
    if (cfg_.max_grad_norm > 0) gs = clip(gs);
    for (size_t i = 0; i < grads.params.size(); ++i) update(grads.params[i], gs[i]);
    return std::move(out_);
  }

 private:
  int scalar_input(const std::string& name) {
    int s = g_.parameter(name, {}, st_, ParamRole::kInput);
    out_.scalars.push_back(s);
    return s;
  }
  int c(double v, DType t) { return g_.constant(v, t); }
  int ew(EwOp op, int a, int b, const std::string& name) { return g_.ew(op, a, b, name); }
  // a (tensor) op s (scalar tensor), s broadcast to a's shape.
  int with_scalar(EwOp op, int a, int s, const std::string& name) { return g_.ew_bcast(op, a, s, {}, name); }
  int cast(int x, DType t) { return g_.node(x).dtype == t ? x : g_.convert(x, t); }
  int state(const std::string& name, const Dims& shape) {
    out_.state_bytes += uint64_t(num_elements(shape)) * dtype_bytes(st_);
    if (cfg_.first_step) return g_.full(0.0, shape, st_);
    return g_.parameter(name, shape, st_, ParamRole::kOptimizerState);
  }
  int sum_squares(int x, const std::string& name) {
    const Node& n = g_.node(x);
    int flat = g_.reshape(x, {num_elements(n.shape)});
    return reduce_all(g_, ew(EwOp::kMul, flat, flat, name + ".square"));
  }

  // clip_grad_norm_: total = sqrt(sum of squares of every gradient); scale = min(1, max / (total + 1e-6)).
  std::vector<int> clip(const std::vector<int>& gs) {
    int total = -1;
    for (int x : gs) {
      int s = cast(sum_squares(x, "clip_grad_norm"), st_);
      total = total < 0 ? s : ew(EwOp::kAdd, total, s, "clip_grad_norm.sum");
    }
    int norm = ew(EwOp::kAdd, ew(EwOp::kSqrt, total, -1, "clip_grad_norm.norm"), c(1e-6, st_), "clip_grad_norm.eps");
    int coef = ew(EwOp::kDiv, g_.full(cfg_.max_grad_norm, {}, st_), norm, "clip_grad_norm.coef");
    // min(coef, 1) = -max(-coef, -1)
    coef = ew(EwOp::kNeg, ew(EwOp::kMax, ew(EwOp::kNeg, coef, -1, "clip_grad_norm.clamp"), c(-1, st_), "clip_grad_norm.clamp"),
              -1, "clip_grad_norm.clamp");
    std::vector<int> out;
    for (int x : gs) out.push_back(with_scalar(EwOp::kMul, x, cast(coef, g_.node(x).dtype), g_.node(x).name + ".clipped"));
    return out;
  }

  // x [..., r, c] reduced over dimension `dim` and divided by its size: torch's mean(dim).
  int mean(int x, int dim, const std::string& name) {
    const int64_t n = g_.node(x).shape.at(size_t(dim));
    return ew(EwOp::kMul, g_.reduce(x, dim, ReduceOp::kSum), c(1.0 / double(n), g_.node(x).dtype), name);
  }
  // The dims 0..rank-1 of a tensor of `rank`, without `skip`: where a reduced tensor broadcasts back.
  static std::vector<int> dims_without(size_t rank, int skip) {
    std::vector<int> d;
    for (int i = 0; i < int(rank); ++i)
      if (i != skip) d.push_back(i);
    return d;
  }

  // transformers.optimization.Adafactor.step for one parameter (Shazeer & Stern 2018, arXiv:1804.04235,
  // Algorithms 4 and 5; no first moment, no relative step, no parameter scaling): returns the update
  // lr * u / max(1, RMS(u) / clip_threshold) with u the gradient over the square root of the
  // (factored) second moment.
  int adafactor(const Node& pn, int p, int gr, ParamUpdate& u) {
    const std::string& name = pn.name;
    const size_t rank = pn.shape.size();
    // state["RMS"] = _rms(p): computed every step though unused without scale_parameter; a live
    // tensor, so torch_xla's mark_step materializes it (a graph output).
    const int64_t numel = num_elements(pn.shape);
    u.rms = ew(EwOp::kMul, ew(EwOp::kSqrt, sum_squares(cast(p, st_), name + ".rms"), -1, name + ".rms"),
               c(1.0 / std::sqrt(double(numel)), st_), name + ".rms");
    g_.mark_output(u.rms);
    // update = g^2 + eps[0]
    int sq = ew(EwOp::kAdd, ew(EwOp::kMul, gr, gr, name + ".grad_sq"), c(cfg_.adafactor_eps, st_), name + ".grad_sq");
    auto ema = [&](int v, int x, const std::string& n) {  // v * beta2t + x * (1 - beta2t)
      return ew(EwOp::kAdd, with_scalar(EwOp::kMul, v, beta2t_, n), with_scalar(EwOp::kMul, x, one_minus_beta2t_, n), n);
    };
    int upd = -1;
    if (rank >= 2) {
      // Factored: a row vector (mean over the last dim) and a column vector (mean over the
      // second-to-last); _approx_sq_grad: rsqrt(row / mean(row)) x rsqrt(col), outer product.
      const int last = int(rank) - 1, second = int(rank) - 2;
      Dims row_shape(pn.shape.begin(), pn.shape.end() - 1), col_shape = pn.shape;
      col_shape.erase(col_shape.begin() + second);
      int row = state(name + ".exp_avg_sq_row", row_shape), col = state(name + ".exp_avg_sq_col", col_shape);
      int nrow = ema(row, mean(sq, last, name + ".row_mean"), name + ".exp_avg_sq_row");
      int ncol = ema(col, mean(sq, second, name + ".col_mean"), name + ".exp_avg_sq_col");
      u.state = {row, col};
      u.updated_state = {nrow, ncol};
      // row / row.mean(dim=-1, keepdim=True): the mean broadcast back over row's last dim.
      int rmean = mean(nrow, second, name + ".row_factor");
      int r = ew(EwOp::kRsqrt, g_.ew_bcast(EwOp::kDiv, nrow, rmean, dims_without(rank - 1, second), name + ".row_factor"), -1,
                 name + ".row_factor");
      int cf = ew(EwOp::kRsqrt, ncol, -1, name + ".col_factor");
      upd = g_.ew_bcast(EwOp::kMul, gr, r, dims_without(rank, last), name + ".approx_sq_grad");
      upd = g_.ew_bcast(EwOp::kMul, upd, cf, dims_without(rank, second), name + ".approx_sq_grad");
    } else {
      int v = state(name + ".exp_avg_sq", pn.shape);
      int nv = ema(v, sq, name + ".exp_avg_sq");
      u.state = {v};
      u.updated_state = {nv};
      upd = ew(EwOp::kMul, ew(EwOp::kRsqrt, nv, -1, name + ".rsqrt"), gr, name + ".update");
    }
    // update /= max(RMS(update) / clip_threshold, 1); update *= lr
    int urms = ew(EwOp::kMul, ew(EwOp::kSqrt, sum_squares(upd, name + ".update_rms"), -1, name + ".update_rms"),
                  c(1.0 / (std::sqrt(double(numel)) * cfg_.clip_threshold), st_), name + ".update_rms");
    int clip = ew(EwOp::kMax, urms, c(1, st_), name + ".clip");
    upd = with_scalar(EwOp::kDiv, upd, clip, name + ".clip");
    return with_scalar(EwOp::kMul, upd, lr_, name + ".step");
  }

  void update(int p, int grad) {
    const Node pn = g_.node(p);
    const std::string& name = pn.name;
    const bool decay = cfg_.weight_decay > 0 &&
                       !(cfg_.no_decay_for_bias_and_norm && (ends_with(name, ".bias") || name.find("LayerNorm.") != std::string::npos));
    ParamUpdate u;
    u.param = p;
    u.grad = grad;
    int gr = cast(grad, st_);
    int delta = -1;  // what is subtracted from the parameter (state dtype)
    if (cfg_.kind == OptimizerKind::kSgd) {
      // torch.optim.SGD: d = g + wd*p; buf = mu*buf + d; d = nesterov ? d + mu*buf : buf; p -= lr*d.
      int d = gr;
      if (decay) d = ew(EwOp::kAdd, d, ew(EwOp::kMul, cast(p, st_), c(cfg_.weight_decay, st_), name + ".decay"), name + ".decay");
      if (cfg_.momentum > 0) {
        int buf = state(name + ".momentum_buffer", pn.shape);
        int nb = ew(EwOp::kAdd, ew(EwOp::kMul, buf, c(cfg_.momentum, st_), name + ".momentum"), d, name + ".momentum");
        u.state = {buf};
        u.updated_state = {nb};
        d = cfg_.nesterov ? ew(EwOp::kAdd, d, ew(EwOp::kMul, nb, c(cfg_.momentum, st_), name + ".nesterov"), name + ".nesterov")
                          : nb;
      }
      delta = with_scalar(EwOp::kMul, d, lr_, name + ".step");
    } else if (cfg_.kind == OptimizerKind::kAdafactor) {
      delta = adafactor(pn, p, gr, u);
    } else {
      // exp_avg = b1*m + (1-b1)*g; exp_avg_sq = b2*v + (1-b2)*g^2.
      int m = state(name + ".exp_avg", pn.shape);
      int v = state(name + ".exp_avg_sq", pn.shape);
      int nm = ew(EwOp::kAdd, ew(EwOp::kMul, m, c(cfg_.beta1, st_), name + ".exp_avg"),
                  ew(EwOp::kMul, gr, c(1 - cfg_.beta1, st_), name + ".exp_avg"), name + ".exp_avg");
      int g2 = ew(EwOp::kMul, ew(EwOp::kMul, gr, gr, name + ".grad_sq"), c(1 - cfg_.beta2, st_), name + ".exp_avg_sq");
      int nv = ew(EwOp::kAdd, ew(EwOp::kMul, v, c(cfg_.beta2, st_), name + ".exp_avg_sq"), g2, name + ".exp_avg_sq");
      u.state = {m, v};
      u.updated_state = {nm, nv};
      // denom = sqrt(v) / bc2_sqrt + eps
      int denom = ew(EwOp::kAdd, with_scalar(EwOp::kDiv, ew(EwOp::kSqrt, nv, -1, name + ".denom"), bc2_sqrt_, name + ".denom"),
                     c(cfg_.eps, st_), name + ".denom");
      if (cfg_.kind == OptimizerKind::kAdamW) {
        // p = p*(1 - lr*wd) - step_size * m / denom
        delta = with_scalar(EwOp::kMul, ew(EwOp::kDiv, nm, denom, name + ".adam"), step_size_, name + ".step");
      } else {
        // LAMB (You et al., 2020): r = m_hat/denom + wd*p; p -= lr * trust * r with
        // trust = ||p|| / ||r|| per tensor (1 if either norm is 0).
        int m_hat = with_scalar(EwOp::kDiv, nm, bc1_, name + ".m_hat");
        int r = ew(EwOp::kDiv, m_hat, denom, name + ".lamb");
        int pw = cast(p, st_);
        if (decay) r = ew(EwOp::kAdd, r, ew(EwOp::kMul, pw, c(cfg_.weight_decay, st_), name + ".decay"), name + ".decay");
        int pn2 = ew(EwOp::kSqrt, sum_squares(pw, name + ".weight_norm"), -1, name + ".weight_norm");
        int rn2 = ew(EwOp::kSqrt, sum_squares(r, name + ".update_norm"), -1, name + ".update_norm");
        int ok = ew(EwOp::kMul, ew(EwOp::kCmpGt, pn2, c(0, st_), name + ".trust"), ew(EwOp::kCmpGt, rn2, c(0, st_), name + ".trust"),
                    name + ".trust");
        // trust = ok * (pn/rn) + (1 - ok)
        int one_minus_ok = ew(EwOp::kAdd, ew(EwOp::kNeg, ok, -1, name + ".trust"), c(1, st_), name + ".trust");
        int trust = ew(EwOp::kAdd, ew(EwOp::kMul, ok, ew(EwOp::kDiv, pn2, rn2, name + ".trust"), name + ".trust"), one_minus_ok,
                       name + ".trust_ratio");
        delta = with_scalar(EwOp::kMul, r, ew(EwOp::kMul, trust, lr_, name + ".trust_lr"), name + ".step");
      }
    }
    int np = p;
    if (decay && (cfg_.kind == OptimizerKind::kAdamW || cfg_.kind == OptimizerKind::kAdafactor)) {
      np = with_scalar(EwOp::kMul, p, cast(decay_factor_, pn.dtype), name + ".decay");
    }
    np = ew(EwOp::kSub, np, cast(delta, pn.dtype), name + ".updated");
    u.updated = np;
    g_.mark_output(np);
    out_.donated.push_back({p, np});
    for (size_t i = 0; i < u.state.size(); ++i) {
      g_.mark_output(u.updated_state[i]);
      if (!cfg_.first_step) out_.donated.push_back({u.state[i], u.updated_state[i]});
    }
    out_.updates.push_back(std::move(u));
  }

  Graph& g_;
  const OptimizerConfig& cfg_;
  const DType st_;
  int lr_ = -1, step_size_ = -1, bc1_ = -1, bc2_sqrt_ = -1, decay_factor_ = -1, beta2t_ = -1, one_minus_beta2t_ = -1;
  OptimizerGraph out_;
};

}  // namespace

OptimizerKind optimizer_from_name(const std::string& name) {
  if (auto k = find_value(enum_names(OptimizerKind{}), name)) return *k;
  const std::vector<std::string> names = names_of(enum_names(OptimizerKind{}));
  const auto near = config::closest(name, names);
  throw ConfigError({"", "optimizer", 0, name, "is not a known optimizer (known: " + config::join(names) + ")",
                     near ? "did you mean '" + *near + "'?" : ""});
}

const char* optimizer_name(OptimizerKind k) { return enum_name(k); }

OptimizerGraph append_optimizer(Graph& g, const Gradients& grads, const OptimizerConfig& cfg) {
  for (int p : grads.params)
    if (g.node(p).role != ParamRole::kTrainable)
      throw std::invalid_argument("optimizer: '" + g.node(p).name + "' is not a trainable parameter");
  return Builder(g, cfg).run(grads);
}

}  // namespace tpusim::models
