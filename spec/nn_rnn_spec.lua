-- nn_rnn.lua: RNN/LSTM/GRU and their cells, MultiheadAttention, scaled_dot_product_attention,
-- TransformerEncoderLayer/TransformerEncoder against PyTorch.
--
-- The expected numbers (E.*) and state_dict keys (K.*) at the end of this file were computed
-- once with PyTorch 1.13 in float64 by the script below; every parameter (in state_dict order,
-- k = 1, 2, ...) and input holds s * sin(0.7 i + 1.3 k + 0.1) for its flat index i = 0, 1, ...
-- (vals() below). The layers here run in float32 and are compared with a tolerance.
--[==[
# Reference values for spec/nn_rnn_spec.lua (PyTorch 1.13, float64).
import math, torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)

def vals(shape, k, s=0.5):
    n = 1
    for d in shape: n *= d
    return torch.tensor([s * math.sin(0.7 * i + 1.3 * k + 0.1) for i in range(n)]).reshape(shape)

def fill(m):
    with torch.no_grad():
        for k, (name, t) in enumerate(m.state_dict().items(), 1):
            t.copy_(vals(tuple(t.shape), k))
    m.eval()
    return m

def X(shape, k=101): return vals(shape, k, 1.0)

out = []
def emit(name, **tensors):
    parts = []
    for key, t in tensors.items():
        t = t.detach().contiguous()
        parts.append("%s = {{%s}, {%s}}" % (key, ",".join(str(d) for d in t.shape),
            ", ".join("%.10g" % v for v in t.reshape(-1).tolist())))
    out.append("E.%s = {%s}" % (name, ",\n  ".join(parts)))

def keys(name, m):
    out.append("K.%s = {%s}" % (name, ", ".join('{"%s", {%s}}' % (k, ",".join(str(d) for d in v.shape))
        for k, v in m.state_dict().items())))

# recurrent layers
m = fill(nn.RNN(3, 4)); o, h = m(X((5, 2, 3))); emit("rnn_tanh", out=o, h=h)
m = fill(nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True))
o, h = m(X((5, 2, 3)), vals((4, 2, 4), 102)); emit("rnn_relu_2l_bi_h0", out=o, h=h)
m = fill(nn.RNN(3, 4, batch_first=True)); o, h = m(X((2, 5, 3))); emit("rnn_batch_first", out=o, h=h)
m = fill(nn.RNN(3, 4, num_layers=2)); o, h = m(X((5, 3)), vals((2, 4), 102)); emit("rnn_unbatched", out=o, h=h)
m = fill(nn.LSTM(3, 4)); o, (h, c) = m(X((5, 2, 3)), (vals((1, 2, 4), 102), vals((1, 2, 4), 103)))
emit("lstm_basic", out=o, h=h, c=c)
m = fill(nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)); o, (h, c) = m(X((2, 5, 3)))
emit("lstm_2l_bi_bf", out=o, h=h, c=c)
m = fill(nn.LSTM(3, 4, bidirectional=True)); o, (h, c) = m(X((5, 3)), (vals((2, 4), 102), vals((2, 4), 103)))
emit("lstm_unbatched", out=o, h=h, c=c)
m = fill(nn.LSTM(3, 4, num_layers=2, proj_size=2)); o, (h, c) = m(X((5, 2, 3)))
emit("lstm_proj", out=o, h=h, c=c); keys("lstm_proj", m)
m = fill(nn.GRU(3, 4)); o, h = m(X((5, 2, 3)), vals((1, 2, 4), 102)); emit("gru_basic", out=o, h=h)
m = fill(nn.GRU(3, 4, num_layers=2, bidirectional=True)); o, h = m(X((5, 2, 3))); emit("gru_2l_bi", out=o, h=h)
keys("gru_2l_bi", m)
m = fill(nn.GRU(3, 4, bias=False, batch_first=True)); o, h = m(X((5, 3))); emit("gru_nobias_unbatched", out=o, h=h)
keys("gru_nobias", m)
keys("rnn", nn.RNN(3, 4))
# cells
m = fill(nn.RNNCell(3, 4)); emit("rnncell_tanh", h=m(X((2, 3)), vals((2, 4), 102))); keys("rnncell", m)
m = fill(nn.RNNCell(3, 4, nonlinearity="relu")); emit("rnncell_relu_unbatched", h=m(X((3,))))
m = fill(nn.LSTMCell(3, 4)); h, c = m(X((2, 3)), (vals((2, 4), 102), vals((2, 4), 103)))
emit("lstmcell", h=h, c=c); keys("lstmcell", m)
h, c = m(X((3,))); emit("lstmcell_unbatched", h=h, c=c)
m = fill(nn.GRUCell(3, 4)); emit("grucell", h=m(X((2, 3)), vals((2, 4), 102))); keys("grucell", m)
m = fill(nn.GRUCell(3, 4, bias=False)); emit("grucell_nobias_unbatched", h=m(X((3,)), vals((4,), 102)))
# attention: E=4, 2 heads, L=3, S=5, N=2
causal_masked = torch.tensor([[False, True, True], [False, False, True], [False, False, False]])
kpm = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
m = fill(nn.MultiheadAttention(4, 2)); q = X((3, 2, 4), 111)
o, w = m(q, q, q); emit("mha_self", out=o, w=w); keys("mha", m)
o, w = m(q, X((5, 2, 4), 112), X((5, 2, 4), 113), key_padding_mask=kpm, average_attn_weights=False)
emit("mha_cross_kpm", out=o, w=w)
o, w = m(q, q, q, attn_mask=causal_masked); emit("mha_attn_mask_bool", out=o, w=w)
fmask = vals((4, 3, 5), 120, 2.0)
m = fill(nn.MultiheadAttention(4, 2, batch_first=True))
o, w = m(X((2, 3, 4), 111), X((2, 5, 4), 112), X((2, 5, 4), 113), attn_mask=fmask, key_padding_mask=kpm)
emit("mha_float_masks_bf", out=o, w=w)
m = fill(nn.MultiheadAttention(4, 2, kdim=3, vdim=5, bias=False))
o, w = m(X((3, 2, 4), 111), X((5, 2, 3), 112), X((5, 2, 5), 113)); emit("mha_kdim_vdim", out=o, w=w)
keys("mha_kdim_vdim", m)
m = fill(nn.MultiheadAttention(4, 2))
o, w = m(X((3, 4), 111), X((5, 4), 112), X((5, 4), 113), key_padding_mask=kpm[0]); emit("mha_unbatched", out=o, w=w)
m = fill(nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True))
amask = torch.zeros(3, 5, dtype=torch.bool); amask[0, 4] = True; amask[2, 0] = True
o, w = m(X((3, 2, 4), 111), X((5, 2, 4), 112), X((5, 2, 4), 113), key_padding_mask=kpm, attn_mask=amask)
emit("mha_bias_kv_zero_attn", out=o, w=w); keys("mha_bias_kv", m)

def sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    L, S = q.size(-2), k.size(-2)
    scale = scale if scale is not None else 1 / math.sqrt(q.size(-1))
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
    return torch.softmax(s, -1) @ v
emit("sdpa_basic", out=sdpa(X((2, 3, 4), 131), X((2, 5, 4), 132), X((2, 5, 6), 133)))
allowed = torch.tensor([[True, True, False, True, False], [True, False, True, True, True], [False, True, True, True, True]])
emit("sdpa_bool", out=sdpa(X((2, 2, 3, 4), 131), X((2, 2, 5, 4), 132), X((2, 2, 5, 6), 133), attn_mask=allowed))
emit("sdpa_float_scale", out=sdpa(X((2, 3, 4), 131), X((2, 5, 4), 132), X((2, 5, 6), 133),
     attn_mask=vals((2, 3, 5), 134, 2.0), scale=0.3))
emit("sdpa_causal", out=sdpa(X((2, 3, 4), 131), X((2, 5, 4), 132), X((2, 5, 6), 133), is_causal=True))
# transformer
m = fill(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8)); keys("tel", m)
emit("tel_relu", out=m(X((3, 2, 4), 141)))
emit("tel_src_mask", out=m(X((3, 2, 4), 141), src_mask=causal_masked))
m = fill(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, activation="gelu", norm_first=True, batch_first=True))
emit("tel_gelu_normfirst_bf_kpm", out=m(X((2, 3, 4), 141), src_key_padding_mask=kpm[:, :3] | torch.tensor([[False, True, False], [False, False, False]])))
layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8)
m = fill(nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4), enable_nested_tensor=False)); keys("enc", m)
emit("enc", out=m(X((3, 2, 4), 141)))
print("\n".join(out))
]==]
local pt = require "partrain"
local nn = pt.nn
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"

local E, K = {}, {}

local vals, X, fill, close = support.sin_values, support.sin_input, support.fill_params,
  support.assert_fixture

