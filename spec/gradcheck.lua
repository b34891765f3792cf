-- Finite-difference gradient checks (float64) for specs.
--   local gradcheck = require "spec.gradcheck"
--   gradcheck(function(a, b) return a * b end, {pt.randn(3, 4, {dtype="float64"}), ...})
-- Every input that is a float64 tensor gets requires_grad; the output is contracted with a fixed
-- random weight w (so non-scalar outputs are checked in every element) and each input element is
-- perturbed by +-eps. Raises with the input, element and both values on a mismatch.
local pt = require "partrain"

local function clone64(t)
  local c = pt.tensor(t:tolist(), {dtype = "float64"})
  if t:dim() == 0 then c = pt.tensor(t:item(), {dtype = "float64"}) end
  return c
end

local function weighted_sum(out, w)
  local s = 0
  for i = 1, out:numel() do s = s + out:_get_flat(i) * w[i] end
  return s
end

local function gradcheck(f, inputs, opts)
  opts = opts or {}
  local eps = opts.eps or 1e-6
  local atol = opts.atol or 1e-5
  local rtol = opts.rtol or 1e-4
  local x = {}
  for i, v in ipairs(inputs) do
    if pt.is_tensor(v) and v:dtype() == "float64" and not (opts.skip and opts.skip[i]) then
      x[i] = clone64(v)
      x[i].requires_grad = true
    else
      x[i] = v
    end
  end
  local n = #inputs
  local out = f(table.unpack(x, 1, n))
  assert(pt.is_tensor(out), "gradcheck: f must return a tensor")
  -- deterministic weights
  local w, seed = {}, 12345
  for i = 1, out:numel() do
    seed = (seed * 1103515245 + 12345) % 2147483648
    w[i] = seed / 2147483648 - 0.5
  end
  local wt = pt.zeros(out:numel(), {dtype = out:dtype()})
  for i = 1, out:numel() do wt:_set_flat(i, w[i]) end
  local g = pt.zeros_like(out)
  for i = 1, out:numel() do g:_set_flat(i, w[i]) end
  out:backward(g)
  for k = 1, n do
    local xk = x[k]
    if pt.is_tensor(xk) and xk.requires_grad then
      local analytic = xk.grad
      for e = 1, xk:numel() do
        local orig = xk:_get_flat(e)
        xk:_set_flat(e, orig + eps)
        local fp = weighted_sum(pt.no_grad(f, table.unpack(x, 1, n)), w)
        xk:_set_flat(e, orig - eps)
        local fm = weighted_sum(pt.no_grad(f, table.unpack(x, 1, n)), w)
        xk:_set_flat(e, orig)
        local numeric = (fp - fm) / (2 * eps)
        local a = analytic and analytic:_get_flat(e) or 0
        if math.abs(a - numeric) > atol + rtol * math.abs(numeric) then
          error(string.format("gradcheck: input %d element %d: analytic %.8g, numeric %.8g", k, e, a,
                              numeric), 2)
        end
      end
    end
  end
  return true
end

return gradcheck
