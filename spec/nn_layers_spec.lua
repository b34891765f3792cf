-- nn_extra.lua's layers that PyTorch 1.13 has and partrain lacked: the padding layers, Bilinear,
-- EmbeddingBag, ParameterList/ParameterDict, LocalResponseNorm, Softmax2d, ChannelShuffle,
-- AlphaDropout/FeatureAlphaDropout, Unfold/Fold, and their nn.functional forms.
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
local I64 = {dtype = "int64"}

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

-- generated once by /usr/bin/python3 with torch 1.13.0a0 (float64); see the header
local R = {
  refl1d = {{{2.0, 0.25, -1.5, 0.25, 2.0, -1.0, 2.0, 0.25}, {-0.5, -2.25, 0.75, -2.25, -0.5, 1.25, -0.5, -2.25}}},
  repl1d = {{{-1.5, -1.5, -1.5, -1.5, 0.25, 2.0, -1.0, -1.0}, {0.75, 0.75, 0.75, 0.75, -2.25, -0.5, 1.25, 1.25}}},
  const1d = {{{2.5, 2.5, -1.5, 0.25, 2.0}, {2.5, 2.5, 0.75, -2.25, -0.5}}},
  refl2d = {{{-2.25, 1.25, -2.25, -1.0, -2.25, 1.25}, {-1.25, 2.25, -1.25, 0.0, -1.25, 2.25}, {-0.25, -1.5, -0.25, 1.0, -0.25, -1.5}, {-1.25, 2.25, -1.25, 0.0, -1.25, 2.25}, {-2.25, 1.25, -2.25, -1.0, -2.25, 1.25}}, {{-0.5, -1.75, -0.5, 0.75, -0.5, -1.75}, {0.5, -0.75, 0.5, 1.75, 0.5, -0.75}, {1.5, 0.25, 1.5, -2.0, 1.5, 0.25}, {0.5, -0.75, 0.5, 1.75, 0.5, -0.75}, {-0.5, -1.75, -0.5, 0.75, -0.5, -1.75}}},
  repl2d = {{{-1.5, -1.5, -0.25, 1.0}, {-1.5, -1.5, -0.25, 1.0}, {-1.5, -1.5, -0.25, 1.0}, {2.25, 2.25, -1.25, 0.0}, {1.25, 1.25, -2.25, -1.0}, {1.25, 1.25, -2.25, -1.0}}, {{0.25, 0.25, 1.5, -2.0}, {0.25, 0.25, 1.5, -2.0}, {0.25, 0.25, 1.5, -2.0}, {-0.75, -0.75, 0.5, 1.75}, {-1.75, -1.75, -0.5, 0.75}, {-1.75, -1.75, -0.5, 0.75}}},
  zero2d = {{{0.0, -1.5, -0.25, 1.0}, {0.0, 2.25, -1.25, 0.0}, {0.0, 1.25, -2.25, -1.0}, {0.0, 0.0, 0.0, 0.0}}, {{0.0, 0.25, 1.5, -2.0}, {0.0, -0.75, 0.5, 1.75}, {0.0, -1.75, -0.5, 0.75}, {0.0, 0.0, 0.0, 0.0}}},
  const2d = {{{-1.5, -1.5, -1.5, -1.5, -1.5}, {-1.5, -1.5, -0.25, 1.0, -1.5}, {-1.5, 2.25, -1.25, 0.0, -1.5}, {-1.5, 1.25, -2.25, -1.0, -1.5}, {-1.5, -1.5, -1.5, -1.5, -1.5}}, {{-1.5, -1.5, -1.5, -1.5, -1.5}, {-1.5, 0.25, 1.5, -2.0, -1.5}, {-1.5, -0.75, 0.5, 1.75, -1.5}, {-1.5, -1.75, -0.5, 0.75, -1.5}, {-1.5, -1.5, -1.5, -1.5, -1.5}}},
  refl3d = {{{{{2.25, -0.5, 2.25, 0.25, 2.25}, {-1.25, 0.75, -1.25, 1.5, -1.25}, {2.25, -0.5, 2.25, 0.25, 2.25}, {-1.25, 0.75, -1.25, 1.5, -1.25}}, {{0.0, 2.0, 0.0, -2.0, 0.0}, {1.25, -1.5, 1.25, -0.75, 1.25}, {0.0, 2.0, 0.0, -2.0, 0.0}, {1.25, -1.5, 1.25, -0.75, 1.25}}, {{2.25, -0.5, 2.25, 0.25, 2.25}, {-1.25, 0.75, -1.25, 1.5, -1.25}, {2.25, -0.5, 2.25, 0.25, 2.25}, {-1.25, 0.75, -1.25, 1.5, -1.25}}, {{0.0, 2.0, 0.0, -2.0, 0.0}, {1.25, -1.5, 1.25, -0.75, 1.25}, {0.0, 2.0, 0.0, -2.0, 0.0}, {1.25, -1.5, 1.25, -0.75, 1.25}}}}},
  repl3d = {{{{{-1.5, 1.25, -0.75, -0.75}, {-1.5, 1.25, -0.75, -0.75}, {2.0, 0.0, -2.0, -2.0}}, {{-1.5, 1.25, -0.75, -0.75}, {-1.5, 1.25, -0.75, -0.75}, {2.0, 0.0, -2.0, -2.0}}, {{-1.5, 1.25, -0.75, -0.75}, {-1.5, 1.25, -0.75, -0.75}, {2.0, 0.0, -2.0, -2.0}}, {{0.75, -1.25, 1.5, 1.5}, {0.75, -1.25, 1.5, 1.5}, {-0.5, 2.25, 0.25, 0.25}}}}},
  const3d = {{{{{0.5, 0.5, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5}}, {{0.5, -1.5, 1.25, -0.75}, {0.5, 2.0, 0.0, -2.0}, {0.5, 0.5, 0.5, 0.5}}, {{0.5, 0.75, -1.25, 1.5}, {0.5, -0.5, 2.25, 0.25}, {0.5, 0.5, 0.5, 0.5}}}}},
  bil_y = {{-6.515625, 0.28125, 2.140625, 4.953125}, {-1.5, 1.3125, 0.78125, 0.40625}, {-1.3125, 2.71875, 3.40625, -5.3125}, {4.5625, -3.109375, -1.109375, -0.8125}, {0.25, 1.296875, -0.734375, -1.28125}},
  bil_gx1 = {{-14.625, 4.765625}, {3.34375, 3.6875}, {2.875, 0.96875}, {-1.65625, -9.671875}, {2.71875, -4.921875}},
  bil_gx2 = {{-8.4375, -4.453125, 4.3125}, {4.6875, -3.84375, -4.40625}, {-9.9375, 5.15625, -4.453125}, {15.84375, -5.328125, -12.953125}, {0.796875, -1.546875, 3.28125}},
  bil_gW = {{{-8.578125, -8.859375, 0.609375}, {-5.53125, -5.53125, -0.65625}}, {{2.625, 4.875, 1.03125}, {4.265625, 5.015625, 2.71875}}, {{2.6875, -1.875, -0.34375}, {0.765625, -2.765625, -3.25}}, {{1.3125, 4.3125, -2.4375}, {-0.9375, 1.3125, -1.3125}}},
  bil_gb = {-0.75, 4.0, -2.75, 2.0},
  bil_3d = {{{-6.515625, -0.46875, 2.390625, 4.453125}, {-1.5, 0.5625, 1.03125, -0.09375}, {-1.3125, 1.96875, 3.65625, -5.8125}}, {{4.5625, -3.859375, -0.859375, -1.3125}, {0.25, 0.546875, -0.484375, -1.78125}, {-7.0625, 3.90625, 2.65625, 2.46875}}},
  bil_1d = {-6.515625, 0.28125, 2.140625, 4.953125},
  bag_sum = {{0.75, -1.5, 2.0}, {0.0, 0.0, 0.0}, {2.0, -4.25, 1.0}, {1.5, -4.75, 0.5}},
  bag_sum_gw = {{-0.25, 1.25, -0.75}, {-0.75, 0.0, 0.75}, {-0.75, 0.75, 0.5}, {-0.25, 0.5, -0.5}, {-0.75, 0.0, 0.75}, {-0.25, 0.5, -0.5}},
  bag_sum_pad = {{-2.0, -0.25, 1.5}, {0.0, 0.0, 0.0}, {-0.75, -3.0, 0.5}, {1.5, -4.75, 0.5}},
  bag_sum_pad_gw = {{-0.25, 1.25, -0.75}, {-0.75, 0.0, 0.75}, {0.0, 0.0, 0.0}, {-0.25, 0.5, -0.5}, {-0.75, 0.0, 0.75}, {-0.25, 0.5, -0.5}},
  bag_mean = {{0.375, -0.75, 1.0}, {0.0, 0.0, 0.0}, {0.6666666666666666, -1.4166666666666667, 0.3333333333333333}, {0.5, -1.5833333333333333, 0.16666666666666666}},
  bag_mean_gw = {{-0.08333333333333333, 0.5416666666666666, -0.29166666666666663}, {-0.25, 0.0, 0.25}, {-0.25, 0.375, 0.12499999999999999}, {-0.08333333333333333, 0.16666666666666666, -0.16666666666666666}, {-0.25, 0.0, 0.25}, {-0.08333333333333333, 0.16666666666666666, -0.16666666666666666}},
  bag_mean_pad = {{-2.0, -0.25, 1.5}, {0.0, 0.0, 0.0}, {-0.375, -1.5, 0.25}, {0.5, -1.5833333333333333, 0.16666666666666666}},
  bag_mean_pad_gw = {{-0.08333333333333333, 0.9166666666666666, -0.41666666666666663}, {-0.375, 0.0, 0.375}, {0.0, 0.0, 0.0}, {-0.08333333333333333, 0.16666666666666666, -0.16666666666666666}, {-0.375, 0.0, 0.375}, {-0.08333333333333333, 0.16666666666666666, -0.16666666666666666}},
  bag_max = {{2.75, -0.25, 1.5}, {0.0, 0.0, 0.0}, {2.75, -0.75, 1.0}, {2.25, -0.25, 1.5}},
  bag_max_gw = {{0.0, 1.25, -0.75}, {0.0, 0.0, 0.75}, {-0.75, 0.0, 0.0}, {-0.25, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}},
  bag_max_pad = {{-2.0, -0.25, 1.5}, {0.0, 0.0, 0.0}, {1.75, -0.75, 1.0}, {2.25, -0.25, 1.5}},
  bag_max_pad_gw = {{0.0, 1.25, -0.75}, {0.0, 0.0, 0.75}, {0.0, 0.0, 0.0}, {-0.25, 0.0, 0.0}, {-0.75, 0.0, 0.0}, {0.0, 0.0, 0.0}},
  bag_psw = {{6.125, -1.625, -0.75}, {0.0, 0.0, 0.0}, {2.625, 1.125, -3.25}, {-2.0, 6.0, 2.5}},
  bag_psw_gw = {{0.0, -0.75, 0.25}, {1.5, 0.0, -1.5}, {1.125, 1.125, -1.5}, {-0.125, 0.25, -0.25}, {-0.75, 0.0, 0.75}, {0.625, -1.25, 1.25}},
  bag_psw_gp = {-0.5625, -1.0625, -1.6875, -1.6875, 2.625, -1.4375, -1.1875, -0.375},
  bag_last = {{1.1666666666666667, -0.9166666666666666, 0.8333333333333334}, {0.0, 0.0, 0.0}, {0.15, -1.55, 0.2}},
  bag2d_sum = {{1.5, -4.75, 0.5}, {3.0, -3.25, 2.0}, {-2.25, -2.75, 2.5}},
  bag2d_mean = {{0.5, -1.5833333333333333, 0.16666666666666666}, {1.0, -1.0833333333333333, 0.6666666666666666}, {-0.75, -0.9166666666666666, 0.8333333333333334}},
  bag2d_max = {{2.25, -0.25, 1.5}, {2.75, -0.75, 1.0}, {1.75, -0.25, 1.5}},
  bag2d_max_pad = {{2.25, -1.75, 0.0}, {2.75, -0.75, 1.0}, {1.75, -2.25, -0.5}},
  bag2d_psw = {{0.5, -1.25, -3.0}, {-4.0, 0.875, 0.0}, {-9.375, 5.0, 5.0}},
  lrn3 = {{{-1.3859664938751446, 0.32861809054160085, 1.1743284676817811}, {-0.8999771794154319, 0.7840496198521226, -1.1249474091009042}, {-0.5946035575013605, 0.9615745804071667, -0.9914805360618458}, {0.0, 0.9914805360618458, -0.9615745804071667}, {0.7029266564879363, 1.3985960796649843, -0.7902970527889578}}, {{0.9239776625834297, -1.414213562373095, -0.3599326390613852}, {0.9874878194421582, -0.9874878194421582, 0.32514062505642805}, {1.0401409695246115, -0.8999771794154319, 0.7840496198521226}, {-1.1249474091009042, -0.5946035575013605, 0.9615745804071667}, {-1.0877969508505434, 0.0, 1.4134629822853542}}},
  lrn3_g = {{{-0.06982581564430075, 0.4947441423133345, -0.012451379087204714}, {0.24533665130989385, -0.2558988537812413, -0.0994487225122811}, {-0.43578148989800247, 0.027312123871112978, 0.18718166197624705}, {-0.1679203449169745, 0.2091551880936583, -0.19376247833490343}, {0.15925682061054805, -0.14629420323646622, 0.030259339942882865}}, {{0.30590777592074325, -0.06901969654031004, 0.34092083913966564}, {-0.22545707456242414, -0.00792158351526498, -0.4625092722430374}, {0.12047583665177183, 0.2954287147085969, -0.09632375374632901}, {0.18113989863796376, -0.30991705316652957, -0.016776932603629766}, {-0.18943043611101115, 0.0, 0.1014477199341518}}},
  lrn4 = {{{{-1.543033499620919, 0.0, 1.543033499620919}, {-1.948961162363966, -0.6900655593423541, 1.0056022847309865}}, {{1.9460170216420796, -1.2909944487358056, 0.3071475584169756}, {1.4770978917519928, -1.7320508075688774, -0.3333333333333333}}, {{1.0, -2.0, -1.0}, {0.5773502691896258, 1.7232808737106582, -1.535737792084878}}, {{0.0, 1.2162606385262997, -1.8843366572035793}, {-0.674199862463242, 0.8075728530872482, 1.9460170216420796}}}, {{{-1.2909944487358056, 0.35136418446315326, 1.7616606585441106}, {-1.7616606585441106, -0.35136418446315326, 1.2909944487358056}}, {{-2.0, -1.0, 0.5773502691896258}, {1.7232808737106582, -1.535737792084878, 0.0}}, {{1.2162606385262997, -1.8843366572035793, -0.674199862463242}, {0.8075728530872482, 1.9460170216420796, -1.2909944487358056}}, {{0.3071475584169756, 1.4770978917519928, -1.7320508075688774}, {-0.3333333333333333, 1.0, -2.0}}}},
  lrn4_g = {{{{-0.08636170214387928, 0.5303300858899106, -0.13929659568121364}, {0.14133306121898165, -0.3574701607653642, 0.13954091656394305}}, {{-0.25169946812768307, 0.07500000000000001, 0.4563749099120157}, {-0.139536435863973, 0.17074021469435707, -0.34411772200778884}}, {{0.11249999999999999, -0.19621276595204018, 0.06144576056098629}, {0.4185789451624787, -0.14798280876463837, 0.2059198624782197}}, {{-0.3227486121839514, 0.10363404257265513, -0.2604129852346561}, {0.0, 0.3774525291603443, -0.07556648937589436}}}, {{{0.29395717681995953, -0.3359152439142254, 0.13011237889305086}, {-0.27240221677869675, 0.021732138567238844, 0.40343576522993924}}, {{0.011361702143879271, 0.32048192018699545, -0.26372990596142726}, {0.12750088857764294, -0.32327341074130944, 0.0}}, {{0.3109021277179653, 0.007192810154483864, 0.33621096381446985}, {-0.2405239083291184, 0.12556648937589437, -0.42843576522993926}}, {{0.0, 0.2887054970242531, -0.10103629710818451}, {0.32962962962962966, -0.22499999999999998, 0.07500000000000001}}}},
  lrn_default = {{{-11.910780348288965, 1.9974537872234521}, {15.870435166413744, -7.941699721744329}, {5.949647626004504, -17.835717193092353}, {-3.962611987781119, 9.909465962545168}, {-13.884570592466426, 0.0}, {13.893847014782265, -9.962663314054993}}},
  lrn5d = {{{{{-0.642529405317179, 0.4283529368781193}}, {{-1.1258799375612023, -0.20672455764868078}}}, {{{0.8567058737562386, -0.8567058737562386}}, {{0.18764665626020038, 1.2403473458920846}}}, {{{-0.4283529368781193, 0.642529405317179}}, {{-0.9382332813010019, 0.0}}}}},
  sm2d = {{{{0.12439933636299547, 0.3988583752995175}, {0.12439933636299547, 0.12439933636299547}}, {{0.7158687539278308, 0.08899733315712387}, {0.7158687539278308, 0.7158687539278308}}, {{0.15973190970917378, 0.5121442915433586}, {0.15973190970917378, 0.15973190970917378}}}, {{{0.3988583752995175, 0.12439933636299547}, {0.3988583752995175, 0.12439933636299547}}, {{0.08899733315712387, 0.7158687539278308}, {0.08899733315712387, 0.7158687539278308}}, {{0.5121442915433586, 0.15973190970917378}, {0.5121442915433586, 0.15973190970917378}}}},
  sm2d3 = {{{0.13837059054054027, 0.5897976636568125}}, {{0.06536163885437346, 0.278600689196273}}, {{0.7962677706050862, 0.13160164714691433}}},
  shuffle = {{{0.0, 1.0}, {4.0, 5.0}, {8.0, 9.0}, {2.0, 3.0}, {6.0, 7.0}, {10.0, 11.0}}, {{12.0, 13.0}, {16.0, 17.0}, {20.0, 21.0}, {14.0, 15.0}, {18.0, 19.0}, {22.0, 23.0}}},
  shuffle4 = {{{{0.0, 1.0}, {2.0, 3.0}}, {{8.0, 9.0}, {10.0, 11.0}}, {{4.0, 5.0}, {6.0, 7.0}}, {{12.0, 13.0}, {14.0, 15.0}}}},
  unf_shape = {2, 18, 24},
  unf = {{{0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 2.25, -3.25, -1.5, 0.25, 2.0, 0.0, 0.0, -0.25, 1.5, 3.25, -2.25, -0.5, 1.25}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 2.25, -3.25, -1.5, 0.25, 2.0, 0.0, 0.0, -0.25, 1.5, 3.25, -2.25, -0.5, 1.25, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 2.25, -3.25, -1.5, 0.25, 2.0, 0.0, 0.0, -0.25, 1.5, 3.25, -2.25, -0.5, 1.25, 0.0, 0.0}, {0.0, 0.0, 0.5, 2.25, -3.25, -1.5, 0.25, 2.0, 0.0, 0.0, -0.25, 1.5, 3.25, -2.25, -0.5, 1.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.5, 2.25, -3.25, -1.5, 0.25, 2.0, 0.0, 0.0, -0.25, 1.5, 3.25, -2.25, -0.5, 1.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.5, 2.25, -3.25, -1.5, 0.25, 2.0, 0.0, 0.0, -0.25, 1.5, 3.25, -2.25, -0.5, 1.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.25, -3.25, -1.5, 0.25, 2.0, -3.5, 0.0, 0.0, 1.5, 3.25, -2.25, -0.5, 1.25, 3.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.25, -3.25, -1.5, 0.25, 2.0, -3.5, 0.0, 0.0, 1.5, 3.25, -2.25, -0.5, 1.25, 3.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.25, -3.25, -1.5, 0.25, 2.0, -3.5, 0.0, 0.0, 1.5, 3.25, -2.25, -0.5, 1.25, 3.0, 0.0, 0.0}, {0.0, 0.0, 2.25, -3.25, -1.5, 0.25, 2.0, -3.5, 0.0, 0.0, 1.5, 3.25, -2.25, -0.5, 1.25, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 2.25, -3.25, -1.5, 0.25, 2.0, -3.5, 0.0, 0.0, 1.5, 3.25, -2.25, -0.5, 1.25, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {2.25, -3.25, -1.5, 0.25, 2.0, -3.5, 0.0, 0.0, 1.5, 3.25, -2.25, -0.5, 1.25, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -3.25, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 3.25, -2.25, -0.5, 1.25, 3.0, -2.5}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -3.25, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 3.25, -2.25, -0.5, 1.25, 3.0, -2.5, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -3.25, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 3.25, -2.25, -0.5, 1.25, 3.0, -2.5, 0.0, 0.0}, {0.0, 0.0, -3.25, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 3.25, -2.25, -0.5, 1.25, 3.0, -2.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, -3.25, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 3.25, -2.25, -0.5, 1.25, 3.0, -2.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {-3.25, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 3.25, -2.25, -0.5, 1.25, 3.0, -2.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 0.0, -2.25, -0.5, 1.25, 3.0, -2.5, -0.75}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 0.0, -2.25, -0.5, 1.25, 3.0, -2.5, -0.75, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 0.0, -2.25, -0.5, 1.25, 3.0, -2.5, -0.75, 0.0, 0.0}, {0.0, 0.0, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 0.0, -2.25, -0.5, 1.25, 3.0, -2.5, -0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, -1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 0.0, -2.25, -0.5, 1.25, 3.0, -2.5, -0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {-1.5, 0.25, 2.0, -3.5, -1.75, 0.0, 0.0, 0.0, -2.25, -0.5, 1.25, 3.0, -2.5, -0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 2.0, -3.5, -1.75, 0.0, 1.75, 0.0, 0.0, -0.5, 1.25, 3.0, -2.5, -0.75, 1.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 2.0, -3.5, -1.75, 0.0, 1.75, 0.0, 0.0, -0.5, 1.25, 3.0, -2.5, -0.75, 1.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 2.0, -3.5, -1.75, 0.0, 1.75, 0.0, 0.0, -0.5, 1.25, 3.0, -2.5, -0.75, 1.0, 0.0, 0.0}, {0.0, 0.0, 0.25, 2.0, -3.5, -1.75, 0.0, 1.75, 0.0, 0.0, -0.5, 1.25, 3.0, -2.5, -0.75, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.25, 2.0, -3.5, -1.75, 0.0, 1.75, 0.0, 0.0, -0.5, 1.25, 3.0, -2.5, -0.75, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.25, 2.0, -3.5, -1.75, 0.0, 1.75, 0.0, 0.0, -0.5, 1.25, 3.0, -2.5, -0.75, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -3.5, -1.75, 0.0, 1.75, 3.5, 0.0, 0.0, 1.25, 3.0, -2.5, -0.75, 1.0, 2.75}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -3.5, -1.75, 0.0, 1.75, 3.5, 0.0, 0.0, 1.25, 3.0, -2.5, -0.75, 1.0, 2.75, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -3.5, -1.75, 0.0, 1.75, 3.5, 0.0, 0.0, 1.25, 3.0, -2.5, -0.75, 1.0, 2.75, 0.0, 0.0}, {0.0, 0.0, 2.0, -3.5, -1.75, 0.0, 1.75, 3.5, 0.0, 0.0, 1.25, 3.0, -2.5, -0.75, 1.0, 2.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 2.0, -3.5, -1.75, 0.0, 1.75, 3.5, 0.0, 0.0, 1.25, 3.0, -2.5, -0.75, 1.0, 2.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {2.0, -3.5, -1.75, 0.0, 1.75, 3.5, 0.0, 0.0, 1.25, 3.0, -2.5, -0.75, 1.0, 2.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}},
  unf_g = {{{{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.25, -0.5, 0.5, -0.25, 0.75, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {-0.5, 0.5, -0.25, 0.75, 0.0, -0.75}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.75, 0.0, -0.75, 0.25, -0.5, 0.5}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, -0.75, 0.25, -0.5, 0.5, -0.25}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {-0.5, 0.5, -0.25, 0.75, 0.0, -0.75}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.5, -0.25, 0.75, 0.0, -0.75, 0.25}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}}, {{{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, -0.75, 0.25, -0.5, 0.5, -0.25}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {-0.75, 0.25, -0.5, 0.5, -0.25, 0.75}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.5, -0.25, 0.75, 0.0, -0.75, 0.25}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {-0.25, 0.75, 0.0, -0.75, 0.25, -0.5}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {-0.75, 0.25, -0.5, 0.5, -0.25, 0.75}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.25, -0.5, 0.5, -0.25, 0.75, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}}},
  unf_simple = {{{-0.5, 0.75, 0.5, -1.0}, {0.75, -0.75, -1.0, 0.25}, {0.5, -1.0, -1.25, 0.0}, {-1.0, 0.25, 0.0, 1.25}, {-0.25, 1.0, 0.75, -0.75}, {1.0, -0.5, -0.75, 0.5}, {0.75, -0.75, -1.0, 0.25}, {-0.75, 0.5, 0.25, -1.25}}},
  unf_3d = {{0.0, 0.0, 0.0, -1.0}, {0.0, 0.0, 0.5, 0.25}, {0.0, 0.75, 0.0, 0.0}, {-0.5, -0.75, -1.25, 1.25}, {0.0, 0.0, 0.0, -0.75}, {0.0, 0.0, 0.75, 0.5}, {0.0, 1.0, 0.0, 0.25}, {-0.25, -0.5, -1.0, -1.25}},
  fold_shape = {2, 3, 4, 5},
  fold = {{{{3.75, 0.5, -4.75, -2.25, -0.75}, {2.0, 4.75, -0.5, -5.75, -2.5}, {1.0, 2.75, 5.25, 0.0, -3.5}, {-0.75, -0.75, 1.75, 4.25, 2.5}}, {{1.75, 4.25, -1.0, 1.5, -2.75}, {0.0, 0.75, 3.25, 5.75, 3.25}, {-1.0, -1.25, 1.25, 3.75, 2.25}, {-2.75, -4.75, -2.25, 0.25, 0.5}}, {{-0.25, 0.25, 2.75, 5.25, 3.0}, {-2.0, -3.25, -0.75, 1.75, 1.25}, {-3.0, -5.25, -2.75, -0.25, 0.25}, {3.0, -1.0, 1.5, -3.75, -1.5}}}, {{{-2.25, -3.75, -1.25, 1.25, 1.0}, {3.75, 0.5, -4.75, -2.25, -0.75}, {2.75, -1.5, 1.0, -4.25, -1.75}, {1.0, 2.75, 5.25, 0.0, -3.5}}, {{3.5, 0.0, -5.25, -2.75, -1.0}, {1.75, 4.25, -1.0, 1.5, -2.75}, {0.75, 2.25, 4.75, -0.5, -3.75}, {-1.0, -1.25, 1.25, 3.75, 2.25}}, {{1.5, 3.75, -1.5, 1.0, -3.0}, {-0.25, 0.25, 2.75, 5.25, 3.0}, {-1.25, -1.75, 0.75, 3.25, 2.0}, {-3.0, -5.25, -2.75, -0.25, 0.25}}}},
  fold_g = {{{0.0, 0.0, 0.0, 0.0, 0.25, -0.75, 0.0, 0.75, 0.75, -0.25, 0.5, -0.5}, {0.0, 0.0, 0.0, 0.0, -0.75, 0.0, 0.75, -0.25, -0.25, 0.5, -0.5, 0.25}, {0.0, 0.75, -0.25, 0.5, 0.5, -0.5, 0.25, -0.75, 0.0, 0.0, 0.0, 0.0}, {0.75, -0.25, 0.5, -0.5, -0.5, 0.25, -0.75, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, -0.5, 0.25, -0.75, 0.0, 0.0, 0.75, -0.25, 0.5}, {0.0, 0.0, 0.0, 0.0, 0.25, -0.75, 0.0, 0.75, 0.75, -0.25, 0.5, -0.5}, {-0.75, 0.0, 0.75, -0.25, -0.25, 0.5, -0.5, 0.25, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.75, -0.25, 0.5, 0.5, -0.5, 0.25, -0.75, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.5, -0.5, 0.25, -0.75, -0.75, 0.0, 0.75, -0.25}, {0.0, 0.0, 0.0, 0.0, -0.5, 0.25, -0.75, 0.0, 0.0, 0.75, -0.25, 0.5}, {0.25, -0.75, 0.0, 0.75, 0.75, -0.25, 0.5, -0.5, 0.0, 0.0, 0.0, 0.0}, {-0.75, 0.0, 0.75, -0.25, -0.25, 0.5, -0.5, 0.25, 0.0, 0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0, 0.0, -0.25, 0.5, -0.5, 0.25, 0.25, -0.75, 0.0, 0.75}, {0.0, 0.0, 0.0, 0.0, 0.5, -0.5, 0.25, -0.75, -0.75, 0.0, 0.75, -0.25}, {-0.5, 0.25, -0.75, 0.0, 0.0, 0.75, -0.25, 0.5, 0.0, 0.0, 0.0, 0.0}, {0.25, -0.75, 0.0, 0.75, 0.75, -0.25, 0.5, -0.5, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.75, -0.25, 0.5, -0.5, -0.5, 0.25, -0.75, 0.0}, {0.0, 0.0, 0.0, 0.0, -0.25, 0.5, -0.5, 0.25, 0.25, -0.75, 0.0, 0.75}, {0.5, -0.5, 0.25, -0.75, -0.75, 0.0, 0.75, -0.25, 0.0, 0.0, 0.0, 0.0}, {-0.5, 0.25, -0.75, 0.0, 0.0, 0.75, -0.25, 0.5, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.75, -0.25, 0.5, 0.5, -0.5, 0.25, -0.75}, {0.0, 0.0, 0.0, 0.0, 0.75, -0.25, 0.5, -0.5, -0.5, 0.25, -0.75, 0.0}, {-0.25, 0.5, -0.5, 0.25, 0.25, -0.75, 0.0, 0.75, 0.0, 0.0, 0.0, 0.0}, {0.5, -0.5, 0.25, -0.75, -0.75, 0.0, 0.75, -0.25, 0.0, 0.0, 0.0, 0.0}}},
  fold_2d = {{{-0.5, -0.25, 0.25}, {0.5, -0.25, -0.75}, {1.0, 0.0, -1.0}}, {{0.25, -1.5, 1.0}, {-0.75, 0.0, 0.75}, {-1.0, 1.5, -0.25}}},
  fold_unf = {{{{-0.75, 2.0, -1.0, 1.25}, {-0.5, 6.0, 0.0, -3.0}, {0.5, -5.0, 2.0, -2.0}, {0.75, -1.5, 2.0, -0.5}}, {{1.25, -0.5, 3.0, 0.0}, {-3.0, 1.0, -5.0, 1.0}, {-2.0, 3.0, -3.0, 2.0}, {-0.5, 2.5, -0.5, 1.5}}}},
}