local function keys_of(m)
  local out = {}
  for name, t in pairs(m:state_dict()) do out[#out + 1] = {name, t:size()} end
  return out
end

-- the message of the error fn raises, without its position
local function err(fn)
  local ok, e = pcall(fn)
  assert.is_false(ok, "expected an error")
  return (tostring(e):gsub("^[^:]*:%d+: ", ""))
end

-- gradcheck through a module: its parameters (float64) are inputs after the given ones
local function module_gradcheck(m, f, inputs, opts)
  m:double()
  local slots = {}
  for _, mod in ipairs(m:modules()) do
    for _, n in ipairs(mod._param_names) do slots[#slots + 1] = {mod, n} end
  end
  local all = {}
  for i, x in ipairs(inputs) do all[i] = x end
  local n_in = #inputs
  for i, s in ipairs(slots) do all[n_in + i] = s[1]._parameters[s[2]]:detach() end
  return gradcheck(function(...)
    local args = {...}
    for i, s in ipairs(slots) do s[1]._parameters[s[2]] = args[n_in + i] end
    return f(table.unpack(args, 1, n_in))
  end, all, opts)
end

local function flat_cat(list)
  local parts = {}
  for i, t in ipairs(list) do parts[i] = t:reshape(-1) end
  return pt.cat(parts, 1)
end

local F64 = "float64"
local causal_masked = pt.tensor({{false, true, true}, {false, false, true}, {false, false, false}})
local kpm = pt.tensor({{false, false, false, true, true}, {false, false, false, false, false}})

describe("nn.RNN, nn.LSTM, nn.GRU", function()
  it("RNN (tanh) matches PyTorch", function()
    local o, h = fill(nn.RNN(3, 4))(X {5, 2, 3})
    close(o, E.rnn_tanh.out); close(h, E.rnn_tanh.h)
  end)

  it("RNN relu, 2 layers, bidirectional, with h0", function()
    local m = fill(nn.RNN(3, 4, {num_layers = 2, nonlinearity = "relu", bidirectional = true}))
    local o, h = m(X {5, 2, 3}, vals({4, 2, 4}, 102))
    close(o, E.rnn_relu_2l_bi_h0.out); close(h, E.rnn_relu_2l_bi_h0.h)
  end)

  it("RNN batch_first and unbatched input", function()
    local o, h = fill(nn.RNN(3, 4, {batch_first = true}))(X {2, 5, 3})
    close(o, E.rnn_batch_first.out); close(h, E.rnn_batch_first.h)
    o, h = fill(nn.RNN(3, 4, {num_layers = 2}))(X {5, 3}, vals({2, 4}, 102))
    close(o, E.rnn_unbatched.out); close(h, E.rnn_unbatched.h)
  end)

  it("LSTM with {h0, c0} (PyTorch's tuple) matches PyTorch", function()
    local o, st = fill(nn.LSTM(3, 4))(X {5, 2, 3}, {vals({1, 2, 4}, 102), vals({1, 2, 4}, 103)})
    close(o, E.lstm_basic.out); close(st[1], E.lstm_basic.h); close(st[2], E.lstm_basic.c)
  end)

  it("LSTM 2 layers, bidirectional, batch_first", function()
    local m = fill(nn.LSTM(3, 4, {num_layers = 2, bidirectional = true, batch_first = true}))
    local o, st = m(X {2, 5, 3})
    close(o, E.lstm_2l_bi_bf.out); close(st[1], E.lstm_2l_bi_bf.h); close(st[2], E.lstm_2l_bi_bf.c)
  end)

  it("LSTM unbatched with a state, and proj_size", function()
    local o, st = fill(nn.LSTM(3, 4, {bidirectional = true}))(X {5, 3}, {vals({2, 4}, 102), vals({2, 4}, 103)})
    close(o, E.lstm_unbatched.out); close(st[1], E.lstm_unbatched.h); close(st[2], E.lstm_unbatched.c)
    local m = fill(nn.LSTM(3, 4, {num_layers = 2, proj_size = 2}))
    o, st = m(X {5, 2, 3})
    close(o, E.lstm_proj.out); close(st[1], E.lstm_proj.h); close(st[2], E.lstm_proj.c)
  end)

  it("GRU with h0, 2 layers bidirectional, no bias unbatched", function()
    local o, h = fill(nn.GRU(3, 4))(X {5, 2, 3}, vals({1, 2, 4}, 102))
    close(o, E.gru_basic.out); close(h, E.gru_basic.h)
    o, h = fill(nn.GRU(3, 4, {num_layers = 2, bidirectional = true}))(X {5, 2, 3})
    close(o, E.gru_2l_bi.out); close(h, E.gru_2l_bi.h)
    -- unbatched input is {L,input_size} whatever batch_first says, as in PyTorch
    o, h = fill(nn.GRU(3, 4, {bias = false, batch_first = true}))(X {5, 3})
    close(o, E.gru_nobias_unbatched.out); close(h, E.gru_nobias_unbatched.h)
  end)

  it("run in float64 too (dtype option and :double())", function()
    local m = fill(nn.LSTM(3, 4, {dtype = F64}))
    local o, st = m(X({5, 2, 3}, 101, F64), {vals({1, 2, 4}, 102, 0.5, F64), vals({1, 2, 4}, 103, 0.5, F64)})
    assert.are.equal(F64, o:dtype())
    close(o, E.lstm_basic.out, 1e-9); close(st[2], E.lstm_basic.c, 1e-9)
    local g = fill(nn.GRU(3, 4, {num_layers = 2, bidirectional = true}):double())
    local o2, h2 = g(X({5, 2, 3}, 101, F64))
    close(o2, E.gru_2l_bi.out, 1e-9); close(h2, E.gru_2l_bi.h, 1e-9)
  end)

  it("have PyTorch's state_dict keys and shapes", function()
    assert.are.same(K.rnn, keys_of(nn.RNN(3, 4)))
    assert.are.same(K.lstm_proj, keys_of(nn.LSTM(3, 4, {num_layers = 2, proj_size = 2})))
    assert.are.same(K.gru_2l_bi, keys_of(nn.GRU(3, 4, {num_layers = 2, bidirectional = true})))
    assert.are.same(K.gru_nobias, keys_of(nn.GRU(3, 4, {bias = false})))
  end)

  it("initialise from U(-1/sqrt(hidden), 1/sqrt(hidden))", function()
    pt.manual_seed(1)
    local m = nn.LSTM(10, 16, {num_layers = 2, bidirectional = true})
    for name, p in m:named_parameters() do
      assert.is_true(p:abs():max():item() <= 0.25, name)
      assert.is_true(p:abs():max():item() > 0.2, name) -- drawn, not constant
    end
    assert.is_true(pt.is_tensor(m.weight_hh_l1_reverse) and m.weight_hh_l1_reverse.requires_grad)
  end)

  it("dropout acts between layers in training mode only", function()
    pt.manual_seed(3)
    local m = fill(nn.RNN(3, 4, {num_layers = 2, dropout = 0.5}))
    local ref = fill(nn.RNN(3, 4, {num_layers = 2}))
    local x = X {5, 2, 3}
    local o_eval = m(x)
    assert.is_true(o_eval:equal(ref(x)))
    m:train()
    local o1, o2 = m(x), m(x)
    assert.is_false(o1:equal(o2))
    assert.is_false(o1:equal(o_eval))
    -- one layer: dropout has nothing to act on
    local one = fill(nn.GRU(3, 4, {dropout = 0.9})):train()
    assert.is_true(one(x):equal(fill(nn.GRU(3, 4))(x)))
  end)

  it("backpropagate to every parameter and the initial state", function()
    local m = nn.LSTM(3, 4, {num_layers = 2, bidirectional = true})
    local h0 = pt.zeros(4, 2, 4, {requires_grad = true})
    local c0 = pt.zeros(4, 2, 4, {requires_grad = true})
    local o, st = m(pt.randn(5, 2, 3), {h0, c0})
    local loss = (o * o):sum() + st[1]:sum() + st[2]:sum()
    loss:backward()
    for name, p in m:named_parameters() do
      assert.is_true(p.grad ~= nil and p.grad:abs():sum():item() > 0, name)
    end
    assert.is_true(h0.grad:abs():sum():item() > 0 and c0.grad:abs():sum():item() > 0)
  end)

  it("print their settings as PyTorch", function()
    assert.are.equal("RNN(3, 4)", tostring(nn.RNN(3, 4)))
    assert.are.equal("RNN(3, 4, num_layers=2, nonlinearity='relu', bias=false, batch_first=true, dropout=0.5, bidirectional=true)",
      tostring(nn.RNN(3, 4, {num_layers = 2, nonlinearity = "relu", bias = false, batch_first = true,
        dropout = 0.5, bidirectional = true})))
    assert.are.equal("LSTM(3, 4, proj_size=2)", tostring(nn.LSTM(3, 4, {proj_size = 2})))
    assert.are.equal("GRU(3, 4, bidirectional=true)", tostring(nn.GRU(3, 4, {bidirectional = true})))
  end)

  it("name the shapes in their errors", function()
    local lstm = nn.LSTM(3, 4, {num_layers = 2})
    assert.are.equal("LSTM:forward: input has 6 features, expected input_size 3 (input shape {5,2,6})",
      err(function() return lstm(pt.zeros(5, 2, 6)) end))
    assert.are.equal("LSTM:forward: expected input of 3 dimensions ({L,N,input_size}) or 2 (unbatched {L,input_size}), got shape {3}",
      err(function() return lstm(pt.zeros(3)) end))
    assert.are.equal("LSTM:forward: expected h0 of shape {2,2,4}, got {1,2,4}",
      err(function() return lstm(pt.zeros(5, 2, 3), {pt.zeros(1, 2, 4), pt.zeros(2, 2, 4)}) end))
    assert.are.equal("LSTM:forward: expected c0 of shape {2,4}, got {2,2,4}",
      err(function() return lstm(pt.zeros(5, 3), {pt.zeros(2, 4), pt.zeros(2, 2, 4)}) end))
    assert.are.equal("LSTM:forward: the initial state must be a table {h0, c0} of two tensors (PyTorch's tuple (h0, c0)), got a tensor",
      err(function() return lstm(pt.zeros(5, 2, 3), pt.zeros(2, 2, 4)) end))
    assert.are.equal("GRU:forward: expected hx of shape {2,2,4}, got {1,2,4}",
      err(function() return nn.GRU(3, 4, {bidirectional = true})(pt.zeros(5, 2, 3), pt.zeros(1, 2, 4)) end))
    assert.are.equal("LSTM:forward: input dtype float64 does not match the parameters' float32 (convert with m:double() or m:float(), or t:to(dtype))",
      err(function() return lstm(pt.zeros(5, 2, 3, {dtype = F64})) end))
    assert.are.equal("LSTM:forward: c0 dtype float64 does not match the input's float32",
      err(function() return lstm(pt.zeros(5, 2, 3), {pt.zeros(2, 2, 4), pt.zeros(2, 2, 4, {dtype = F64})}) end))
    assert.are.equal("GRU:forward: the input has no time steps (input shape {2,0,3})",
      err(function() return nn.GRU(3, 4, {batch_first = true})(pt.zeros(2, 0, 3)) end))
    assert.are.equal("RNN:forward: input must be a floating tensor, got dtype int64",
      err(function() return nn.RNN(3, 4)(pt.zeros(5, 2, 3, {dtype = "int64"})) end))
  end)

  it("refuse bad options", function()
    assert.are.equal("LSTM: unknown option 'dropuot'", err(function() return nn.LSTM(3, 4, {dropuot = 0.1}) end))
    assert.are.equal("GRU: unknown option 'nonlinearity'", err(function() return nn.GRU(3, 4, {nonlinearity = "relu"}) end))
    assert.are.equal("RNN: nonlinearity must be 'tanh' or 'relu', got 'sigmoid'",
      err(function() return nn.RNN(3, 4, {nonlinearity = "sigmoid"}) end))
    assert.are.equal("RNN: hidden_size must be a positive integer, got 0", err(function() return nn.RNN(3, 0) end))
    assert.are.equal("RNN: num_layers must be a positive integer, got 1.5",
      err(function() return nn.RNN(3, 4, {num_layers = 1.5}) end))
    assert.are.equal("GRU: dropout must be a number between 0 and 1, got 2",
      err(function() return nn.GRU(3, 4, {dropout = 2}) end))
    assert.are.equal("LSTM: proj_size has to be smaller than hidden_size, got proj_size=4, hidden_size=4",
      err(function() return nn.LSTM(3, 4, {proj_size = 4}) end))
    assert.are.equal("LSTM: bidirectional must be a boolean, got 1",
      err(function() return nn.LSTM(3, 4, {bidirectional = 1}) end))
  end)

  it("pass a finite-difference gradient check (float64)", function()
    local x, h0 = X({3, 2, 2}, 101, F64), vals({4, 2, 3}, 102, 0.5, F64)
    local rnn = nn.RNN(2, 3, {num_layers = 2, bidirectional = true, nonlinearity = "tanh"})
    module_gradcheck(rnn, function(a, h) local o, hn = rnn(a, h); return flat_cat {o, hn} end, {x, h0})
    local lstm = nn.LSTM(2, 3, {num_layers = 2, bidirectional = true, batch_first = true})
    module_gradcheck(lstm, function(a, h, c)
      local o, st = lstm(a, {h, c}); return flat_cat {o, st[1], st[2]}
    end, {X({2, 3, 2}, 101, F64), h0, vals({4, 2, 3}, 103, 0.5, F64)})
    local proj = nn.LSTM(2, 3, {proj_size = 2})
    module_gradcheck(proj, function(a) local o, st = proj(a); return flat_cat {o, st[1], st[2]} end, {x})
    local gru = nn.GRU(2, 3, {bidirectional = true})
    module_gradcheck(gru, function(a, h) local o, hn = gru(a, h); return flat_cat {o, hn} end,
      {X({3, 2}, 101, F64), vals({2, 3}, 102, 0.5, F64)})
  end)
end)

describe("nn.RNNCell, nn.LSTMCell, nn.GRUCell", function()
  it("match PyTorch, batched and unbatched", function()
    close(fill(nn.RNNCell(3, 4))(X {2, 3}, vals({2, 4}, 102)), E.rnncell_tanh.h)
    close(fill(nn.RNNCell(3, 4, {nonlinearity = "relu"}))(X {3}), E.rnncell_relu_unbatched.h)
    local cell = fill(nn.LSTMCell(3, 4))
    local h, c = cell(X {2, 3}, {vals({2, 4}, 102), vals({2, 4}, 103)})
    close(h, E.lstmcell.h); close(c, E.lstmcell.c)
    h, c = cell(X {3})
    close(h, E.lstmcell_unbatched.h); close(c, E.lstmcell_unbatched.c)
    close(fill(nn.GRUCell(3, 4))(X {2, 3}, vals({2, 4}, 102)), E.grucell.h)
    close(fill(nn.GRUCell(3, 4, {bias = false}))(X {3}, vals({4}, 102)), E.grucell_nobias_unbatched.h)
  end)

  it("have PyTorch's state_dict keys, printing and errors", function()
    assert.are.same(K.rnncell, keys_of(nn.RNNCell(3, 4)))
    assert.are.same(K.lstmcell, keys_of(nn.LSTMCell(3, 4)))
    assert.are.same(K.grucell, keys_of(nn.GRUCell(3, 4)))
    assert.are.equal("RNNCell(3, 4, bias=false, nonlinearity='relu')",
      tostring(nn.RNNCell(3, 4, {bias = false, nonlinearity = "relu"})))
    assert.are.equal("GRUCell(3, 4)", tostring(nn.GRUCell(3, 4)))
    assert.are.equal("GRUCell:forward: input has 2 features, expected input_size 3 (input shape {5,2})",
      err(function() return nn.GRUCell(3, 4)(pt.zeros(5, 2)) end))
    assert.are.equal("RNNCell:forward: hx has shape {4}, expected {5,4}",
      err(function() return nn.RNNCell(3, 4)(pt.zeros(5, 3), pt.zeros(4)) end))
    assert.are.equal("LSTMCell:forward: the state must be a table {h, c} of two tensors (PyTorch's tuple (h, c)), got a tensor",
      err(function() return nn.LSTMCell(3, 4)(pt.zeros(5, 3), pt.zeros(5, 4)) end))
    assert.are.equal("LSTMCell: unknown option 'nonlinearity'",
      err(function() return nn.LSTMCell(3, 4, {nonlinearity = "relu"}) end))
  end)

  it("pass a finite-difference gradient check (float64)", function()
    local x, h = X({2, 3}, 101, F64), vals({2, 4}, 102, 0.5, F64)
    local r = nn.RNNCell(3, 4, {nonlinearity = "relu"})
    module_gradcheck(r, function(a, b) return r(a, b) end, {x, h})
    local l = nn.LSTMCell(3, 4)
    module_gradcheck(l, function(a, b, c) return flat_cat {l(a, {b, c})} end, {x, h, vals({2, 4}, 103, 0.5, F64)})
    local g = nn.GRUCell(3, 4)
    module_gradcheck(g, function(a, b) return g(a, b) end, {x, h})
  end)
end)

describe("nn.MultiheadAttention", function()
  it("self-attention matches PyTorch (weights averaged over heads)", function()
    local q = X({3, 2, 4}, 111)
    local o, w = fill(nn.MultiheadAttention(4, 2))(q, q, q)
    close(o, E.mha_self.out); close(w, E.mha_self.w)
  end)

  it("key_padding_mask (true = padding) and weights per head", function()
    local o, w = fill(nn.MultiheadAttention(4, 2))(X({3, 2, 4}, 111), X({5, 2, 4}, 112), X({5, 2, 4}, 113),
      {key_padding_mask = kpm, average_attn_weights = false})
    close(o, E.mha_cross_kpm.out); close(w, E.mha_cross_kpm.w)
    -- masked keys get no weight
    assert.are.equal(0, w[{1, {}, {}, {4, 5}}]:abs():sum():item())
  end)

  it("boolean attn_mask (true = masked out) and float masks with batch_first", function()
    local q = X({3, 2, 4}, 111)
    local o, w = fill(nn.MultiheadAttention(4, 2))(q, q, q, {attn_mask = causal_masked})
    close(o, E.mha_attn_mask_bool.out); close(w, E.mha_attn_mask_bool.w)
    local m = fill(nn.MultiheadAttention(4, 2, {batch_first = true}))
    o, w = m(X({2, 3, 4}, 111), X({2, 5, 4}, 112), X({2, 5, 4}, 113),
      {attn_mask = vals({4, 3, 5}, 120, 2.0), key_padding_mask = kpm})
    close(o, E.mha_float_masks_bf.out); close(w, E.mha_float_masks_bf.w)
    -- is_causal=true without a mask is the causal mask
    local o2 = fill(nn.MultiheadAttention(4, 2))(q, q, q, {is_causal = true, need_weights = false})
    close(o2, E.mha_attn_mask_bool.out)
  end)

  it("kdim/vdim without bias, unbatched, add_bias_kv and add_zero_attn", function()
    local m = fill(nn.MultiheadAttention(4, 2, {kdim = 3, vdim = 5, bias = false}))
    local o, w = m(X({3, 2, 4}, 111), X({5, 2, 3}, 112), X({5, 2, 5}, 113))
    close(o, E.mha_kdim_vdim.out); close(w, E.mha_kdim_vdim.w)
    o, w = fill(nn.MultiheadAttention(4, 2))(X({3, 4}, 111), X({5, 4}, 112), X({5, 4}, 113),
      {key_padding_mask = kpm[1]})
    close(o, E.mha_unbatched.out); close(w, E.mha_unbatched.w)
    local amask = pt.zeros(3, 5, {dtype = "bool"})
    amask[{1, 5}] = true
    amask[{3, 1}] = true
    m = fill(nn.MultiheadAttention(4, 2, {add_bias_kv = true, add_zero_attn = true}))
    o, w = m(X({3, 2, 4}, 111), X({5, 2, 4}, 112), X({5, 2, 4}, 113), {key_padding_mask = kpm, attn_mask = amask})
    close(o, E.mha_bias_kv_zero_attn.out); close(w, E.mha_bias_kv_zero_attn.w)
  end)

  it("need_weights=false returns no weights", function()
    local q = X({3, 2, 4}, 111)
    local o, w = fill(nn.MultiheadAttention(4, 2))(q, q, q, {need_weights = false})
    close(o, E.mha_self.out)
    assert.is_nil(w)
  end)

  it("has PyTorch's state_dict keys, initialisation and printing", function()
    assert.are.same(K.mha, keys_of(nn.MultiheadAttention(4, 2)))
    assert.are.same(K.mha_kdim_vdim, keys_of(nn.MultiheadAttention(4, 2, {kdim = 3, vdim = 5, bias = false})))
    assert.are.same(K.mha_bias_kv, keys_of(nn.MultiheadAttention(4, 2, {add_bias_kv = true})))
    pt.manual_seed(2)
    local m = nn.MultiheadAttention(16, 4)
    local bound = math.sqrt(6 / (16 + 48)) -- xavier_uniform_ over {3E, E}
    local wmax = m.in_proj_weight:abs():max():item()
    assert.is_true(wmax <= bound and wmax > 0.8 * bound)
    assert.are.equal(0, m.in_proj_bias:abs():sum():item())
    assert.are.equal(0, m.out_proj.bias:abs():sum():item())
    assert.is_true(m.out_proj.weight:abs():max():item() <= 0.25)
    assert.are.equal("MultiheadAttention(\n  embed_dim=4, num_heads=2, dropout=0.1, batch_first=true\n"
      .. "  (out_proj): Linear(in_features=4, out_features=4, bias=true)\n)",
      tostring(nn.MultiheadAttention(4, 2, {dropout = 0.1, batch_first = true})))
  end)

  it("names the shapes in its errors and refuses bad options", function()
    local m = nn.MultiheadAttention(4, 2)
    local q = pt.zeros(3, 2, 4)
    assert.are.equal("MultiheadAttention: embed_dim must be divisible by num_heads, got embed_dim=5, num_heads=2",
      err(function() return nn.MultiheadAttention(5, 2) end))
    assert.are.equal("MultiheadAttention: unknown option 'batch_frist'",
      err(function() return nn.MultiheadAttention(4, 2, {batch_frist = true}) end))
    assert.are.equal("MultiheadAttention:forward: expected query, key and value with 4, 4 and 4 features (embed_dim, kdim, vdim), got shapes {3,2,4}, {5,2,3}, {5,2,4}",
      err(function() return m(q, pt.zeros(5, 2, 3), pt.zeros(5, 2, 4)) end))
    assert.are.equal("MultiheadAttention:forward: query, key and value must all be 3-D (batched) or all 2-D (unbatched), got shapes {3,2,4}, {5,4}, {5,4}",
      err(function() return m(q, pt.zeros(5, 4), pt.zeros(5, 4)) end))
    assert.are.equal("MultiheadAttention:forward: attn_mask must have shape {L,S} = {3,3} or {N*num_heads,L,S} = {4,3,3}, got {3,4}",
      err(function() return m(q, q, q, {attn_mask = pt.zeros(3, 4)}) end))
    assert.are.equal("MultiheadAttention:forward: key_padding_mask must have shape {2,3}, got {3,2}",
      err(function() return m(q, q, q, {key_padding_mask = pt.zeros(3, 2, {dtype = "bool"})}) end))
    assert.are.equal("MultiheadAttention:forward: attn_mask must be a bool or floating tensor, got dtype int64",
      err(function() return m(q, q, q, {attn_mask = pt.zeros(3, 3, {dtype = "int64"})}) end))
    assert.are.equal("MultiheadAttention:forward: key dtype float64 does not match the parameters' float32 (convert with m:double() or m:float(), or t:to(dtype))",
      err(function() return m(q, pt.zeros(3, 2, 4, {dtype = F64}), q) end))
    assert.are.equal("MultiheadAttention:forward: unknown option 'need_weight'",
      err(function() return m(q, q, q, {need_weight = false}) end))
  end)

  it("passes a finite-difference gradient check (float64)", function()
    local q, k, v = X({3, 2, 4}, 111, F64), X({5, 2, 3}, 112, F64), X({5, 2, 5}, 113, F64)
    local m = nn.MultiheadAttention(4, 2, {kdim = 3, vdim = 5})
    module_gradcheck(m, function(a, b, c)
      return flat_cat {m(a, b, c, {key_padding_mask = kpm, average_attn_weights = false})}
    end, {q, k, v})
    local s = nn.MultiheadAttention(4, 2, {batch_first = true, add_bias_kv = true})
    local x = X({2, 3, 4}, 111, F64)
    module_gradcheck(s, function(a) return flat_cat {s(a, a, a, {attn_mask = causal_masked})} end, {x})
  end)
end)

describe("nn.scaled_dot_product_attention", function()
  local sdpa = nn.functional.scaled_dot_product_attention
  it("matches PyTorch 2.x's F.scaled_dot_product_attention", function()
    close(sdpa(X({2, 3, 4}, 131), X({2, 5, 4}, 132), X({2, 5, 6}, 133)), E.sdpa_basic.out)
    local allowed = pt.tensor({{true, true, false, true, false}, {true, false, true, true, true},
      {false, true, true, true, true}})
    close(sdpa(X({2, 2, 3, 4}, 131), X({2, 2, 5, 4}, 132), X({2, 2, 5, 6}, 133), {attn_mask = allowed}), E.sdpa_bool.out)
    close(sdpa(X({2, 3, 4}, 131), X({2, 5, 4}, 132), X({2, 5, 6}, 133), {attn_mask = vals({2, 3, 5}, 134, 2.0), scale = 0.3}),
      E.sdpa_float_scale.out)
    close(sdpa(X({2, 3, 4}, 131), X({2, 5, 4}, 132), X({2, 5, 6}, 133), {is_causal = true}), E.sdpa_causal.out)
    assert.are.equal(nn.scaled_dot_product_attention, sdpa)
  end)

  it("a boolean mask means allowed = true (the opposite of MultiheadAttention's)", function()
    local q = X({1, 3, 4}, 131)
    local allowed = pt.tensor({{true, false, false}, {true, true, false}, {true, true, true}})
    close(sdpa(q, q, q, {attn_mask = allowed}),
      {{1, 3, 4}, sdpa(q, q, q, {is_causal = true}):reshape(-1):tolist()}, 1e-6)
  end)

  it("dropout_p drops weights; errors name the shapes", function()
    pt.manual_seed(4)
    local q = X({2, 3, 4}, 131)
    assert.is_true(sdpa(q, q, q, {dropout_p = 1}):abs():sum():item() == 0)
    assert.are.equal("scaled_dot_product_attention: query and key must have the same embedding size, got shapes {2,3,4} and {2,5,3}",
      err(function() return sdpa(q, pt.zeros(2, 5, 3), pt.zeros(2, 5, 3)) end))
    assert.are.equal("scaled_dot_product_attention: attn_mask and is_causal=true cannot be given together",
      err(function() return sdpa(q, q, q, {is_causal = true, attn_mask = pt.zeros(3, 3)}) end))
    assert.are.equal("scaled_dot_product_attention: unknown option 'causal'",
      err(function() return sdpa(q, q, q, {causal = true}) end))
  end)

  it("passes a finite-difference gradient check (float64)", function()
    local allowed = pt.tensor({{true, true, false, true, false}, {true, false, true, true, true},
      {false, true, true, true, true}})
    gradcheck(function(q, k, v, m) return sdpa(q, k, v, {attn_mask = allowed}) + sdpa(q, k, v, {attn_mask = m}) end,
      {X({2, 3, 4}, 131, F64), X({2, 5, 4}, 132, F64), X({2, 5, 6}, 133, F64), vals({3, 5}, 134, 1, F64)})
  end)
end)

describe("nn.TransformerEncoderLayer, nn.TransformerEncoder", function()
  it("match PyTorch (post-norm relu, src_mask)", function()
    local m = fill(nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8}))
    close(m(X({3, 2, 4}, 141)), E.tel_relu.out)
    close(m(X({3, 2, 4}, 141), {src_mask = causal_masked}), E.tel_src_mask.out)
  end)

  it("match PyTorch (gelu, norm_first, batch_first, src_key_padding_mask)", function()
    local m = fill(nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8, activation = "gelu",
      norm_first = true, batch_first = true}))
    local pad = pt.tensor({{false, true, false}, {false, false, false}})
    close(m(X({2, 3, 4}, 141), {src_key_padding_mask = pad}), E.tel_gelu_normfirst_bf_kpm.out)
  end)

  it("TransformerEncoder stacks copies and matches PyTorch", function()
    local layer = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8})
    local enc = nn.TransformerEncoder(layer, 2, {norm = nn.LayerNorm(4)})
    -- PyTorch's layers.0 is layers.1 here
    local want = {}
    for i, e in ipairs(K.enc) do
      want[i] = {(e[1]:gsub("^layers%.(%d+)", function(d) return "layers." .. (tonumber(d) + 1) end)), e[2]}
    end
    assert.are.same(want, keys_of(enc))
    assert.are_not.equal(enc.layers[1].linear1.weight, enc.layers[2].linear1.weight)
    assert.is_true(enc.layers[1].linear1.weight:equal(layer.linear1.weight))
    fill(enc)
    close(enc(X({3, 2, 4}, 141)), E.enc.out)
    assert.is_false(enc.layers[1].linear1.weight:equal(enc.layers[2].linear1.weight))
  end)

  it("have PyTorch's keys, dropout in training, printing and errors", function()
    local m = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8})
    assert.are.same(K.tel, keys_of(m))
    pt.manual_seed(5)
    local x = X({3, 2, 4}, 141)
    assert.is_false(m(x):equal(m(x))) -- dropout 0.1 by default, training mode
    m:eval()
    assert.is_true(m(x):equal(m(x)))
    assert.matches("^TransformerEncoderLayer%(\n  d_model=4, nhead=2, dim_feedforward=8, activation='relu', norm_first=false, batch_first=false\n  %(self_attn%): MultiheadAttention",
      tostring(m))
    assert.are.equal("TransformerEncoderLayer: activation must be 'relu', 'gelu' or a function, got tanh",
      err(function() return nn.TransformerEncoderLayer(4, 2, {activation = "tanh"}) end))
    assert.are.equal("TransformerEncoderLayer: unknown option 'nheads'",
      err(function() return nn.TransformerEncoderLayer(4, 2, {nheads = 2}) end))
    assert.are.equal("TransformerEncoderLayer:forward: unknown option 'mask'",
      err(function() return m(x, {mask = causal_masked}) end))
    assert.are.equal("TransformerEncoder: encoder_layer must be a Module (e.g. nn.TransformerEncoderLayer), got nil",
      err(function() return nn.TransformerEncoder(nil, 2) end))
  end)

  it("pass a finite-difference gradient check (float64, eval)", function()
    local m = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 6, activation = "gelu", norm_first = true}):eval()
    module_gradcheck(m, function(a) return m(a, {src_mask = causal_masked}) end, {X({3, 2, 4}, 141, F64)})
    local p = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 6, batch_first = true}):eval()
    module_gradcheck(p, function(a) return p(a) end, {X({2, 3, 4}, 141, F64)})
  end)
