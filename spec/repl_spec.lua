-- The REPL (host/repl.c) fed through a pipe: `partrain -i < input`. Without a terminal there
-- are no prompts, so stdout holds exactly the auto-printed results. help() (partrain.help).

local support = require "spec.support"
local EXE, q = support.exe, support.quote

-- feed input to `partrain -i`; returns stdout, stderr, exit code
local function repl(input, extra)
  local inf, errf = os.tmpname(), os.tmpname()
  local f = assert(io.open(inf, "w"))
  f:write(input)
  f:close()
  local p = io.popen(q(EXE) .. " -i " .. (extra or "") .. " < " .. q(inf) .. " 2> " .. q(errf) ..
    "; echo \"<rc=$?>\"")
  local out = p:read("a")
  p:close()
  f = io.open(errf)
  local err = f:read("a")
  f:close()
  os.remove(inf)
  os.remove(errf)
  local rc = tonumber(out:match("<rc=(%d+)>\n?$"))
  return (out:gsub("<rc=%d+>\n?$", "")), err, rc
end

describe("REPL", function()
  it("auto-prints expressions and =expr, not statements", function()
    local out, err, rc = repl("x = 1\nx + 1\n=x * 3\nlocal y = 5\n")
    assert.are.equal("2\n3\n", out)
    assert.are.equal("", err)
    assert.are.equal(0, rc)
  end)

  it("prints several results tab-separated, nil, and strings raw", function()
    local out = repl("1, 'a', nil\nnil\n'text'\n")
    assert.are.equal("1\ta\tnil\nnil\ntext\n", out)
  end)

  it("continues incomplete chunks over several lines", function()
    local out, err = repl("function f(a)\n  return a,\n    a * 2\nend\nf(21)\nfor i = 1, 2 do\n  print(i)\nend\n")
    assert.are.equal("21\t42\n1\n2\n", out)
    assert.are.equal("", err)
  end)

  it("keeps a multi-line table constructor going", function()
    local out = repl("t = {\n  a = 1,\n  b = {2, 3},\n}\nt\n")
    assert.are.equal("{a = 1, b = {2, 3}}\n", out)
  end)

  it("pretty-prints tables: nested, sorted, cycles marked", function()
    local out = repl("c = {1, 2, x = {y = 'z'}}\nc.self = c\nc\n")
    assert.are.equal('{1, 2, self = <cycle>, x = {y = "z"}}\n', out)
  end)

  it("prints tensors with values, shape and dtype", function()
    local out = repl("pt.tensor({{1, 2}, {3, 4.5}})\n")
    assert.are.equal("tensor({{1.0000, 2.0000},\n        {3.0000, 4.5000}}, shape={2,2}, dtype=float32)\n", out)
  end)

  it("reports an error with a traceback and goes on", function()
    local out, err, rc = repl("error('boom')\n1 + 1\n")
    assert.are.equal("2\n", out)
    assert.matches("^partrain: stdin:1: boom\nstack traceback:\n", err)
    assert.are.equal(0, rc)
  end)

  it("reports a syntax error and goes on", function()
    local out, err = repl("x = = 2\n'after'\n")
    assert.are.equal("after\n", out)
    assert.are.equal("partrain: stdin:1: unexpected symbol near '='\n", err)
  end)

  it("reports a chunk left incomplete at the end of input", function()
    local out, err = repl("function g()\n  return 1\n")
    assert.are.equal("", out)
    assert.are.equal("partrain: stdin:2: 'end' expected (to close 'function' at line 1) near <eof>\n", err)
  end)

  it("prints data handlers, datasets and schedulers through __tostring (not their fields)", function()
    local out, err = repl("ds = pt.data.TensorDataset(pt.zeros(60000, 784), pt.zeros(60000))\n" ..
      "h = pt.data.DataHandler(ds, {batch = 64, shuffle = true})\nh\nds\n" ..
      "opt = pt.optim.SGD(pt.nn.Linear(2, 2):parameters(), {lr = 0.1})\n" ..
      "s = pt.optim.StepLR(opt, {step_size = 10}); for i = 1, 3 do s:step() end\ns\n")
    assert.are.equal("DataHandler(batch=64, shuffle=true, 938 batches of TensorDataset(60000))\n" ..
      "TensorDataset(60000)\nStepLR(step_size=10, gamma=0.1, last_epoch=3)\n", out)
    assert.are.equal("", err)
  end)

  it("reports a failing __tostring while printing", function()
    local out, err = repl("setmetatable({}, {__tostring = function() error('no', 0) end})\n")
    assert.are.equal("<table: __tostring failed: no>\n", out)
    assert.are.equal("", err)
  end)

  it("survives Ctrl-C in a running line", function()
    local inf = os.tmpname()
    local f = assert(io.open(inf, "w"))
    f:write("while true do end\n")
    f:close()
    local p = io.popen("{ cat " .. q(inf) .. "; sleep 1.5; echo '40 + 2'; } | " ..
      q(EXE) .. " -i 2>&1 & p=$!; sleep 0.7; kill -INT $p; wait $p; echo \"<rc=$?>\"")
    local out = p:read("a")
    p:close()
    os.remove(inf)
    assert.matches("^partrain: interrupted\nstack traceback:\n", out)
    assert.matches("\n42\n<rc=0>\n$", out)
  end)
end)