-- weighted sum of y with fixed weights, as the references' backward passes used
local function backward_weighted(y, a, m)
  (y * gen(y:size(), a, m)):sum():backward()
end

local function leaf(t)
  local c = t:clone()
  c.requires_grad = true
  return c
end

describe("padding layers", function()
  it("match PyTorch's modules", function()
    local x1 = gen({1, 2, 4})
    assert_close(nn.ReflectionPad1d(2)(x1), R.refl1d)
    assert_close(nn.ReplicationPad1d({3, 1})(x1), R.repl1d)
    assert_close(nn.ConstantPad1d({2, -1}, 2.5)(x1), R.const1d)
    local x2 = gen({2, 3, 3}, 5)
    assert_close(nn.ReflectionPad2d({1, 2, 2, 0})(x2), R.refl2d)
    assert_close(nn.ReplicationPad2d({1, 0, 2, 1})(x2), R.repl2d)
    assert_close(nn.ZeroPad2d({1, 0, 0, 1})(x2), R.zero2d)
    assert_close(nn.ConstantPad2d(1, -1.5)(x2), R.const2d)
    local x3 = gen({1, 1, 2, 2, 3}, 11)
    assert_close(nn.ReflectionPad3d(1)(x3), R.refl3d)
    assert_close(nn.ReplicationPad3d({0, 1, 1, 0, 2, 0})(x3), R.repl3d)
    assert_close(nn.ConstantPad3d({1, 0, 0, 1, 1, 0}, 0.5)(x3), R.const3d)
  end)

  it("take one integer for every side or a list, positionally or as options", function()
    assert.are.same({2, 2, 2, 2}, nn.ReflectionPad2d(2).padding)
    assert.are.same({1, 2}, nn.ReplicationPad1d({1, 2}).padding)
    assert.are.same({3, 3, 3, 3, 3, 3}, nn.ConstantPad3d(3, 1).padding)
    local c = nn.ConstantPad2d({padding = {1, 2, 3, 4}, value = 7})
    assert.are.same({1, 2, 3, 4}, c.padding)
    assert.are.equal(7, c.value)
    assert.are.equal(0.0, nn.ZeroPad2d(1).value)
    assert.are.same({1, 1, 1, 1}, nn.ZeroPad2d({padding = 1}).padding)
    -- a later change of the field is what forward uses
    local r = nn.ReflectionPad1d(1)
    r.padding = {0, 2}
    assert.are.same({1, 2, 6}, r(gen({1, 2, 4})):size())
    -- the same as F.pad; batched and unbatched inputs; constant padding of any rank >= nd
    local x = gen({2, 3, 4, 5})
    assert.is_true(nn.ReplicationPad2d({1, 2, 0, 3})(x):equal(F.pad(x, {1, 2, 0, 3}, "replicate")))
    assert.is_true(nn.ReflectionPad2d(1)(x[1]):equal(nn.ReflectionPad2d(1)(x)[1]))
    assert.are.same({2, 3, 6, 7}, nn.ConstantPad2d(1, 0)(x):size())
    assert.are.same({7}, nn.ConstantPad1d(1, 0)(pt.zeros(5)):size())
    assert.are.equal("float32", nn.ZeroPad2d(1)(pt.zeros(1, 2, 2)):dtype())
  end)

  it("pass gradients back", function()
    gradcheck(function(x) return nn.ReflectionPad2d({1, 2, 2, 0})(x) end, {gen({2, 3, 3}, 5)})
    gradcheck(function(x) return nn.ReplicationPad3d({0, 1, 1, 0, 2, 0})(x) end, {gen({1, 1, 2, 2, 3}, 11)})
    gradcheck(function(x) return nn.ConstantPad1d({2, -1}, 2.5)(x) end, {gen({1, 2, 4})})
    gradcheck(function(x) return nn.ReflectionPad1d(3)(x) end, {gen({2, 4})})
  end)

  it("print their padding as PyTorch does", function()
    assert.are.equal("ZeroPad2d({1, 1, 1, 1})", tostring(nn.ZeroPad2d(1)))
    assert.are.equal("ConstantPad1d(padding={1, 2}, value=3.5)", tostring(nn.ConstantPad1d({1, 2}, 3.5)))
    assert.are.equal("ConstantPad3d(padding={1, 1, 1, 1, 1, 1}, value=0)", tostring(nn.ConstantPad3d(1, 0)))
    assert.are.equal("ReflectionPad2d({2, 2, 2, 2})", tostring(nn.ReflectionPad2d(2)))
    assert.are.equal("ReplicationPad3d({1, 2, 3, 4, 5, 6})", tostring(nn.ReplicationPad3d({1, 2, 3, 4, 5, 6})))
  end)

  it("check their settings and inputs", function()
    assert_err("ReflectionPad2d: padding must be an integer or a list of 4 integers, got {1, 2}", nn.ReflectionPad2d, {1, 2})
    assert_err("ReplicationPad1d: padding must be an integer or a list of 2 integers, got 1.5", nn.ReplicationPad1d, 1.5)
    assert_err("ConstantPad3d: padding must be an integer or a list of 6 integers, got {1, 1, 1, 1, 1, 'a'}",
      nn.ConstantPad3d, {1, 1, 1, 1, 1, "a"}, 0)
    assert_err("ReflectionPad1d: missing argument 'padding'", nn.ReflectionPad1d)
    assert_err("ConstantPad1d: missing argument 'value'", nn.ConstantPad1d, 1)
    assert_err("ConstantPad2d: value must be a number, got string", nn.ConstantPad2d, 1, "0")
    assert_err("ZeroPad2d: too many arguments (1 settings at most, got 2)", nn.ZeroPad2d, 1, 0)
    assert_err("ReflectionPad1d: unknown option 'pading'", nn.ReflectionPad1d, {pading = 1})
    assert_err("ReflectionPad2d:forward: input must be 3-D or 4-D, got shape {4,4}",
      function() return nn.ReflectionPad2d(1)(pt.zeros(4, 4)) end)
    assert_err("ReplicationPad3d:forward: input must be 4-D or 5-D, got shape {1,1,1,1,1,1}",
      function() return nn.ReplicationPad3d(1)(pt.zeros(1, 1, 1, 1, 1, 1)) end)
    assert_err("ConstantPad2d:forward: input must have at least 2 dimensions, got shape {3}",
      function() return nn.ConstantPad2d(1, 0)(pt.zeros(3)) end)
    assert_err("ZeroPad2d:forward: input must be a tensor, got table", function() return nn.ZeroPad2d(1)({}) end)
    assert_err("ReflectionPad1d:forward: expected 1 input, got 2", function() return nn.ReflectionPad1d(1)(pt.zeros(1, 3), 1) end)
    -- the padding's own limits are F.pad's
    assert_err("pad: reflect padding (3, 3) must be smaller than the size 3 of dimension 3",
      function() return nn.ReflectionPad1d(3)(pt.zeros(1, 2, 3)) end)
    local msg = err_of(function() local y = nn.ReflectionPad2d(1)(pt.zeros(4)); return y end)
    assert.matches("nn_layers_spec%.lua:%d+: ReflectionPad2d:forward:", msg)
  end)
end)