end)

describe("errors raised in nn.lua point at the user's line", function()
  -- the message of fn's error and its position: this file and the line given
  local function at(line, fn)
    local ok, e = pcall(fn)
    assert.is_false(ok, "expected an error")
    local file, l, msg = tostring(e):match("^([^:]*):(%d+): (.*)$")
    assert.are.same({"spec/nn_rnn_spec.lua", line}, {file, tonumber(l)}, tostring(e))
    return msg
  end
  local function line() return debug.getinfo(2, "l").currentline end

  it("from a layer's forward run by Sequential, and from what Sequential and ModuleList call", function()
    local x = pt.zeros(2, 3)
    local seq = nn.Sequential(nn.Linear(3, 3), nn.Flatten(1, 5))
    local l1 = line(); local f1 = function() local y = seq(x); return y end
    assert.are.equal("Flatten:forward: dims 1..5 out of range for input shape {2,3}", at(l1, f1))
    local bare = nn.Sequential(nn.Linear(3, 3), nn.Module())
    local l2 = line(); local f2 = function() local y = bare(x); return y end
    assert.are.equal("Module:forward is not implemented (define function Module:forward(...))", at(l2, f2))
    local list = nn.ModuleList({nn.Linear(2, 2)})
    local l3 = line(); local f3 = function() list:extend({3}) end
    assert.are.equal("ModuleList:append: expected a Module, got number", at(l3, f3))
    local l4 = line(); local f4 = function() local y = nn.Sequential(nn.ModuleList())(x); return y end
    assert.are.equal("ModuleList:forward: a ModuleList has no forward; iterate over it (for i, m in ipairs(list))",
      at(l4, f4))
    -- an encoder layer inside a Sequential: MultiheadAttention's own check (nn_rnn.lua)
    local enc = nn.Sequential(nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8}))
    local l5 = line(); local f5 = function() local y = enc(pt.zeros(3, 2, 5)); return y end
    assert.matches("^MultiheadAttention:forward: expected query, key and value with 4, 4 and 4 features", at(l5, f5))
  end)

  it("from module methods called by other partrain code", function()
    local m = nn.Linear(2, 2)
    local seq = nn.Sequential(m)
    local l1 = line(); local f1 = function() seq:apply(function(c) c.weight = pt.ones(2, 2) + 1 end) end
    assert.matches("^Linear: cannot assign a tensor without requires_grad to parameter 'weight'", at(l1, f1))
    local l2 = line(); local f2 = function() local t = nn.init.kaiming_uniform_(pt.zeros(2, 2), {mode = "x"}); return t end
    assert.are.equal("kaiming_uniform_: mode must be 'fan_in' or 'fan_out', got 'x'", at(l2, f2))
    local l3 = line(); local f3 = function() local y = nn.CrossEntropyLoss()(pt.zeros(2, 3), pt.zeros(3, {dtype = "int64"})); return y end
    assert.matches("^cross_entropy: target shape {3} does not match input shape {2,3}", at(l3, f3))
  end)