describe("tab completion", function()
  -- runs the REPL on a terminal (util-linux's script gives it one) with input typed at once;
  -- returns what the terminal showed
  local function tty(input)
    local inf = os.tmpname()
    local f = assert(io.open(inf, "w"))
    f:write(input)
    f:close()
    local hist = os.tmpname()
    local p = io.popen("HOME=/nonexistent PARTRAIN_HISTORY=" .. q(hist) .. " INPUTRC=/dev/null TERM=dumb " ..
      "timeout 20 script -qec " .. q(q(EXE)) .. " /dev/null < " .. q(inf) .. " 2>&1")
    local out = p:read("a")
    p:close()
    os.remove(inf)
    os.remove(hist)
    return (out:gsub("\r", ""))
  end

  local has_script = os.execute("command -v script > /dev/null 2>&1")

  it("completes tensor properties (grad, requires_grad, is_leaf, grad_fn), not only methods", function()
    if not has_script then
      pending("util-linux's script is not installed")
      return
    end
    -- without the completion the lines would read x.gr, x.requires, ... and print nil
    local out = tty("x = pt.ones(2, {requires_grad = true}); y = (x * 2):sum(); y:backward()\n" ..
      "x.gr\t\ny.requires\t\nx.is_l\t\ny.grad_f\t\n")
    assert.matches("\ntensor%({2%., 2%.}, shape={2}, dtype=float32%)\n> [^\n]*\ntrue\n> [^\n]*\ntrue\n" ..
      "> [^\n]*\nSumBackward\n", out)
  end)
end)

describe("help", function()
  it("is a global in the REPL and prints a function's doc", function()
    local out, err = repl("help(pt.zeros)\n")
    assert.matches("^pt%.zeros%(size%.%.%.%[, {dtype=, requires_grad=}%]%) %-> Tensor of zeros", out)
    assert.are.equal("", err)
  end)

  it("prints a method's doc through t.name", function()
    local out = repl("t = pt.zeros(2)\nhelp(t.size)\n")
    assert.matches("^t:size%(%[dim%]%)", out)
  end)

  it("searches by name", function()
    local out = repl("help('ones')\n")
    assert.matches("^pt%.ones%(size", out)
    local out2 = repl("help('pt.zeros_like')\n")
    assert.matches("^pt%.zeros_like%(t", out2)
  end)

  it("lists the module with one-line summaries and its submodules", function()
    local out = repl("help(pt)\n")
    assert.matches("^partrain module pt %(partrain [%d.]+%): %d+ functions\n", out)
    assert.matches("\n  zeros +pt%.zeros%(size", out)
    assert.matches("\nSubmodules %(help%(pt%.<name>%) lists one%): [%w_, ]*nn", out)
  end)

  it("lists the tensor methods for pt.Tensor and for a tensor", function()
    local out = repl("help(pt.Tensor)\n")
    assert.matches("^Tensor methods %(call as t:name%(%.%.%.%)%):\n", out)
    assert.matches("\n  size +t:size%(", out)
    local out2 = repl("help(pt.zeros(2, 3))\n")
    assert.matches("^a Tensor %(shape={2,3}, dtype=float32%); its methods:\n", out2)
  end)

  it("finds docs registered by Lua modules loaded later", function()
    local out = repl("help(require('partrain.pretty').format)\nhelp('format')\n")
    assert.matches("^pretty%.format%(v", out)
    assert.matches("\npretty%.format%(v", out)
  end)

  it("says clearly when there is no help", function()
    local out = repl("help(print)\nhelp('no_such_thing')\nhelp(5)\nhelp({})\n" ..
      "pt.undocumented_fn_x = function() end\nhelp(pt.undocumented_fn_x)\n")
    assert.are.equal("no help for this function\n" ..
      "no help for 'no_such_thing'\n" ..
      "no help for a number value\n" ..
      "no help for this table (not a documented module or type)\n" ..
      "no help for pt.undocumented_fn_x (undocumented)\n", out)
  end)

  it("suggests similar names", function()
    local out = repl("help('zero')\n")
    assert.matches("^no help for 'zero'; similar names: .*pt%.zeros", out)
  end)

  it("explains itself", function()
    local out = repl("help()\nhelp(help)\n")
    assert.matches("^partrain help\n  help%(pt%)", out)
    assert.matches("\nhelp%(x%): print the doc of a function or type x%.", out)
  end)

  it("help.text returns the text", function()
    local help = require "partrain.help"
    local pt = require "partrain"
    assert.are.equal(pt._docs[pt.zeros], help.text(pt.zeros))
    assert.are.equal("no help for a boolean value", help.text(true))
  end)
end)