describe("Bilinear", function()
  local W, b = gen({4, 2, 3}, 5, 17), gen({4}, 3, 7)
  local X1, X2 = gen({5, 2}, 3), gen({5, 3}, 11, 13)

  it("F.bilinear matches PyTorch, values and gradients", function()
    local w, bb, x1, x2 = leaf(W), leaf(b), leaf(X1), leaf(X2)
    local y = F.bilinear(x1, x2, w, bb)
    assert_close(y, R.bil_y)
    backward_weighted(y, 13, 23)
    assert_close(x1.grad, R.bil_gx1)
    assert_close(x2.grad, R.bil_gx2)
    assert_close(w.grad, R.bil_gW)
    assert_close(bb.grad, R.bil_gb)
    assert_close(F.bilinear(gen({2, 3, 2}, 3), gen({2, 3, 3}, 11, 13), W), R.bil_3d)
    assert_close(F.bilinear(gen({2}, 3), gen({3}, 11, 13), W, b), R.bil_1d)
    assert.are.equal(nn.bilinear, F.bilinear)
  end)

  it("passes the finite-difference check in every input", function()
    gradcheck(F.bilinear, {X1, X2, W, b})
    gradcheck(F.bilinear, {gen({2, 3, 2}, 3), gen({2, 3, 3}, 11, 13), W})
  end)

  it("nn.Bilinear: PyTorch's parameters, loaded from a state_dict, and its init", function()
    local m = nn.Bilinear(2, 3, 4, {dtype = "float64"})
    assert.are.same({"weight", "bias"}, names(m:named_parameters()))
    assert.are.same({4, 2, 3}, m.weight:size())
    m:load_state_dict({weight = W, bias = b})
    assert_close(m(X1, X2), R.bil_y)
    local bound = 1 / math.sqrt(2)
    local big = nn.Bilinear(2, 50, 60)
    assert.are.equal("float32", big.weight:dtype())
    assert.is_true(big.weight:abs():max():item() <= bound)
    assert.is_true(big.weight:abs():max():item() > 0.9 * bound)
    assert.is_true(big.bias:abs():max():item() <= bound)
    local nb = nn.Bilinear(2, 3, 4, false)
    assert.are.same({"weight"}, names(nb:named_parameters()))
    assert.are.same({5, 4}, nb(X1:float(), X2:float()):size())
    assert.are.equal("Bilinear(in1_features=2, in2_features=3, out_features=4, bias=true)", tostring(m))
    assert.are.equal("Bilinear(in1_features=2, in2_features=3, out_features=4, bias=false)",
      tostring(nn.Bilinear({in1_features = 2, in2_features = 3, out_features = 4, bias = false})))
  end)

  it("checks its settings and inputs", function()
    assert_err("Bilinear: missing argument 'out_features'", nn.Bilinear, 2, 3)
    assert_err("Bilinear: in1_features must be a non-negative integer, got -1", nn.Bilinear, -1, 3, 4)
    assert_err("Bilinear: bias must be a boolean, got number", nn.Bilinear, 2, 3, 4, 1)
    assert_err("Bilinear: dtype must be \"float32\" or \"float64\", got 'int64'", nn.Bilinear, 2, 3, 4, {dtype = "int64"})
    assert_err("bilinear: input1 shape {5,2} and input2 shape {4,3} differ in dim 1 (the batch dimensions must match)",
      F.bilinear, X1, gen({4, 3}), W)
    assert_err("bilinear: input1 and input2 must have the same number of dimensions (at least 1), got shapes {5,2} and {3}",
      F.bilinear, X1, gen({3}), W)
    assert_err("bilinear: input2's last dimension has size 4, but weight shape {4,2,3} takes in2_features = 3",
      F.bilinear, X1, gen({5, 4}), W)
    assert_err("bilinear: input1's last dimension has size 3, but weight shape {4,2,3} takes in1_features = 2",
      F.bilinear, gen({5, 3}), X2, W)
    assert_err("bilinear: weight must be 3-dimensional {out_features, in1_features, in2_features}, got shape {4,6}",
      F.bilinear, X1, X2, gen({4, 6}))
    assert_err("bilinear: bias must have shape {4} (out_features), got {3}", F.bilinear, X1, X2, W, gen({3}))
    assert_err("bilinear: input1, input2, weight and bias must have one dtype, got float64, float64, float32 and none",
      F.bilinear, X1, X2, W:float())
    assert_err("bilinear: input1 must be a tensor, got nil", F.bilinear, nil, X2, W)
    assert_err("bilinear: expected (input1, input2, weight[, bias]), got 5 arguments", F.bilinear, X1, X2, W, b, 1)
    assert_err("Bilinear:forward: input2 must be a tensor, got nil",
      function() return nn.Bilinear(2, 3, 4)(pt.zeros(1, 2)) end)
  end)
end)