end)

describe("help texts", function()
  it("exist for every class and function of nn_rnn.lua", function()
    for _, v in ipairs {nn.RNNCell, nn.LSTMCell, nn.GRUCell, nn.RNN, nn.LSTM, nn.GRU, nn.MultiheadAttention,
                        nn.TransformerEncoderLayer, nn.TransformerEncoder, nn.scaled_dot_product_attention,
                        nn._RNNBase.reset_parameters, nn._RNNBase.flatten_parameters,
                        nn._RNNCellBase.reset_parameters, nn.MultiheadAttention.reset_parameters} do
      assert.is_string(pt._docs[v])
    end
    assert.matches("lstm%(x, {h0, c0}%)", pt._docs[nn.LSTM])
    assert.matches("true = allowed", pt._docs[nn.scaled_dot_product_attention])
    assert.matches("true = not\n  attended", pt._docs[nn.MultiheadAttention])
  end)
end)

-- ------------------------------------------------------------------ reference values
E.rnn_tanh = {out = {{5,2,4}, {-0.6956215568, -0.7552122791, 0.2250112846, 0.2790880105, 0.06438263374, -0.8469595565, -0.4065462761, 0.8378183171, -0.9545684542, 0.6606973702, -0.7453593077, 0.2439587812, -0.7494290137, -0.6042133292, -0.2059278076, 0.6782401721, -0.04776489071, -0.7701683793, -0.6237914887, 0.913651037, -0.9597608231, 0.70518917, -0.7840509262, 0.3337725264, -0.7343905251, -0.6072528475, -0.241611043, 0.7166032859, -0.09080733864, -0.7511320202, -0.6421251658, 0.9149056301, -0.9604953184, 0.7077180484, -0.7834267779, 0.3316208757, -0.7291049628, -0.6105484199, -0.2552845682, 0.7317143198}},
  h = {{1,2,4}, {-0.9604953184, 0.7077180484, -0.7834267779, 0.3316208757, -0.7291049628, -0.6105484199, -0.2552845682, 0.7317143198}}}
