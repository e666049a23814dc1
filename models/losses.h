// Loss functions as graph ops, decomposed the way PyTorch/XLA lowers them.
#pragma once
#include <string>

#include "models/graph.h"

namespace tpusim::models {

// log_softmax over the last dim of a 2-D [rows, cols] x: x - max - log(sum(exp(x - max))). The max
// is stop_gradient (softmax is shift invariant), as in JAX and PyTorch's fused backward.
int log_softmax(Graph& g, int x, const std::string& name);

// Softmax over `dim` with a stop_gradient max shift (exp(x - max) / sum(exp(x - max))).
int stable_softmax(Graph& g, int x, int dim, const std::string& name);

// Softmax cross-entropy of logits [N, C] against s32 labels [N] (one-hot by iota compare), as a
// scalar. With weights [N] (float) it is sum(w * nll) / sum(w) (the masked-LM weighting of BERT's
// pre-training data, also PyTorch's ignore_index); without, the mean over N.
int cross_entropy(Graph& g, int logits, int labels, int weights, const std::string& name);

// Mean squared error of predictions [N] against float targets [N] (num_labels == 1 regression).
int mse_loss(Graph& g, int pred, int target, const std::string& name);

// Sum of all elements of x as a scalar (one reduction per dim, innermost first).
int reduce_all(Graph& g, int x);

}  // namespace tpusim::models
