/* Fused recurrent cells: the element-wise part of one LSTM or GRU time step (gate
 * nonlinearities and state update) as one op with one autograd node, forward and backward in a
 * single pass each; the matrix products stay in Linear. nn.LSTM, nn.GRU and their cells
 * (lua/partrain/nn_rnn.lua) run a step as x_proj (x W_ih^T + b_ih, all steps at once), gh
 * (h W_hh^T + b_hh) and one of these. */
#ifndef PT_NN_RNN_H
#define PT_NN_RNN_H

#include "autograd.h"

/* LSTM step, PyTorch's gate order i, f, g, o: with p = x_proj + gh ({..., 4H}) and c ({..., H}),
 * i, f, o = sigmoid(p_i, p_f, p_o), g = tanh(p_g), c' = f c + i g, h' = o tanh(c').
 * out = {..., 2H}: h' then c' in each row (the caller narrows it). x_proj and gh have one shape,
 * c the same leading dims; one float dtype. Gradients to x_proj, gh and c. */
pt_status pt_nn_lstm_cell(pt_ctx *ctx, pt_tensor *x_proj, pt_tensor *gh, pt_tensor *c, pt_tensor **out);

/* GRU step, PyTorch's gate order r, z, n: with x_proj and gh {..., 3H} and h {..., H},
 * r = sigmoid(x_r + gh_r), z = sigmoid(x_z + gh_z), n = tanh(x_n + r gh_n), h' = n + z (h - n).
 * Gradients to x_proj, gh and h. */
pt_status pt_nn_gru_cell(pt_ctx *ctx, pt_tensor *x_proj, pt_tensor *gh, pt_tensor *h, pt_tensor **out);

#endif