describe("EmbeddingBag", function()
  local W = gen({6, 3}, 7, 23)
  local INP = pt.tensor({1, 3, 3, 5, 2, 4, 6, 1}, I64)
  local OFF = pt.tensor({1, 3, 3, 6}, I64)
  local PSW = gen({8}, 5, 11, 2.0)

  it("F.embedding_bag matches PyTorch in every mode, with and without padding_idx, with gradients", function()
    for _, mode in ipairs({"sum", "mean", "max"}) do
      for _, pad in ipairs({false, 3}) do
        local key = "bag_" .. mode .. (pad and "_pad" or "")
        local w = leaf(W)
        local r = F.embedding_bag(INP, w, OFF, {mode = mode, padding_idx = pad or nil})
        local ok, e = pcall(function()
          assert_close(r, R[key])
          backward_weighted(r, 3, 7)
          assert_close(w.grad, R[key .. "_gw"])
        end)
        if not ok then error(key .. ": " .. tostring(e), 0) end
      end
    end
    local w, p = leaf(W), leaf(PSW)
    local r = F.embedding_bag(INP, w, OFF, {mode = "sum", per_sample_weights = p})
    assert_close(r, R.bag_psw)
    backward_weighted(r, 3, 7)
    assert_close(w.grad, R.bag_psw_gw)
    assert_close(p.grad, R.bag_psw_gp)
    assert.are.equal(nn.embedding_bag, F.embedding_bag)
  end)

  it("takes PyTorch's positional order, offsets as a list, include_last_offset and 2-D bags", function()
    assert_close(F.embedding_bag(INP, W, OFF), R.bag_mean)
    assert_close(F.embedding_bag(INP, W, OFF, nil, 2, false, "max"), R.bag_max)
    assert_close(F.embedding_bag(INP, W, {1, 3, 3, 6}, nil, 2, false, "sum", false, PSW), R.bag_psw)
    assert_close(F.embedding_bag(INP, W, OFF, nil, 2, false, "sum", false, nil, false, -4), R.bag_sum_pad)
    assert_close(F.embedding_bag(INP, W, pt.tensor({1, 4, 4, 9}, I64), {include_last_offset = true}), R.bag_last)
    local inp2 = pt.tensor({{1, 6, 4}, {3, 3, 2}, {5, 1, 1}}, I64)
    for _, mode in ipairs({"sum", "mean", "max"}) do
      assert_close(F.embedding_bag(inp2, W, {mode = mode}), R["bag2d_" .. mode])
    end
    assert_close(F.embedding_bag(inp2, W, {mode = "max", padding_idx = 1}), R.bag2d_max_pad)
    assert_close(F.embedding_bag(inp2, W, {mode = "sum", per_sample_weights = gen({3, 3}, 5, 11, 2.0)}), R.bag2d_psw)
    -- int32 indices; empty bags and empty inputs give zeros
    assert_close(F.embedding_bag(INP:to("int32"), W, OFF:to("int32")), R.bag_mean)
    assert_close(F.embedding_bag(pt.tensor({}, I64), W, {1, 1}, {mode = "max"}), {{0, 0, 0}, {0, 0, 0}})
    assert.are.same({0, 3}, F.embedding_bag(pt.zeros(0, 4, I64), W):size())
  end)

  it("passes the finite-difference check", function()
    for _, mode in ipairs({"sum", "mean", "max"}) do
      gradcheck(function(w) return F.embedding_bag(INP, w, OFF, {mode = mode, padding_idx = 3}) end, {W})
    end
    gradcheck(function(w, p) return F.embedding_bag(INP, w, OFF, {mode = "sum", per_sample_weights = p}) end, {W, PSW})
  end)

  it("nn.EmbeddingBag: PyTorch's weight, loaded from a state_dict; padding row zero at init", function()
    local m = nn.EmbeddingBag(6, 3, {mode = "sum", padding_idx = 3, dtype = "float64"})
    assert.are.same({"weight"}, names(m:named_parameters()))
    assert.are.same({0, 0, 0}, m.weight:tolist()[3])
    m:load_state_dict({weight = W})
    assert_close(m(INP, OFF), R.bag_sum_pad)
    local mm = nn.EmbeddingBag(6, 3, {mode = "max", _weight = W:clone()})
    assert_close(mm(INP, OFF), R.bag_max)
    local s = nn.EmbeddingBag(6, 3, {mode = "sum", _weight = W:clone()})
    assert_close(s(INP, OFF, PSW), R.bag_psw)
    local last = nn.EmbeddingBag(6, 3, {include_last_offset = true, _weight = W:clone()})
    assert_close(last(INP, {1, 4, 4, 9}), R.bag_last)
    -- PyTorch's positional order: mode is the 6th setting
    assert.are.equal("max", nn.EmbeddingBag(6, 3, nil, 2, false, "max").mode)
    assert.are.equal(6, nn.EmbeddingBag(6, 3, {padding_idx = -1}).padding_idx)
    local d = nn.EmbeddingBag(100, 20)
    assert.are.equal("float32", d.weight:dtype())
    assert.is_true(math.abs(d.weight:std():item() - 1) < 0.1)
    assert.are.equal("EmbeddingBag(10, 3, mode=mean)", tostring(nn.EmbeddingBag(10, 3)))
    assert.are.equal("EmbeddingBag(5, 3, mode=sum, padding_idx=2)", tostring(nn.EmbeddingBag(5, 3, {mode = "sum", padding_idx = 2})))
  end)

  it("checks its settings and inputs", function()
    assert_err("EmbeddingBag: mode must be 'sum', 'mean' or 'max', got 'foo'", nn.EmbeddingBag, 5, 3, {mode = "foo"})
    assert_err("EmbeddingBag: padding_idx must be within 1..5 (or -5..-1), got 6", nn.EmbeddingBag, 5, 3, {padding_idx = 6})
    assert_err("EmbeddingBag: padding_idx must be within 1..5 (or -5..-1), got 0", nn.EmbeddingBag, 5, 3, {padding_idx = 0})
    assert_err("EmbeddingBag: max_norm is not supported (rows are never renormalised), got 1.0", nn.EmbeddingBag, 5, 3, {max_norm = 1.0})
    assert_err("EmbeddingBag: sparse=true is not supported", nn.EmbeddingBag, 5, 3, {sparse = true})
    assert_err("EmbeddingBag: scale_grad_by_freq=true is not supported", nn.EmbeddingBag, 5, 3, {scale_grad_by_freq = true})
    assert_err("EmbeddingBag: _weight shape {6,3} must be {5,3} (num_embeddings, embedding_dim)", nn.EmbeddingBag, 5, 3, {_weight = W})
    assert_err("EmbeddingBag: unknown option 'modes'", nn.EmbeddingBag, 5, 3, {modes = "sum"})
    assert_err("EmbeddingBag: missing argument 'embedding_dim'", nn.EmbeddingBag, 5)
    local f = F.embedding_bag
    assert_err("embedding_bag: per_sample_weights is only supported for mode 'sum', got mode 'mean'",
      f, INP, W, OFF, {per_sample_weights = PSW})
    assert_err("embedding_bag: per_sample_weights shape {5} must match input shape {8}",
      f, INP, W, OFF, {mode = "sum", per_sample_weights = gen({5})})
    assert_err("embedding_bag: per_sample_weights dtype float32 does not match weight dtype float64",
      f, INP, W, OFF, {mode = "sum", per_sample_weights = PSW:float()})
    assert_err("embedding_bag: offsets must be nil for a 2-D input {B,N} (each row is one bag), got tensor",
      f, INP:reshape(2, 4), W, OFF)
    assert_err("embedding_bag: include_last_offset=true needs a 1-D input with offsets (a 2-D input has none)",
      f, INP:reshape(2, 4), W, {include_last_offset = true})
    assert_err("embedding_bag: a 1-D input needs offsets (the 1-based position where each bag starts)", f, INP, W)
    assert_err("embedding_bag: offsets[1] must be 1 (the first bag starts at the first index), got 0", f, INP, W, {0, 2})
    assert_err("embedding_bag: offsets must be non-decreasing, got 3 after 5 (offsets[3])", f, INP, W, {1, 5, 3})
    assert_err("embedding_bag: offsets[2] = 10 is beyond the end of the input (8 indices)", f, INP, W, {1, 10})
    assert_err("embedding_bag: with include_last_offset, offsets must end with 9 (the number of indices + 1), got 8",
      f, INP, W, {1, 3, 8}, {include_last_offset = true})
    assert_err("embedding_bag: offsets must be a 1-D integer tensor, got float32 of shape {2}", f, INP, W, pt.tensor({1, 3}))
    assert_err("embedding_bag: offsets must be integers, got 1.5 at 2", f, INP, W, {1, 1.5})
    assert_err("embedding_bag: index 7 out of range 1..6", f, pt.tensor({1, 7}, I64), W, {1})
    assert_err("embedding_bag: index 0 out of range 1..6", f, pt.tensor({0, 2}, I64), W, {1})
    assert_err("embedding_bag: input must be an integer tensor of 1-based indices, got float64", f, W, W, {1})
    assert_err("embedding_bag: input must be 1-D (with offsets) or 2-D {B,N}, got shape {2,2,2}", f, INP:reshape(2, 2, 2), W)
    assert_err("embedding_bag: weight must be 2-dimensional {num_embeddings, embedding_dim}, got shape {18}", f, INP, W:reshape(-1), OFF)
    assert_err("embedding_bag: padding_idx must be within 1..6 (or -6..-1), got 7", f, INP, W, OFF, {padding_idx = 7})
    assert_err("embedding_bag: too many arguments (9 settings at most, got 10)", f, INP, W, OFF, nil, 2, false, "sum", false, nil, false, 1, 1)
    assert_err("EmbeddingBag:forward: expected (input[, offsets[, per_sample_weights]]), got 4 arguments",
      function() return nn.EmbeddingBag(6, 3)(INP, OFF, nil, 1) end)
    local msg = err_of(function() local y = nn.EmbeddingBag(6, 3)(INP); return y end)
    assert.matches("nn_layers_spec%.lua:%d+: EmbeddingBag:forward: a 1%-D input needs offsets", msg)
  end)
end)

