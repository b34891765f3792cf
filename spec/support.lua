-- Shared by the specs that start programs (require "spec.support").

local M = {}

-- The partrain executable: the interpreter running this spec (build/partrain /usr/bin/busted
-- spec), else $PARTRAIN, else the interpreter named in arg, else build/partrain.
local function exe_path()
  local f = io.open("/proc/self/stat")
  if f then
    local pid = f:read("*l"):match("^(%d+)")
    f:close()
    local p = io.popen("readlink -f /proc/" .. pid .. "/exe")
    local path = p:read("*l")
    p:close()
    if path and path:match("partrain$") then return path end
  end
  local i, a = -1, nil
  while arg and arg[i] do
    a = arg[i]
    i = i - 1
  end
  return os.getenv("PARTRAIN") or a or "build/partrain"
end

M.exe = exe_path()

-- s as one single-quoted shell word
function M.quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local pt = require "partrain"
local assert = require "luassert"  -- busted's assert is not visible from a required module

-- the numbers of nested tables (or of a tensor), in order
local function flat(v, out)
  out = out or {}
  if pt.is_tensor(v) then v = v:reshape(-1):tolist() end
  if type(v) == "table" then
    for _, e in ipairs(v) do flat(e, out) end
  else
    out[#out + 1] = v
  end
  return out
end

M.flat = flat

-- assert_close(t, expected[, tol]) comparing tensors or nested tables element by element with a
-- relative tolerance (absolute below 1); tol defaults to default_tol
function M.assert_close_with(default_tol)
  return function(t, expected, tol)
    local a = flat(pt.is_tensor(t) and t:tolist() or t)
    local b = flat(pt.is_tensor(expected) and expected:tolist() or expected)
    assert.are.equal(#b, #a)
    for i = 1, #a do
      if math.abs(a[i] - b[i]) > (tol or default_tol) * math.max(1, math.abs(b[i])) then
        error(string.format("element %d: got %.17g, expected %.17g", i, a[i], b[i]), 2)
      end
    end
  end
end


-- the error f(...) raises, as a string (fails the spec when f does not raise)
function M.errmsg(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- f(...) raises exactly msg after its "file:line: " position prefix
function M.assert_error(msg, f, ...)
  local err = M.errmsg(f, ...)
  local at = err:find(msg, 1, true)
  assert(at, "expected error '" .. msg .. "', got '" .. err .. "'")
  assert.are.equal(msg, err:sub(at))
  assert(at == 1 or err:sub(1, at - 1):match(":%d+: $"), "unexpected prefix in '" .. err .. "'")
end

-- f(...) raises an error whose message contains msg (for messages with a variable part)
function M.assert_error_contains(msg, f, ...)
  local err = M.errmsg(f, ...)
  assert(err:find(msg, 1, true), "expected '" .. msg .. "' in: " .. err)
end

-- a module's state_dict keys, in the order pairs gives them
function M.state_dict_keys(m)
  local out = {}
  for k in pairs(m:state_dict()) do out[#out + 1] = k end
  return out
end

-- a fresh directory for a spec file's temporary files: its path, and tmp(name) inside it
function M.tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. M.quote(p)))
  return p, function(name) return p .. "/" .. name end
end

function M.write_file(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  return path
end

function M.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The deterministic values spec/fixtures/make_fixtures.py feeds PyTorch for the module specs
-- (RNNs, packed sequences, transformers): s * sin(0.7 i + 1.3 k + 0.1) over a shape, k a seed.
function M.sin_values(shape, k, s, dtype)
  s = s or 0.5
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 0, n - 1 do t[i + 1] = s * math.sin(0.7 * i + 1.3 * k + 0.1) end
  return pt.tensor(t, {dtype = dtype or "float32"}):reshape(shape)
end

-- an input as the fixtures make them: scale 1, seed 101 unless given
function M.sin_input(shape, k, dtype) return M.sin_values(shape, k or 101, 1.0, dtype) end

-- every parameter and buffer of m set from sin_values (seed k in state_dict order, scale 0.5)
-- through load_state_dict, as the fixtures set PyTorch's module; m in eval mode
function M.fill_params(m)
  local sd, k = {}, 0
  for name, t in pairs(m:state_dict()) do
    k = k + 1
    sd[name] = M.sin_values(t:size(), k, 0.5, t:dtype())
  end
  m:load_state_dict(sd)
  m:eval()
  return m
end

-- actual matches a fixture {shape, flat values} within tol (absolute; 3e-5 by default); equal
-- values match (infinities too); the message names the worst element
function M.assert_fixture(actual, expected, tol)
  tol = tol or 3e-5
  assert.is_true(pt.is_tensor(actual), "expected a tensor")
  local shape, v = expected[1], expected[2]
  assert.are.same(shape, actual:size())
  local flat = actual:contiguous():reshape(-1)
  local worst, at = 0, 0
  for i = 1, #v do
    local d = math.abs(flat:_get_flat(i) - v[i])
    if v[i] == flat:_get_flat(i) then d = 0 end -- -inf == -inf
    if not (d <= worst) then worst, at = d, i end
  end
  assert(worst <= tol, ("element %d differs by %g (got %.8g, expected %.8g)"):format(at, worst,
    flat:_get_flat(math.max(at, 1)), v[math.max(at, 1)]))
end

-- a per-sample training step for par_by_sample specs: cross-entropy of model(sample[1]) against
-- the class sample[2], backward, returned as the loss
function M.cross_entropy_step(sample, model)
  local loss = pt.nn.cross_entropy(model(sample[1]), sample[2])
  loss:backward()
  return loss
end

return M
