-- pt.distributions.constraints, the transforms torch 1.13 has beyond the shape-preserving ones,
-- biject_to / transform_to: values from torch 1.13 (/usr/bin/python3), gradients by finite differences.
-- Dims are 1-based (torch's CatTransform / cat dim 0 is 1 here).
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local D = pt.distributions
local c = D.constraints

-- values from torch 1.13 (/usr/bin/python3, float64), by the names the specs below use
local V = {
  cc_y = {{1.0, 0.0, 0.0}, {0.46211715726000974, 0.8868188839700739, 0.0}, {-0.7615941559557649, 0.6247421931979867, 0.17225427034531132}},
  cc_ladj = -4.191577000081366,
  cc_inv = {0.5000000000000001, -1.0, 2.0000000000000018},
  ccb_y = {{{1.0, 0.0, 0.0, 0.0}, {0.2913126124515909, 0.9566279119002483, 0.0, 0.0}, {-0.197375320224904, 0.7847516031191595, 0.5875439595196479, 0.0}, {0.6043677771171635, -0.7211365557818807, 0.016919719186404798, 0.3382534271816889}}, {{1.0, 0.0, 0.0, 0.0}, {0.9640275800758169, 0.2658022288340796, 0.0, 0.0}, {0.09966799462495582, -0.378057100987195, 0.92040160758258, 0.0}, {-0.7162978701990245, 0.3747503098564829, 0.5072319233224329, 0.29865589291597316}}},
  ccb_ladj = {-4.650058423292068, -6.127610134970555},
  ccb_inv = {{0.3, -0.19999999999999998, 1.0999999999999999, 0.7, -1.4999999999999991, 0.05000000000000004}, {2.0000000000000004, 0.1, -0.4, -0.9000000000000001, 0.6, 1.3000000000000007}},
  cc2_y = {{{1.0, 0.0}, {0.2913126124515909, 0.9566279119002483}}, {{1.0, 0.0}, {-0.9640275800758169, 0.2658022288340796}}},
  cc2_ladj = {-0.08868153985188054, -2.650005494715728},
  cc_check = {true, true},
  cc_fs = {5, 4, 4},
  cc_is = {5, 6},
  sm_y = {{0.09003057317038046, 0.24472847105479764, 0.6652409557748218}, {0.5465493872661796, 0.12195165230972885, 0.3314989604240915}},
  sm_inv = {{-2.40760596444438, -1.4076059644443804, -0.40760596444438046}, {-0.6041306053367282, -2.1041306053367284, -1.1041306053367284}},
  lc_y = {{1.6487212707001282, 0.0}, {-1.0, 1.2214027581601699}},
  lc_inv = {{0.6931471805599453, 0.0}, {-1.0, -0.6931471805599453}},
  rs_y = {{0.0, 1.0, 2.0, 3.0, 4.0, 5.0}, {6.0, 7.0, 8.0, 9.0, 10.0, 11.0}},
  rs_ladj_shape = {2},
  rs_fs = {4, 6},
  rs_is = {4, 2, 3},
  it_ladj = {1.5, 3.0},
  cat_y = {1.6487212707001282, 0.36787944117144233, 2.0, 1.6, -0.3999999999999999},
  cat_inv = {0.5, -1.0, 2.0, 0.30000000000000004, -0.7},
  cat_ladj = {0.5, -1.0, 0.0, 0.6931471805599453, 0.6931471805599453},
  cat2_ladj = {1.5, 3.295836866004329},
  cat3_y = {{1.6487212707001282, 0.36787944117144233, 6.0}, {1.3498588075760032, 0.4965853037914095, 3.0}},
  cat3_ladj = {0.5986122886681098, 0.6986122886681099},
  st_y = {{1.6487212707001282, 0.2689414213699951, -3.0}, {1.3498588075760032, 0.3318122278318339, -1.0}},
  st_inv = {{0.5, -1.0, 2.0}, {0.30000000000000004, -0.7, 1.0}},
  st_ladj = {{0.5, -1.6265233750364456, 0.6931471805599453}, {0.3, -1.5063720977709159, 0.6931471805599453}},
  cdf_y = {0.2266273523768682, 0.5, 0.8943502263331446},
  cdf_inv = {-2.0631031310892016, 0.5, 3.7897072539029444},
  cdf_ladj = {-1.893335713764618, -1.612085713764618, -2.393335713764618},
  gt_y = {2.606530659712633, 3.2214027581601696, 7.473947391727199},
  gt_inv = {-0.5000000000000003, 0.19999999999999984, 1.7},
  gt_ladj = {-0.5, 0.2, 1.7},
  lt_y = {0.3934693402873666, -0.22140275816016985, -4.473947391727199},
  lt_inv = {-0.5, 0.2, 1.7},
  lt_ladj = {-0.5, 0.2, 1.7},
  iv_y = {0.5101626751925816, 1.1993359892499118, 2.382138939665861},
  iv_inv = {-0.5000000000000002, 0.20000000000000018, 1.6999999999999997},
  iv_ladj = {-0.0618596072403228, -0.009983377643292934, -0.6492776976526413},
  pos_y = {0.6065306597126334, 1.2214027581601699, 5.473947391727199},
  pos_inv = {-0.5, 0.2, 1.7},
  pos_ladj = {-0.5, 0.2, 1.7},
  unit_y = {0.3775406687981454, 0.549833997312478, 0.8455347349164652},
  unit_inv = {-0.5000000000000002, 0.20000000000000018, 1.6999999999999997},
  unit_ladj = {-1.4481539683602134, -1.3962777387631835, -2.035572058772532},
  hoi_y = {1.5101626751925816, 2.199335989249912, 3.382138939665861},
  hoi_inv = {-0.5000000000000002, 0.20000000000000018, 1.6999999999999997},
  hoi_ladj = {-0.0618596072403228, -0.009983377643292934, -0.6492776976526413},
  sx_y = {0.16817565603641962, 0.3153882405570894, 0.43666466379509955, 0.07977143961139138},
  sx_t = {0.08306499044947559, 0.16727234941364078, 0.7496626601368838},
  ind_ladj = {1.5, 3.0},
  ccat_y = {0.6065306597126334, 1.2214027581601699, 1.6910694698329305},
  ccat_ladj = {-0.5, 0.2, -1.3424248782125865},
  cstk_y = {{1.6487212707001282, -1.0, 1.7615941559557646}, {2.718281828459045, 1.0, 1.4621171572600098}},
  cstk_ladj = {{0.5, 0.0, -1.560708841526}, {1.0, 0.0, -0.9333761944765003}},
  comp_ed = {1, 2},
  comp_ladj = {1.0, 0.5},
  comp2_ed = {1, 2},
  comp2_ladj = {6.440296465667057, 4.962744753988569},
  chk_real = {true, true, true, true, true},
  chk_positive = {false, false, true, true, true},
  chk_nonnegative = {false, true, true, true, true},
  chk_unit_interval = {false, true, true, true, false},
  chk_boolean = {false, true, false, true, false},
  chk_nonnegative_integer = {false, true, false, true, true},
  chk_positive_integer = {false, false, false, true, true},
  chk_ii = {false, true, false, true, false},
  chk_hoi = {false, true, true, false, false},
  chk_gte = {false, false, true, true, true},
  chk_lt = {true, true, false, false, false},
  chk_cat = {false, false, true, true, false},
  mchk_lower_triangular = {true, false, true},
  mchk_lower_cholesky = {true, false, false},
  mchk_square = {true, true, true},
  mchk_symmetric = {false, true, true},
  mchk_positive_semidefinite = {false, true, true},
  mchk_positive_definite = {false, true, true},
  chk_sq_nonsq = false,
  chk_simplex = {true, false, false},
  chk_onehot = {true, false, false},
  chk_multi = {true, false, false},
  chk_indep = {true, false},
  chk_stack = {{true, true}, {true, false}, {false, true}},
  attrs = {{"real", false, 0}, {"positive", false, 0}, {"nonnegative", false, 0}, {"unit_interval", false, 0}, {"boolean", true, 0}, {"nonnegative_integer", true, 0}, {"positive_integer", true, 0}, {"real_vector", false, 1}, {"simplex", false, 1}, {"one_hot", true, 1}, {"lower_triangular", false, 2}, {"lower_cholesky", false, 2}, {"corr_cholesky", false, 2}, {"square", false, 2}, {"symmetric", false, 2}, {"positive_semidefinite", false, 2}, {"positive_definite", false, 2}},
  attrs2 = {{true, 1, 2, true, 1, 1, 1, 0}},
}

local function flat(v)
  if pt.is_tensor(v) and v:dim() == 0 then return {v:item()} end
  return support.flat(pt.is_tensor(v) and v:tolist() or v)
end

-- element by element within tol (relative above 1); booleans exactly
local function close(got, want, tol)
  tol = tol or 1e-12
  local a, b = flat(got), flat(want)
  assert.are.equal(#b, #a, "number of elements")
  for i = 1, #b do
    local ok
    if type(b[i]) == "boolean" then ok = a[i] == b[i]
    else ok = math.abs(a[i] - b[i]) <= tol * math.max(1, math.abs(b[i])) end
    if not ok then error(string.format("element %d: got %s, expected %s", i, tostring(a[i]), tostring(b[i])), 2) end
  end
end

local function f64(v) return pt.tensor(v, {dtype = "float64"}) end

describe("pt.distributions.constraints as torch 1.13", function()
  it("check values of the elementwise constraints", function()
    local v = f64 {-1, 0, 0.5, 1, 2}
    for _, name in ipairs {"real", "positive", "nonnegative", "unit_interval", "boolean", "nonnegative_integer",
                           "positive_integer"} do
      close(c[name]:check(v), V["chk_" .. name])
      close(c[name].check(v), V["chk_" .. name]) -- both call styles
    end
    close(c.integer_interval(0, 1):check(v), V.chk_ii)
    close(c.half_open_interval(0, 1):check(v), V.chk_hoi)
    close(c.greater_than_eq(0.5):check(v), V.chk_gte)
    close(c.less_than(0.5):check(v), V.chk_lt)
    close(c.cat({c.positive, c.unit_interval}, 1, {2, 3}):check(v), V.chk_cat)
    assert.is_true(c.positive:check(3):item())
    assert.is_false(c.positive:check(-3):item())
  end)

  it("check values of the event constraints", function()
    local m = f64 {{{1, 0}, {0.5, 2}}, {{1, 0.3}, {0.3, 2}}, {{-1, 0}, {0, 1}}}
    for _, name in ipairs {"lower_triangular", "lower_cholesky", "square", "symmetric", "positive_semidefinite",
                           "positive_definite"} do
      close(c[name]:check(m), V["mchk_" .. name])
    end
    close(c.positive_definite:check(pt.ones({2, 3}, {dtype = "float64"})), V.chk_sq_nonsq)
    close(c.simplex:check(f64 {{0.2, 0.8}, {0.5, 0.6}, {-0.1, 1.1}}), V.chk_simplex)
    close(c.one_hot:check(f64 {{0, 1}, {1, 1}, {0.5, 0.5}}), V.chk_onehot)
    close(c.multinomial(3):check(f64 {{1, 2}, {2, 2}, {-1, 1}}), V.chk_multi)
    close(c.independent(c.positive, 1):check(f64 {{1, 2}, {1, -2}}), V.chk_indep)
    close(c.stack({c.positive, c.unit_interval}, -1):check(f64 {{1, 0.5}, {1, 2}, {-1, 0}}), V.chk_stack)
    close(c.corr_cholesky:check(D.CorrCholeskyTransform()(f64 {{0.3, -0.2, 1.1, 0.7, -1.5, 0.05},
      {2.0, 0.1, -0.4, -0.9, 0.6, 1.3}})), V.cc_check)
  end)

  it("is_discrete and event_dim", function()
    for _, row in ipairs(V.attrs) do
      assert.are.equal(row[2], c[row[1]].is_discrete, row[1])
      assert.are.equal(row[3], c[row[1]].event_dim, row[1])
    end
    local a = V.attrs2[1]
    assert.are.same(a, {c.integer_interval(0, 3).is_discrete, c.multinomial(3).event_dim,
      c.independent(c.boolean, 2).event_dim, c.independent(c.boolean, 2).is_discrete,
      c.cat({c.real, c.simplex}).event_dim, c.stack({c.real, c.real}, -1).event_dim,
      c.stack({c.simplex}, -1).event_dim, c.stack({c.real}, 1).event_dim})
  end)

  it("are the objects distributions and transforms use", function()
    assert.are.equal(c.real, D.Normal(0, 1).support)
    assert.are.equal(c.simplex, D.Dirichlet(pt.ones(3)).support)
    assert.are.equal(c.positive, D.ExpTransform().codomain)
    assert.are.equal(c.unit_interval, D.SigmoidTransform().codomain)
    assert.are.equal(c.real_vector, D.StickBreakingTransform().domain)
    assert.are.equal(c.corr_cholesky, D.LKJCholesky(3).support)
    assert.are.equal("IndependentConstraint(Real(), 1)", tostring(c.real_vector))
    assert.are.equal("GreaterThan(lower_bound=0)", tostring(c.positive))
    local u = D.Uniform(f64 {0, 1}, f64 {2, 3}).support
    assert.are.equal("Interval", getmetatable(u)._name)
    close(u.lower_bound, {0, 1})
    assert.are.equal("GreaterThanEq", getmetatable(D.Pareto(1, 2).support)._name)
    assert.are.equal(3, D.Multinomial(3, pt.ones(2)).support.upper_bound)
    local bs = D.Binomial(5, 0.5).support
    assert.are.same({"IntegerInterval", 0, true}, {getmetatable(bs)._name, bs.lower_bound, bs.is_discrete})
    -- the messages distributions give with them are unchanged
    support.assert_error("Pareto.log_prob: value 0.5 is outside the support (greater than or equal to scale)",
      function() return D.Pareto(1, 2):log_prob(pt.tensor(0.5)) end)
  end)

  it("dependent, user constraints and errors", function()
    assert.is_true(c.is_dependent(c.dependent))
    assert.is_false(c.is_dependent(c.real))
    local dep = c.dependent {is_discrete = true, event_dim = 1}
    assert.is_true(dep.is_discrete)
    assert.are.equal(1, dep.event_dim)
    support.assert_error("constraints.dependent: cannot determine validity of dependent constraint",
      function() return c.dependent:check(pt.ones(2)) end)
    support.assert_error("constraints.dependent: .event_dim cannot be determined statically",
      function() return c.dependent.event_dim end)
    local even = c.Constraint {check = function(v) return (v % 2):eq(0) end, desc = "even", is_discrete = true}
    close(even:check(f64 {1, 2, 4}), {false, true, true})
    assert.is_true(even.is_discrete)
    support.assert_error("constraints.interval: upper_bound must be a number or a Tensor, got string",
      function() return c.interval(0, "1") end)
    support.assert_error("constraints.independent: reinterpreted_batch_ndims must be an integer >= 0, got -1",
      function() return c.independent(c.real, -1) end)
    support.assert_error("GreaterThan(lower_bound=0).check: value must be a Tensor or a number, got table",
      function() return c.positive:check({1}) end)
    support.assert_error("constraints.cat: lengths must be a list of 2 lengths (one per part), got 1 entries",
      function() return c.cat({c.real, c.real}, 1, {3}) end)
  end)
end)

describe("transforms torch 1.13 has", function()
  it("CorrCholeskyTransform: values, round trip, log_abs_det_jacobian, shapes", function()
    local t = D.CorrCholeskyTransform()
    local x = f64 {0.5, -1, 2}
    local y = t(x)
    close(y, V.cc_y)
    close(t:inverse(y), V.cc_inv, 1e-10)
    close(t:log_abs_det_jacobian(x, y), V.cc_ladj)
    local xb = f64 {{0.3, -0.2, 1.1, 0.7, -1.5, 0.05}, {2.0, 0.1, -0.4, -0.9, 0.6, 1.3}}
    local yb = t(xb)
    close(yb, V.ccb_y)
    close(t.inv(yb), V.ccb_inv, 1e-10)
    close(t:log_abs_det_jacobian(xb, yb), V.ccb_ladj)
    local x2 = f64 {{0.3}, {-2}}
    close(t(x2), V.cc2_y)
    close(t:log_abs_det_jacobian(x2, t(x2)), V.cc2_ladj)
    assert.are.same(V.cc_fs, t:forward_shape({5, 6}))
    assert.are.same(V.cc_is, t:inverse_shape({5, 4, 4}))
    assert.are.equal(1, t.domain.event_dim)
    assert.are.equal(2, t.codomain.event_dim)
    assert.are.equal(c.corr_cholesky, t.inv.domain)
    support.assert_error("CorrCholeskyTransform: the last size 4 is not D (D - 1) / 2 for an integer D",
      t.forward, t, pt.zeros(4))
    support.assert_error("CorrCholeskyTransform.inverse_shape: shape {3,4} is not square", t.inverse_shape, t, {3, 4})
  end)

  it("CorrCholeskyTransform gradients", function()
    local t = D.CorrCholeskyTransform()
    local xb = f64 {{0.3, -0.2, 1.1, 0.7, -1.5, 0.05}, {2.0, 0.1, -0.4, -0.9, 0.6, 1.3}}
    gradcheck(function(x) return t(x) end, {xb})
    gradcheck(function(x) return t:log_abs_det_jacobian(x, t(x)) end, {xb})
    gradcheck(function(y) return t:inverse(y) end, {t(xb):detach()})
  end)

  it("SoftmaxTransform and LowerCholeskyTransform", function()
    local s = D.SoftmaxTransform()
    local xs = f64 {{1, 2, 3}, {0.5, -1, 0}}
    close(s(xs), V.sm_y)
    close(s.inv(s(xs)), V.sm_inv)
    assert.is_false(s.bijective)
    gradcheck(function(x) return s(x) end, {xs})
    support.assert_error("SoftmaxTransform.log_abs_det_jacobian: not implemented for SoftmaxTransform (as in torch 1.13)",
      s.log_abs_det_jacobian, s, xs, s(xs))
    local l = D.LowerCholeskyTransform()
    close(l(f64 {{0.5, 3}, {-1, 0.2}}), V.lc_y)
    close(l:inverse(f64 {{2, 0}, {-1, 0.5}}), V.lc_inv)
    assert.are.equal(c.lower_cholesky, l.codomain)
    assert.are.equal(2, l.domain.event_dim)
    gradcheck(function(x) return l(x) end, {f64 {{0.5, 3}, {-1, 0.2}}})
    gradcheck(function(y) return l:inverse(y) end, {f64 {{2, 0}, {-1, 0.5}}})
  end)

  it("ReshapeTransform and IndependentTransform", function()
    local r = D.ReshapeTransform({2, 3}, {6})
    local xr = pt.arange(0, 12, {dtype = "float64"}):reshape({2, 2, 3})
    close(r(xr), V.rs_y)
    close(r:inverse(r(xr)), xr)
    assert.are.same(V.rs_ladj_shape, r:log_abs_det_jacobian(xr, r(xr)):size())
    assert.are.same(V.rs_fs, r:forward_shape({4, 2, 3}))
    assert.are.same(V.rs_is, r:inverse_shape({4, 6}))
    gradcheck(function(x) return r(x) end, {xr})
    support.assert_error("ReshapeTransform: in_shape {2,3} and out_shape {5} have different numbers of elements",
      D.ReshapeTransform, {2, 3}, {5})
    support.assert_error("ReshapeTransform.forward_shape: shape mismatch: expected {4,3,2} to end with {2,3}",
      r.forward_shape, r, {4, 3, 2})
    local it_ = D.IndependentTransform(D.ExpTransform(), 1)
    local xi = f64 {{0.5, -1, 2}, {1, 1, 1}}
    close(it_:log_abs_det_jacobian(xi, it_(xi)), V.it_ladj)
    close(it_.inv(it_(xi)), xi)
    assert.are.equal(1, it_.domain.event_dim)
    gradcheck(function(x) return it_:log_abs_det_jacobian(x, it_(x)) end, {xi})
    support.assert_error("IndependentTransform: base_transform must be a transform, got number", D.IndependentTransform, 1, 1)
  end)

  it("CatTransform and StackTransform", function()
    local ct = D.CatTransform({D.ExpTransform(), D.identity_transform, D.AffineTransform(1, 2)}, 1, {2, 1, 2})
    local xc = f64 {0.5, -1, 2, 0.3, -0.7}
    local yc = ct(xc)
    close(yc, V.cat_y)
    close(ct.inv(yc), V.cat_inv, 1e-12)
    close(ct:log_abs_det_jacobian(xc, yc), V.cat_ladj)
    gradcheck(function(x) return ct(x) end, {xc})
    gradcheck(function(x) return ct:log_abs_det_jacobian(x, ct(x)) end, {xc})
    local parts = {D.IndependentTransform(D.ExpTransform(), 1), D.IndependentTransform(D.AffineTransform(0, 3), 1)}
    local xc2 = f64 {{0.5, -1, 2}, {0.3, -0.7, 1}}
    local ct2 = D.CatTransform(parts, 1, {1, 1})
    close(ct2:log_abs_det_jacobian(xc2, ct2(xc2)), V.cat2_ladj)
    local ct3 = D.CatTransform(parts, -1, {2, 1})
    close(ct3(xc2), V.cat3_y)
    close(ct3:log_abs_det_jacobian(xc2, ct3(xc2)), V.cat3_ladj)
    support.assert_error("CatTransform: x has size 4 along dim 1, expected 5", ct.forward, ct, pt.zeros(4))
    support.assert_error("CatTransform: lengths must be a list of 3 lengths (one per part), got 2 entries",
      D.CatTransform, {D.ExpTransform(), D.ExpTransform(), D.ExpTransform()}, 1, {1, 2})
    local st = D.StackTransform({D.ExpTransform(), D.SigmoidTransform(), D.AffineTransform(1, -2)}, -1)
    local yst = st(xc2)
    close(yst, V.st_y)
    close(st:inverse(yst), V.st_inv, 1e-12)
    close(st:log_abs_det_jacobian(xc2, yst), V.st_ladj)
    gradcheck(function(x) return st(x) end, {xc2})
    gradcheck(function(x) return st:log_abs_det_jacobian(x, st(x)) end, {xc2})
    gradcheck(function(y) return st:inverse(y) end, {yst:detach()})
    support.assert_error("StackTransform: x has size 2 along dim -1, expected 3", st.forward, st, pt.zeros(3, 2))
  end)

  it("CumulativeDistributionTransform", function()
    local loc, scale = f64(0.5), f64(2)
    local t = D.CumulativeDistributionTransform(D.Normal(loc, scale))
    local xn = f64 {-1, 0.5, 3}
    close(t(xn), V.cdf_y)
    close(t:inverse(f64 {0.1, 0.5, 0.95}), V.cdf_inv, 1e-10)
    close(t:log_abs_det_jacobian(xn, t(xn)), V.cdf_ladj)
    assert.are.equal(c.real, t.domain)
    assert.are.equal(c.unit_interval, t.codomain)
    gradcheck(function(x, l, s) return D.CumulativeDistributionTransform(D.Normal(l, s))(x) end, {xn, loc, scale})
    support.assert_error("CumulativeDistributionTransform: distribution must be a distribution, got number",
      D.CumulativeDistributionTransform, 1)
  end)

  it("ComposeTransform's event dims follow torch's through shape-changing parts", function()
    local comp = D.ComposeTransform({D.ReshapeTransform({4}, {2, 2}), D.ExpTransform()})
    local xx = f64 {{0.1, 0.2, 0.3, 0.4}, {1, -1, 0.5, 0}}
    assert.are.same(V.comp_ed, {comp.domain.event_dim, comp.codomain.event_dim})
    close(comp:log_abs_det_jacobian(xx, comp(xx)), V.comp_ladj)
    local comp2 = D.ComposeTransform({D.CorrCholeskyTransform(), D.AffineTransform(0, 2)})
    local xb = f64 {{0.3, -0.2, 1.1, 0.7, -1.5, 0.05}, {2.0, 0.1, -0.4, -0.9, 0.6, 1.3}}
    assert.are.same(V.comp2_ed, {comp2.domain.event_dim, comp2.codomain.event_dim})
    close(comp2:log_abs_det_jacobian(xb, comp2(xb)), V.comp2_ladj)
  end)

  it("event_dim where domain and codomain agree", function()
    -- torch 1.13: 0, 1, 2, 2, 1, 1; CorrCholeskyTransform's raises
    assert.are.same({0, 1, 2, 2, 1, 1}, {D.ExpTransform().event_dim, D.StickBreakingTransform().event_dim,
      D.LowerCholeskyTransform().event_dim, D.IndependentTransform(D.ExpTransform(), 2).event_dim,
      D.SoftmaxTransform().inv.event_dim, D.CatTransform({D.StickBreakingTransform()}).event_dim})
    support.assert_error("CorrCholeskyTransform().event_dim: domain.event_dim (1) and codomain.event_dim (2) differ",
      function() return D.CorrCholeskyTransform().event_dim end)
    support.assert_error("InverseTransform(CorrCholeskyTransform()).event_dim: domain.event_dim (2) and codomain.event_dim (1) differ",
      function() return D.CorrCholeskyTransform().inv.event_dim end)
  end)

  it("in TransformedDistribution", function()
    -- values from torch 1.13
    local base = D.Independent(D.Normal(f64 {0.1, -0.2, 0.3}, f64 {1, 0.5, 2}), 1)
    local d = D.TransformedDistribution(base, {D.CorrCholeskyTransform()})
    assert.are.same({{}, {3, 3}}, {d.batch_shape, d.event_shape})
    local y = D.CorrCholeskyTransform()(f64 {{0.5, -1, 2}, {0.2, 0.1, -0.3}})
    close(d:log_prob(y), {-0.2864885995326496, -2.843422849617183}, 1e-10)
    local d2 = D.TransformedDistribution(D.Normal(pt.zeros({2, 4}, {dtype = "float64"}), 1),
      {D.ReshapeTransform({4}, {2, 2}), D.ExpTransform()})
    assert.are.same({{2}, {2, 2}}, {d2.batch_shape, d2.event_shape})
    close(d2:log_prob(f64 {{{1, 2}, {0.5, 3}}, {{0.2, 1}, {1, 1}}}), {-5.858293915811293, -3.3614614173747066}, 1e-10)
  end)
end)

describe("biject_to and transform_to as torch 1.13", function()
  it("the registered transforms, with their values", function()
    local xv = f64 {-0.5, 0.2, 1.7}
    for name, con in pairs {gt = c.greater_than(2), lt = c.less_than(1), iv = c.interval(-1, 3), pos = c.positive,
                            unit = c.unit_interval, hoi = c.half_open_interval(0, 4)} do
      local b = D.biject_to(con)
      local y = b(xv)
      close(y, V[name .. "_y"])
      close(b.inv(y), V[name .. "_inv"], 1e-12)
      close(b:log_abs_det_jacobian(xv, y), V[name .. "_ladj"])
      gradcheck(function(x) return b:log_abs_det_jacobian(x, b(x)) + b(x) end, {xv})
    end
    -- torch 1.13: greater_than's factory replaced positive's ExpTransform
    assert.are.equal("ComposeTransform(ExpTransform(), AffineTransform())", tostring(D.biject_to(c.positive)))
    assert.are.equal("ComposeTransform(ExpTransform(), AffineTransform())", tostring(D.transform_to(c.nonnegative)))
    assert.are.equal("SigmoidTransform()", tostring(D.biject_to(c.unit_interval)))
    assert.are.equal("ComposeTransform(SigmoidTransform(), AffineTransform())", tostring(D.biject_to(c.interval(pt.tensor(0), 1))))
    assert.are.equal(D.identity_transform, D.biject_to(c.real))
    assert.are.equal("IndependentTransform(ComposeTransform(), 1)", tostring(D.biject_to(c.real_vector)))
    close(D.biject_to(c.simplex)(xv), V.sx_y)
    close(D.transform_to(c.simplex)(xv), V.sx_t)
    assert.are.equal("LowerCholeskyTransform()", tostring(D.transform_to(c.lower_cholesky)))
    assert.are.equal("CorrCholeskyTransform()", tostring(D.biject_to(c.corr_cholesky)))
    assert.are.equal("CorrCholeskyTransform()", tostring(D.transform_to(c.corr_cholesky)))
    local xi = f64 {{0.5, -1, 2}, {1, 1, 1}}
    local b = D.transform_to(c.independent(c.positive, 1))
    close(b:log_abs_det_jacobian(xi, b(xi)), V.ind_ladj)
    b = D.biject_to(c.cat({c.positive, c.interval(0, 2)}, 1, {2, 1}))
    close(b(xv), V.ccat_y)
    close(b:log_abs_det_jacobian(xv, b(xv)), V.ccat_ladj)
    b = D.biject_to(c.stack({c.positive, c.real, c.interval(0, 2)}, -1))
    close(b(xi), V.cstk_y)
    close(b:log_abs_det_jacobian(xi, b(xi)), V.cstk_ladj)
    -- a distribution's support
    local p = D.Pareto(1, 2)
    close(D.biject_to(p.support)(f64 {0}), {2})
  end)

  it("unknown constraints raise; register adds factories", function()
    support.assert_error("biject_to: cannot transform LowerCholesky constraints (register a factory with biject_to:register)",
      function() return D.biject_to(c.lower_cholesky) end)
    support.assert_error("transform_to: cannot transform Boolean constraints (register a factory with transform_to:register)",
      function() return D.transform_to(c.boolean) end)
    support.assert_error("biject_to: expected a constraint, got number", function() return D.biject_to(1) end)
    -- a fresh registry: a class, a singleton's class, a user constraint
    local reg = D.ConstraintRegistry()
    support.assert_error("ConstraintRegistry: cannot transform GreaterThan constraints (register a factory with ConstraintRegistry:register)",
      function() return reg(c.positive) end)
    reg:register(c.greater_than, function(con) return D.AffineTransform(con.lower_bound, 1) end)
    close(reg(c.greater_than(3))(f64 {1}), {4})
    close(reg(c.positive)(f64 {1}), {1})
    local even = c.Constraint {check = function(v) return (v % 2):eq(0) end}
    local f = reg:register(even)
    f(function(_) return D.AffineTransform(0, 2) end)
    close(reg(even)(f64 {1.5}), {3})
    support.assert_error("ConstraintRegistry:register: factory must be a function, got number",
      function() return reg:register(c.real, 5) end)
    support.assert_error("ConstraintRegistry:register: constraint must be a constraint class or a constraint, got number",
      function() return reg:register(5, function() end) end)
    -- the global registry takes them too (removed again after)
    D.biject_to:register(even, function(_) return D.ExpTransform() end)
    assert.are.equal("ExpTransform()", tostring(D.biject_to(even)))
    D.biject_to._registry[even] = nil
  end)
end)

describe("constraint and transform errors", function()
  it("name the argument or the shape", function()
    local even = c.Constraint {check = function(v) return (v % 2):eq(0) end, desc = "even"}
    local reg = D.ConstraintRegistry()
    local exp1 = D.IndependentTransform(D.ExpTransform(), 1)
    local cat = D.CatTransform({D.ExpTransform(), D.ExpTransform()})
    local stack = D.StackTransform({D.ExpTransform(), D.ExpTransform()})
    local cases = {
      {"constraints.Constraint: expected a table with a check function", function() return c.Constraint(5) end},
      {"constraints.Constraint: event_dim must be an integer >= 0, got -1",
        function() return c.Constraint {check = function() end, event_dim = -1} end},
      {"Constraint().check: not implemented", function() return setmetatable({}, c.Constraint):check(pt.ones(1)) end},
      {"constraints.multinomial: upper_bound must be a number or a Tensor, got nil", function() return c.multinomial() end},
      {"constraints.independent: base_constraint must be a constraint, got number", function() return c.independent(1, 1) end},
      {"IndependentConstraint(Real(), 2).check: expected value.dim() >= 2, got 1",
        function() return c.independent(c.real, 2):check(pt.ones(3)) end},
      {"constraints.cat: cseq must be a non-empty list, got number", function() return c.cat(1) end},
      {"constraints.cat: cseq[2] must be a constraint, got number", function() return c.cat({c.real, 2}) end},
      {"constraints.stack: dim must be a non-zero integer (1-based, negative from the end), got 0",
        function() return c.stack({c.real}, 0) end},
      {"constraints.cat: lengths[1] must be an integer >= 0, got -1", function() return c.cat({c.real}, 1, {-1}) end},
      {"Cat(dim=3).check: dim 3 is out of range for a value of 1 dims", function() return c.cat({c.real}, 3):check(pt.ones(1)) end},
      {"Stack(dim=2).check: dim 2 is out of range for a value of 1 dims", function() return c.stack({c.real}, 2):check(pt.ones(1)) end},
      {"constraints.dependent: .is_discrete cannot be determined statically", function() return c.dependent.is_discrete end},
      {"IndependentTransform: reinterpreted_batch_ndims must be an integer >= 0, got 1.5",
        function() return D.IndependentTransform(D.ExpTransform(), 1.5) end},
      {"IndependentTransform: too few dimensions on input (0, expected at least 1)", function() return exp1(pt.tensor(1)) end},
      {"IndependentTransform.inverse: too few dimensions on input (0, expected at least 1)",
        function() return exp1:inverse(pt.tensor(1)) end},
      {"ReshapeTransform.forward_shape: too few dimensions on shape {3} (1, expected at least 2)",
        function() return D.ReshapeTransform({2, 3}, {6}):forward_shape({3}) end},
      {"ReshapeTransform.inverse_shape: shape mismatch: expected {4,5} to end with {6}",
        function() return D.ReshapeTransform({2, 3}, {6}):inverse_shape({4, 5}) end},
      {"SoftmaxTransform.forward_shape: too few dimensions on shape {} (0, expected at least 1)",
        function() return D.SoftmaxTransform():forward_shape({}) end},
      {"SoftmaxTransform.inverse_shape: too few dimensions on shape {} (0, expected at least 1)",
        function() return D.SoftmaxTransform():inverse_shape({}) end},
      {"CorrCholeskyTransform.forward_shape: the last size 4 is not D (D - 1) / 2 for an integer D",
        function() return D.CorrCholeskyTransform():forward_shape({4}) end},
      {"CorrCholeskyTransform.forward_shape: too few dimensions on shape {} (0, expected at least 1)",
        function() return D.CorrCholeskyTransform():forward_shape({}) end},
      {"CorrCholeskyTransform.inverse_shape: too few dimensions on shape {3} (1, expected at least 2)",
        function() return D.CorrCholeskyTransform():inverse_shape({3}) end},
      {"CorrCholeskyTransform(): domain.event_dim (1) and codomain.event_dim (2) differ",
        function() return D.CatTransform({D.CorrCholeskyTransform()}) end},
      {"CatTransform: dim 2 is out of range for x with 1 dims", function() return D.CatTransform({D.ExpTransform()}, 2)(pt.ones(1)) end},
      {"CatTransform.inverse: y has size 3 along dim 1, expected 2", function() return cat:inverse(pt.ones(3)) end},
      {"CatTransform.log_abs_det_jacobian: y has size 3 along dim 1, expected 2",
        function() return cat:log_abs_det_jacobian(pt.ones(2), pt.ones(3)) end},
      {"StackTransform: tseq must be a non-empty list, got table", function() return D.StackTransform({}) end},
      {"StackTransform.inverse: y has size 3 along dim 1, expected 2", function() return stack:inverse(pt.ones(3)) end},
      {"StackTransform.log_abs_det_jacobian: x has size 1 along dim 1, expected 2",
        function() return stack:log_abs_det_jacobian(pt.ones(1), pt.ones(2)) end},
      {"CatTransform: tseq[1] must be a transform, got number", function() return D.CatTransform({1}) end},
      {"register: call it as registry:register(constraint, factory)",
        function() return reg.register(c.real, function() end) end},
      {"ConstraintRegistry: cannot transform Constraint(even) constraints (register a factory with ConstraintRegistry:register)",
        function() return reg(even) end},
      {"ConstraintRegistry: cannot transform (in [0, 1)) constraints (register a factory with ConstraintRegistry:register)",
        function() return reg({desc = "in [0, 1)", check = function(v) return v:ge(0) end}) end},
    }
    for _, case in ipairs(cases) do support.assert_error(case[1], case[2]) end
  end)
end)

describe("help texts for the constraints and transforms", function()
  it("exist", function()
    for _, v in ipairs {c, c.interval, c.independent, c.cat, c.stack, c.Constraint, c.is_dependent, D.biject_to,
                        D.transform_to, D.ConstraintRegistry, D.ConstraintRegistry.register, D.CorrCholeskyTransform,
                        D.SoftmaxTransform, D.LowerCholeskyTransform, D.ReshapeTransform, D.IndependentTransform,
                        D.CatTransform, D.StackTransform, D.CumulativeDistributionTransform, D.identity_transform} do
      assert.is_string(pt._docs[v])
    end
  end)
end)
