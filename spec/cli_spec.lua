-- The partrain executable's command line (host/main.c), run through io.popen.
-- The executable is the interpreter running this spec (build/partrain /usr/bin/busted spec).

local support = require "spec.support"
local EXE, q = support.exe, support.quote

-- run a shell command line with EXE as $P; returns stdout, stderr, exit code
local function sh(cmdline, stdin)
  local errf = os.tmpname()
  local full = "P=" .. q(EXE) .. "; " .. cmdline
  if stdin then
    local inf = os.tmpname()
    local f = assert(io.open(inf, "w"))
    f:write(stdin)
    f:close()
    full = "(" .. full .. ") < " .. q(inf)
  end
  local p = io.popen("(" .. full .. ") 2>" .. q(errf) .. "; echo \"<rc=$?>\"")
  local out = p:read("a")
  p:close()
  local f = io.open(errf)
  local err = f:read("a")
  f:close()
  os.remove(errf)
  local rc = tonumber(out:match("<rc=(%d+)>\n?$"))
  out = out:gsub("<rc=%d+>\n?$", "")
  return out, err, rc
end

local function script(text)
  local name = os.tmpname() .. ".lua"
  local f = assert(io.open(name, "w"))
  f:write(text)
  f:close()
  return name
end

describe("partrain command line", function()
  it("reports the caller's line for functions loaded on first use (pt.save, pt.inbatch_parallel)", function()
    for _, call in ipairs {"pt.save(123)", "pt.inbatch_parallel(1)"} do
      local _, err, rc = sh("$P -e " .. q("local function f() " .. call .. " end\nf()"))
      assert.are.equal(1, rc)
      assert.matches("^partrain: %(command line%):1: ", err)
    end
  end)

  it("is the interpreter running the specs", function()
    assert.matches("partrain$", EXE)
  end)

  it("-v and --version print the version", function()
    for _, opt in ipairs({"-v", "--version"}) do
      local out, err, rc = sh("$P " .. opt)
      assert.matches("^partrain %d+%.%d+%.%d+ %(Lua 5%.4", out)
      assert.are.equal("", err)
      assert.are.equal(0, rc)
    end
  end)

  it("-h prints the usage on stdout", function()
    local out, _, rc = sh("$P -h")
    assert.matches("^usage: partrain %[options%] %[script %[args%]%]", out)
    assert.matches("%-e chunk", out)
    assert.are.equal(0, rc)
  end)

  it("--help prints the usage on stdout and exits 0, as -h", function()
    local out, err, rc = sh("$P --help")
    local h_out = sh("$P -h")
    assert.matches("^usage: partrain %[options%] %[script %[args%]%]", out)
    assert.are.equal(h_out, out)
    assert.matches("\n  %-l g=mod  require library 'mod' into global 'g'\n", out)
    assert.matches("\n  %-h        show this help %(also %-%-help%)\n", out)
    assert.are.equal("", err)
    assert.are.equal(0, rc)
    local _, err2, rc2 = sh("$P --helpx")
    assert.matches("^partrain: unrecognized option '%-%-helpx'\nusage:", err2)
    assert.are.equal(1, rc2)
  end)

  it("an unknown option prints the usage and exits 1", function()
    local out, err, rc = sh("$P -x")
    assert.are.equal("", out)
    assert.matches("^partrain: unrecognized option '%-x'\nusage: partrain", err)
    assert.are.equal(1, rc)
    local _, err2, rc2 = sh("$P -vx")
    assert.matches("^partrain: unrecognized option '%-vx'", err2)
    assert.are.equal(1, rc2)
  end)

  it("-e without a chunk is an error", function()
    local _, err, rc = sh("$P -e")
    assert.matches("^partrain: '%-e' needs argument\nusage:", err)
    assert.are.equal(1, rc)
  end)

  it("-e runs chunks in order with pt preloaded", function()
    local out, err, rc = sh("$P -e 'io.write(1)' -e 'io.write(2, type(pt.zeros))' '-eio.write(3)'")
    assert.are.equal("12function3", out)
    assert.are.equal("", err)
    assert.are.equal(0, rc)
  end)

  it("-e '' does nothing and succeeds", function()
    local out, err, rc = sh("$P -e ''")
    assert.are.same({ "", "", 0 }, { out, err, rc })
  end)

  it("runs a script with arg and ... as lua.c", function()
    local s = script("io.write(table.concat({...}, ','), '|', arg[0], '|', arg[1], '|', arg[2], '|', " ..
      "arg[-1], '|', arg[-2], '|', #arg)")
    local out, err, rc = sh("$P -e 'x=1' " .. s .. " a 'b c'")
    assert.are.equal("a,b c|" .. s .. "|a|b c|x=1|-e|2", out)
    assert.are.equal("", err)
    assert.are.equal(0, rc)
    os.remove(s)
  end)

  it("puts the interpreter at arg[0] when there is no script", function()
    local out = sh("$P -e 'io.write(arg[0] == arg[-1] and \"bad\" or arg[0], \" \", arg[1])'")
    assert.matches("partrain %-e$", out)
  end)

  it("runs stdin with '-', passing the remaining arguments", function()
    local out, _, rc = sh("$P - x y", "io.write(select('#', ...), ...)")
    assert.are.equal("2xy", out)
    assert.are.equal(0, rc)
  end)

  it("runs piped stdin as a script when there are no arguments", function()
    local out, _, rc = sh("$P", "local a = 20\nio.write(a + 1)\n")
    assert.are.equal("21", out)
    assert.are.equal(0, rc)
  end)

  it("'--' stops option handling", function()
    local s = script("io.write(arg[1])")
    local out, _, rc = sh("$P -- " .. s .. " -x")
    assert.are.equal("-x", out)
    assert.are.equal(0, rc)
    os.remove(s)
  end)

  it("-l requires a module into a global", function()
    local out, _, rc = sh("$P -l partrain -e 'io.write(type(partrain.zeros))'")
    assert.are.equal("function", out)
    assert.are.equal(0, rc)
    local out2, err2, rc2 = sh("$P -l no_such_module_x -e 'io.write(1)'")
    assert.are.equal("", out2)
    assert.matches("^partrain: module 'no_such_module_x' not found", err2)
    assert.are.equal(1, rc2)
  end)

  it("-l g=mod requires mod into global g, as lua.c 5.4.4", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. q(dir)))
    local f = assert(io.open(dir .. "/clispecmod.lua", "w"))
    f:write("return {hello = function() return 'hi' end}\n")
    f:close()
    local env = "LUA_PATH=" .. q(dir .. "/?.lua;;") .. " "
    local out, err, rc = sh(env .. "$P -l g=clispecmod -e 'io.write(g.hello(), \" \", tostring(clispecmod))'")
    assert.are.same({ "hi nil", "", 0 }, { out, err, rc })
    local out2 = sh(env .. "$P -lg2=clispecmod -e 'io.write(g2.hello())'")
    assert.are.equal("hi", out2)
    local out3 = sh(env .. "$P -l clispecmod -e 'io.write(clispecmod.hello())'")
    assert.are.equal("hi", out3)
    local out4, err4, rc4 = sh(env .. "$P -l g=no_such_module_y -e 'io.write(1)'")
    assert.are.equal("", out4)
    assert.matches("^partrain: module 'no_such_module_y' not found", err4)
    assert.are.equal(1, rc4)
    os.remove(dir .. "/clispecmod.lua")
    os.remove(dir)
  end)

  it("an error in -e prints the message and a traceback and exits 1", function()
    local out, err, rc = sh("$P -e 'error(\"bad thing\")' -e 'io.write(\"not reached\")'")
    assert.are.equal("", out)
    assert.matches("^partrain: %(command line%):1: bad thing\nstack traceback:\n", err)
    assert.matches("in function 'error'", err)
    assert.are.equal(1, rc)
  end)

  it("an error in a script names the file and line and exits 1", function()
    local s = script("local function f()\n  error('deep')\nend\nf()\n")
    local _, err, rc = sh("$P " .. s)
    assert.matches(":2: deep\nstack traceback:\n", err, 1, true)
    assert.matches("in local 'f'", err, 1, true)
    assert.are.equal(1, rc)
    os.remove(s)
  end)

  it("reports non-string error objects", function()
    local _, err, rc = sh("$P -e 'error({})'")
    assert.matches("^partrain: %(error object is a table value%)", err)
    assert.are.equal(1, rc)
    local _, err2 = sh("$P -e 'error(setmetatable({}, {__tostring = function() return \"OBJ\" end}))'")
    assert.are.equal("partrain: OBJ\n", err2)
  end)

  it("reports a syntax error and a missing script", function()
    local _, err, rc = sh("$P -e 'x = = 1'")
    assert.matches("^partrain: %(command line%):1: unexpected symbol near '='", err)
    assert.are.equal(1, rc)
    local _, err2, rc2 = sh("$P /nonexistent/script.lua")
    assert.are.equal("partrain: cannot open /nonexistent/script.lua: No such file or directory\n", err2)
    assert.are.equal(1, rc2)
  end)

  it("-i runs the script, then the REPL on stdin", function()
    local s = script("y = 41")
    local out, err, rc = sh("$P -i " .. s, "y + 1\n")
    assert.are.equal("42\n", out)
    assert.are.equal("", err)
    assert.are.equal(0, rc)
    os.remove(s)
  end)

  it("help is available from scripts through require and pt.help", function()
    local out = sh("$P -e 'require(\"partrain.help\")(pt.zeros)'")
    assert.matches("^pt%.zeros%(size%.%.%.", out)
    local out2, err2 = sh("$P -e 'pt.help(pt.ones)'")
    assert.matches("^pt%.ones%(size%.%.%.", out2)
    assert.are.equal("", err2)
  end)

  it("Ctrl-C stops a running chunk with 'interrupted' and exit 1", function()
    local out, err, rc = sh("$P -e 'io.write(\"start\\n\") io.flush() while true do end' > /dev/null & p=$!; " ..
      "sleep 0.5; kill -INT $p; wait $p")
    assert.are.equal("", out)
    assert.matches("^partrain: interrupted\nstack traceback:\n.*%(command line%):1: in main chunk", err)
    assert.are.equal(1, rc)
  end)

  it("a caught Ctrl-C is delivered once: the script goes on, backward works", function()
    -- the timer starts inside the pcall, so however slow the machine the signal comes there
    local out, err, rc = sh("$P -e 'local f = pt._par_test_sigint; " ..
      "local ok, e = pcall(function() f(0.3); local i = 0 while true do i = i + 1 end end); " ..
      "local x = pt.ones(3, {requires_grad=true}); (x*x):sum():backward(); " ..
      "io.write(tostring(ok), \" \", e, \" \", string.format(\"%g\", x.grad:sum():item()))'")
    assert.are.same({ "false interrupted 6", "", 0 }, { out, err, rc })
  end)

  it("a script that caught a Ctrl-C is interrupted by the next one, not killed", function()
    -- the handler stayed at SIGINT's default after the first (lua.c's rule for one chunk)
    local out, err, rc = sh("$P -e 'for k = 1, 3 do " ..
      "local ok, e = pcall(function() pt._par_test_sigint(0.2); local t = os.clock() " ..
      "while os.clock() - t < 20 do end end); io.write(k, \" \", tostring(ok), \" \", " ..
      "tostring(e):match(\"interrupted\") or tostring(e), \"\\n\") end'")
    assert.are.same({ "1 false interrupted\n2 false interrupted\n3 false interrupted\n", "", 0 }, { out, err, rc })
  end)

  -- runs `use` on a 4-sample loader h, then plain Lua code that a Ctrl-C must interrupt;
  -- returns what the script wrote (ok, the error, then `show`) and checks it exited cleanly
  local function interrupted_after(use, show)
    local out, err, rc = sh("$P -e 'local f = pt._par_test_sigint; " ..
      "local h = pt.data.DataHandler({get = function(_, i) return pt.tensor({i}) end, " ..
      "len = function() return 4 end}, {batch = 2, progress = false}); " .. use .. "; " ..
      "local ok, e = pcall(function() f(0.3); local t0 = os.clock() while os.clock() - t0 < 20 do end end); " ..
      "io.write(tostring(ok), \" \", tostring(e)" .. (show and (", \" \", " .. show) or "") .. ")'")
    assert.are.same({ "", 0 }, { err, rc })
    return out
  end

  it("Ctrl-C stops plain code after a batch taken by hand from an iterator (h:batches()())", function()
    -- the iterator defers Ctrl-C to the end of a step while a loop runs it; called by hand it
    -- has no loop to end that, and the first Ctrl-C of the session was swallowed
    assert.matches("^false .*interrupted 2$", interrupted_after("local x = h:batches()(); collectgarbage()", "x:size(1)"))
  end)

  it("Ctrl-C stops plain code after next_batch() went past an epoch's end", function()
    -- next_batch's iterator took the deferral again at each new epoch, with no loop to end it
    assert.matches("^false .*interrupted$", interrupted_after(
      "h:next_batch(); collectgarbage(); for _ = 1, 4 do h:next_batch() end; collectgarbage()"))
  end)

  it("starts chunks with the interrupt flag clear (backward polls it)", function()
    local out, err, rc = sh("$P -e 'local x = pt.ones(3, {requires_grad=true}); (x*x):sum():backward(); " ..
      "io.write(string.format(\"%g\", x.grad:sum():item()))'")
    assert.are.same({ "6", "", 0 }, { out, err, rc })
  end)
