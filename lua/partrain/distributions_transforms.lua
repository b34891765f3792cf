-- partrain.distributions_transforms: torch.distributions.constraints (torch 1.13) as constraint
-- objects with classes, the transforms distributions.lua lacks (IndependentTransform,
-- ReshapeTransform, SoftmaxTransform, LowerCholeskyTransform, CorrCholeskyTransform,
-- CatTransform, StackTransform, CumulativeDistributionTransform, identity_transform) and torch's
-- constraint registries biject_to and transform_to.
--
-- Loaded once at the end of distributions.lua: require("partrain.distributions_transforms")(M, I)
-- with M the module and I its internals (the constraint table C, the transform class helpers).
-- The constraints distributions.lua made before (C.real, C.positive, ..., the supports its
-- distributions return) get their torch class here, so d.support, t.domain and
-- pt.distributions.constraints.* are the same objects and biject_to(d.support) works.
--
-- A constraint's check takes both call styles: c:check(value) (partrain's methods) and
-- c.check(value) (the form distributions.lua uses). Dims are 1-based (CatTransform and
-- StackTransform's dim defaults to 1, torch's 0); negative dims count from the end as torch's.
local pt = require "partrain"

return function(M, I)
  local C, docs = I.C, I.docs
  local is_tensor, typename, num, shape_str = pt.is_tensor, I.typename, I.num, I.shape_str
  local concat, slice, sum_rightmost, finfo = I.concat, I.slice, I.sum_rightmost, I.finfo
  local event_dim_of, softplus, pad_last = I.event_dim_of, I.softplus, I.pad_last
  local transform_class, new_transform, with_inv = I.transform_class, I.new_transform, I.with_inv
  local Transform, ComposeTransform, AffineTransform = M.Transform, M.ComposeTransform, M.AffineTransform
  local ExpTransform, SigmoidTransform, StickBreakingTransform = M.ExpTransform, M.SigmoidTransform,
    M.StickBreakingTransform

  -- errors point at the first caller outside this file and distributions.lua
  local THIS, DIST = debug.getinfo(1, "S").source, I.source
  local function fail(msg)
    local level = 2
    while true do
      local info = debug.getinfo(level, "S")
      if info == nil then error(msg, 0) end
      if info.source ~= THIS and info.source ~= DIST then break end
      level = level + 1
    end
    error(msg, level)
  end

  local function bound_str(v)
    if is_tensor(v) then return v:numel() == 1 and num(v:item()) or "Tensor" end
    return type(v) == "number" and num(v) or tostring(v)
  end

  local function int_arg(what, v, min)
    local iv = type(v) == "number" and math.tointeger(v)
    if not iv or iv < min then
      fail(string.format("%s must be an integer >= %d, got %s", what, min, tostring(v)))
    end
    return iv
  end

  -- ---------------------------------------------------------------- constraint classes

  local constraints = {}
  M.constraints = constraints

  -- c.check / c:check: a closure made on each access (so c.check(v) works without self)
  local function bound_check(self)
    return function(a, b)
      local v = a
      if rawequal(a, self) then v = b end
      if type(v) == "number" then v = pt.tensor(v, {dtype = "float64"}) end
      if not is_tensor(v) then
        fail(tostring(self) .. ".check: value must be a Tensor or a number, got " .. typename(v))
      end
      local f = rawget(self, "_f")
      if f then return f(v) end
      return self:_check(v)
    end
  end

  local function constraint_class(name, parent, fields)
    local cls = fields or {}
    cls.__name = "pt.distributions.constraints." .. name
    cls._name = name
    cls._is_constraint_class = true
    cls.__index = function(self, k)
      if k == "check" then return bound_check(self) end
      local get = cls._getters and cls._getters[k]
      if get then return get(self) end
      return cls[k]
    end
    cls.__tostring = function(self) return self:_repr() end
    setmetatable(cls, {__index = parent, __call = function(c, ...) return c._new(...) end})
    return cls
  end

  local Constraint = constraint_class("Constraint", nil,
    {is_discrete = false, event_dim = 0, desc = "a valid value"})
  constraints.Constraint = Constraint
  function Constraint:_repr() return self._name .. "()" end
  function Constraint:_check(_) fail(tostring(self) .. ".check: not implemented") end
  -- Constraint{check = fn(value) -> bool tensor[, desc=, event_dim=0, is_discrete=false]}: a user constraint
  function Constraint._new(spec)
    if type(spec) ~= "table" or type(spec.check) ~= "function" then
      fail("constraints.Constraint: expected a table with a check function")
    end
    local ed = int_arg("constraints.Constraint: event_dim", spec.event_dim or 0, 0)
    return setmetatable({_f = spec.check, desc = spec.desc, event_dim = ed, is_discrete = spec.is_discrete == true},
      Constraint)
  end

  -- a constraint of class cls from fields; desc for messages
  local function make(cls, fields)
    return setmetatable(fields, cls)
  end

  -- give a constraint table distributions.lua made its class (its own check function is kept)
  local function tag(c, cls, fields)
    if getmetatable(c) ~= nil then return c end
    local f = rawget(c, "check")
    c.check = nil
    c._f = f
    for k, v in pairs(fields or {}) do c[k] = v end
    return setmetatable(c, cls)
  end

  local function elementwise(name, check, fields)
    local cls = constraint_class(name, Constraint, fields)
    cls._check = check
    return cls
  end

  local Real = elementwise("Real", function(_, v) return v:eq(v) end, {desc = "real (not nan)"})
  local Boolean = elementwise("Boolean", function(_, v) return v:eq(0) | v:eq(1) end,
    {is_discrete = true, desc = "0 or 1"})
  local OneHot = elementwise("OneHot", function(_, v) return (v:eq(0) | v:eq(1)):all(-1) & v:sum(-1):eq(1) end,
    {is_discrete = true, event_dim = 1, desc = "a one-hot vector"})
  local Simplex = elementwise("Simplex",
    function(_, v) return v:ge(0):all(-1) & (v:sum(-1) - 1):abs():lt(1e-6) end,
    {event_dim = 1, desc = "a probability vector (non-negative, summing to 1 along the last dim)"})

  local function lower_triangular(v)
    local s = v:size()
    return v:tril():eq(v):reshape(concat(slice(s, 1, #s - 2), {-1})):all(-1)
  end
  local LowerTriangular = elementwise("LowerTriangular", function(_, v) return lower_triangular(v) end,
    {event_dim = 2, desc = "lower triangular"})
  local LowerCholesky = elementwise("LowerCholesky",
    function(_, v) return lower_triangular(v) & v:diagonal(0, -2, -1):gt(0):all(-1) end,
    {event_dim = 2, desc = "lower triangular with a positive diagonal"})
  local CorrCholesky = elementwise("CorrCholesky", function(_, v)
    local tol = finfo(v:dtype()).eps * v:size(-1) * 10
    local unit = (v:detach():pow(2):sum(-1):sqrt() - 1):abs():le(tol):all(-1)
    return lower_triangular(v) & v:diagonal(0, -2, -1):gt(0):all(-1) & unit
  end, {event_dim = 2, desc = "the lower Cholesky factor of a correlation matrix (unit rows)"})

  local function square(v)
    local s = v:size()
    return pt.full(slice(s, 1, #s - 2), s[#s - 1] == s[#s], {dtype = "bool"})
  end
  local function symmetric(v)
    local sq = square(v)
    if not sq:all():item() then return sq, false end
    return pt.isclose(v, v.mT, {atol = 1e-6}):all(-2):all(-1), true
  end
  local Square = elementwise("Square", function(_, v) return square(v) end, {event_dim = 2, desc = "square"})
  local Symmetric = constraint_class("Symmetric", Square, {desc = "symmetric"})
  function Symmetric:_check(v) return (symmetric(v)) end
  local PositiveSemidefinite = constraint_class("PositiveSemidefinite", Symmetric,
    {desc = "symmetric positive semi-definite"})
  function PositiveSemidefinite:_check(v)
    local sym = symmetric(v)
    if not sym:all():item() then return sym end
    return pt.linalg.eigvalsh(v):ge(0):all(-1)
  end
  local PositiveDefinite = constraint_class("PositiveDefinite", Symmetric, {desc = "symmetric positive definite"})
  local pd_check -- C.positive_definite's own (a Cholesky per batch element)
  function PositiveDefinite:_check(v)
    local sym = symmetric(v)
    if not sym:all():item() then return sym end
    return pd_check(v)
  end

  local function bounded(name, fields, check, desc_fn, repr_keys)
    local cls = constraint_class(name, Constraint, fields)
    cls._check = check
    function cls:_repr()
      local parts = {}
      for i, k in ipairs(repr_keys) do parts[i] = k .. "=" .. bound_str(self[k]) end
      return self._name .. "(" .. table.concat(parts, ", ") .. ")"
    end
    function cls._new(...)
      local args = table.pack(...)
      local c = {}
      for i, k in ipairs(repr_keys) do
        local v = args[i]
        if type(v) ~= "number" and not is_tensor(v) then
          fail(string.format("constraints.%s: %s must be a number or a Tensor, got %s", I.snake[name], k, typename(v)))
        end
        c[k] = v
      end
      c.desc = desc_fn(c)
      return make(cls, c)
    end
    return cls
  end

  local LB, UB, LBUB = {"lower_bound"}, {"upper_bound"}, {"lower_bound", "upper_bound"}
  I.snake = {IntegerInterval = "integer_interval", IntegerLessThan = "integer_less_than",
    IntegerGreaterThan = "integer_greater_than", GreaterThan = "greater_than", GreaterThanEq = "greater_than_eq",
    LessThan = "less_than", Interval = "interval", HalfOpenInterval = "half_open_interval"}
  local IntegerInterval = bounded("IntegerInterval", {is_discrete = true},
    function(self, v) return (v % 1):eq(0) & v:ge(self.lower_bound) & v:le(self.upper_bound) end,
    function(c) return string.format("an integer in [%s, %s]", bound_str(c.lower_bound), bound_str(c.upper_bound)) end, LBUB)
  local IntegerLessThan = bounded("IntegerLessThan", {is_discrete = true},
    function(self, v) return (v % 1):eq(0) & v:le(self.upper_bound) end,
    function(c) return "an integer <= " .. bound_str(c.upper_bound) end, UB)
  local IntegerGreaterThan = bounded("IntegerGreaterThan", {is_discrete = true},
    function(self, v) return (v % 1):eq(0) & v:ge(self.lower_bound) end,
    function(c) return "an integer >= " .. bound_str(c.lower_bound) end, LB)
  local GreaterThan = bounded("GreaterThan", {}, function(self, v) return v:gt(self.lower_bound) end,
    function(c) return "greater than " .. bound_str(c.lower_bound) end, LB)
  local GreaterThanEq = bounded("GreaterThanEq", {}, function(self, v) return v:ge(self.lower_bound) end,
    function(c) return "greater than or equal to " .. bound_str(c.lower_bound) end, LB)
  local LessThan = bounded("LessThan", {}, function(self, v) return v:lt(self.upper_bound) end,
    function(c) return "less than " .. bound_str(c.upper_bound) end, UB)
  local Interval = bounded("Interval", {}, function(self, v) return v:ge(self.lower_bound) & v:le(self.upper_bound) end,
    function(c) return string.format("in [%s, %s]", bound_str(c.lower_bound), bound_str(c.upper_bound)) end, LBUB)
  local HalfOpenInterval = bounded("HalfOpenInterval", {},
    function(self, v) return v:ge(self.lower_bound) & v:lt(self.upper_bound) end,
    function(c) return string.format("in [%s, %s)", bound_str(c.lower_bound), bound_str(c.upper_bound)) end, LBUB)

  local Multinomial = constraint_class("Multinomial", Constraint, {is_discrete = true, event_dim = 1})
  function Multinomial._new(upper_bound)
    if type(upper_bound) ~= "number" and not is_tensor(upper_bound) then
      fail("constraints.multinomial: upper_bound must be a number or a Tensor, got " .. typename(upper_bound))
    end
    return make(Multinomial, {upper_bound = upper_bound, desc = string.format(
      "non-negative counts summing to at most %s along the last dim", bound_str(upper_bound))})
  end
  function Multinomial:_check(v) return v:ge(0):all(-1) & v:sum(-1):le(self.upper_bound) end
  function Multinomial:_repr() return "Multinomial(upper_bound=" .. bound_str(self.upper_bound) .. ")" end

  local function is_constraint(c)
    return type(c) == "table" and (getmetatable(c) ~= nil and rawget(getmetatable(c), "_is_constraint_class") ~= nil
      or type(rawget(c, "check")) == "function")
  end
  local function constraint_arg(what, c)
    if not is_constraint(c) then fail(what .. " must be a constraint, got " .. typename(c)) end
    return c
  end

  local Independent = constraint_class("IndependentConstraint", Constraint)
  local function independent_fields(base, n)
    return {base_constraint = base, reinterpreted_batch_ndims = n, is_discrete = base.is_discrete == true,
      event_dim = event_dim_of(base) + n}
  end
  function Independent._new(base, n)
    constraint_arg("constraints.independent: base_constraint", base)
    n = int_arg("constraints.independent: reinterpreted_batch_ndims", n, 0)
    local c = independent_fields(base, n)
    c.desc = (base.desc or "valid") .. string.format(" in every element of the last %d dim%s", n, n == 1 and "" or "s")
    return make(Independent, c)
  end
  function Independent:_check(v)
    local ok = self.base_constraint.check(v)
    local n = self.reinterpreted_batch_ndims
    if ok:dim() < n then
      fail(string.format("%s.check: expected value.dim() >= %d, got %d", tostring(self), self.event_dim, v:dim()))
    end
    local s = ok:size()
    return ok:reshape(concat(slice(s, 1, #s - n), {-1})):all(-1)
  end
  function Independent:_repr()
    return string.format("IndependentConstraint(%s, %d)", tostring(self.base_constraint), self.reinterpreted_batch_ndims)
  end

  local function any_discrete(cseq)
    for _, c in ipairs(cseq) do if c.is_discrete then return true end end
    return false
  end
  local function max_event_dim(cseq)
    local ed = 0
    for _, c in ipairs(cseq) do ed = math.max(ed, event_dim_of(c)) end
    return ed
  end
  local function list_arg(what, seq, check_item)
    if type(seq) ~= "table" or getmetatable(seq) ~= nil or #seq == 0 then
      fail(what .. " must be a non-empty list, got " .. typename(seq))
    end
    for i, v in ipairs(seq) do check_item(string.format("%s[%d]", what, i), v) end
    return seq
  end
  local function dim_arg(what, dim)
    dim = dim == nil and 1 or dim
    if math.type(dim) ~= "integer" or dim == 0 then
      fail(what .. ": dim must be a non-zero integer (1-based, negative from the end), got " .. tostring(dim))
    end
    return dim
  end
  -- dim within a tensor of n dims (1-based, negatives from the end), or nil
  local function norm_dim(dim, n)
    if dim < 0 then dim = dim + n + 1 end
    if dim < 1 or dim > n then return nil end
    return dim
  end
  local function lengths_arg(what, lengths, n)
    if lengths == nil then
      lengths = {}
      for i = 1, n do lengths[i] = 1 end
    end
    if type(lengths) ~= "table" or #lengths ~= n then
      fail(string.format("%s: lengths must be a list of %d lengths (one per part), got %s", what, n,
        type(lengths) == "table" and #lengths .. " entries" or typename(lengths)))
    end
    local out = {}
    for i, l in ipairs(lengths) do out[i] = int_arg(string.format("%s: lengths[%d]", what, i), l, 0) end
    return out
  end

  local Cat = constraint_class("Cat", Constraint)
  function Cat._new(cseq, dim, lengths)
    list_arg("constraints.cat: cseq", cseq, constraint_arg)
    dim = dim_arg("constraints.cat", dim)
    return make(Cat, {cseq = cseq, dim = dim, lengths = lengths_arg("constraints.cat", lengths, #cseq),
      is_discrete = any_discrete(cseq), event_dim = max_event_dim(cseq), desc = "valid in each part along dim"})
  end
  function Cat:_check(v)
    local d = norm_dim(self.dim, v:dim())
    if not d then fail(string.format("%s.check: dim %d is out of range for a value of %d dims", tostring(self), self.dim, v:dim())) end
    local checks, start = {}, 1
    for i, c in ipairs(self.cseq) do
      checks[i] = c.check(v:narrow(d, start, self.lengths[i]))
      start = start + self.lengths[i]
    end
    return pt.cat(checks, self.dim)
  end
  function Cat:_repr() return "Cat(dim=" .. self.dim .. ")" end

  local Stack = constraint_class("Stack", Constraint)
  function Stack._new(cseq, dim)
    list_arg("constraints.stack: cseq", cseq, constraint_arg)
    dim = dim_arg("constraints.stack", dim)
    local ed = max_event_dim(cseq)
    if dim < 0 and dim + ed < 0 then ed = ed + 1 end
    return make(Stack, {cseq = cseq, dim = dim, is_discrete = any_discrete(cseq), event_dim = ed,
      desc = "valid in each slice along dim"})
  end
  function Stack:_check(v)
    local d = norm_dim(self.dim, v:dim())
    if not d then fail(string.format("%s.check: dim %d is out of range for a value of %d dims", tostring(self), self.dim, v:dim())) end
    local checks = {}
    for i = 1, math.min(v:size(d), #self.cseq) do checks[i] = self.cseq[i].check(v:select(d, i)) end
    return pt.stack(checks, self.dim)
  end
  function Stack:_repr() return "Stack(dim=" .. self.dim .. ")" end

  local Dependent = constraint_class("Dependent", Constraint, {desc = "dependent on other variables"})
  Dependent._getters = {
    is_discrete = function(self)
      local v = rawget(self, "_is_discrete")
      if v == nil then fail("constraints.dependent: .is_discrete cannot be determined statically") end
      return v
    end,
    event_dim = function(self)
      local v = rawget(self, "_event_dim")
      if v == nil then fail("constraints.dependent: .event_dim cannot be determined statically") end
      return v
    end,
  }
  function Dependent._new(opts)
    opts = opts or {}
    return make(Dependent, {_is_discrete = opts.is_discrete, _event_dim = opts.event_dim})
  end
  function Dependent:_check(_) fail("constraints.dependent: cannot determine validity of dependent constraint") end
  -- dependent{is_discrete=, event_dim=} -> a dependent constraint with those static attributes
  Dependent.__call = function(_, opts) return Dependent._new(opts) end

  -- ---------------------------------------------------------------- the constraints distributions.lua made

  pd_check = C.positive_definite.check
  tag(C.real, Real)
  tag(C.positive, GreaterThan, {lower_bound = 0.0})
  tag(C.nonnegative, GreaterThanEq, {lower_bound = 0.0})
  tag(C.unit_interval, Interval, {lower_bound = 0.0, upper_bound = 1.0})
  tag(C.boolean, Boolean)
  tag(C.nonnegative_integer, IntegerGreaterThan, {lower_bound = 0})
  tag(C.real_vector, Independent, independent_fields(C.real, 1))
  tag(C.positive_vector, Independent, independent_fields(C.positive, 1))
  tag(C.simplex, Simplex)
  tag(C.one_hot, OneHot)
  tag(C.lower_cholesky, LowerCholesky)
  tag(C.positive_definite, PositiveDefinite)
  rawset(C.positive_definite, "_f", nil) -- PositiveDefinite:_check: square, symmetric, then pd_check
  tag(I.CORR_CHOLESKY, CorrCholesky)
  tag(I.HALF_OPEN_UNIT, HalfOpenInterval, {lower_bound = 0.0, upper_bound = 1.0})
  tag(M.TanhTransform.codomain, Interval, {lower_bound = -1.0, upper_bound = 1.0})

  local c_integer_interval, c_interval, c_independent = C.integer_interval, C.interval, C.independent
  function C.integer_interval(lo, hi)
    return tag(c_integer_interval(lo, hi), IntegerInterval, {lower_bound = lo, upper_bound = hi})
  end
  function C.interval(lo, hi)
    return tag(c_interval(lo, hi), Interval, {lower_bound = lo, upper_bound = hi})
  end
  function C.independent(base, n)
    if n == 0 then return base end
    return tag(c_independent(base, n), Independent, independent_fields(base, n))
  end
  C.greater_than_eq = GreaterThanEq._new -- Pareto's support
  C.multinomial = Multinomial._new -- Multinomial's support

  -- the public names, as torch.distributions.constraints
  constraints.real = C.real
  constraints.positive = C.positive
  constraints.nonnegative = C.nonnegative
  constraints.unit_interval = C.unit_interval
  constraints.boolean = C.boolean
  constraints.nonnegative_integer = C.nonnegative_integer
  constraints.positive_integer = make(IntegerGreaterThan, {lower_bound = 1, desc = "an integer >= 1"})
  constraints.real_vector = C.real_vector
  constraints.simplex = C.simplex
  constraints.one_hot = C.one_hot
  constraints.lower_triangular = make(LowerTriangular, {})
  constraints.lower_cholesky = C.lower_cholesky
  constraints.corr_cholesky = I.CORR_CHOLESKY
  constraints.square = make(Square, {})
  constraints.symmetric = make(Symmetric, {})
  constraints.positive_semidefinite = make(PositiveSemidefinite, {})
  constraints.positive_definite = C.positive_definite
  constraints.dependent = make(Dependent, {})
  constraints.independent = Independent
  constraints.integer_interval = IntegerInterval
  constraints.greater_than = GreaterThan
  constraints.greater_than_eq = GreaterThanEq
  constraints.less_than = LessThan
  constraints.interval = Interval
  constraints.half_open_interval = HalfOpenInterval
  constraints.multinomial = Multinomial
  constraints.cat = Cat
  constraints.stack = Stack
  function constraints.is_dependent(c) return type(c) == "table" and getmetatable(c) == Dependent end

  -- ---------------------------------------------------------------- transforms

  local function is_transform(t)
    return type(t) == "table" and type(t.forward) == "function" and type(t.inverse) == "function"
  end
  local function transform_arg(what, t)
    if not is_transform(t) then fail(what .. " must be a transform, got " .. typename(t)) end
    return t
  end
  -- torch's Transform.event_dim: the domain's and the codomain's, when they agree
  local function transform_event_dim(t)
    local a, b = event_dim_of(t.domain), event_dim_of(t.codomain)
    if a ~= b then
      fail(string.format("%s: domain.event_dim (%d) and codomain.event_dim (%d) differ", tostring(t), a, b))
    end
    return a
  end
  local function too_few(cname, what, have, need)
    if have < need then
      fail(string.format("%s: too few dimensions on %s (%d, expected at least %d)", cname, what, have, need))
    end
  end

  M.identity_transform = ComposeTransform({})

  -- IndependentTransform(base_transform, reinterpreted_batch_ndims)
  local IndependentTransform = transform_class("IndependentTransform")
  function IndependentTransform._new(base, n, opts)
    transform_arg("IndependentTransform: base_transform", base)
    n = int_arg("IndependentTransform: reinterpreted_batch_ndims", n, 0)
    return new_transform(IndependentTransform, opts, {base_transform = base, reinterpreted_batch_ndims = n,
      domain = Independent(base.domain, n), codomain = Independent(base.codomain, n),
      bijective = base.bijective, sign = base.sign})
  end
  function IndependentTransform:__tostring()
    return string.format("IndependentTransform(%s, %d)", tostring(self.base_transform), self.reinterpreted_batch_ndims)
  end
  function IndependentTransform:_call(x)
    too_few("IndependentTransform", "input", x:dim(), self.domain.event_dim)
    return self.base_transform:forward(x)
  end
  function IndependentTransform:_inverse(y)
    too_few("IndependentTransform.inverse", "input", y:dim(), self.codomain.event_dim)
    return self.base_transform:inverse(y)
  end
  function IndependentTransform:log_abs_det_jacobian(x, y)
    return sum_rightmost(self.base_transform:log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)
  end
  function IndependentTransform:forward_shape(shape) return self.base_transform:forward_shape(shape) end
  function IndependentTransform:inverse_shape(shape) return self.base_transform:inverse_shape(shape) end

  -- ReshapeTransform(in_shape, out_shape): the rightmost in_shape of x reshaped to out_shape
  local ReshapeTransform = transform_class("ReshapeTransform")
  function ReshapeTransform._new(in_shape, out_shape, opts)
    in_shape = I.sizes_arg("ReshapeTransform", "in_shape", in_shape)
    out_shape = I.sizes_arg("ReshapeTransform", "out_shape", out_shape)
    if I.numel(in_shape) ~= I.numel(out_shape) then
      fail(string.format("ReshapeTransform: in_shape %s and out_shape %s have different numbers of elements",
        shape_str(in_shape), shape_str(out_shape)))
    end
    return new_transform(ReshapeTransform, opts, {in_shape = in_shape, out_shape = out_shape,
      domain = Independent(C.real, #in_shape), codomain = Independent(C.real, #out_shape)})
  end
  function ReshapeTransform:__tostring()
    return "ReshapeTransform(" .. shape_str(self.in_shape) .. ", " .. shape_str(self.out_shape) .. ")"
  end
  local function reshape_rightmost(t, from, to)
    local s = t:size()
    return t:reshape(concat(slice(s, 1, #s - #from), to))
  end
  function ReshapeTransform:_call(x) return reshape_rightmost(x, self.in_shape, self.out_shape) end
  function ReshapeTransform:_inverse(y) return reshape_rightmost(y, self.out_shape, self.in_shape) end
  function ReshapeTransform:log_abs_det_jacobian(x, _)
    local s = x:size()
    return pt.zeros(slice(s, 1, #s - #self.in_shape), {dtype = x:dtype()})
  end
  local function swap_rightmost(what, shape, from, to)
    too_few("ReshapeTransform." .. what, "shape " .. shape_str(shape), #shape, #from)
    local cut = #shape - #from
    if not I.same_shape(slice(shape, cut + 1, #shape), from) then
      fail(string.format("ReshapeTransform.%s: shape mismatch: expected %s to end with %s", what, shape_str(shape),
        shape_str(from)))
    end
    return concat(slice(shape, 1, cut), to)
  end
  function ReshapeTransform:forward_shape(shape)
    return swap_rightmost("forward_shape", shape, self.in_shape, self.out_shape)
  end
  function ReshapeTransform:inverse_shape(shape)
    return swap_rightmost("inverse_shape", shape, self.out_shape, self.in_shape)
  end

  -- SoftmaxTransform: exp then normalise over the last dim (not bijective: inverse is log)
  local SoftmaxTransform = transform_class("SoftmaxTransform")
  SoftmaxTransform.domain = C.real_vector
  SoftmaxTransform.codomain = C.simplex
  SoftmaxTransform.bijective = false
  function SoftmaxTransform._new(opts) return new_transform(SoftmaxTransform, opts) end
  function SoftmaxTransform:_call(x)
    local probs = (x - x:amax(-1, true)):exp()
    return probs / probs:sum(-1, true)
  end
  function SoftmaxTransform:_inverse(y) return y:log() end
  function SoftmaxTransform:forward_shape(shape)
    too_few("SoftmaxTransform.forward_shape", "shape " .. shape_str(shape), #shape, 1)
    return shape
  end
  function SoftmaxTransform:inverse_shape(shape)
    too_few("SoftmaxTransform.inverse_shape", "shape " .. shape_str(shape), #shape, 1)
    return shape
  end

  -- LowerCholeskyTransform: the strictly lower part of x plus exp of its diagonal
  local LowerCholeskyTransform = transform_class("LowerCholeskyTransform")
  LowerCholeskyTransform.domain = Independent(C.real, 2)
  LowerCholeskyTransform.codomain = C.lower_cholesky
  LowerCholeskyTransform.bijective = false
  function LowerCholeskyTransform._new(opts) return new_transform(LowerCholeskyTransform, opts) end
  function LowerCholeskyTransform:_call(x)
    return x:tril(-1) + pt.diag_embed(x:diagonal(0, -2, -1):exp())
  end
  function LowerCholeskyTransform:_inverse(y)
    return y:tril(-1) + pt.diag_embed(y:diagonal(0, -2, -1):log())
  end

  -- torch's vec_to_tril_matrix / tril_matrix_to_vec (row order) through index_select
  local function tril_positions(n, diag)
    local idx = {}
    for i = 0, n - 1 do
      for j = 0, n - 1 do
        if j < i + diag + 1 then idx[#idx + 1] = i * n + j + 1 end
      end
    end
    return idx
  end
  local function int64(list)
    if #list == 0 then return pt.zeros({0}, {dtype = "int64"}) end
    return pt.tensor(list, {dtype = "int64"})
  end
  local function tril_to_vec(mat, diag)
    local s = mat:size()
    local n = s[#s]
    return mat:reshape(concat(slice(s, 1, #s - 2), {n * n})):index_select(-1, int64(tril_positions(n, diag)))
  end
  -- D with D (D - 1) / 2 = N, or nil
  local function corr_dim(N)
    local D = math.floor(math.sqrt(0.25 + 2 * N) + 0.5 + 0.5)
    if D * (D - 1) // 2 ~= N then return nil end
    return D
  end
  local function vec_to_strict_tril(vec) -- diag = -1
    local s = vec:size()
    local N = s[#s]
    local D = corr_dim(N)
    if not D then
      fail(string.format("CorrCholeskyTransform: the last size %d is not D (D - 1) / 2 for an integer D", N))
    end
    local batch = slice(s, 1, #s - 1)
    local idx, k = {}, 0
    for i = 0, D - 1 do
      for j = 0, D - 1 do
        if j < i then
          k = k + 1
          idx[#idx + 1] = k
        else
          idx[#idx + 1] = N + 1
        end
      end
    end
    local padded = pt.cat({vec, pt.zeros(concat(batch, {1}), {dtype = vec:dtype()})}, -1)
    return padded:index_select(-1, int64(idx)):reshape(concat(batch, {D, D}))
  end

  -- CorrCholeskyTransform: R^(D(D-1)/2) -> Cholesky factors of D x D correlation matrices
  local CorrCholeskyTransform = transform_class("CorrCholeskyTransform")
  CorrCholeskyTransform.domain = C.real_vector
  CorrCholeskyTransform.codomain = I.CORR_CHOLESKY
  function CorrCholeskyTransform._new(opts) return new_transform(CorrCholeskyTransform, opts) end
  function CorrCholeskyTransform:_call(x)
    x = x:tanh()
    local eps = finfo(x:dtype()).eps
    x = x:clamp(-1 + eps, 1 - eps)
    local r = vec_to_strict_tril(x)
    local D = r:size(-1)
    local z1m_cumprod_sqrt = (1 - r:pow(2)):sqrt():cumprod(-1)
    r = r + pt.eye(D, {dtype = r:dtype()})
    return r * pad_last(z1m_cumprod_sqrt:narrow(-1, 1, D - 1), 1, false)
  end
  function CorrCholeskyTransform:_inverse(y)
    local D = y:size(-1)
    local y_cumsum = 1 - (y * y):cumsum(-1)
    local shifted = pad_last(y_cumsum:narrow(-1, 1, D - 1), 1, false)
    local t = tril_to_vec(y, -1) / tril_to_vec(shifted, -1):sqrt()
    return ((1 + t) / (1 - t)):log() / 2
  end
  function CorrCholeskyTransform:log_abs_det_jacobian(x, y)
    local y1m_cumsum = 1 - (y * y):cumsum(-1)
    local stick_breaking_logdet = 0.5 * tril_to_vec(y1m_cumsum, -2):log():sum(-1)
    local tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2)):sum(-1)
    return stick_breaking_logdet + tanh_logdet
  end
  function CorrCholeskyTransform:forward_shape(shape)
    too_few("CorrCholeskyTransform.forward_shape", "shape " .. shape_str(shape), #shape, 1)
    local D = corr_dim(shape[#shape])
    if not D then
      fail(string.format("CorrCholeskyTransform.forward_shape: the last size %d is not D (D - 1) / 2 for an integer D",
        shape[#shape]))
    end
    return concat(slice(shape, 1, #shape - 1), {D, D})
  end
  function CorrCholeskyTransform:inverse_shape(shape)
    too_few("CorrCholeskyTransform.inverse_shape", "shape " .. shape_str(shape), #shape, 2)
    local D = shape[#shape]
    if shape[#shape - 1] ~= D then
      fail("CorrCholeskyTransform.inverse_shape: shape " .. shape_str(shape) .. " is not square")
    end
    return concat(slice(shape, 1, #shape - 2), {D * (D - 1) // 2})
  end

  local function all_bijective(ts)
    for _, t in ipairs(ts) do if not t.bijective then return false end end
    return true
  end
  local function check_along(cname, t, dim, want, what)
    local d = norm_dim(dim, t:dim())
    if not d then fail(string.format("%s: dim %d is out of range for %s with %d dims", cname, dim, what, t:dim())) end
    if t:size(d) ~= want then
      fail(string.format("%s: %s has size %d along dim %d, expected %d", cname, what, t:size(d), dim, want))
    end
    return d
  end

  -- CatTransform(tseq[, dim=1[, lengths]]): tseq[i] on the i-th block of lengths[i] along dim
  local CatTransform = transform_class("CatTransform")
  function CatTransform._new(tseq, dim, lengths, opts)
    list_arg("CatTransform: tseq", tseq, transform_arg)
    dim = dim_arg("CatTransform", dim)
    lengths = lengths_arg("CatTransform", lengths, #tseq)
    local domains, codomains, ed, length = {}, {}, 0, 0
    for i, t in ipairs(tseq) do
      domains[i], codomains[i] = t.domain, t.codomain
      ed = math.max(ed, transform_event_dim(t))
      length = length + lengths[i]
    end
    return new_transform(CatTransform, opts, {transforms = tseq, dim = dim, lengths = lengths, event_dim = ed,
      length = length, bijective = all_bijective(tseq), domain = Cat(domains, dim, lengths),
      codomain = Cat(codomains, dim, lengths)})
  end
  function CatTransform:__tostring() return "CatTransform(dim=" .. self.dim .. ")" end
  local function cat_map(self, z, what, inverse)
    local d = check_along(inverse and "CatTransform.inverse" or "CatTransform", z, self.dim, self.length, what)
    local out, start = {}, 1
    for i, t in ipairs(self.transforms) do
      local part = z:narrow(d, start, self.lengths[i])
      out[i] = inverse and t:inverse(part) or t:forward(part)
      start = start + self.lengths[i]
    end
    return pt.cat(out, self.dim)
  end
  function CatTransform:_call(x) return cat_map(self, x, "x", false) end
  function CatTransform:_inverse(y) return cat_map(self, y, "y", true) end
  function CatTransform:log_abs_det_jacobian(x, y)
    local d = check_along("CatTransform.log_abs_det_jacobian", x, self.dim, self.length, "x")
    check_along("CatTransform.log_abs_det_jacobian", y, self.dim, self.length, "y")
    local terms, start = {}, 1
    for i, t in ipairs(self.transforms) do
      local l = self.lengths[i]
      local term = t:log_abs_det_jacobian(x:narrow(d, start, l), y:narrow(d, start, l))
      terms[i] = sum_rightmost(term, self.event_dim - transform_event_dim(t))
      start = start + l
    end
    -- torch: concatenate along dim when it is left of the event dims, else sum
    local rel = d - 1 - x:dim() + self.event_dim
    if rel < 0 then return pt.cat(terms, rel) end
    local total = terms[1]
    for i = 2, #terms do total = total + terms[i] end
    return total
  end

  -- StackTransform(tseq[, dim=1]): tseq[i] on the i-th slice along dim
  local StackTransform = transform_class("StackTransform")
  function StackTransform._new(tseq, dim, opts)
    list_arg("StackTransform: tseq", tseq, transform_arg)
    dim = dim_arg("StackTransform", dim)
    local domains, codomains = {}, {}
    for i, t in ipairs(tseq) do domains[i], codomains[i] = t.domain, t.codomain end
    return new_transform(StackTransform, opts, {transforms = tseq, dim = dim, bijective = all_bijective(tseq),
      domain = Stack(domains, dim), codomain = Stack(codomains, dim)})
  end
  function StackTransform:__tostring() return "StackTransform(dim=" .. self.dim .. ")" end
  local function stack_map(self, z, what, inverse)
    local d = check_along(inverse and "StackTransform.inverse" or "StackTransform", z, self.dim, #self.transforms, what)
    local out = {}
    for i, t in ipairs(self.transforms) do
      local part = z:select(d, i)
      out[i] = inverse and t:inverse(part) or t:forward(part)
    end
    return pt.stack(out, self.dim)
  end
  function StackTransform:_call(x) return stack_map(self, x, "x", false) end
  function StackTransform:_inverse(y) return stack_map(self, y, "y", true) end
  function StackTransform:log_abs_det_jacobian(x, y)
    local d = check_along("StackTransform.log_abs_det_jacobian", x, self.dim, #self.transforms, "x")
    local dy = check_along("StackTransform.log_abs_det_jacobian", y, self.dim, #self.transforms, "y")
    local terms = {}
    for i, t in ipairs(self.transforms) do terms[i] = t:log_abs_det_jacobian(x:select(d, i), y:select(dy, i)) end
    return pt.stack(terms, self.dim)
  end

  -- CumulativeDistributionTransform(distribution): y = distribution:cdf(x)
  local CumulativeDistributionTransform = transform_class("CumulativeDistributionTransform")
  CumulativeDistributionTransform.codomain = C.unit_interval
  function CumulativeDistributionTransform._new(distribution, opts)
    if not I.is_distribution(distribution) then
      fail("CumulativeDistributionTransform: distribution must be a distribution, got " .. typename(distribution))
    end
    return new_transform(CumulativeDistributionTransform, opts, {distribution = distribution,
      domain = distribution.support})
  end
  function CumulativeDistributionTransform:__tostring()
    return "CumulativeDistributionTransform(" .. tostring(self.distribution) .. ")"
  end
  function CumulativeDistributionTransform:_call(x) return self.distribution:cdf(x) end
  function CumulativeDistributionTransform:_inverse(y) return self.distribution:icdf(y) end
  function CumulativeDistributionTransform:log_abs_det_jacobian(x, _) return self.distribution:log_prob(x) end

  for _, cls in ipairs {IndependentTransform, ReshapeTransform, SoftmaxTransform, LowerCholeskyTransform,
                        CorrCholeskyTransform, CatTransform, StackTransform, CumulativeDistributionTransform} do
    with_inv(cls)
  end

  -- ---------------------------------------------------------------- biject_to, transform_to

  local Registry = {__name = "pt.distributions.ConstraintRegistry", _name = "ConstraintRegistry"}
  Registry.__index = Registry
  setmetatable(Registry, {__call = function(_) return setmetatable({_registry = {}, _label = "ConstraintRegistry"}, Registry) end})
  M.ConstraintRegistry = Registry

  local function class_of(c)
    local mt = getmetatable(c)
    if type(mt) == "table" and rawget(mt, "_is_constraint_class") and mt ~= Constraint then return mt end
    return nil
  end

  -- registry:register(constraint class or constraint, factory): factory(c) -> transform for c
  function Registry.register(self, key, factory)
    if getmetatable(self) ~= Registry then -- registry.register(key, factory)
      error("register: call it as registry:register(constraint, factory)", 2)
    end
    local what = self._label .. ":register"
    if type(key) ~= "table" then
      fail(what .. ": constraint must be a constraint class or a constraint, got " .. typename(key))
    end
    if factory == nil then return function(f) return self:register(key, f) end end
    local mt = getmetatable(factory)
    if type(factory) ~= "function" and not (type(mt) == "table" and mt.__call) then
      fail(what .. ": factory must be a function, got " .. typename(factory))
    end
    if not rawget(key, "_is_constraint_class") then key = class_of(key) or key end
    self._registry[key] = factory
    return factory
  end

  function Registry.__call(self, c)
    if type(c) ~= "table" then fail(self._label .. ": expected a constraint, got " .. typename(c)) end
    local cls = class_of(c)
    local factory = cls and self._registry[cls] or self._registry[c]
    if factory == nil then
      local name = cls and cls._name or (getmetatable(c) == Constraint and "Constraint(" .. (c.desc or "?") .. ")")
        or ("(" .. tostring(c.desc or c) .. ")")
      fail(string.format("%s: cannot transform %s constraints (register a factory with %s:register)", self._label,
        name, self._label))
    end
    return factory(c)
  end
  function Registry:__tostring() return self._label end

  local biject_to, transform_to = Registry(), Registry()
  biject_to._label, transform_to._label = "biject_to", "transform_to"
  M.biject_to, M.transform_to = biject_to, transform_to

  local function both(key, fn)
    biject_to:register(key, fn)
    transform_to:register(key, fn)
  end
  both(Real, function(_) return M.identity_transform end)
  biject_to:register(Independent, function(c)
    return IndependentTransform(biject_to(c.base_constraint), c.reinterpreted_batch_ndims)
  end)
  transform_to:register(Independent, function(c)
    return IndependentTransform(transform_to(c.base_constraint), c.reinterpreted_batch_ndims)
  end)
  -- torch 1.13 registers positive / nonnegative (ExpTransform) before greater_than /
  -- greater_than_eq, their classes: the latter win, so positive gets Exp then Affine(0, 1) too
  local function greater(c) return ComposeTransform({ExpTransform(), AffineTransform(c.lower_bound, 1)}) end
  both(GreaterThan, greater)
  both(GreaterThanEq, greater)
  both(LessThan, function(c) return ComposeTransform({ExpTransform(), AffineTransform(c.upper_bound, -1)}) end)
  local function interval(c)
    local lo, hi = c.lower_bound, c.upper_bound
    if type(lo) == "number" and lo == 0 and type(hi) == "number" and hi == 1 then return SigmoidTransform() end
    return ComposeTransform({SigmoidTransform(), AffineTransform(lo, hi - lo)})
  end
  both(Interval, interval)
  both(HalfOpenInterval, interval)
  biject_to:register(Simplex, function(_) return StickBreakingTransform() end)
  transform_to:register(Simplex, function(_) return SoftmaxTransform() end)
  transform_to:register(LowerCholesky, function(_) return LowerCholeskyTransform() end)
  both(CorrCholesky, function(_) return CorrCholeskyTransform() end)
  for _, reg in ipairs {biject_to, transform_to} do
    reg:register(Cat, function(c)
      local ts = {}
      for i, ci in ipairs(c.cseq) do ts[i] = reg(ci) end
      return CatTransform(ts, c.dim, c.lengths)
    end)
    reg:register(Stack, function(c)
      local ts = {}
      for i, ci in ipairs(c.cseq) do ts[i] = reg(ci) end
      return StackTransform(ts, c.dim)
    end)
  end

  -- ---------------------------------------------------------------- help

  docs[constraints] = "pt.distributions.constraints: torch.distributions.constraints (torch 1.13). Each constraint c has\n"
    .. "  c:check(value) (or c.check(value)) -> a bool tensor of value's shape less c.event_dim rightmost dims,\n"
    .. "  c.event_dim, c.is_discrete, c.desc (words for messages). Objects: real, positive, nonnegative,\n"
    .. "  unit_interval, boolean, nonnegative_integer, positive_integer, real_vector, simplex, one_hot,\n"
    .. "  lower_triangular, lower_cholesky, corr_cholesky, square, symmetric, positive_semidefinite,\n"
    .. "  positive_definite, dependent. Classes (call them): interval(lo, hi), half_open_interval(lo, hi),\n"
    .. "  greater_than(lo), greater_than_eq(lo), less_than(hi), integer_interval(lo, hi), multinomial(n),\n"
    .. "  independent(base, n), cat(cseq[, dim=1, lengths]), stack(cseq[, dim=1]) (dims 1-based), Constraint{check=}.\n"
    .. "  Distributions' d.support and transforms' domain / codomain are these objects."
  docs[constraints.is_dependent] = "constraints.is_dependent(c) -> true when c is constraints.dependent (or made by calling it)."
  local class_docs = {
    [Constraint] = "constraints.Constraint{check = fn(value) -> bool tensor[, desc=, event_dim=0, is_discrete=false]}\n"
      .. "  -> a user constraint (the base class of the constraints; biject_to:register keys such a one by itself).",
    [Real] = "constraints.real's class: not nan (torch's _Real).",
    [Boolean] = "constraints.boolean's class: 0 or 1 (discrete).",
    [OneHot] = "constraints.one_hot's class: one-hot vectors (event_dim 1, discrete).",
    [Simplex] = "constraints.simplex's class: non-negative, summing to 1 within 1e-6 along the last dim (event_dim 1).",
    [LowerTriangular] = "constraints.lower_triangular's class: lower triangular matrices (event_dim 2).",
    [LowerCholesky] = "constraints.lower_cholesky's class: lower triangular with a positive diagonal (event_dim 2).",
    [CorrCholesky] = "constraints.corr_cholesky's class: lower Cholesky factors with rows of unit norm (within 10 n eps).",
    [Square] = "constraints.square's class: square matrices (event_dim 2).",
    [Symmetric] = "constraints.symmetric's class: square and symmetric within atol 1e-6.",
    [PositiveSemidefinite] = "constraints.positive_semidefinite's class: symmetric with eigenvalues >= 0.",
    [PositiveDefinite] = "constraints.positive_definite's class: symmetric with a Cholesky factorisation.",
    [IntegerInterval] = "constraints.integer_interval(lower_bound, upper_bound) -> integers in [lower_bound, upper_bound] (discrete).",
    [IntegerLessThan] = "IntegerLessThan(upper_bound): integers <= upper_bound (torch's _IntegerLessThan).",
    [IntegerGreaterThan] = "IntegerGreaterThan(lower_bound): integers >= lower_bound (constraints.nonnegative_integer, positive_integer).",
    [GreaterThan] = "constraints.greater_than(lower_bound) -> values > lower_bound (constraints.positive is greater_than(0)).",
    [GreaterThanEq] = "constraints.greater_than_eq(lower_bound) -> values >= lower_bound (constraints.nonnegative is one).",
    [LessThan] = "constraints.less_than(upper_bound) -> values < upper_bound.",
    [Interval] = "constraints.interval(lower_bound, upper_bound) -> values in [lower_bound, upper_bound] (unit_interval is one).",
    [HalfOpenInterval] = "constraints.half_open_interval(lower_bound, upper_bound) -> values in [lower_bound, upper_bound).",
    [Multinomial] = "constraints.multinomial(upper_bound) -> non-negative counts summing to at most upper_bound (event_dim 1).",
    [Independent] = "constraints.independent(base_constraint, reinterpreted_batch_ndims) -> base_constraint on every element\n"
      .. "  of the last reinterpreted_batch_ndims dims (event_dim adds them; constraints.real_vector is independent(real, 1)).",
    [Cat] = "constraints.cat(cseq[, dim=1[, lengths]]) -> cseq[i] on the i-th block of lengths[i] (default 1) along dim.",
    [Stack] = "constraints.stack(cseq[, dim=1]) -> cseq[i] on the i-th slice along dim.",
    [Dependent] = "constraints.dependent: a placeholder for values whose support depends on other variables; check raises.\n"
      .. "  constraints.dependent{is_discrete=, event_dim=} sets its static attributes.",
  }
  for cls, text in pairs(class_docs) do docs[cls] = text end

  local function doc_class(cls, text) docs[cls] = text end
  doc_class(M.identity_transform, "pt.distributions.identity_transform: ComposeTransform({}), y = x (torch's identity_transform).")
  doc_class(IndependentTransform, "pt.distributions.IndependentTransform(base_transform, reinterpreted_batch_ndims[, {cache_size=}])\n"
    .. "  -> base_transform with reinterpreted_batch_ndims more rightmost dims in its event: same forward and inverse,\n"
    .. "  log_abs_det_jacobian summed over them, as torch's.")
  doc_class(ReshapeTransform, "pt.distributions.ReshapeTransform(in_shape, out_shape[, {cache_size=}]) -> reshapes the rightmost\n"
    .. "  in_shape of x to out_shape (same number of elements; log_abs_det_jacobian 0), as torch's.")
  doc_class(SoftmaxTransform, "pt.distributions.SoftmaxTransform([{cache_size=}]) -> y = exp(x) normalised over the last dim\n"
    .. "  (not bijective: inverse log y; no log_abs_det_jacobian), as torch's.")
  doc_class(LowerCholeskyTransform, "pt.distributions.LowerCholeskyTransform([{cache_size=}]) -> x's strictly lower triangle\n"
    .. "  plus exp of its diagonal (inverse: log of the diagonal; no log_abs_det_jacobian), as torch's.")
  doc_class(CorrCholeskyTransform, "pt.distributions.CorrCholeskyTransform([{cache_size=}]) -> maps R^(D(D-1)/2) onto Cholesky\n"
    .. "  factors of D x D correlation matrices by a signed stick breaking of tanh(x), as torch's (forward_shape {..., N}\n"
    .. "  -> {..., D, D}; log_abs_det_jacobian over x and y's strictly lower triangle).")
  doc_class(CatTransform, "pt.distributions.CatTransform(tseq[, dim=1[, lengths[, {cache_size=}]]]) -> tseq[i] on the i-th block of\n"
    .. "  lengths[i] (default 1) along dim (1-based; torch's 0), as torch's.")
  doc_class(StackTransform, "pt.distributions.StackTransform(tseq[, dim=1[, {cache_size=}]]) -> tseq[i] on the i-th slice along\n"
    .. "  dim (1-based; torch's 0), as torch's.")
  doc_class(CumulativeDistributionTransform, "pt.distributions.CumulativeDistributionTransform(distribution[, {cache_size=}]) ->\n"
    .. "  y = distribution:cdf(x), inverse icdf, log_abs_det_jacobian log_prob(x), domain distribution.support, as torch's.")
  docs[Registry] = "pt.distributions.ConstraintRegistry() -> an empty registry of constraint -> transform factories, as torch's:\n"
    .. "  reg(c) -> the registered factory's transform for c; reg:register(constraint class or constraint, fn)."
  docs[Registry.register] = "registry:register(constraint_class_or_constraint, factory) -> factory; registry(c) then calls\n"
    .. "  factory(c) for constraints of that class (a constraint without a class of its own: that constraint only).\n"
    .. "  Without factory: a function taking it (torch's decorator form)."
  docs[biject_to] = "pt.distributions.biject_to(constraint) -> a bijective transform from unconstrained space onto the constraint,\n"
    .. "  as torch 1.13's registry: real -> identity_transform, positive / greater_than(lo) / nonnegative -> Compose{Exp,\n"
    .. "  Affine(lo, 1)}, less_than(hi) -> Compose{Exp, Affine(hi, -1)}, unit_interval -> Sigmoid, interval(lo, hi) ->\n"
    .. "  Compose{Sigmoid, Affine(lo, hi - lo)}, simplex -> StickBreaking, corr_cholesky -> CorrCholesky, independent ->\n"
    .. "  IndependentTransform, cat / stack -> CatTransform / StackTransform. Others raise; biject_to:register adds them."
  docs[transform_to] = "pt.distributions.transform_to(constraint) -> a transform (not necessarily bijective) onto the constraint,\n"
    .. "  as torch 1.13's registry: as biject_to but simplex -> SoftmaxTransform and also lower_cholesky ->\n"
    .. "  LowerCholeskyTransform. transform_to:register adds factories."
end