E.rnn_relu_2l_bi_h0 = {out = {{5,2,8}, {0.8474024008, 0, 0, 0, 0.9398641385, 0.5541678042, 0, 0.08256790804, 1.046146464, 0.4868565254, 0, 0, 0.6285799589, 0.8314503027, 0, 0, 0.6643977027, 0, 0, 0, 0.500669957, 0.9872541405, 0, 0.5537361381, 1.251438205, 0, 0, 0, 1.097102013, 0.5851387719, 0, 0, 1.256275509, 0.3450948548, 0, 0, 0.8498517014, 0.9689146169, 0, 0, 0.7652908173, 0, 0, 0, 0.419496854, 0.9120973755, 0, 0.5400944967, 1.314117329, 0, 0, 0, 0.9295925772, 0.7881545874, 0, 0.00183215384, 1.269098169, 0.3062878699, 0, 0, 0.8710950627, 0.9026153207, 0, 0, 0.7347419993, 0, 0, 0, 0.9644140673, 0.2160908383, 0.7122048023, 0, 1.205774667, 0, 0, 0, 0.7773642491, 0.9925954033, 0, 0}},
  h = {{4,2,4}, {0, 0.6266787675, 0, 0, 0, 0, 0, 0.6317885893, 0.03841544315, 0, 0, 0, 0.2759929285, 0, 0, 0.1148716221, 0.7347419993, 0, 0, 0, 1.205774667, 0, 0, 0, 0.9398641385, 0.5541678042, 0, 0.08256790804, 0.6285799589, 0.8314503027, 0, 0}}}
E.rnn_batch_first = {out = {{2,5,4}, {-0.6956215568, -0.7552122791, 0.2250112846, 0.2790880105, -0.2153275007, -0.6459877475, -0.7806228407, 0.9559594607, -0.9376066037, 0.5762354536, -0.6997398807, 0.2031269296, -0.7313033239, -0.6625658924, -0.06499764709, 0.5733056887, -0.2668058806, -0.5969295919, -0.8116738056, 0.9619917986, -0.9226198877, 0.3089535105, -0.3279129564, -0.4159104428, -0.6180502869, -0.7610254679, 0.09110960681, 0.5065384316, -0.2680972412, -0.6033854465, -0.8005690754, 0.957707435, -0.9407482764, 0.5869269387, -0.6997911746, 0.1986646136, -0.7158407743, -0.6798638048, -0.06434832258, 0.592138414}},
  h = {{1,2,4}, {-0.2668058806, -0.5969295919, -0.8116738056, 0.9619917986, -0.7158407743, -0.6798638048, -0.06434832258, 0.592138414}}}
E.rnn_unbatched = {out = {{5,4}, {-0.6712841746, -0.2764387502, -0.8021591721, -0.2589513463, -0.8063351091, 0.04620621641, -0.8902718474, 0.005331273714, -0.743282585, -0.0821036837, -0.8716048168, -0.0235169076, -0.7675923334, -0.1522040005, -0.8174412419, -0.3019901074, -0.8056234044, 0.02784096588, -0.8833048764, -0.03774098713}},
  h = {{2,4}, {-0.2666499566, -0.5973707846, -0.811289856, 0.96188479, -0.8056234044, 0.02784096588, -0.8833048764, -0.03774098713}}}
E.lstm_basic = {out = {{5,2,4}, {0.1768329773, -0.07368395674, -0.3177143509, 0.03493388479, -0.5009869516, -0.0722632421, -0.258973775, -0.07679037435, 0.06622459575, -0.4259134234, -0.0741495331, -0.02713171916, -0.2834875826, -0.162538955, -0.4192176675, 0.004342674105, -0.2485348129, -0.1575379056, -0.2695078548, -0.233240088, -0.2185994885, -0.5104125862, -0.04880878931, -0.06111136268, -0.1863754794, -0.2133411429, -0.4691976524, 0.001364279111, -0.4621841384, -0.20502584, -0.2361928627, -0.3126205942, -0.1704738672, -0.5362999683, -0.07813115979, -0.05463419916, -0.2807530999, -0.2583618759, -0.4410774257, -0.05240582062}},
  h = {{1,2,4}, {-0.1704738672, -0.5362999683, -0.07813115979, -0.05463419916, -0.2807530999, -0.2583618759, -0.4410774257, -0.05240582062}},
  c = {{1,2,4}, {-0.4097688101, -0.7944042553, -0.111229086, -0.1672564385, -0.4825985218, -0.5504147859, -0.5960708666, -0.107195008}}}
