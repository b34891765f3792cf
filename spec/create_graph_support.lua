-- Shared by the create_graph specs (spec/create_graph_more_spec.lua, create_graph_more2_spec.lua):
-- deterministic inputs, first and second derivatives of a function, and their checks against
-- torch's numbers, a simpler composition, gradgradcheck, or a refusal by name.
local pt = require "partrain"
local assert = require "luassert" -- busted's assert is not visible from a required module
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local F64 = {dtype = "float64"}
local grad = pt.autograd.grad

-- deterministic values sin(k i + c), i = 1.. in row-major order (the reference script's det)
local function det(shape, k, c)
  local t = pt.zeros(shape, F64)
  for i = 1, t:numel() do t:_set_flat(i, math.sin((k or 1.7) * i + (c or 0.3))) end
  return t
end

-- the first derivatives of f at xs (J^T v, with create_graph) and the gradients of
-- sum_i <u_i, (J^T v)_i>: second derivatives, as the reference script computes them
local function second(f, xs)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  local y = f(table.unpack(ins))
  local v = det(y:size(), 2.3, 0.1)
  local gs = grad(y, ins, {grad_outputs = v, create_graph = true, allow_unused = true})
  local s
  for i, x in ipairs(ins) do
    if gs[i] ~= nil then
      local term = (gs[i] * det(x:size(), 0.9, 0.5)):sum()
      s = s and s + term or term
    end
  end
  local hs = grad(s, ins, {allow_unused = true})
  return gs, hs
end

-- second(f, xs) against ref[name] (false: no gradient), then gradgradcheck
local function check(ref, f, xs, opts)
  local gs, hs = second(f, xs)
  for i = 1, #xs do
    for _, p in ipairs({{"g", gs}, {"h", hs}}) do
      local want, got = ref[p[1]][i], p[2][i]
      if want == false then
        assert.is_nil(got)
      else
        local ok, e = pcall(assert_close, got, want, opts and opts.tol)
        if not ok then error(string.format("%s%d of %s: %s", p[1], i, ref.name, e), 2) end
      end
    end
  end
end

-- second(f, xs) against second(f_simple, xs): f_simple is the same function made of ops that
-- already have formulas
local function check_same(f, f_simple, xs, tol)
  local gs, hs = second(f, xs)
  local gs2, hs2 = second(f_simple, xs)
  for i = 1, #xs do
    if gs2[i] == nil then assert.is_nil(gs[i]) else assert_close(gs[i], gs2[i]:detach(), tol) end
    if hs2[i] == nil then assert.is_nil(hs[i]) else assert_close(hs[i], hs2[i], tol) end
  end
end

local function gradgradcheck(f, xs, opts)
  pt.manual_seed(7)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  assert.is_true(pt.autograd.gradgradcheck(f, ins, opts))
end

local function refused(name, f, xs)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  local y = f(table.unpack(ins))
  support.assert_error("autograd.grad: create_graph is not supported through " .. name, function()
    grad((y * y):sum(), ins, {create_graph = true})
  end)
end

return {F64 = F64, det = det, second = second, check = check, check_same = check_same,
        gradgradcheck = gradgradcheck, refused = refused}
