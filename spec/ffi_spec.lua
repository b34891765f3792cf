-- pt.ffi: loading libraries, signatures, calls and argument checks.
local pt = require "partrain"

local libpath = pt.ffi.exe_dir() .. "/spec/lib_native.so"

describe("pt.ffi", function()
  local lib
  setup(function() lib = pt.ffi.load(libpath) end)

  it("calls saxpy on tensors through their data pointers", function()
    local saxpy = lib:fn("saxpy", "void(int, float, float*, float*)")
    local x, y = pt.tensor({ 1, 2, 3 }), pt.tensor({ 10, 20, 30 })
    assert.is_nil(saxpy(3, 2.0, x, y))
    assert.are.same({ 12, 24, 36 }, y:tolist())
    assert.are.same({ 1, 2, 3 }, x:tolist())
  end)

  it("passes float64 and int64 tensors and returns numbers of each kind", function()
    local y = pt.tensor({ 1, 1 }, { dtype = "float64" })
    lib:fn("daxpy", "void(int, double, const double *x, double *y)")(2, 0.5, pt.tensor({ 2, 4 }, { dtype = "float64" }), y)
    assert.are.same({ 2, 3 }, y:tolist())
    local out = pt.zeros(4, { dtype = "int64" })
    lib:fn("iota_i64", "void(int64_t*, int64_t, int64_t)")(out, 4, 7)
    assert.are.same({ 7, 8, 9, 10 }, out:tolist())
    assert.are.equal(42, lib:fn("add_i64", "int64_t(long, long)")(40, 2))
    assert.are.equal(7.5, lib:fn("scale", "double(double, double)")(2.5, 3))
    assert.are.equal(32, lib:fn("sdot", "float(int, float*, float*)")(3, pt.tensor({ 1, 2, 3 }), pt.tensor({ 4, 5, 6 })))
    assert.are.equal(4294967295, lib:fn("bump_u32", "unsigned(unsigned)")(4294967294))
    assert.are.equal(10, lib:fn("twice_u64", "uint64_t(uint64_t)")(5))
    assert.is_true(lib:fn("is_positive", "bool(double)")(1.5))
    assert.is_false(lib:fn("is_positive", "bool(double)")(-1))
    assert.are.equal(2, lib:fn("count_true", "int(int, bool*)")(3, pt.tensor({ true, false, true })))
  end)

  it("passes strings, returns strings and NULL as nil", function()
    assert.are.equal(5, lib:fn("string_length", "size_t(const char*)")("hello"))
    assert.are.equal(0, lib:fn("string_length", "size_t(const char*)")(nil))
    assert.are.equal("good day", lib:fn("greeting", "const char*(int)")(1))
    assert.are.equal("hi", lib:fn("greeting", "const char*(int)")(0))
    assert.is_nil(lib:fn("nothing", "const char*(void)")())
    assert.are.equal(1, lib:fn("is_null", "int(void*)")(nil))
    assert.are.equal(0, lib:fn("is_null", "int(void*)")(pt.zeros(2, { dtype = "uint8" })))
  end)

  it("loads the running process with no path", function()
    local strlen = pt.ffi.load():fn("strlen", "size_t(const char*)")
    assert.are.equal(3, strlen("abc"))
  end)

  it("describes functions", function()
    local f = lib:fn("saxpy", "void(int n, float a, const float *x, float *y)")
    assert.are.equal("saxpy", f.name)
    assert.are.equal("void(int, float, float*, float*)", f.signature)
    assert.are.equal(4, f.nargs)
    assert.are.equal("ffi function saxpy: void(int, float, float*, float*)", tostring(f))
    assert.is_true(pt.ffi.is_function(f))
    assert.is_false(pt.ffi.is_function(print))
    assert.matches("^ffi library '.*lib_native.so'$", tostring(lib))
  end)

  describe("errors", function()
    it("names the position of a signature error", function()
      assert.has_error(function() lib:fn("saxpy", "void(int,") end,
        'ffi: bad signature "void(int,": expected a type at position 10')
      assert.has_error(function() lib:fn("saxpy", "void(int, flaot)") end,
        "ffi: bad signature \"void(int, flaot)\": unknown type 'flaot' at position 11")
      assert.has_error(function() lib:fn("saxpy", "float*(int)") end,
        "ffi: bad signature \"float*(int)\": return type 'float*' is not supported (use void, a number type or const char*) at position 1")
    end)

    it("names an unknown symbol and its library", function()
      local ok, err = pcall(lib.fn, lib, "no_such_function", "void()")
      assert.is_false(ok)
      assert.matches("ffi: no function 'no_such_function' in library '.*lib_native.so'", err)
    end)

    it("reports a library that cannot be loaded", function()
      local ok, err = pcall(pt.ffi.load, "/nonexistent/libnothing.so")
      assert.is_false(ok)
      assert.matches("ffi.load: cannot load '/nonexistent/libnothing.so': .*No such file", err)
    end)

    it("checks the number of arguments", function()
      local saxpy = lib:fn("saxpy", "void(int, float, float*, float*)")
      assert.has_error(function() saxpy(3, 2.0) end, "saxpy: expected 4 arguments, got 2")
    end)

    it("checks tensor dtypes against the signature", function()
      local saxpy = lib:fn("saxpy", "void(int, float, float*, float*)")
      local x = pt.tensor({ 1, 2, 3 })
      assert.has_error(function() saxpy(3, 2.0, x, pt.tensor({ 1, 2, 3 }, { dtype = "float64" })) end,
        "saxpy: argument 4 (float*) expects a float32 tensor, got float64")
      assert.has_error(function() saxpy(3, 2.0, pt.arange(3), x) end,
        "saxpy: argument 3 (float*) expects a float32 tensor, got int64")
      assert.has_error(function() saxpy(3, 2.0, {1, 2, 3}, x) end,
        "saxpy: argument 3 (float*) expects a float32 tensor, got table")
    end)

    it("checks numbers, integers, booleans and strings", function()
      local saxpy = lib:fn("saxpy", "void(int, float, float*, float*)")
      local x = pt.tensor({ 1 })
      assert.has_error(function() saxpy(1.5, 2.0, x, x) end,
        "saxpy: argument 1 (int) expects an integer, got a number with a fraction")
      assert.has_error(function() saxpy("1", 2.0, x, x) end,
        "saxpy: argument 1 (int) expects an integer, got string")
      assert.has_error(function() saxpy(2 ^ 40 // 1, 2.0, x, x) end,
        "saxpy: argument 1 (int): 1099511627776 is out of range")
      assert.has_error(function() saxpy(1, "2", x, x) end,
        "saxpy: argument 2 (float) expects a number, got string")
      assert.has_error(function() lib:fn("is_positive", "bool(bool)")(1) end,
        "is_positive: argument 1 (bool) expects a boolean, got integer")
      assert.has_error(function() lib:fn("string_length", "size_t(const char*)")(12) end,
        "string_length: argument 1 (const char*) expects a string or nil, got integer")
      assert.has_error(function() lib:fn("twice_u64", "uint64_t(uint64_t)")(-1) end,
        "twice_u64: argument 1 (uint64_t): -1 is out of range")
    end)

    it("refuses closed and non-contiguous tensors", function()
      local f = lib:fn("sdot", "float(int, float*, float*)")
      local x = pt.tensor({ 1, 2 })
      do
        local c <close> = pt.tensor({ 1, 2 })
        x = c
      end
      assert.has_error(function() f(2, x, x) end,
        "sdot: argument 2 (float*) expects a live float32 tensor, got a closed tensor")
      if pt.Tensor.t then
        local m = pt.zeros(2, 3):t()
        assert.has_error(function() f(2, m, m) end,
          "sdot: argument 2 (float*) expects a contiguous tensor (call :contiguous() first)")
      end
    end)
  end)
end)
