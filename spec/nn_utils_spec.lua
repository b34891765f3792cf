-- nn.utils (nn_extra.lua): parameters_to_vector, vector_to_parameters, clip_grad_norm_,
-- clip_grad_value_, and PyTorch 1.13's hook-based weight_norm / remove_weight_norm and
-- spectral_norm / remove_spectral_norm (a PyTorch state_dict with u and v loads, so the power
-- iteration is compared step for step).
-- Reference values (R) were computed once with /usr/bin/python3 and torch 1.13 in float64 on the
-- inputs gen() makes (the same formula there: exact multiples of 1/4, so both sides start from
-- the same numbers); torch's 0-based indices and offsets are 1-based here. Python is not run at
-- test time.
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local F64 = {dtype = "float64"}

-- element i (from 0) of a tensor of the given shape: ((i*a + 3) % m - m//2) / div
local function gen(shape, a, m, div)
  a, m, div = a or 7, m or 19, div or 4.0
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = ((i * a + 3) % m - m // 2) / div end
  return pt.tensor(v, F64):reshape(shape)
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local function assert_err(text, f, ...)
  local msg = err_of(f, ...)
  if not msg:find(text, 1, true) then
    error(string.format("expected error containing %q, got %q", text, msg), 2)
  end
end

local function names(iter_fn)
  local out = {}
  for k in iter_fn do out[#out + 1] = k end
  return out
end

local function keys_of(sd)
  local out = {}
  for k in pairs(sd) do out[#out + 1] = k end
  return out
end

local function R_t(v) return pt.tensor(v, F64) end

-- generated once by /usr/bin/python3 with torch 1.13.0a0 (float64); see the header
local R = {
  wn_g = {{1.75}, {1.4361406616345072}},
  wn_v = {{-0.75, 0.5, -1.5}, {-0.25, 1.0, -1.0}},
  wn_y = {{-1.75, -0.625}, {4.5, 4.0}, {3.625, 3.875}, {2.75, 3.75}},
  wn_gg = {{-2.857142857142857}, {0.9574271077563381}},
  wn_gv = {{-0.7244897959183674, -1.308673469387755, -0.07397959183673475}, {-1.5833333333333333, 0.20833333333333337, 0.6041666666666666}},
  wn_gb = {-1.5, 1.5},
  wn2_y = {{1.7284978790940957, -0.0358132858136786}, {1.8245255390437676, -0.3930011430017144}, {1.9205531989934395, -0.29775104775157146}, {2.0165808589431116, -0.20250095250142874}},
  wn2_w = {{-0.9602765994967198, 1.1523319193960637, 0.0}, {0.5715005715008572, -0.47625047625071437, 0.09525009525014287}},
  wnall_g = 2.2638462845343543,
  wnall_y = {{-1.5460413650478515, -0.4647467868233117}, {3.975534938694475, 3.62121967794601}, {3.2025142561705495, 3.5107881518711634}, {2.429493573646624, 3.400356625796317}},
  wnc_g = {{{{2.7613402542968153}}, {{3.6827299656640586}}}},
  wnc_y = {{{{1.4143776250908906, 1.3690141279604142}, {-2.1609150335048, 0.5881867838478811}}, {{-1.2638031392865452, 3.7482489809863657}, {2.3793043978326547, 1.587073154456428}}, {{-1.7207451388465165, 3.0537375790731622}, {1.6395338159990303, 0.39471077341859007}}}},
  wnc_gg = {{{{0.05658484127657408}}, {{0.5303470572672896}}}},
  wnc_gv = {{{{0.1499034483654815, 0.032095664068351855}, {0.24322205545438894, -0.5196529193956853}}, {{1.1776539706294336, -0.9400584889736877}, {0.2180435164108687, -0.21913842646458181}}}, {{{0.284779447080463, -0.03673376581233334}, {0.19702656208433336, -0.3395090476594445}}, {{-0.06381761455927865, -1.5026858408602695}, {-0.2766994121454998, 0.21913842646458181}}}, {{{-0.37253233207659264, 0.21131191545579633}, {-0.3244815980089445, 0.474385046374426}}, {{-0.8300982364364994, 1.7362145137450806}, {0.654130549232606, 0.6408352128660897}}}},
  sn_keys = {'bias', 'weight_orig', 'weight_u', 'weight_v'},
  sn_u0 = {-0.8650991003369812, 0.33749366446850354, 0.37108162584499776},
  sn_v0 = {0.8921092399547464, 0.09376443395430112, -0.4210446798109142, -0.13442735032544068},
  sn_y = {{-0.5579964993707909, -0.2729935821797831, -0.8312463535112405}, {-0.46499708280899243, 2.516988914674171, -0.7847466452303412}, {-0.37199766624719394, -0.43574256116293064, -0.738246936949442}, {0.6044962076516902, 0.5872510210168526, 0.6334944573370855}, {-0.18599883312359694, -0.598491540146078, -0.6452475203876435}},
  sn_u1 = {-0.5965215091760662, 0.6465121835968712, -0.4755881469834104},
  sn_v1 = {0.5340759322835463, -0.32795917691911264, 0.6123707459204548, 0.4818793898589407},
  sn_gw = {{0.19754533564755922, -0.5295932428983641, -0.5986827254704081, 0.17036754368874651}, {0.3072697642224026, 0.8449172148337911, 0.3386815091146924, 0.2863286009608761}, {-0.5296195025913327, -0.5542053200881426, 0.21451853474938587, -0.46771502811435417}},
  sn_gb = {-0.25, 0.0, 0.25},
  sn_w = {{-0.27899824968539544, 0.18599883312359697, -0.5579964993707909, -0.09299941656179848}, {0.37199766624719394, -0.37199766624719394, 0.09299941656179848, 0.5579964993707909}, {-0.18599883312359697, 0.27899824968539544, -0.46499708280899243, 0.0}},
  sn_eval_y = {{-0.5579964993707909, -0.2729935821797831, -0.8312463535112405}, {-0.46499708280899243, 2.516988914674171, -0.7847466452303412}, {-0.37199766624719394, -0.43574256116293064, -0.738246936949442}, {0.6044962076516902, 0.5872510210168526, 0.6334944573370855}, {-0.18599883312359694, -0.598491540146078, -0.6452475203876435}},
  sn_u_eval = {-0.5965215091760662, 0.6465121835968712, -0.4755881469834104},
  sn_removed_w = {{-0.27899824968539544, 0.18599883312359697, -0.5579964993707909, -0.09299941656179848}, {0.37199766624719394, -0.37199766624719394, 0.09299941656179848, 0.5579964993707909}, {-0.18599883312359697, 0.27899824968539544, -0.46499708280899243, 0.0}},
  snc_u0 = {0.8829028909023094, -0.08794862323797817, -0.4612456231845336},
  snc_v0 = {0.1014251314297629, -0.37907311657067466, 0.18303318586480227, 0.5704437685793865, -0.301976492168614, 0.27798196128981106, 0.5543095890902873, -0.10670698939874934},
  snc_y = {{{{1.7449131706699048, 1.0874096570841438}, {-1.1885640437896454, -0.4046175468220068}}, {{-0.1603894803495156, 3.101839490902915}, {2.419047380640779, 0.395959646530744}}, {{-0.8569263202330105, 2.3800140543430452}, {1.6466447507281576, -0.8822149169093858}}}},
  snc_u1 = {0.9872922940485197, -0.11210781099999055, -0.11263110061258351},
  snc_v1 = {-0.2228949451416743, 0.03405081753923637, -0.3770624027502207, -0.12011664006931001, 0.13682912261160063, -0.2742840976778564, -0.017338334996945752, 0.8356433028342939},
  snt_u0 = {0.9317068354477144, 0.1461430956322699, -0.3325125086053497},
  snt_v0 = {0.035527220966218936, 0.26146610538430254, 0.47651988859076405, -0.3201157532014162, 0.6090672225404231, -0.25448795231001947, 0.3232400720157675, 0.2462048923854015},
  snt_y = {{{{0.5490644303276913, -1.1480438088669909, 0.48251116604554684}, {0.13310652856428873, 0.3826812696223303, 0.49914948211608295}, {-0.8651924356678771, 0.6322560106803717, -0.43259621783393853}}, {{0.30076546609552535, 1.5652774874562687, 0.08446735717855614}, {1.0162130571285777, -0.19838401602055755, 1.2990644303276913}, {1.0162130571285775, 1.1160429535517942, 0.43387199465981413}}, {{0.24914948211608295, -1.581065285642888, 0.09940463748125805}, {-0.06697852322410291, 0.06612800534018587, 0.1326812696223303}, {-1.0153625392446606, 0.49872422317412446, -0.6659579017634025}}}},
  snt_u1 = {0.7210879239536216, -0.26373930192901474, 0.6406822820605015},
}

local function backward_weighted(y, a, m)
  (y * gen(y:size(), a, m)):sum():backward()
end

local function linear(i, o)
  local m = nn.Linear(i, o, {dtype = "float64"})
  m:load_state_dict({weight = gen({o, i}, 5, 13), bias = gen({o}, 3, 7)})
  return m
end

local function conv()
  local c = nn.Conv2d(2, 3, 2):double()
  c:load_state_dict({weight = gen({3, 2, 2, 2}, 5, 13), bias = gen({3}, 3, 7)})
  return c
end

describe("nn.utils.parameters_to_vector and vector_to_parameters", function()
  it("flatten the parameters in order and copy a vector back", function()
    local m = linear(3, 2)
    local v = nn.utils.parameters_to_vector(m:parameters())
    assert.are.same({8}, v:size())
    local expect = support.flat({gen({2, 3}, 5, 13):tolist(), gen({2}, 3, 7):tolist()})
    assert.are.same(expect, v:tolist())
    assert.are.same(expect, nn.utils.parameters_to_vector(m):tolist())
    -- differentiable, as PyTorch's (views of the parameters)
    v:sum():backward()
    assert.are.same({{1, 1, 1}, {1, 1, 1}}, m.weight.grad:tolist())
    local w, b = m.weight, m.bias
    nn.utils.vector_to_parameters(pt.arange(1, 9, F64), m:parameters())
    assert.are.equal(w, m.weight) -- the same parameter objects, new values
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, m.weight:tolist())
    assert.are.same({7, 8}, b:tolist())
    assert.is_true(m.weight.requires_grad and m.weight.is_leaf)
    nn.utils.vector_to_parameters(pt.zeros(8), m) -- float32 into float64, a Module
    assert.are.same({0, 0}, m.bias:tolist())
    assert.are.same({1, 1, 3}, nn.utils.parameters_to_vector({pt.ones(2, F64), pt.full({1}, 3, F64)}):tolist())
  end)

  it("check their arguments", function()
    assert_err("parameters_to_vector: parameters must be a list of tensors or a Module, got number", nn.utils.parameters_to_vector, 3)
    assert_err("parameters_to_vector: parameters[2] must be a tensor, got string", nn.utils.parameters_to_vector, {pt.zeros(1), "x"})
    assert_err("parameters_to_vector: no parameters (an empty list)", nn.utils.parameters_to_vector, {})
    assert_err("parameters_to_vector: expected (parameters), got 2 arguments", nn.utils.parameters_to_vector, {pt.zeros(1)}, 1)
    assert_err("vector_to_parameters: vec must be a tensor, got table", nn.utils.vector_to_parameters, {1, 2}, {pt.zeros(2)})
    assert_err("vector_to_parameters: vec must be 1-dimensional, got shape {1,2}", nn.utils.vector_to_parameters, pt.zeros(1, 2), {pt.zeros(2)})
    assert_err("vector_to_parameters: vec has 3 elements, but the 2 parameters have 5",
      nn.utils.vector_to_parameters, pt.zeros(3), {pt.zeros(2), pt.zeros(3)})
    local msg = err_of(function() local v = nn.utils.parameters_to_vector({}); return v end)
    assert.matches("nn_utils_spec%.lua:%d+: parameters_to_vector:", msg)
  end)
end)

describe("nn.utils.clip_grad_norm_ and clip_grad_value_", function()
  it("are optim's clipping", function()
    local a = pt.tensor({3, 4}, F64)
    a.grad = pt.tensor({3, 4}, F64)
    local total = nn.utils.clip_grad_norm_({a}, 1)
    assert_close(total, 5)
    support.assert_close_with(1e-6)(a.grad, {0.6, 0.8})
    local m = linear(3, 2)
    m.weight.grad = pt.full({2, 3}, 5, F64)
    m.bias.grad = pt.full({2}, -5, F64)
    nn.utils.clip_grad_value_(m, 2)
    assert.are.same({{2, 2, 2}, {2, 2, 2}}, m.weight.grad:tolist())
    assert.are.same({-2, -2}, m.bias.grad:tolist())
    m.bias.grad = pt.full({2}, -5, F64)
    assert_close(nn.utils.clip_grad_norm_(m, 100, {norm_type = "inf"}), 5)
  end)

  it("raise optim's errors at the caller's line", function()
    local msg = err_of(function() local t = nn.utils.clip_grad_norm_({}, "x"); return t end)
    assert.matches("nn_utils_spec%.lua:%d+: clip_grad_norm: max_norm must be a number, got string", msg)
    msg = err_of(function() local t = nn.utils.clip_grad_value_({}, -1); return t end)
    assert.matches("nn_utils_spec%.lua:%d+: clip_grad_value: clip_value must be a non%-negative number, got %-1", msg)
    msg = err_of(function() local t = nn.utils.clip_grad_norm_(3, 1); return t end)
    assert.matches("nn_utils_spec%.lua:%d+: clip_grad_norm: expected a list of tensors or a Module, got number", msg)
  end)
end)

describe("nn.utils.weight_norm", function()
  it("splits weight into weight_g and weight_v with PyTorch's names, order and values", function()
    local m = nn.utils.weight_norm(linear(3, 2))
    assert.are.same({"bias", "weight_g", "weight_v"}, names(m:named_parameters()))
    assert.are.same({"bias", "weight_g", "weight_v"}, keys_of(m:state_dict()))
    assert_close(m.weight_g, R.wn_g)
    assert_close(m.weight_v, R.wn_v)
    assert_close(m.weight, gen({2, 3}, 5, 13)) -- computed at once: the old weight
    local x = gen({4, 3}, 7, 19)
    local y = m(x)
    assert_close(y, R.wn_y)
    backward_weighted(y, 3, 7)
    assert_close(m.weight_g.grad, R.wn_gg)
    assert_close(m.weight_v.grad, R.wn_gv)
    assert_close(m.bias.grad, R.wn_gb)
    -- a PyTorch state_dict of a weight-normed Linear loads; the weight follows at the next forward
    m:load_state_dict({bias = gen({2}, 3, 7), weight_g = pt.tensor({{1.5}, {-0.75}}, F64), weight_v = gen({2, 3}, 11, 17)})
    assert_close(m(x), R.wn2_y)
    nn.utils.remove_weight_norm(m)
    assert.are.same({"bias", "weight"}, names(m:named_parameters()))
    assert_close(m.weight, R.wn2_w)
    assert.is_true(m.weight.is_leaf and m.weight.requires_grad)
    assert_close(m(x), R.wn2_y)
    assert.is_nil(rawget(m, "forward"))
  end)

  it("takes dim (1-based) or false for the whole tensor", function()
    local m = nn.utils.weight_norm(linear(3, 2), "weight", false)
    assert.are.equal(0, m.weight_g:dim())
    assert_close(m.weight_g:item(), R.wnall_g)
    pt.no_grad(function() m.weight_g:fill_(2) end)
    assert_close(m(gen({4, 3}, 7, 19)), R.wnall_y)
    local c = nn.utils.weight_norm(conv(), nil, 2)
    assert.are.same({1, 2, 1, 1}, c.weight_g:size())
    assert_close(c.weight_g, R.wnc_g)
    c.weight_g = nn.Parameter(pt.tensor({0.5, 2.0}, F64):reshape(1, 2, 1, 1))
    local y = c(gen({1, 2, 3, 3}, 7, 19))
    assert_close(y, R.wnc_y)
    backward_weighted(y, 3, 7)
    assert_close(c.weight_g.grad, R.wnc_gg)
    assert_close(c.weight_v.grad, R.wnc_gv)
    assert.are.same({3, 1, 1, 1}, nn.utils.weight_norm(conv(), "weight", -4).weight_g:size())
  end)

  it("passes the finite-difference check in weight_g and weight_v", function()
    local m = nn.utils.weight_norm(linear(3, 2))
    local x = gen({4, 3}, 7, 19)
    gradcheck(function(g, v)
      local p = rawget(m, "_parameters")
      p.weight_g, p.weight_v = g, v
      return m(x)
    end, {R_t(R.wn_g), R_t(R.wn_v)})
    local c = nn.utils.weight_norm(conv(), "weight", false)
    gradcheck(function(g, v)
      local p = rawget(c, "_parameters")
      p.weight_g, p.weight_v = g, v
      return c(gen({1, 2, 3, 3}, 7, 19))
    end, {pt.tensor(1.5, F64), gen({3, 2, 2, 2}, 5, 13)})
  end)

  it("works under Sequential (no fusion), in RNNs, on weights other than 'weight', and keeps an own forward", function()
    local lin = linear(3, 2)
    local seq = nn.Sequential(lin, nn.ReLU())
    local x = gen({4, 3}, 7, 19)
    nn.utils.weight_norm(lin)
    pt.no_grad(function() lin.weight_g:mul_(2) end) -- the weight doubles
    assert_close(seq(x), nn.relu(nn.linear(x, gen({2, 3}, 5, 13) * 2, gen({2}, 3, 7))))
    assert.is_nil(rawget(lin._parameters, "weight")) -- taken out again after the forward
    local rnn = nn.RNN(3, 2, {dtype = "float64"})
    local ref = rnn(gen({5, 1, 3}))
    nn.utils.weight_norm(rnn, "weight_hh_l0")
    assert.are.same({"weight_ih_l0", "bias_ih_l0", "bias_hh_l0", "weight_hh_l0_g", "weight_hh_l0_v"}, names(rnn:named_parameters()))
    assert_close(rnn(gen({5, 1, 3})), ref)
    local own = linear(3, 2)
    function own:forward(t) return nn.Linear.forward(self, t) * 10 end
    local want = own(x)
    nn.utils.weight_norm(own)
    assert_close(own(x), want)
    nn.utils.remove_weight_norm(own)
    assert_close(own(x), want)
    assert.is_function(rawget(own, "forward"))
    -- a forward error leaves the parameters as they were
    local bad = nn.utils.weight_norm(linear(3, 2))
    assert.is_false(pcall(bad, pt.zeros(2, 4, F64)))
    assert.is_nil(rawget(bad._parameters, "weight"))
    assert.are.same({"bias", "weight_g", "weight_v"}, names(bad:named_parameters()))
  end)

  it("checks its arguments", function()
    assert_err("weight_norm: Linear has no parameter 'weightx'", nn.utils.weight_norm, nn.Linear(3, 2), "weightx")
    assert_err("weight_norm: cannot register two weight_norm hooks on the same parameter 'weight'",
      nn.utils.weight_norm, nn.utils.weight_norm(nn.Linear(3, 2)))
    assert_err("weight_norm: module must be a Module, got table", nn.utils.weight_norm, {})
    assert_err("weight_norm: name must be a string, got number", nn.utils.weight_norm, nn.Linear(3, 2), 1)
    assert_err("weight_norm: dim 3 out of range for parameter 'weight' of shape {2,3}", nn.utils.weight_norm, nn.Linear(3, 2), "weight", 3)
    assert_err("weight_norm: dim must be a non-zero integer (1-based, negative from the end) or false (the whole tensor), got 0",
      nn.utils.weight_norm, nn.Linear(3, 2), "weight", 0)
    assert_err("weight_norm: expected (module[, name[, dim]]), got 4 arguments", nn.utils.weight_norm, nn.Linear(3, 2), "weight", 1, 1)
    assert_err("remove_weight_norm: weight_norm of 'weight' not found in Linear", nn.utils.remove_weight_norm, nn.Linear(3, 2))
    assert_err("remove_weight_norm: module must be a Module, got nil", nn.utils.remove_weight_norm)
    local msg = err_of(function() local m = nn.utils.weight_norm(nn.Linear(3, 2), "bad"); return m end)
    assert.matches("nn_utils_spec%.lua:%d+: weight_norm:", msg)
  end)
end)

describe("nn.utils.spectral_norm", function()
  it("matches PyTorch: names, power iteration in training mode, gradients, eval mode, removal", function()
    local m = nn.utils.spectral_norm(linear(4, 3))
    assert.are.same(R.sn_keys, keys_of(m:state_dict()))
    assert.are.same({"bias", "weight_orig"}, names(m:named_parameters()))
    assert_close(m.weight, gen({3, 4}, 5, 13)) -- the original values until the first forward
    m:load_state_dict({bias = gen({3}, 3, 7), weight_orig = gen({3, 4}, 5, 13), weight_u = R_t(R.sn_u0), weight_v = R_t(R.sn_v0)})
    local x = gen({5, 4}, 7, 19)
    local y = m(x)
    assert_close(y, R.sn_y)
    assert_close(m.weight_u, R.sn_u1)
    assert_close(m.weight_v, R.sn_v1)
    assert_close(m.weight, R.sn_w)
    backward_weighted(y, 3, 7)
    assert_close(m.weight_orig.grad, R.sn_gw)
    assert_close(m.bias.grad, R.sn_gb)
    m:eval()
    assert_close(m(x), R.sn_eval_y)
    assert_close(m.weight_u, R.sn_u_eval) -- no iteration in eval mode
    m:train()
    nn.utils.remove_spectral_norm(m)
    assert.are.same({"bias", "weight"}, keys_of(m:state_dict()))
    assert_close(m.weight, R.sn_removed_w)
    assert.is_nil(rawget(m, "forward"))
  end)

  it("takes n_power_iterations, eps and dim; ConvTranspose normalises along its output channels", function()
    local c = nn.utils.spectral_norm(conv(), "weight", 3, 1e-6)
    assert.are.same({3}, c.weight_u:size())
    assert.are.same({8}, c.weight_v:size())
    c.weight_u:copy_(R_t(R.snc_u0))
    c.weight_v:copy_(R_t(R.snc_v0))
    assert_close(c(gen({1, 2, 3, 3}, 7, 19)), R.snc_y)
    assert_close(c.weight_u, R.snc_u1)
    assert_close(c.weight_v, R.snc_v1)
    local t = nn.ConvTranspose2d(2, 3, 2):double()
    t:load_state_dict({weight = gen({2, 3, 2, 2}, 5, 13), bias = gen({3}, 3, 7)})
    nn.utils.spectral_norm(t)
    assert.are.same({3}, t.weight_u:size())
    t.weight_u:copy_(R_t(R.snt_u0))
    t.weight_v:copy_(R_t(R.snt_v0))
    assert_close(t(gen({1, 2, 2, 2}, 7, 19)), R.snt_y)
    assert_close(t.weight_u, R.snt_u1)
    assert.are.same({2}, nn.utils.spectral_norm(conv(), "weight", 1, 1e-12, 2).weight_u:size())
    -- unit vectors at first, in the weight's dtype
    local f = nn.utils.spectral_norm(nn.Linear(5, 4))
    assert.are.equal("float32", f.weight_u:dtype())
    support.assert_close_with(1e-6)(f.weight_u:norm():item(), 1)
    support.assert_close_with(1e-6)(f.weight_v:norm():item(), 1)
  end)

  it("passes the finite-difference check in weight_orig (eval mode: u and v fixed)", function()
    local m = nn.utils.spectral_norm(linear(4, 3))
    m:load_state_dict({bias = gen({3}, 3, 7), weight_orig = gen({3, 4}, 5, 13), weight_u = R_t(R.sn_u0), weight_v = R_t(R.sn_v0)})
    m:eval()
    local x = gen({5, 4}, 7, 19)
    gradcheck(function(w)
      rawget(m, "_parameters").weight_orig = w
      return m(x)
    end, {gen({3, 4}, 5, 13)})
  end)

  it("combines with weight_norm on another parameter; each removes on its own", function()
    local lstm = nn.LSTM(2, 3, {dtype = "float64"})
    local x = gen({4, 1, 2})
    local ref = lstm(x)
    nn.utils.weight_norm(lstm, "weight_ih_l0")
    nn.utils.spectral_norm(lstm, "weight_hh_l0")
    lstm:eval()
    local out = lstm(x)
    assert.are.same(ref:size(), out:size())
    nn.utils.remove_weight_norm(lstm, "weight_ih_l0")
    assert.is_function(rawget(lstm, "forward"))
    nn.utils.remove_spectral_norm(lstm, "weight_hh_l0")
    assert.is_nil(rawget(lstm, "forward"))
    assert.are.same({"bias_ih_l0", "bias_hh_l0", "weight_ih_l0", "weight_hh_l0"}, names(lstm:named_parameters()))
    assert_close(lstm(x), out)
  end)

  it("checks its arguments", function()
    assert_err("spectral_norm: n_power_iterations must be a positive integer, got 0", nn.utils.spectral_norm, nn.Linear(3, 2), "weight", 0)
    assert_err("spectral_norm: eps must be non-negative, got -1", nn.utils.spectral_norm, nn.Linear(3, 2), "weight", 1, -1)
    assert_err("spectral_norm: Linear has no parameter 'w'", nn.utils.spectral_norm, nn.Linear(3, 2), "w")
    assert_err("spectral_norm: cannot register two spectral_norm hooks on the same parameter 'weight'",
      nn.utils.spectral_norm, nn.utils.spectral_norm(nn.Linear(3, 2)))
    assert_err("spectral_norm: dim 3 out of range for parameter 'weight' of shape {2,3}", nn.utils.spectral_norm, nn.Linear(3, 2), nil, nil, nil, 3)
    assert_err("spectral_norm: dim must be a non-zero integer (1-based, negative from the end), got boolean",
      nn.utils.spectral_norm, nn.Linear(3, 2), nil, nil, nil, false)
    assert_err("spectral_norm: module must be a Module, got number", nn.utils.spectral_norm, 1)
    assert_err("spectral_norm: expected (module[, name[, n_power_iterations[, eps[, dim]]]]), got 6 arguments",
      nn.utils.spectral_norm, nn.Linear(3, 2), "weight", 1, 1e-12, 1, 1)
    assert_err("remove_spectral_norm: spectral_norm of 'weight' not found in Linear", nn.utils.remove_spectral_norm, nn.Linear(3, 2))
    assert_err("remove_spectral_norm: spectral_norm of 'weight' not found in Linear",
      nn.utils.remove_spectral_norm, nn.utils.weight_norm(nn.Linear(3, 2)))
  end)
end)

describe("hooked modules in workers", function()
  it("run under nn.DataParallel as in the caller (the hook's forward travels with the model)", function()
    pt.manual_seed(1)
    local m = nn.Sequential(nn.utils.weight_norm(linear(3, 4)), nn.Tanh(), nn.utils.spectral_norm(linear(4, 2)))
    m:eval()
    local x = gen({8, 3}, 7, 19)
    local ref = m(x)
    local y = nn.DataParallel(m, {devices = {"cpu:1", "cpu:2"}})(x)
    assert_close(y, ref)
    y:sum():backward()
    assert.are.same({4, 1}, m[1].weight_g.grad:size())
    assert.are.same({2, 4}, m[3].weight_orig.grad:size())
  end)
end)

describe("nn.utils", function()
  it("is reached through nn's lazily loaded extras, rnn included, with help texts", function()
    assert.is_table(nn.utils.rnn)
    assert.is_function(nn.utils.rnn.pad_sequence)
    for _, k in ipairs({"parameters_to_vector", "vector_to_parameters", "clip_grad_norm_", "clip_grad_value_",
                        "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"}) do
      assert.is_function(nn.utils[k], k)
      assert.matches("^nn%.utils%." .. k .. "%(", pt._docs[nn.utils[k]])
    end
    assert.matches("weight_norm", pt._docs[nn.utils])
  end)
end)