E.lstm_2l_bi_bf = {out = {{2,5,8}, {0.1290031063, 0.08696452542, 0.01021646511, -0.08029023851, 0.1821643129, 0.1668500817, 0.1521831968, 0.02751196357, 0.1640326444, 0.1236567865, 0.01050489545, -0.1261124819, 0.1891860732, 0.1730608622, 0.1610416196, 0.05269151145, 0.1687426242, 0.1379127972, 0.01584671917, -0.1514601641, 0.1975735664, 0.16906884, 0.1594086518, 0.05644574768, 0.1729933487, 0.1489617215, 0.03418004357, -0.1504098774, 0.1997702961, 0.1561348406, 0.1475691266, 0.05871195665, 0.1584457505, 0.1640326341, 0.03265460126, -0.1441568654, 0.1680282203, 0.1520312734, 0.110250236, 0.05893734771, 0.1271229395, 0.08394741088, 0.005258218779, -0.08325554196, 0.1868197942, 0.1716456151, 0.1538919714, 0.02726739336, 0.1640926722, 0.1199350434, 0.01934366032, -0.1229531199, 0.1910570768, 0.163923611, 0.1557766012, 0.04293025003, 0.1716834858, 0.1441986186, 0.02035232888, -0.1460049047, 0.1963576816, 0.1694317997, 0.1600265085, 0.05909502298, 0.1663710753, 0.1492336544, 0.02231757733, -0.1592472202, 0.1994937191, 0.1627480869, 0.1505741557, 0.05548993941, 0.1664485401, 0.1582726312, 0.03946549712, -0.1438761053, 0.1738668611, 0.1446418008, 0.1039850509, 0.04778694072}},
  h = {{4,2,4}, {-0.4371862467, -0.1701007306, -0.4073822951, -0.2503403042, -0.2430335082, -0.3372950767, -0.3411751438, -0.05364914114, -0.02678168016, 0.008997059578, -0.3211117838, -0.503899228, 0.03219102137, -0.1416431147, -0.3351952335, -0.2047250624, 0.1584457505, 0.1640326341, 0.03265460126, -0.1441568654, 0.1664485401, 0.1582726312, 0.03946549712, -0.1438761053, 0.1821643129, 0.1668500817, 0.1521831968, 0.02751196357, 0.1868197942, 0.1716456151, 0.1538919714, 0.02726739336}},
  c = {{4,2,4}, {-0.6108931091, -0.3947925045, -0.6484099031, -0.3703251994, -0.4026128076, -0.792647909, -0.4400224388, -0.1080971175, -0.05076094776, 0.02579339666, -0.4755567487, -0.9215257135, 0.138329504, -0.2995892122, -0.4182382781, -0.6296616233, 0.4249605574, 0.5156541428, 0.06919337836, -0.3122836773, 0.4689068442, 0.5402835203, 0.08806778246, -0.3192231401, 0.478261759, 0.7409810519, 0.433553117, 0.07466727581, 0.4701773641, 0.739288456, 0.44413489, 0.07615530126}}}
E.lstm_unbatched = {out = {{5,8}, {0.1768329773, -0.07368395674, -0.3177143509, 0.03493388479, -0.02260254593, -0.01650400832, -0.3040389188, -0.5063598396, -0.1659153876, -0.01340654175, -0.4219488668, -0.1394831171, -0.1642455235, -0.04564721454, -0.1474268743, -0.5509503748, -0.1350493482, -0.3799280547, -0.1257786836, -0.0942236506, 0.02916961392, -0.1940539979, -0.2687382946, -0.1685405708, -0.1779873029, -0.2771906455, -0.3813650872, -0.004998609752, -0.02894206947, -0.04434172594, -0.1592683639, -0.3982082093, -0.4162367207, -0.1545271429, -0.4231573107, -0.2305335809, -0.3164286417, -0.06296907954, -0.01391392794, -0.2849190451}},
  h = {{2,4}, {-0.4162367207, -0.1545271429, -0.4231573107, -0.2305335809, -0.02260254593, -0.01650400832, -0.3040389188, -0.5063598396}},
  c = {{2,4}, {-0.57730916, -0.3509641235, -0.6870223004, -0.3369100023, -0.04248781015, -0.04775959971, -0.4454777689, -0.9302321792}}}
E.lstm_proj = {out = {{5,2,2}, {-0.1800679829, 0.1534275408, -0.1806111308, 0.1543906131, -0.2778356318, 0.2304654009, -0.2788515986, 0.232453144, -0.3323551313, 0.2715739202, -0.3317762052, 0.2712090203, -0.3623608949, 0.2928939707, -0.3625508659, 0.2931510166, -0.379359526, 0.30406023, -0.3799210138, 0.3049751582}},
  h = {{2,2,2}, {-0.3138604291, 0.2265046284, -0.3515510412, 0.2807308119, -0.379359526, 0.30406023, -0.3799210138, 0.3049751582}},
  c = {{2,2,4}, {-0.3473461632, -0.860484326, -0.1346467437, -0.03092287711, -0.3420819511, -0.5047664453, -0.7190053465, 0.1021479663, -0.4315374277, -0.6444823328, -0.6110229785, 0.1773266302, -0.4293314418, -0.6402297724, -0.6147426405, 0.1739263433}}}
K.lstm_proj = {{"weight_ih_l0", {16,3}}, {"weight_hh_l0", {16,2}}, {"bias_ih_l0", {16}}, {"bias_hh_l0", {16}}, {"weight_hr_l0", {2,4}}, {"weight_ih_l1", {16,2}}, {"weight_hh_l1", {16,2}}, {"bias_ih_l1", {16}}, {"bias_hh_l1", {16}}, {"weight_hr_l1", {2,4}}}
E.gru_basic = {out = {{5,2,4}, {0.3294642475, 0.1256536054, 0.09866514106, 0.1781350166, -0.4913966895, -0.2132943946, -0.6058543368, -0.3326306126, 0.2446649354, -0.2976705087, 0.2564703145, -0.0388508002, -0.2646776135, -0.2473181741, -0.6973353127, -0.09849614975, -0.1003672694, -0.05007879677, 0.02644445793, -0.2753848549, -0.3030104372, -0.3982305479, 0.03468597816, -0.169981128, -0.005914784672, -0.1447431235, -0.3091167386, -0.0002660552249, -0.4556760729, -0.1701247689, -0.1998457223, -0.3652459842, -0.07048042359, -0.372266367, 0.1233043007, -0.1141137203, -0.2106026488, -0.2184392746, -0.4772479339, -0.09404808234}},
  h = {{1,2,4}, {-0.07048042359, -0.372266367, 0.1233043007, -0.1141137203, -0.2106026488, -0.2184392746, -0.4772479339, -0.09404808234}}}
E.gru_2l_bi = {out = {{5,2,8}, {0.4906152507, 0.3888922707, 0.1685340977, -0.03298696103, 0.2488527468, 0.7704836933, 0.4943305626, 0.1806173486, 0.4353653413, 0.3139934585, 0.110140717, -0.05426348534, 0.128329863, 0.7526592596, 0.4919489566, 0.2032561465, 0.4759569994, 0.590438105, 0.2467262969, -0.02040809429, 0.2572890581, 0.7764568196, 0.5271607346, 0.2130626899, 0.4612819026, 0.5210886938, 0.2077614374, -0.04484939585, 0.2334967159, 0.7807110297, 0.546412663, 0.2140667197, 0.3016146662, 0.6243856504, 0.1566614193, -0.007131767119, 0.1630019583, 0.7361827303, 0.5858916276, 0.2359612771, 0.4185072399, 0.6559740316, 0.2557564578, -0.01496055159, 0.2862194696, 0.7665887068, 0.5597337384, 0.2301006566, 0.2881005617, 0.6500936115, 0.1690758406, 0.02134401488, 0.3144579954, 0.6801104016, 0.5909504747, 0.2120741386, 0.2461982631, 0.6573497882, 0.161910804, 0.01597701096, 0.2511388872, 0.6927063242, 0.6050356336, 0.2528582872, 0.2868040904, 0.6663094754, 0.1652374561, 0.04166507406, 0.3817089566, 0.5199324269, 0.4170409627, 0.1723518545, 0.2277260293, 0.6564327447, 0.1676245874, 0.05873854906, 0.3848014018, 0.5527240839, 0.4644666755, 0.2132649115}},
  h = {{4,2,4}, {-0.1644476732, -0.3868013749, 0.1023515477, -0.1387708471, -0.1538455612, -0.1396019251, -0.4346567046, -0.0549098354, 0.243721868, 0.1932282376, -0.4205341132, -0.2784391137, -0.1860647273, 0.402148661, -0.3232477872, -0.4351125054, 0.2868040904, 0.6663094754, 0.1652374561, 0.04166507406, 0.2277260293, 0.6564327447, 0.1676245874, 0.05873854906, 0.2488527468, 0.7704836933, 0.4943305626, 0.1806173486, 0.128329863, 0.7526592596, 0.4919489566, 0.2032561465}}}
K.gru_2l_bi = {{"weight_ih_l0", {12,3}}, {"weight_hh_l0", {12,4}}, {"bias_ih_l0", {12}}, {"bias_hh_l0", {12}}, {"weight_ih_l0_reverse", {12,3}}, {"weight_hh_l0_reverse", {12,4}}, {"bias_ih_l0_reverse", {12}}, {"bias_hh_l0_reverse", {12}}, {"weight_ih_l1", {12,8}}, {"weight_hh_l1", {12,4}}, {"bias_ih_l1", {12}}, {"bias_hh_l1", {12}}, {"weight_ih_l1_reverse", {12,8}}, {"weight_hh_l1_reverse", {12,4}}, {"bias_ih_l1_reverse", {12}}, {"bias_hh_l1_reverse", {12}}}
E.gru_nobias_unbatched = {out = {{5,4}, {0.2309484178, -0.0341937836, -0.1659763256, 0.2316542844, -0.05314383656, 0.3755025784, -0.28398735, -0.04251739773, -0.09293150839, -0.1811193967, 0.403881111, -0.08035488761, 0.2224551327, -0.1579540816, 0.06410823948, 0.1817905396, -0.036919586, 0.3172571162, -0.1115125418, -0.08494929484}},
  h = {{1,4}, {-0.036919586, 0.3172571162, -0.1115125418, -0.08494929484}}}
K.gru_nobias = {{"weight_ih_l0", {12,3}}, {"weight_hh_l0", {12,4}}}
K.rnn = {{"weight_ih_l0", {4,3}}, {"weight_hh_l0", {4,4}}, {"bias_ih_l0", {4}}, {"bias_hh_l0", {4}}}
E.rnncell_tanh = {h = {{2,4}, {-0.7971861186, -0.7336639124, 0.3538817389, -0.0272653008, 0.400636144, -0.8935244457, -0.4020694632, 0.8848245507}}}
K.rnncell = {{"weight_ih", {4,3}}, {"weight_hh", {4,4}}, {"bias_ih", {4}}, {"bias_hh", {4}}}
E.rnncell_relu_unbatched = {h = {{4}, {0, 0, 0.2289284332, 0.2866927743}}}
E.lstmcell = {h = {{2,4}, {0.1768329773, -0.07368395674, -0.3177143509, 0.03493388479, -0.5009869516, -0.0722632421, -0.258973775, -0.07679037435}},
  c = {{2,4}, {0.370743281, -0.1059305046, -0.5262000968, 0.04947095666, -0.7404101879, -0.1648183392, -0.3675816543, -0.1146968751}}}