end)

describe("scripts/fashion_mnist_mlp.lua", function()
  local usage = "usage: partrain scripts/fashion_mnist_mlp.lua [epochs] [checkpoint path]\n" ..
    "  epochs: a positive integer (default 10); checkpoint path: default mlp.safetensors"

  it("rejects bad arguments with the usage before training (no checkpoint written)", function()
    local dir = os.tmpname()
    for _, case in ipairs {
      {"abc " .. dir .. ".ckpt", "epochs must be a positive integer, got 'abc'"},
      {"0", "epochs must be a positive integer, got '0'"},
      {"2.5", "epochs must be a positive integer, got '2.5'"},
      {"3 a.safetensors extra", "too many arguments (3)"},
      {"3 ''", "the checkpoint path is empty"},
      {"1e1", "epochs must be a positive integer, got '1e1'"}, -- tonumber took these
      {"0x3", "epochs must be a positive integer, got '0x3'"},
      {"' 3'", "epochs must be a positive integer, got ' 3'"},
      -- a checkpoint that cannot be written stops it before the training, not after
      {"1 /nonexistent/dir/m.safetensors",
       "cannot write the checkpoint: /nonexistent/dir/m.safetensors.tmp: No such file or directory"},
    } do
      local out, err, rc = sh("FASHION_MNIST_DIR=/nonexistent/ $P scripts/fashion_mnist_mlp.lua " .. case[1])
      assert.are.equal("", out)
      assert.are.equal("partrain: fashion_mnist_mlp: " .. case[2] .. "\n" .. usage .. "\n",
        err:match("^(.-)stack traceback:\n"))
      assert.are.equal(1, rc)
    end
    assert.is_nil(io.open(dir .. ".ckpt"))
    os.remove(dir)
  end)

  it("loads partrain.tensor_more on first use only (pt.kron, t:kron, help)", function()
    local script = [[
local pt = require "partrain"
io.write(tostring(package.loaded["partrain.tensor_more"] ~= nil), " ")
local a = pt.ones(2, 2)
io.write(a:kron(a):size(1), " ", tostring(package.loaded["partrain.tensor_more"] ~= nil), " ")
io.write(tostring(a.no_such_thing), " ", tostring(pt.no_such_thing), "\n")
]]
    local out, err, rc = sh("$P -e " .. q(script))
    assert.are.same({"false 4 true nil nil\n", "", 0}, {out, err, rc})
    out = sh("$P -e " .. q('local pt = require "partrain"; io.write(tostring(pt.meshgrid ~= nil))'))
    assert.are.equal("true", out)
  end)

  it("-h and --help print the usage", function()
    for _, a in ipairs {"-h", "--help"} do
      local out, err, rc = sh("$P scripts/fashion_mnist_mlp.lua " .. a)
      assert.are.same({ usage .. "\n", "", 0 }, { out, err, rc })
    end
  end)

  it("takes epochs and a path (reaching the data loading)", function()
    local _, err, rc = sh("FASHION_MNIST_DIR=/nonexistent/ $P scripts/fashion_mnist_mlp.lua 2 x.safetensors")
    assert.matches("^partrain: [^\n]*/nonexistent/train%-images%-idx3%-ubyte%.gz", err)
    assert.are.equal(1, rc)
  end)
end)