describe("ParameterList and ParameterDict", function()
  it("ParameterList registers its tensors as parameters named 1, 2, ...", function()
    local a, b = pt.randn(2, 3), pt.randn(3)
    local l = nn.ParameterList({a, b})
    assert.are.equal(2, #l)
    assert.are.equal(a, l[1])
    assert.are.equal(b, l[-1])
    assert.is_true(a.requires_grad and b.requires_grad)
    assert.are.same({"1", "2"}, names(l:named_parameters()))
    local c = pt.randn(4)
    l:append(c)
    assert.are.equal(c, l[3])
    local d = pt.randn(5)
    l[2] = d
    assert.are.equal(d, l[2])
    l[4] = pt.randn(1)
    l:extend({pt.randn(6), pt.randn(7)})
    assert.are.equal(6, #l)
    local sizes = {}
    for i, p in ipairs(l) do sizes[i] = p:numel() end
    assert.are.same({6, 5, 4, 1, 6, 7}, sizes)
    l:extend(nn.ParameterList({pt.randn(8)}))
    assert.are.equal(7, #l)
    -- a non-leaf becomes a leaf of its values
    local x = pt.randn(2, {requires_grad = true})
    local y = x * 2
    local l2 = nn.ParameterList({y})
    assert.is_true(l2[1].is_leaf and l2[1].requires_grad)
    assert.are.same(y:tolist(), l2[1]:tolist())
  end)

  it("inside a model: parameters, state_dict keys, load_state_dict and an optimizer see them", function()
    local Net = nn.Module:extend("PListNet")
    function Net:__init()
      self.fc = nn.Linear(2, 2)
      self.scales = nn.ParameterList({pt.ones(2), pt.zeros(2)})
      self.extra = nn.ParameterDict({beta = pt.zeros(3), alpha = pt.ones(3)})
    end
    function Net:forward(x) return self.fc(x) * self.scales[1] + self.scales[2] end
    local net = Net()
    assert.are.same({"fc.weight", "fc.bias", "scales.1", "scales.2", "extra.alpha", "extra.beta"},
      names(net:named_parameters()))
    assert.are.same({"fc.weight", "fc.bias", "scales.1", "scales.2", "extra.alpha", "extra.beta"}, keys_of(net:state_dict()))
    local sd = net:state_dict()
    local src = {}
    for k, v in pairs(sd) do src[k] = v + 1 end
    net:load_state_dict(src)
    assert.are.same({2, 2}, net.scales[1]:tolist())
    assert.are.same({2, 2, 2}, net.extra.alpha:tolist())
    local opt = pt.optim.SGD(net:parameters(), {lr = 0.5})
    net(pt.ones(1, 2)):sum():backward()
    opt:step()
    assert.are.same({0.5, 0.5}, net.scales[2]:tolist())
    assert.are.equal(6, #net:parameters())
  end)

  it("ParameterDict: names, order, update, pop and pairs", function()
    local d = nn.ParameterDict({b = pt.zeros(2), a = pt.ones(1)})
    assert.are.same({"a", "b"}, d:keys())
    assert.are.equal(2, #d)
    d.c = pt.zeros(3)
    d["z"] = pt.zeros(4)
    assert.is_true(d.c.requires_grad)
    assert.are.same({"a", "b", "c", "z"}, names(d:named_parameters()))
    d:update({{"y", pt.zeros(1)}, {"x", pt.zeros(1)}})
    assert.are.same({"a", "b", "c", "z", "y", "x"}, d:keys())
    local seen = {}
    for k, v in pairs(d) do seen[#seen + 1] = k .. "=" .. v:numel() end
    assert.are.same({"a=1", "b=2", "c=3", "z=4", "y=1", "x=1"}, seen)
    local p = d:pop("b")
    assert.are.same({2}, p:size())
    assert.are.same({"a", "c", "z", "y", "x"}, d:keys())
    assert.are.equal(5, #d:values())
    local d2 = nn.ParameterDict():update(d)
    assert.are.same(d:keys(), d2:keys())
    assert.are.equal(d.a, d2.a)
    assert.are.same({{"p", 1}}, (function()
      local out = {}
      for k, v in nn.ParameterDict({{"p", pt.zeros(1)}}):items() do out[#out + 1] = {k, v:numel()} end
      return out
    end)())
  end)

  it("print as PyTorch's", function()
    assert.are.equal("ParameterList(\n  (1): Parameter containing: [float32 of size 2x3]\n  (2): Parameter containing: [float64 of size 3]\n)",
      tostring(nn.ParameterList({pt.zeros(2, 3), pt.zeros(3, F64)})))
    -- one line: inside the parentheses, as PyTorch prints a one-line extra_repr
    assert.are.equal("ParameterDict((a): Parameter containing: [float32 of size 1])",
      tostring(nn.ParameterDict({a = pt.zeros(1)})))
    assert.are.equal("ParameterList()", tostring(nn.ParameterList()))
  end)

  it("check what they are given", function()
    assert_err("ParameterList: expected a list of tensors, got a tensor", nn.ParameterList, pt.zeros(2))
    assert_err("ParameterList:append: expected a tensor, got number", nn.ParameterList, {1})
    assert_err("ParameterList: index 5 out of range 1..3", function() local l = nn.ParameterList({pt.zeros(1), pt.zeros(1)}); l[5] = pt.zeros(1) end)
    assert_err("ParameterList: cannot remove parameter 1 (a ParameterList has no holes)", function() local l = nn.ParameterList({pt.zeros(1)}); l[1] = nil end)
    assert_err("ParameterList:extend: expected a list of tensors (or a class name to subclass), got number",
      function() return nn.ParameterList():extend(3) end)
    assert_err("ParameterList:forward: a ParameterList has no forward", function() return nn.ParameterList()(pt.zeros(1)) end)
    assert_err("ParameterDict:update: keys must be strings, got number", nn.ParameterDict, {[1.5] = pt.zeros(1)})
    assert_err("ParameterDict:update: element 1 must be a {name, tensor} pair, got number", nn.ParameterDict, {1})
    assert_err("ParameterDict:update: expected a tensor, got string", nn.ParameterDict, {a = "x"})
    assert_err("ParameterDict: keys must be strings, got number", function() local d = nn.ParameterDict(); d[1] = pt.zeros(1) end)
    assert_err("ParameterDict:pop: no parameter 'q'", function() return nn.ParameterDict():pop("q") end)
    assert_err("ParameterDict:forward: a ParameterDict has no forward; index it by name", function() return nn.ParameterDict()(1) end)
    assert_err("ParameterDict: expected one table of parameters, got 2 arguments", nn.ParameterDict, {}, {})
  end)
end)

describe("LocalResponseNorm, Softmax2d and ChannelShuffle", function()
  it("match PyTorch, with gradients", function()
    local x = leaf(gen({2, 5, 3}, 7, 19, 2.0))
    local y = F.local_response_norm(x, 3, 0.3, 0.75, 1.5)
    assert_close(y, R.lrn3)
    backward_weighted(y, 3, 7)
    assert_close(x.grad, R.lrn3_g)
    x = leaf(gen({2, 4, 2, 3}, 5, 17, 2.0))
    y = nn.LocalResponseNorm({size = 2, alpha = 0.2, beta = 0.5, k = 2.0})(x)
    assert_close(y, R.lrn4)
    backward_weighted(y, 3, 7)
    assert_close(x.grad, R.lrn4_g)
    assert_close(nn.LocalResponseNorm(4)(gen({1, 6, 2}, 7, 19, 0.5)), R.lrn_default)
    assert_close(F.local_response_norm(gen({1, 3, 2, 1, 2}, 5, 13), 5, 1.0, 0.5, 1.0), R.lrn5d)
    assert_close(nn.Softmax2d()(gen({2, 3, 2, 2}, 5, 13)), R.sm2d)
    assert_close(nn.Softmax2d()(gen({3, 1, 2}, 5, 13)), R.sm2d3)
    assert_close(nn.ChannelShuffle(3)(pt.arange(0, 24, F64):reshape(2, 6, 2)), R.shuffle)
    assert_close(F.channel_shuffle(pt.arange(0, 16, F64):reshape(1, 4, 2, 2), 2), R.shuffle4)
    assert.are.same({{{1}, {3}, {2}, {4}}}, F.channel_shuffle(pt.tensor({{{1}, {2}, {3}, {4}}}, I64), 2):tolist())
  end)

  it("pass the finite-difference check", function()
    gradcheck(function(x) return F.local_response_norm(x, 3, 0.3, 0.75, 1.5) end, {gen({2, 5, 3}, 7, 19, 2.0)})
    gradcheck(function(x) return F.local_response_norm(x, 2, 0.2, 0.5, 2.0) end, {gen({1, 4, 2, 2}, 5, 17, 2.0)})
    gradcheck(function(x) return nn.Softmax2d()(x) end, {gen({1, 3, 2, 2}, 5, 13)})
    gradcheck(function(x) return F.channel_shuffle(x, 2) end, {gen({1, 4, 3})})
  end)

  it("print and check as PyTorch's", function()
    assert.are.equal("LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)", tostring(nn.LocalResponseNorm(3)))
    assert.are.equal("LocalResponseNorm(2, alpha=0.2, beta=0.5, k=2)", tostring(nn.LocalResponseNorm(2, 0.2, 0.5, 2)))
    assert.are.equal("Softmax2d()", tostring(nn.Softmax2d()))
    assert.are.equal("ChannelShuffle(groups=2)", tostring(nn.ChannelShuffle(2)))
    local empty = pt.zeros(0, 4, 3)
    assert.are.equal(empty, F.local_response_norm(empty, 2))
    assert_err("local_response_norm: input must have at least 3 dimensions {N,C,*}, got shape {3,4}",
      F.local_response_norm, pt.zeros(3, 4), 2)
    assert_err("LocalResponseNorm: size must be a positive integer, got 0", nn.LocalResponseNorm, 0)
    assert_err("LocalResponseNorm: missing argument 'size'", nn.LocalResponseNorm)
    assert_err("LocalResponseNorm: beta must be a number, got string", nn.LocalResponseNorm, 2, 1e-4, "x")
    assert_err("local_response_norm: input must be float32 or float64, got int64", F.local_response_norm, pt.zeros(1, 2, 2, I64), 2)
    assert_err("Softmax2d:forward: input must be 3-D {C,H,W} or 4-D {N,C,H,W}, got shape {3,4}",
      function() return nn.Softmax2d()(pt.zeros(3, 4)) end)
    assert_err("Softmax2d: too many arguments (0 settings at most, got 1)", nn.Softmax2d, 1)
    assert_err("channel_shuffle: input must have at least 3 dimensions {N,C,*}, got shape {3,4}", F.channel_shuffle, pt.zeros(3, 4), 2)
    assert_err("channel_shuffle: the 4 channels (dim 2 of input shape {3,4,5}) must be divisible by groups 3",
      F.channel_shuffle, pt.zeros(3, 4, 5), 3)
    assert_err("ChannelShuffle: groups must be a positive integer, got 0", nn.ChannelShuffle, 0)
    assert_err("ChannelShuffle:forward: input must be a tensor, got nil", function() return nn.ChannelShuffle(2)() end)
  end)
end)

describe("AlphaDropout and FeatureAlphaDropout", function()
  local ALPHA = 1.7580993408473766

  it("keep a*x + alpha*a*p or give -alpha*a*(1-p), with PyTorch's constants", function()
    pt.manual_seed(7)
    local p = 0.2
    local a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    local x = gen({40, 25}, 7, 19, 2.0)
    local y = F.alpha_dropout(x, p, true)
    local kept = 0
    local xs, ys = x:reshape(-1):tolist(), y:reshape(-1):tolist()
    for i = 1, #xs do
      if math.abs(ys[i] - (a * xs[i] + ALPHA * a * p)) < 1e-12 then
        kept = kept + 1
      else
        assert.is_true(math.abs(ys[i] + ALPHA * a * (1 - p)) < 1e-12, "element " .. i)
      end
    end
    assert.is_true(kept > 0.74 * #xs and kept < 0.86 * #xs, "kept " .. kept)
    -- zero mean and unit variance stay so
    pt.manual_seed(3)
    local z = pt.randn(200000, F64)
    local d = F.alpha_dropout(z, 0.3, true)
    assert.is_true(math.abs(d:mean():item()) < 0.01)
    assert.is_true(math.abs(d:std():item() - 1) < 0.01)
  end)

  it("drop whole channels (FeatureAlphaDropout), are the identity in eval mode and at p = 0", function()
    pt.manual_seed(11)
    local x = pt.ones(6, 8, 3, 2, F64)
    local y = nn.FeatureAlphaDropout(0.5)(x)
    for n = 1, 6 do
      for c = 1, 8 do
        local plane = y[n][c]
        assert.are.equal(plane:min():item(), plane:max():item())
      end
    end
    assert.is_true(y:max():item() > y:min():item())
    local m = nn.AlphaDropout(0.5)
    m:eval()
    assert.are.equal(x, m(x))
    assert.are.equal(x, F.alpha_dropout(x)) -- training defaults to false, as PyTorch's
    assert.are.equal(x, F.alpha_dropout(x, 0, true))
    assert.are.same({0, 0}, F.alpha_dropout(pt.ones(2, F64), 1, true):tolist())
    assert.are.same({0, 0}, F.feature_alpha_dropout(pt.ones(2, F64), 1, true):tolist())
  end)

  it("pass gradients through the kept elements; inplace writes into the input", function()
    pt.manual_seed(5)
    local p = 0.4
    local a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    local x = leaf(gen({10, 10}))
    local y = F.alpha_dropout(x, p, true)
    y:sum():backward()
    local g, ys = x.grad:reshape(-1):tolist(), y:reshape(-1):tolist()
    for i = 1, #g do
      local dropped = math.abs(ys[i] + ALPHA * a * (1 - p)) < 1e-12
      assert_close(g[i], dropped and 0 or a)
    end
    local z = gen({4, 5})
    local r = F.alpha_dropout(z, {p = 0.5, training = true, inplace = true})
    assert.are.equal(z, r)
    local w = leaf(gen({4, 5}))
    local v = nn.AlphaDropout(0.5, true)(w * 1)
    v:sum():backward()
    assert.are.same({4, 5}, w.grad:size())
  end)

  it("print and check their settings", function()
    assert.are.equal("AlphaDropout(p=0.2)", tostring(nn.AlphaDropout(0.2)))
    assert.are.equal("FeatureAlphaDropout(p=0.5, inplace=true)", tostring(nn.FeatureAlphaDropout({inplace = true})))
    assert_err("AlphaDropout: p must be between 0 and 1, got -0.1", nn.AlphaDropout, -0.1)
    assert_err("alpha_dropout: p must be between 0 and 1, got 1.5", F.alpha_dropout, pt.zeros(3), 1.5, true)
    assert_err("alpha_dropout: training must be a boolean, got number", F.alpha_dropout, pt.zeros(3), 0.5, 1)
    assert_err("feature_alpha_dropout: feature dropout needs an input of at least 2 dimensions {N,C,*}, got shape {3}",
      F.feature_alpha_dropout, pt.zeros(3), 0.5, true)
    assert_err("alpha_dropout: inplace=true on a leaf tensor that requires grad", F.alpha_dropout,
      pt.zeros(3, {requires_grad = true}), 0.5, true, true)
    assert_err("AlphaDropout:forward: input must be float32 or float64, got int64",
      function() return nn.AlphaDropout()(pt.zeros(2, I64)) end)
  end)
end)

describe("Unfold and Fold", function()
  it("match PyTorch, values and gradients", function()
    local x = leaf(gen({2, 3, 5, 6}, 7, 29))
    local cols = F.unfold(x, {2, 3}, {2, 1}, {1, 2}, {2, 1})
    assert.are.same(R.unf_shape, cols:size())
    assert_close(cols, R.unf)
    backward_weighted(cols, 3, 7)
    assert_close(x.grad, R.unf_g)
    assert_close(F.unfold(gen({1, 2, 3, 3}, 5, 11), 2), R.unf_simple)
    assert_close(nn.Unfold(2, 1, 1, 2)(gen({2, 3, 3}, 5, 11)), R.unf_3d)
    local c = leaf(gen({2, 12, 12}, 5, 31))
    local img = nn.Fold({output_size = {4, 5}, kernel_size = 2, padding = {1, 0}, stride = {2, 1}})(c)
    assert.are.same(R.fold_shape, img:size())
    assert_close(img, R.fold)
    backward_weighted(img, 3, 7)
    assert_close(c.grad, R.fold_g)
    assert_close(F.fold(gen({8, 4}, 5, 11), {3, 3}, 2), R.fold_2d)
    assert_close(F.fold(F.unfold(gen({1, 2, 4, 4}, 7, 13), 2), {4, 4}, 2), R.fold_unf)
    assert.are.equal(nn.unfold, F.unfold)
  end)

  it("Fold is Unfold's adjoint; both pass the finite-difference check", function()
    local x = gen({2, 3, 5, 6}, 7, 29)
    local s = {{2, 3}, {2, 1}, {1, 2}, {2, 1}}
    local cols = F.unfold(x, table.unpack(s))
    local y = gen(cols:size(), 11, 23)
    local lhs = (cols * y):sum():item()
    local rhs = (x * F.fold(y, {5, 6}, table.unpack(s))):sum():item()
    assert_close(lhs, rhs)
    gradcheck(function(t) return F.unfold(t, {2, 3}, {2, 1}, {1, 2}, {2, 1}) end, {gen({1, 2, 5, 6}, 7, 29)})
    gradcheck(function(t) return F.unfold(t, 2, 1, 1, 2) end, {gen({2, 3, 3}, 5, 11)})
    gradcheck(function(t) return F.fold(t, {4, 5}, 2, 1, {1, 0}, {2, 1}) end, {gen({1, 8, 12}, 5, 31)})
    gradcheck(function(t) return F.fold(t, {3, 3}, 2) end, {gen({8, 4}, 5, 11)})
  end)

  it("work in float32 and print their settings as given", function()
    local x = gen({1, 2, 4, 4}, 7, 13)
    support.assert_close_with(1e-6)(F.unfold(x:float(), 2, 1, 1, 1), F.unfold(x, 2, 1, 1, 1))
    assert.are.equal("float32", F.fold(pt.zeros(1, 4, 4), {3, 3}, 2):dtype())
    assert.are.equal("Unfold(kernel_size=2, dilation=1, padding=0, stride=1)", tostring(nn.Unfold(2)))
    assert.are.equal("Unfold(kernel_size={2, 3}, dilation=1, padding={0, 1}, stride=2)",
      tostring(nn.Unfold({2, 3}, 1, {0, 1}, 2)))
    assert.are.equal("Fold(output_size={4, 5}, kernel_size=2, dilation=1, padding=0, stride=1)", tostring(nn.Fold({4, 5}, 2)))
  end)

  it("check their settings and inputs", function()
    assert_err("Unfold: kernel_size must be a positive integer or a list of 2, got 0", nn.Unfold, 0)
    assert_err("Unfold: kernel_size must be a positive integer or a list of 2, got {2, 2, 2}", nn.Unfold, {2, 2, 2})
    assert_err("unfold: stride must be a positive integer or a list of 2, got 0", F.unfold, pt.zeros(1, 1, 3, 3), 2, 1, 0, 0)
    assert_err("unfold: padding must be a non-negative integer or a list of 2, got {-1, 0}", F.unfold, pt.zeros(1, 1, 3, 3), 2, 1, {-1, 0})
    assert_err("Fold: missing argument 'kernel_size'", nn.Fold, {3, 3})
    assert_err("Fold: output_size must be a positive integer or a list of 2, got 'a'", nn.Fold, "a", 2)
    assert_err("unfold: input must be 3-D {C,H,W} or 4-D {N,C,H,W}, got shape {5,5}", F.unfold, pt.zeros(5, 5), 2)
    assert_err("unfold: input shape {1,2,3,3} with kernel_size {4,4}, dilation {1,1}, padding {0,0} and stride {1,1} has no sliding blocks (0x0)",
      F.unfold, pt.zeros(1, 2, 3, 3), 4)
    assert_err("fold: dim 2 of input shape {1,7,4} (size 7) must be divisible by the 4 elements of kernel_size {2,2}",
      F.fold, pt.zeros(1, 7, 4), {3, 3}, 2)
    assert_err("fold: output_size {3,3} with kernel_size {2,2}, dilation {1,1}, padding {0,0} and stride {1,1} has 2x2 = 4 sliding blocks, but the input has 5 (dim 3 of shape {1,8,5})",
      F.fold, pt.zeros(1, 8, 5), {3, 3}, 2)
    assert_err("fold: input must be 2-D {C*kh*kw, L} or 3-D {N, C*kh*kw, L}, got shape {1,8,5,1}", F.fold, pt.zeros(1, 8, 5, 1), {3, 3}, 2)
    assert_err("Fold:forward: input must be float32 or float64, got int64",
      function() return nn.Fold({3, 3}, 2)(pt.zeros(1, 4, 4, I64)) end)
    local msg = err_of(function() local y = F.unfold(pt.zeros(3), 2); return y end)
    assert.matches("nn_layers_spec%.lua:%d+: unfold: input must be", msg)
  end)
end)