K.lstmcell = {{"weight_ih", {16,3}}, {"weight_hh", {16,4}}, {"bias_ih", {16}}, {"bias_hh", {16}}}
E.lstmcell_unbatched = {h = {{4}, {-0.02796606083, -0.1142282135, -0.300523368, 0.08037585773}},
  c = {{4}, {-0.0492123495, -0.1922794623, -0.4151808208, 0.139597148}}}
E.grucell = {h = {{2,4}, {0.3294642475, 0.1256536054, 0.09866514106, 0.1781350166, -0.4913966895, -0.2132943946, -0.6058543368, -0.3326306126}}}
K.grucell = {{"weight_ih", {12,3}}, {"weight_hh", {12,4}}, {"bias_ih", {12}}, {"bias_hh", {12}}}
E.grucell_nobias_unbatched = {h = {{4}, {0.4324501637, 0.1290717279, 0.1547571583, 0.3454992207}}}
E.mha_self = {out = {{3,2,4}, {-0.7348674237, -0.003656154318, 0.2647769587, 0.1958035614, -0.5156704319, -0.1122040864, 0.2501325403, 0.3319480898, -0.7003971828, -0.04658869157, 0.3112107093, 0.1512342643, -0.5388692794, -0.07931670734, 0.2113569411, 0.3721311824, -0.6725310181, -0.08104627669, 0.3482779576, 0.1158406705, -0.5389453213, -0.07085952463, 0.1954958901, 0.393563273}},
  w = {{2,3,3}, {0.3554669746, 0.3707263175, 0.2738067079, 0.2973240522, 0.337547518, 0.3651284297, 0.2591519859, 0.2921550001, 0.448693014, 0.3373465038, 0.3436193507, 0.3190341456, 0.2452936862, 0.2947638705, 0.4599424433, 0.1961472452, 0.2519515849, 0.5519011699}}}
K.mha = {{"in_proj_weight", {12,4}}, {"in_proj_bias", {12}}, {"out_proj.weight", {4,4}}, {"out_proj.bias", {4}}}
E.mha_cross_kpm = {out = {{3,2,4}, {-0.4460659176, -0.1321871147, 0.2181849373, 0.4121346087, -0.66858647, -0.1091905252, 0.3973696889, 0.05147426709, -0.4535385, -0.1404992397, 0.2413212594, 0.3768476145, -0.6693357602, -0.07012731351, 0.3245065177, 0.1497176709, -0.4787869593, -0.1372850793, 0.2605128113, 0.3374680362, -0.6660898878, -0.04672369118, 0.2771578136, 0.2155400622}},
  w = {{2,2,3,5}, {0.2420881927, 0.3586224069, 0.3992894004, 0, 0, 0.3594907013, 0.3223588871, 0.3181504116, 0, 0, 0.4677370351, 0.281732805, 0.2505301598, 0, 0, 0.1383291854, 0.2936944854, 0.5679763292, 0, 0, 0.2568209549, 0.3246916413, 0.4184874038, 0, 0, 0.4489450096, 0.3076255632, 0.2434294273, 0, 0, 0.1827340131, 0.1732607728, 0.1834845223, 0.2115146739, 0.2490060178, 0.1396577308, 0.09647093147, 0.1119998034, 0.2043766863, 0.4474948481, 0.1124282689, 0.06451635275, 0.07796415227, 0.1822395874, 0.5628516387, 0.1371508296, 0.2109302412, 0.259499366, 0.2326986141, 0.1597209492, 0.2397440366, 0.2084946462, 0.1856102205, 0.1782105721, 0.1879405245, 0.3688502907, 0.1887637234, 0.1234363279, 0.1248040609, 0.1941455971}}}
E.mha_attn_mask_bool = {out = {{3,2,4}, {-0.6395596445, -0.0140121083, 0.1889844019, 0.3489863959, -0.5162512464, -0.1798688968, 0.3782239467, 0.1582317306, -0.6845650673, -0.01998746143, 0.2452500471, 0.2489322532, -0.5113578475, -0.1367911258, 0.2921528715, 0.2773501397, -0.6725310181, -0.08104627669, 0.3482779576, 0.1158406705, -0.5389453213, -0.07085952463, 0.1954958901, 0.393563273}},
  w = {{2,3,3}, {1, 0, 0, 0.468518521, 0.531481479, 0, 0.2591519859, 0.2921550001, 0.448693014, 1, 0, 0, 0.4371713971, 0.5628286029, 0, 0.1961472452, 0.2519515849, 0.5519011699}}}
E.mha_float_masks_bf = {out = {{2,3,4}, {-0.6547663397, 0.01782619995, 0.1441935664, 0.4015539393, -0.5429529303, -0.1016076035, 0.2574465528, 0.307568755, -0.5872797871, -0.08443999359, 0.2694219983, 0.2678340804, -0.6788882417, -0.003608972957, 0.2087088661, 0.301413599, -0.8079385864, 0.06095932544, 0.2160838243, 0.2229475998, -0.6361683797, -0.002041282635, 0.1630347784, 0.3859162003}},
  w = {{2,3,5}, {0.281540368, 0.1905532945, 0.5279063375, 0, 0, 0.4893706555, 0.3038840311, 0.2067453134, 0, 0, 0.199382618, 0.3186812321, 0.4819361499, 0, 0, 0.06382761111, 0.3881223968, 0.1138879472, 0.2556958844, 0.1784661605, 0.428493699, 0.04089050086, 0.0832721646, 0.1513944663, 0.2959491692, 0.07442963646, 0.5352512872, 0.06586369595, 0.2836557815, 0.04079959893}}}
E.mha_kdim_vdim = {out = {{3,2,4}, {-0.2135360197, 0.2098795248, -0.1819703345, 0.1330335042, 0.2697221025, -0.2600650343, 0.2203560681, -0.1551837863, -0.2290385444, 0.2277710158, -0.2001833349, 0.1494634049, 0.2819984577, -0.27900988, 0.2437802267, -0.1803804717, -0.2445523247, 0.2512264376, -0.2288699994, 0.1800664156, 0.2904287657, -0.2889929138, 0.2541623936, -0.1899620571}},
  w = {{2,3,5}, {0.2711943563, 0.1676628849, 0.1216162928, 0.2687445598, 0.1707819061, 0.1987669294, 0.2189892766, 0.1648509723, 0.1976652516, 0.21972757, 0.1280629383, 0.2458872145, 0.2547791974, 0.1280838546, 0.2431867953, 0.2620470176, 0.1480659378, 0.1777834848, 0.263087978, 0.1490155817, 0.1859975965, 0.2336695767, 0.1614546302, 0.1845355507, 0.2343426459, 0.1280417357, 0.3022063292, 0.1430202181, 0.1258492592, 0.3008824579}}}
K.mha_kdim_vdim = {{"q_proj_weight", {4,4}}, {"k_proj_weight", {4,3}}, {"v_proj_weight", {4,5}}, {"out_proj.weight", {4,4}}}
E.mha_unbatched = {out = {{3,4}, {-0.5809229444, -0.05763097826, 0.2125450494, 0.3482065291, -0.5880407932, -0.07928734716, 0.2604731273, 0.2795450863, -0.5716410619, -0.1141197989, 0.3097132245, 0.2215872989}},
  w = {{3,5}, {0.2646033081, 0.2815345241, 0.4538621678, 0, 0, 0.3748338338, 0.3059541, 0.3192120662, 0, 0, 0.2863023606, 0.4089650791, 0.3047325603, 0, 0}}}
E.mha_bias_kv_zero_attn = {out = {{3,2,4}, {0.5711339725, 0.2916626995, 0.1329070398, -0.3296669321, 0.4269822894, 0.5821017251, -0.270257554, 0.1396354169, 0.5559558723, 0.3005320704, 0.1313713012, -0.3356422886, 0.4855779652, 0.4687865939, -0.1153171335, -0.03902610327, 0.5748264541, 0.2533169921, 0.2014749227, -0.4205336068, 0.5309434636, 0.3774005239, 0.01152936162, -0.1866752364}},
  w = {{2,3,7}, {0.1242283077, 0.2097341287, 0.3032935339, 0, 0, 0.185493039, 0.1772509907, 0.1641886595, 0.1702212277, 0.1918763924, 0, 0, 0.248272647, 0.2254410734, 0, 0.1690469627, 0.1421168845, 0, 0, 0.3649202073, 0.3239159455, 0.1345240854, 0.1623897227, 0.1875301987, 0.1875608484, 0, 0.1664195831, 0.1615755616, 0.1171282261, 0.09473886399, 0.09178600978, 0.1157349487, 0.1881819383, 0.1981899355, 0.1942400777, 0, 0.08106543002, 0.06290848671, 0.0922168676, 0.2207443672, 0.2723928056, 0.2706720428}}}