describe("the Lua module from a stock lua5.4", function()
  -- runs chunk (a Lua string, no single quotes) in lua5.4 with this build's module; -> output, ok
  local function stock_lua(chunk)
    local dir = pt.ffi.exe_dir()
    -- an ASan build's module needs the ASan runtime loaded first into the stock interpreter
    local preload = pt._sanitizer == "address"
      and "LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 " or ""
    local h = io.popen(string.format(preload ..
      "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='%s/lua/?.so;;' lua5.4 -e '%s' 2>&1", dir, chunk))
    local out = h:read("a")
    return out, h:close()
  end

  it("gives the same API through require \"partrain\"", function()
    local out, ok = stock_lua('local pt = require "partrain"; local m = pt.nn.Linear(3, 2); ' ..
      'print(pt.ones(2, 3):sum():item(), m(pt.ones(4, 3)):size()[1], pt.is_grad_enabled())')
    assert.is_true(ok, out)
    assert.are.equal("6.0\t4\ttrue\n", out)
  end)

  it("frees the tensors of dropped handles under lua5.4's own collector", function()
    -- handles have no __gc where partrain's allocator wraps the state's: 1,500 temporaries of
    -- 4 MB (6 GB in all) must come and go under lua.c's allocator and incremental collector
    local out, ok = stock_lua('local pt = require "partrain"; local x = pt.zeros(1024, 1024); ' ..
      'for i = 1, 1500 do local y = x + i end; local v = pt.ones(1); ' ..
      'for i = 1, 200000 do v = v + 1 end; print(v:item()); ' ..
      'for l in io.lines("/proc/self/status") do ' ..
      'if l:match("^VmHWM") then print(l:match("(%d+)")) end end')
    assert.is_true(ok, out)
    local value, peak_kb = out:match("^(%S+)\n(%d+)\n$")
    assert.are.equal("200001.0", value, out)
    assert.is_true(tonumber(peak_kb) < 600 * 1024, "peak RSS " .. tostring(peak_kb) .. " kB")
  end)
end)