K.mha_bias_kv = {{"in_proj_weight", {12,4}}, {"in_proj_bias", {12}}, {"bias_k", {1,1,4}}, {"bias_v", {1,1,4}}, {"out_proj.weight", {4,4}}, {"out_proj.bias", {4}}}
E.sdpa_basic = {out = {{2,3,6}, {0.1807466387, 0.2258794585, 0.1647776395, 0.02617832192, -0.1247330695, -0.2169805494, 0.07477580168, -0.2353596927, -0.434801846, -0.4297498972, -0.2225798567, 0.08927296833, 0.3319106692, 0.3367891176, 0.1832703815, -0.05644327863, -0.2696107829, -0.3559761232, -0.009046798599, 0.03416946604, 0.06131529688, 0.05962358553, 0.02988997025, -0.01390136507, -0.3971079439, -0.3326943122, -0.1118093469, 0.1616613013, 0.3591001135, 0.3876485312, -0.01283917073, -0.1170051316, -0.1661417509, -0.1371393086, -0.04363810669, 0.07038677868}}}
E.sdpa_bool = {out = {{2,2,3,6}, {0.08027575378, -0.359168106, -0.6296895933, -0.6040582258, -0.294328836, 0.1538280044, -0.2001257779, -0.5963781397, -0.7121445438, -0.4929782413, -0.04195656901, 0.4287979333, 0.402104765, 0.4826513355, 0.3361994414, 0.03162769667, -0.287819048, -0.4718999971, -0.6503798747, -0.1603639934, 0.4050735798, 0.7799987189, 0.7880782727, 0.4255123008, -0.4670314031, -0.04531387723, 0.3977154731, 0.653693022, 0.6022285284, 0.2675265478, 0.1501071113, -0.126065687, -0.3429478229, -0.3985362389, -0.2666868345, -0.009410444763, 0.7787997843, 0.7639434068, 0.389792508, -0.1676838979, -0.6462959465, -0.8209449128, 0.5750871361, 0.5331924661, 0.240529048, -0.1652589398, -0.493323066, -0.5893696458, -0.3906938413, -0.3541110108, -0.1509842388, 0.1231527799, 0.3393691219, 0.3959748631, -0.1930053968, -0.6495406779, -0.8005868288, -0.5751044846, -0.07914151501, 0.4540429457, 0.0905479819, -0.0803099296, -0.2133968263, -0.2461198612, -0.1630888796, -0.003354649645, -0.02061943181, 0.1733092382, 0.2857278654, 0.2637642129, 0.1177481297, -0.08364673883}}}
E.sdpa_float_scale = {out = {{2,3,6}, {0.7258661403, 0.6667123406, 0.2939933094, -0.2169953689, -0.6259277346, -0.7404765063, 0.1345210714, -0.2189656212, -0.4694693607, -0.4991743242, -0.2941098032, 0.04927915385, 0.4289035279, 0.3691676102, 0.135806397, -0.1614266867, -0.3827382773, -0.4240420756, -0.5419483656, -0.1034393571, 0.3837187973, 0.6904080056, 0.6723875409, 0.3381327094, -0.2834160391, -0.1019172669, 0.1275147885, 0.2969746464, 0.3267626877, 0.2028691312, -0.3506607186, -0.4043102218, -0.2678063102, -0.0053489063, 0.2596241718, 0.4024919452}}}
E.sdpa_causal = {out = {{2,3,6}, {-0.2108105329, -0.7909769339, -0.9991345234, -0.7373835348, -0.1288295477, 0.5403149886, 0.4523872788, 0.1826666605, -0.1729649425, -0.4472484304, -0.511183993, -0.3347017362, -0.09102492398, 0.05379436664, 0.1733133261, 0.2113203202, 0.1499400657, 0.01804065546, -0.7023863293, -0.07866316927, 0.5820565084, 0.9690259153, 0.9002472927, 0.4080683017, -0.3594212374, -0.6832968951, -0.6858073461, -0.3657718863, 0.126291807, 0.5589584901, 0.2374447434, 0.3163439279, 0.2464616202, 0.06066456135, -0.1536639886, -0.2957219636}}}
K.tel = {{"self_attn.in_proj_weight", {12,4}}, {"self_attn.in_proj_bias", {12}}, {"self_attn.out_proj.weight", {4,4}}, {"self_attn.out_proj.bias", {4}}, {"linear1.weight", {8,4}}, {"linear1.bias", {8}}, {"linear2.weight", {4,8}}, {"linear2.bias", {4}}, {"norm1.weight", {4}}, {"norm1.bias", {4}}, {"norm2.weight", {4}}, {"norm2.bias", {4}}}
E.tel_relu = {out = {{3,2,4}, {0.02602282189, -0.2506153431, -0.5496429657, 0.1141003136, -0.6304490478, -0.4900359321, -0.5264712067, -0.8475904077, -0.3456471327, -0.6291666898, -0.5599655473, -0.5516366077, -0.713024741, -0.3287719084, -0.5529233556, -0.5026386538, -0.5089113383, -0.5784297832, -0.5267814287, -0.8657527285, -0.5258986772, -0.1460206699, -0.5526876757, -0.1388017494}}}
E.tel_src_mask = {out = {{3,2,4}, {-0.02524654312, -0.2289499194, -0.5500474181, 0.1064399821, -0.6097126413, -0.514347269, -0.5344663094, -0.8006815201, -0.395502006, -0.6288518425, -0.5540474554, -0.6338257256, -0.5972126415, -0.3282679811, -0.5629001281, -0.3393792189, -0.5089113383, -0.5784297832, -0.5267814287, -0.8657527285, -0.5258986772, -0.1460206699, -0.5526876757, -0.1388017494}}}
E.tel_gelu_normfirst_bf_kpm = {out = {{2,3,4}, {-0.08876643914, 0.6082107106, 0.8238488103, 0.6023881665, -1.978014034, -1.457336307, -0.4496175395, 0.7211179447, -0.6050625455, 0.5295255248, 1.208885017, 1.279625131, -1.507931362, -1.239932086, -0.650616165, 0.1551487578, -1.367635633, 0.1098460962, 1.227315607, 1.730323443, -0.5515673041, -0.4659333436, -0.4259766114, -0.26826458}}}
K.enc = {{"layers.0.self_attn.in_proj_weight", {12,4}}, {"layers.0.self_attn.in_proj_bias", {12}}, {"layers.0.self_attn.out_proj.weight", {4,4}}, {"layers.0.self_attn.out_proj.bias", {4}}, {"layers.0.linear1.weight", {8,4}}, {"layers.0.linear1.bias", {8}}, {"layers.0.linear2.weight", {4,8}}, {"layers.0.linear2.bias", {4}}, {"layers.0.norm1.weight", {4}}, {"layers.0.norm1.bias", {4}}, {"layers.0.norm2.weight", {4}}, {"layers.0.norm2.bias", {4}}, {"layers.1.self_attn.in_proj_weight", {12,4}}, {"layers.1.self_attn.in_proj_bias", {12}}, {"layers.1.self_attn.out_proj.weight", {4,4}}, {"layers.1.self_attn.out_proj.bias", {4}}, {"layers.1.linear1.weight", {8,4}}, {"layers.1.linear1.bias", {8}}, {"layers.1.linear2.weight", {4,8}}, {"layers.1.linear2.bias", {4}}, {"layers.1.norm1.weight", {4}}, {"layers.1.norm1.bias", {4}}, {"layers.1.norm2.weight", {4}}, {"layers.1.norm2.bias", {4}}, {"norm.weight", {4}}, {"norm.bias", {4}}}
E.enc = {out = {{3,2,4}, {-0.4914721906, 0.3005576241, -0.2343395286, -0.5422257984, -0.2419400675, -0.207545615, -0.3355756543, -0.606979109, -0.4278999477, 0.06060342152, -0.2788171903, -0.58023257, -0.07151348855, -0.3755184947, -0.3659277091, -0.6140673903, -0.3330027962, -0.09364332877, -0.3132317017, -0.5979426726, -0.02218991058, -0.4115983107, -0.376665658, -0.6147723513}}}

describe("the fused LSTM and GRU steps (pt._lstm_cell, pt._gru_cell)", function()
  it("have finite-difference gradients for x_proj, gh and the state", function()
    pt.manual_seed(6)
    local d = {dtype = "float64"}
    gradcheck(function(x, g, c) return pt._lstm_cell(x, g, c) end,
              {pt.randn(3, 8, d), pt.randn(3, 8, d), pt.randn(3, 2, d)})
    gradcheck(function(x, g, h) return pt._gru_cell(x, g, h) end,
              {pt.randn(3, 6, d), pt.randn(3, 6, d), pt.randn(3, 2, d)})
    gradcheck(function(x, g, h) return pt._gru_cell(x, g, h) end, -- unbatched
              {pt.randn(6, d), pt.randn(6, d), pt.randn(2, d)})
  end)

  it("match the composed formulas in float32 over long rows (vector lanes and tails)", function()
    pt.manual_seed(7)
    local H = 37
    local x, g, c = pt.randn(5, 4 * H), pt.randn(5, 4 * H), pt.randn(5, H)
    local hc = pt._lstm_cell(x, g, c)
    local p = (x + g):double()
    local i, f = p:narrow(2, 1, H):sigmoid(), p:narrow(2, H + 1, H):sigmoid()
    local gg, o = p:narrow(2, 2 * H + 1, H):tanh(), p:narrow(2, 3 * H + 1, H):sigmoid()
    local c2 = f * c:double() + i * gg
    assert.is_true((hc:narrow(2, H + 1, H):double() - c2):abs():max():item() < 1e-5)
    assert.is_true((hc:narrow(2, 1, H):double() - o * c2:tanh()):abs():max():item() < 1e-5)
    local xg, gh, h = pt.randn(5, 3 * H), pt.randn(5, 3 * H), pt.randn(5, H)
    local xd, ghd = xg:double(), gh:double()
    local r = (xd:narrow(2, 1, H) + ghd:narrow(2, 1, H)):sigmoid()
    local z = (xd:narrow(2, H + 1, H) + ghd:narrow(2, H + 1, H)):sigmoid()
    local n = (xd:narrow(2, 2 * H + 1, H) + r * ghd:narrow(2, 2 * H + 1, H)):tanh()
    local want = n + z * (h:double() - n)
    assert.is_true((pt._gru_cell(xg, gh, h):double() - want):abs():max():item() < 1e-5)
  end)

  it("check their inputs", function()
    local x = pt.randn(2, 8)
    assert.are.equal("lstm_cell: x_proj {2,8} and gh {2,4} must have one shape {..., 4*H}",
                     err(function() return pt._lstm_cell(x, pt.randn(2, 4), pt.randn(2, 2)) end))
    assert.are.equal("lstm_cell: c {2,3} does not match x_proj {2,8} (expected {..., 2})",
                     err(function() return pt._lstm_cell(x, x, pt.randn(2, 3)) end))
    assert.are.equal("gru_cell: x_proj {2,8} and gh {2,8} must have one shape {..., 3*H}",
                     err(function() return pt._gru_cell(x, x, pt.randn(2, 2)) end))
    assert.are.equal("gru_cell: h dtype float64 does not match input dtype float32",
                     err(function() return pt._gru_cell(pt.randn(2, 6), pt.randn(2, 6), pt.randn(2, 2):double()) end))
    assert.are.equal("lstm_cell: x_proj must be float32 or float64, got int64",
                     err(function() return pt._lstm_cell(x:long(), x:long(), pt.zeros(2, 2):long()) end))
  end)
end)
