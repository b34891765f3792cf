-- nn.CTCLoss / nn.functional.ctc_loss (lib/nn_ctc.c, lua/partrain/nn_ctc.lua).
-- Reference values were computed once with /usr/bin/python3 and torch 1.13.0a0 on the same
-- inputs (the script is not run at test time); torch's classes are 0-based with blank 0, so its
-- targets are these minus 1. Inputs: x = 2 sin(0.7 i + 0.3) over the flat index i, reshaped to
-- {T,N,C}; log_probs = log_softmax(x) along the classes, made a leaf, so the gradients below are
-- the ones torch's CTC backward itself returns for log_probs.
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"

local F64 = {dtype = "float64"}
local I64 = {dtype = "int64"}

local function assert_close(got, want, tol)
  local a = support.flat(pt.is_tensor(got) and got:tolist() or got)
  local b = support.flat(want)
  assert.are.equal(#b, #a)
  for i = 1, #a do
    local ok
    if b[i] ~= b[i] then ok = a[i] ~= a[i]
    elseif b[i] == math.huge or b[i] == -math.huge then ok = a[i] == b[i]
    else ok = math.abs(a[i] - b[i]) <= tol * math.max(1, math.abs(b[i])) end
    if not ok then error(string.format("element %d: got %.17g, expected %.17g", i, a[i], b[i]), 2) end
  end
end

local function x_of(T, N, C, dtype)
  local x = (pt.arange(0, T * N * C, F64) * 0.7 + 0.3):sin() * 2
  x = x:reshape(T, N, C)
  if dtype then x = x:to(dtype) end
  return x
end

local function leaf_lp(T, N, C, dtype)
  return nn.log_softmax(x_of(T, N, C, dtype), 3):detach():requires_grad_()
end

-- the batch of the torch runs: T=6, N=3, C=5, padded targets (torch's [[1,2,2,0],[3,3,4,1],[4,0,0,0]])
local TG = {{2, 3, 3, 1}, {4, 4, 5, 2}, {5, 1, 1, 1}}
local IL, TL = {6, 5, 4}, {3, 2, 1}

local R = {
  loss_none = {8.09850452105, 5.16105477676, 3.28131838915},
  grad_none = {0.0893146090938, -0.718874067218, 0.374546746968, 0.199001698603, 0.0560110125536, 0.0920404329999, 0.0480722848562, 0.058024001071, -0.831376261589, 0.633239542662, -0.642512533998, 0.406027869194, 0.211377105364, 0.0589834064796, -0.0338758470392, 0.0091083318936, 0.00707261530845, -0.919505090924, 0.231851748885, 0.671472394837, -0.41137649652, 0.298430176308, 0.0825898405758, 0.0189995249974, 0.0113569546387, 0.00140224751831, 0.032537488038, 0.12825032232, 0.366003296762, -0.528193354638, -0.276477406108, 0.189039383693, 0.0256151541834, 0.0269698964253, 0.0348529718068, -0.0238200532881, 0.108313227594, 0.304500502249, -0.573127878063, 0.184134201508, -0.166037241991, 0.127914305863, 0.0666632719735, 0.088119181281, -0.116659517127, -0.108573900393, 0.302740140608, -0.417106805015, 0.175465819143, 0.0474747456563, -0.222354186726, 0.0414464195003, 0.0560350643593, -0.532618690598, 0.657491393465, -0.642281724125, 0.4027495691, 0.18990895528, 0.0510345327006, -0.00141133295592, -0.140172473066, 0.0206187823226, -0.782573989099, 0.244955279687, 0.657172400156, -0.358837972584, 0.281859515844, 0.0752594995178, -0.0102459070107, 0.0119648642327, 0, 0, 0, 0, 0, -0.234403935473, 0.183202933301, -0.0222492289707, 0.0300312283196, 0.0434190028229, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
  loss_sum = 16.540877687,
  loss_mean = 2.85378242818,
  grad_mean = {0.00992384545486, -0.0798748963576, 0.0416163052187, 0.0221112998447, 0.00622344583929, 0.0153400721666, 0.00801204747603, 0.00967066684517, -0.138562710265, 0.105539923777, -0.214170844666, 0.135342623065, 0.0704590351215, 0.0196611354932, -0.0112919490131, 0.00101203687707, 0.000785846145383, -0.102167232325, 0.0257613054316, 0.0746080438708, -0.06856274942, 0.049738362718, 0.0137649734293, 0.00316658749956, 0.00189282577312, 0.000467415839437, 0.010845829346, 0.04275010744, 0.122001098921, -0.176064451546, -0.0307197117898, 0.0210043759659, 0.0028461282426, 0.00299665515837, 0.00387255242298, -0.00397000888135, 0.0180522045989, 0.0507500837082, -0.0955213130105, 0.0306890335847, -0.0553457473302, 0.0426381019543, 0.0222210906578, 0.029373060427, -0.0388865057089, -0.0120637667103, 0.0336377934009, -0.0463452005572, 0.019496202127, 0.00527497173959, -0.0370590311211, 0.00690773658339, 0.00933917739321, -0.0887697817663, 0.109581898911, -0.214093908042, 0.134249856367, 0.0633029850935, 0.0170115109002, -0.000470444318639, -0.0155747192296, 0.00229097581362, -0.0869526654555, 0.0272172532985, 0.0730191555729, -0.0598063287639, 0.046976585974, 0.0125432499196, -0.00170765116846, 0.00199414403879, 0, 0, 0, 0, 0, -0.0260448817192, 0.0203558814779, -0.00247213655231, 0.00333680314662, 0.00482433364699, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
  loss32 = {8.09850406647, 5.16105461121, 3.28131842613},
  grad32 = {0.089314609766, -0.718873262405, 0.374546736479, 0.199001714587, 0.0560110136867, 0.0920404344797, 0.0480722859502, 0.0580240003765, -0.831376373768, 0.63323956728, -0.642512798309, 0.406027853489, 0.211377114058, 0.0589834041893, -0.0338758938015, 0.00910833477974, 0.00707261357456, -0.919503986835, 0.231851741672, 0.671472370625, -0.411376774311, 0.298430204391, 0.0825898423791, 0.0189995225519, 0.0113569563255, 0.00140224397182, 0.0325374901295, 0.128250330687, 0.36600330472, -0.528193235397, -0.276476860046, 0.189039379358, 0.0256151501089, 0.0269698947668, 0.0348529666662, -0.0238200314343, 0.10831322521, 0.304500520229, -0.573127746582, 0.184134215117, -0.166037082672, 0.127914324403, 0.0666632652283, 0.088119186461, -0.11665931344, -0.108573816717, 0.302740097046, -0.417106509209, 0.175465792418, 0.0474747344851, -0.222353965044, 0.0414464138448, 0.0560350567102, -0.532618522644, 0.657491385937, -0.642281770706, 0.402749508619, 0.189908951521, 0.0510345287621, -0.0014113355428, -0.140172317624, 0.0206187814474, -0.78257393837, 0.244955271482, 0.657172441483, -0.358838021755, 0.281859517097, 0.0752594918013, -0.0102459006011, 0.0119648659602, 0, 0, 0, 0, 0, -0.234404563904, 0.183202952147, -0.02224926278, 0.030031228438, 0.0434190072119, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
  -- blank = the last class (torch blank=4, targets [[0,1,1],[2,2,3],[3,0,0]])
  loss_blank5 = {6.41230321725, 6.46995147248, 7.59034921043},
  grad_blank5 = {-0.306692462235, 0.277363513485, 0.374546746968, 0.199001698603, -0.544219496821, 0.0998880706963, 0.0480722848562, -0.0254582670673, 0.160776100714, -0.283278189199, 0.307531816009, 0.406027869194, 0.211377105364, -0.550799605451, -0.374137185116, -0.0364010891202, 0.0106626953645, 0.0588322816103, 0.231851748885, -0.264945636739, 0.584937052273, 0.298430176308, -0.841558765792, 0.0226859762048, -0.0644944389939, 0.0113924377572, 0.032537488038, 0.12825032232, -0.152258958826, -0.0199212892886, 0.0755042564317, -0.139143446077, 0.0528061574184, 0.0269698964253, -0.0161368641986, 0.0274849978954, 0.108313227594, -0.32232393668, 0.375567070753, -0.189041359562, 0.458198145647, 0.127914305863, 0.0666632719735, -0.310730594778, -0.342045128706, 0.109347894909, -0.650805013863, 0.364971399683, 0.175465819143, 0.00101990012764, 0.0779231849245, 0.0414464195003, 0.021855266081, 0.167103937751, -0.308328808257, 0.341806157983, 0.4027495691, 0.18990895528, -0.453891784878, -0.480572897485, 0.0149120776836, 0.0188247233771, 0.062341460151, 0.244955279687, -0.341033540898, 0.609331133458, 0.281859515844, -0.919033068631, 0.0215849869475, 0.00625743238196, 0, 0, 0, 0, 0, 0.690290245206, -0.816096311995, 0.0530565903502, 0.0300312283196, 0.0427182481194, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
  -- unbatched: x_of(5, 1, 4)[:, 0, :], target [2,1] (torch [1,0]... here {3,2}), lengths 5 and 2
  loss_unb = 5.42634391184,
  grad_unb = {-0.283618068737, 0.293820708899, -0.221011983544, 0.210809343381, -0.0209716312522, 0.104975107754, -0.184909062032, 0.100905585531, -0.102947670911, -0.200214051855, -0.177457467997, 0.480619190764, 0.0902908182544, -0.141931488833, 0.0248278775985, 0.0268127929797, -0.233043311975, -0.685840484555, 0.235845368164, 0.683038428366},
  -- T=3, N=3, C=3: a repeated label {2,2} in 3 frames and in 2 (impossible), an empty target
  loss_rep = {4.01366581513, math.huge, 5.22623669086},
  grad_rep = {0.12493774026, -0.627693629625, 0.502755889365, 0 / 0, 0 / 0, 0 / 0, -0.819867894685, 0.217422273624, 0.602445621061, -0.872080218211, 0.375851409173, 0.496228809039, 0 / 0, 0 / 0, 0 / 0, -0.824845507315, 0.216293549513, 0.608551957802, 0.13098788213, -0.620642296935, 0.489654414805, 0, 0, 0, -0.829681494454, 0.215163003642, 0.614518490812},
  loss_rep_zi = {4.01366581513, 0, 5.22623669086},
  grad_rep_zi = {0.12493774026, -0.627693629625, 0.502755889365, 0, 0, 0, -0.819867894685, 0.217422273624, 0.602445621061, -0.872080218211, 0.375851409173, 0.496228809039, 0, 0, 0, -0.824845507315, 0.216293549513, 0.608551957802, 0.13098788213, -0.620642296935, 0.489654414805, 0, 0, 0, -0.829681494454, 0.215163003642, 0.614518490812},
  loss_rep_zi_mean = 2.41102319947,
  grad_rep_zi_mean = {0.0208229567101, -0.104615604938, 0.0837926482275, 0, 0, 0, -0.273289298228, 0.072474091208, 0.20081520702, -0.145346703035, 0.0626419015288, 0.0827048015065, 0, 0, 0, -0.274948502438, 0.0720978498378, 0.202850652601, 0.0218313136883, -0.103440382822, 0.0816090691341, 0, 0, 0, -0.276560498151, 0.071721001214, 0.204839496937},
}

local TOL = 1e-10 -- the references have 12 significant digits

describe("ctc_loss", function()
  it("gives torch 1.13's losses and log_probs gradients for every reduction (padded targets, float64)", function()
    for _, red in ipairs {"none", "sum", "mean"} do
      local lp = leaf_lp(6, 3, 5)
      local l = F.ctc_loss(lp, pt.tensor(TG, I64), IL, TL, {reduction = red})
      assert.are.equal("float64", l:dtype())
      if red == "none" then
        assert.are.same({3}, l:size())
        assert_close(l, R.loss_none, TOL)
        l:sum():backward()
        assert_close(lp.grad, R.grad_none, TOL)
      else
        assert.are.equal(0, l:dim())
        assert_close(l, {red == "sum" and R.loss_sum or R.loss_mean}, TOL)
        l:backward()
        -- sum: each sequence's gradient as with "none"; mean: divided by N and its target length
        assert_close(lp.grad, red == "sum" and R.grad_none or R.grad_mean, TOL)
      end
      assert.are.equal("CtcLossBackward", l.grad_fn)
    end
  end)

  it("reads concatenated targets, lengths as tensors of any integer dtype, and float targets holding whole numbers", function()
    local cat = {2, 3, 3, 4, 4, 5}
    local lp = leaf_lp(6, 3, 5)
    local l = F.ctc_loss(lp, pt.tensor(cat, I64), pt.tensor(IL, {dtype = "int32"}), pt.tensor(TL, I64), 1, "none")
    assert_close(l, R.loss_none, TOL)
    l:sum():backward()
    assert_close(lp.grad, R.grad_none, TOL)
    -- float targets are converted, as torch converts them; uint8 targets and lengths too
    assert_close(F.ctc_loss(lp, pt.tensor(TG), IL, TL, {reduction = "none"}), R.loss_none, TOL)
    assert_close(F.ctc_loss(lp, pt.tensor(TG, {dtype = "uint8"}), pt.tensor(IL, {dtype = "uint8"}), TL,
      {reduction = "none"}), R.loss_none, TOL)
    -- what follows a row's target length is never read (0 is a natural padding)
    local padded = pt.tensor({{2, 3, 3, 0}, {4, 4, 0, 0}, {5, 0, 0, 0}}, I64)
    assert_close(F.ctc_loss(lp, padded, IL, TL, {reduction = "none"}), R.loss_none, TOL)
    -- a non-contiguous log_probs (a transposed {N,T,C}) reads as its values
    local nt = lp:detach():transpose(1, 2):contiguous():transpose(1, 2)
    assert.is_false(nt:is_contiguous())
    assert_close(F.ctc_loss(nt, pt.tensor(TG, I64), IL, TL, 1, "none"), R.loss_none, TOL)
  end)

  it("takes the blank anywhere in 1..C (blank = C as torch's blank=C-1)", function()
    local lp = leaf_lp(6, 3, 5)
    local l = F.ctc_loss(lp, pt.tensor({{1, 2, 2}, {3, 3, 4}, {4, 1, 1}}, I64), IL, TL, 5, "none")
    assert_close(l, R.loss_blank5, TOL)
    l:sum():backward()
    assert_close(lp.grad, R.grad_blank5, TOL)
  end)

  it("computes float32 in float64 and agrees with torch's float32", function()
    local lp = leaf_lp(6, 3, 5, "float32")
    local l = F.ctc_loss(lp, pt.tensor(TG, I64), IL, TL, {reduction = "none"})
    assert.are.equal("float32", l:dtype())
    assert_close(l, R.loss32, 2e-6)
    l:sum():backward()
    assert.are.equal("float32", lp.grad:dtype())
    assert_close(lp.grad, R.grad32, 2e-6)
  end)

  it("takes one unbatched sequence {T,C} and gives a number for reduction none", function()
    local lp = nn.log_softmax(x_of(5, 1, 4):select(2, 1), 2):detach():requires_grad_()
    local l = F.ctc_loss(lp, pt.tensor({3, 2}, I64), pt.tensor(5, I64), pt.tensor(2, I64), {reduction = "none"})
    assert.are.equal(0, l:dim())
    assert_close(l, {R.loss_unb}, TOL)
    l:backward()
    assert_close(lp.grad, R.grad_unb, TOL)
    -- lengths as plain integers or one-element lists, targets as a {1,S} padded row
    assert_close(F.ctc_loss(lp, pt.tensor({3, 2}, I64), 5, 2.0, {reduction = "none"}), {R.loss_unb}, TOL)
    assert_close(F.ctc_loss(lp, pt.tensor({{3, 2, 0}}, I64), {5}, {2}, {reduction = "sum"}), {R.loss_unb}, TOL)
    -- "mean" divides by the target length, as torch's
    assert_close(F.ctc_loss(lp, pt.tensor({3, 2}, I64), 5, 2), {R.loss_unb / 2}, TOL)
  end)

  it("handles repeated labels, impossible alignments (inf, NaN gradient) and empty targets as torch", function()
    local tg = pt.tensor({{2, 2}, {2, 2}, {1, 1}}, I64)
    local lp = leaf_lp(3, 3, 3)
    -- {2,2} needs a blank between its two labels: 3 frames fit, 2 do not; the third target is empty
    local l = F.ctc_loss(lp, tg, {3, 2, 3}, {2, 2, 0}, {reduction = "none"})
    assert_close(l, R.loss_rep, TOL)
    l:sum():backward()
    assert_close(lp.grad, R.grad_rep, TOL)
    lp.grad = nil
    l = F.ctc_loss(lp, tg, {3, 2, 3}, {2, 2, 0}, {reduction = "none", zero_infinity = true})
    assert_close(l, R.loss_rep_zi, TOL)
    l:sum():backward()
    assert_close(lp.grad, R.grad_rep_zi, TOL)
    lp.grad = nil
    -- mean: the empty target's loss is divided by 1
    l = F.ctc_loss(lp, tg, {3, 2, 3}, {2, 2, 0}, 1, "mean", true)
    assert_close(l, {R.loss_rep_zi_mean}, TOL)
    l:backward()
    assert_close(lp.grad, R.grad_rep_zi_mean, TOL)
    -- the empty target's loss is -sum of its frames' blank log-probabilities
    local want = -(lp:detach():select(2, 3):select(2, 1):sum():item())
    assert_close(F.ctc_loss(lp, tg, {3, 2, 3}, {2, 2, 0}, {reduction = "none"}):select(1, 3), {want}, 1e-14)
    -- a target longer than its input is impossible
    local long = F.ctc_loss(lp, pt.tensor({{2, 3}, {2, 3}, {2, 3}}, I64), {1, 3, 3}, {2, 2, 2}, {reduction = "none"})
    assert.are.equal(math.huge, long[1])
    assert.is_true(long[2] < math.huge)
  end)

  it("keeps float64 precision on long sequences whose log-probabilities span hundreds", function()
    -- x = 30 sin(0.7 i + 0.3), {300,2,6}; torch 1.13: loss 10737.3344483663, sum |grad|
    -- 737.747902244355, sum grad * cos(i) -5.61068314536565
    local T, N, C = 300, 2, 6
    local x = ((pt.arange(0, T * N * C, F64) * 0.7 + 0.3):sin() * 30):reshape(T, N, C)
    local lp = nn.log_softmax(x, 3):detach():requires_grad_()
    local tg = {{}, {}}
    for i = 0, 39 do tg[1][i + 1], tg[2][i + 1] = (i * 7) % 5 + 2, (i * 3) % 5 + 2 end
    local l = F.ctc_loss(lp, pt.tensor(tg, I64), {300, 250}, {40, 33}, 1, "sum")
    l:backward()
    local w = pt.arange(0, T * N * C, F64):reshape(T, N, C):cos()
    assert_close({l:item(), lp.grad:abs():sum():item(), (lp.grad * w):sum():item()},
      {10737.3344483663, 737.747902244355, -5.61068314536565}, 1e-11)
  end)

  it("gives loss 0 or inf for sequences without frames, with a zero gradient", function()
    -- not torch 1.13's numbers: its kernel reads the alpha of frame -1 there (garbage such as
    -- 1.79e252); later releases return these
    local lp = leaf_lp(3, 2, 3)
    local l = F.ctc_loss(lp, pt.tensor({{2, 3}, {2, 3}}, I64), {0, 0}, {0, 1}, {reduction = "none"})
    assert_close(l, {0, math.huge}, 0)
    l:sum():backward()
    assert.are.equal(0, lp.grad:abs():sum():item())
    assert_close(F.ctc_loss(lp, pt.tensor({{2, 3}, {2, 3}}, I64), {0, 0}, {0, 1}, {zero_infinity = true}), {0}, 0)
  end)

  it("reduces an empty batch as torch: mean nan, sum 0", function()
    local lp = nn.log_softmax(pt.zeros(3, 0, 4, F64), 3)
    local m = F.ctc_loss(lp, pt.zeros(0, 2, I64), {}, {})
    assert.is_true(m:item() ~= m:item())
    assert.are.equal(0, F.ctc_loss(lp, pt.zeros(0, 2, I64), {}, {}, 1, "sum"):item())
    assert.are.same({0}, F.ctc_loss(lp, pt.zeros(0, I64), {}, {}, 1, "none"):size())
  end)

  it("passes finite-difference checks through log_softmax (float64)", function()
    local cases = {
      -- {T, N, C, targets, input_lengths, target_lengths}
      {5, 2, 4, {{2, 3, 3}, {4, 0, 0}}, {5, 4}, {3, 1}},     -- a repeated label, a shorter input
      {4, 3, 3, {{2, 2}, {3, 2}, {0, 0}}, {4, 3, 2}, {2, 2, 0}}, -- repeats, an empty target
      {6, 1, 5, {{5, 4, 5, 4}}, {6}, {4}},                   -- alternating labels, tight fit
      {3, 2, 2, {{2}, {2}}, {3, 1}, {1, 1}},                 -- two classes, one frame
    }
    for _, c in ipairs(cases) do
      local x = x_of(c[1], c[2], c[3])
      local tg = pt.tensor(c[4], I64)
      for _, red in ipairs {"none", "sum", "mean"} do
        gradcheck(function(v) return F.ctc_loss(nn.log_softmax(v, 3), tg, c[5], c[6], {reduction = red}) end, {x})
      end
    end
    -- another blank, concatenated targets, zero_infinity with an impossible sequence (gradient 0)
    local x = x_of(4, 2, 4)
    gradcheck(function(v)
      return F.ctc_loss(nn.log_softmax(v, 3), pt.tensor({1, 2, 2, 1, 3, 1}, I64), {4, 2}, {3, 3}, 4, "sum", true)
    end, {x})
    -- unbatched
    gradcheck(function(v) return F.ctc_loss(nn.log_softmax(v, 2), pt.tensor({2, 3}, I64), 4, 2) end,
      {x_of(4, 1, 3):select(2, 1)})
  end)

  it("splits large batches over threads with the same results as one thread", function()
    local before = pt.get_num_threads()
    local T, N, C = 40, 64, 6
    local lp = nn.log_softmax(x_of(T, N, C), 3)
    local tg, il, tl = {}, {}, {}
    for b = 1, N do
      tl[b] = b % 9
      il[b] = T - b % 7
      tg[b] = {}
      for i = 1, 8 do tg[b][i] = 2 + (b * 3 + i * (b % 4)) % (C - 1) end
    end
    tg = pt.tensor(tg, I64)
    local r = {}
    for _, threads in ipairs {1, 2} do
      pt.set_num_threads(threads)
      local leaf = lp:detach():requires_grad_()
      local l = F.ctc_loss(leaf, tg, il, tl, {reduction = "none"})
      l:sum():backward()
      r[threads] = {l, leaf.grad}
    end
    pt.set_num_threads(before)
    assert.is_true(pt.equal(r[1][1], r[2][1]))
    assert.is_true(pt.equal(r[1][2], r[2][2]))
    -- each sequence as its own batch of one gives the same loss
    for _, b in ipairs {1, 17, 64} do
      local one = F.ctc_loss(lp:narrow(2, b, 1), tg:narrow(1, b, 1), {il[b]}, {tl[b]}, {reduction = "none"})
      assert.are.equal(r[1][1][b], one[1])
    end
  end)

  it("refuses create_graph by name and a backward after log_probs changed in place", function()
    local x = x_of(4, 1, 3):requires_grad_()
    local l = F.ctc_loss(nn.log_softmax(x, 3), pt.tensor({{2, 3}}, I64), {4}, {2})
    support.assert_error("autograd.grad: create_graph is not supported through CtcLossBackward",
      pt.autograd.grad, l, x, {create_graph = true})
    local lp = leaf_lp(4, 1, 3)
    local h = lp * 1
    local l2 = F.ctc_loss(h, pt.tensor({{2, 3}}, I64), {4}, {2})
    h:add_(1)
    local err = support.errmsg(function() l2:backward() end)
    assert.is_truthy(err:find("modified by an inplace operation", 1, true) or err:find("modified in place", 1, true), err)
  end)

  it("is nn.CTCLoss, with settings positional or as options", function()
    local lp = leaf_lp(6, 3, 5)
    local m = nn.CTCLoss()
    assert.are.equal(1, m.blank)
    assert.are.equal("mean", m.reduction)
    assert.are.equal(false, m.zero_infinity)
    assert_close(m(lp, pt.tensor(TG, I64), IL, TL), {R.loss_mean}, TOL)
    assert_close(nn.CTCLoss(1, "none")(lp, pt.tensor(TG, I64), IL, TL), R.loss_none, TOL)
    local m5 = nn.CTCLoss({blank = 5, reduction = "none", zero_infinity = true})
    assert.are.equal("CTCLoss(blank=5, reduction='none', zero_infinity=true)", tostring(m5))
    assert_close(m5:forward(lp, pt.tensor({{1, 2, 2}, {3, 3, 4}, {4, 1, 1}}, I64), IL, TL), R.loss_blank5, TOL)
    assert.are.equal(F.ctc_loss, nn.ctc_loss)
    assert_close(nn.ctc_loss(lp, pt.tensor(TG, I64), IL, TL, {reduction = "sum"}), {R.loss_sum}, TOL)
  end)

  describe("errors", function()
    local lp = nn.log_softmax(x_of(6, 3, 5), 3)
    local tg = pt.tensor(TG, I64)
    local E = support.assert_error

    it("on the settings", function()
      E("ctc_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'", F.ctc_loss, lp, tg, IL, TL, {reduction = "avg"})
      E("ctc_loss: blank must be an integer class index (1-based), got 1.5", F.ctc_loss, lp, tg, IL, TL, 1.5)
      E("ctc_loss: zero_infinity must be a boolean, got number", F.ctc_loss, lp, tg, IL, TL, 1, "mean", 1)
      E("ctc_loss: unknown option 'zero_inf' (options: blank, reduction, zero_infinity)", F.ctc_loss, lp, tg, IL, TL,
        {zero_inf = true})
      E("ctc_loss: blank given twice (as an argument and as an option)", F.ctc_loss, lp, tg, IL, TL, 2, {blank = 2})
      E("ctc_loss: too many arguments (3 settings at most, got 4)", F.ctc_loss, lp, tg, IL, TL, 1, "mean", false, 1)
      E("CTCLoss: reduction must be 'mean', 'sum' or 'none', got number", nn.CTCLoss, {reduction = 1})
      E("CTCLoss:forward: expected 4 inputs, got 5", function() nn.CTCLoss()(lp, tg, IL, TL, 1) end)
    end)

    it("on log_probs", function()
      E("ctc_loss: log_probs must be a tensor, got table", F.ctc_loss, {1}, tg, IL, TL)
      E("ctc_loss: log_probs must be float32 or float64, got int64", F.ctc_loss, pt.zeros(6, 3, 5, I64), tg, IL, TL)
      E("ctc_loss: log_probs must be {T,N,C} or {T,C} (unbatched), got shape {6,3,5,1}", F.ctc_loss,
        lp:unsqueeze(4), tg, IL, TL)
      E("ctc_loss: log_probs must be {T,N,C} or {T,C} (unbatched), got shape {6}", F.ctc_loss, pt.zeros(6, F64), tg, IL, TL)
    end)

    it("on the blank", function()
      E("ctc_loss: blank 0 is not a class in 1..5 (log_probs shape {6,3,5}); class indices are 1-based", F.ctc_loss,
        lp, tg, IL, TL, 0)
      E("ctc_loss: blank 6 is not a class in 1..5 (log_probs shape {6,3,5})", F.ctc_loss, lp, tg, IL, TL, 6)
    end)

    it("on the lengths", function()
      E("ctc_loss: input_lengths has 2 entries, expected 3 (one per sequence of the batch, log_probs shape {6,3,5})",
        F.ctc_loss, lp, tg, {6, 5}, TL)
      E("ctc_loss: target_lengths has 4 entries, expected 3 (one per sequence of the batch, log_probs shape {6,3,5})",
        F.ctc_loss, lp, tg, IL, {1, 1, 1, 1})
      E("ctc_loss: input_lengths has 2 entries, expected 1 (unbatched, log_probs shape {6,5})",
        F.ctc_loss, lp:select(2, 1), pt.tensor({2}, I64), {6, 6}, {1})
      E("ctc_loss: input_lengths[2] is 7, more than the 6 frames of log_probs (shape {6,3,5})", F.ctc_loss, lp, tg,
        {6, 7, 4}, TL)
      E("ctc_loss: input_lengths[3] is -1, lengths must not be negative", F.ctc_loss, lp, tg, {6, 5, -1}, TL)
      E("ctc_loss: target_lengths[1] is -2, lengths must not be negative", F.ctc_loss, lp, tg, IL, {-2, 1, 1})
      E("ctc_loss: target_lengths[2] is 5, longer than the padded targets (shape {3,4})", F.ctc_loss, lp, tg, IL,
        {3, 5, 1})
      E("ctc_loss: input_lengths must hold integers, got dtype float32", F.ctc_loss, lp, tg, pt.tensor(IL), TL)
      E("ctc_loss: target_lengths must hold integers, got dtype bool", F.ctc_loss, lp, tg, IL,
        pt.tensor({true, true, true}))
      E("ctc_loss: input_lengths must be 0-D or 1-D, got shape {3,1}", F.ctc_loss, lp, tg,
        pt.tensor(IL, I64):reshape(3, 1), TL)
      E("ctc_loss: input_lengths[2] must be an integer, got 4.5", F.ctc_loss, lp, tg, {6, 4.5, 4}, TL)
      E("ctc_loss: input_lengths must be an integer, got 4.5", F.ctc_loss, lp:select(2, 1), pt.tensor({2}, I64), 4.5, 1)
      E("ctc_loss: target_lengths[3] must be an integer, got string", F.ctc_loss, lp, tg, IL, {1, 1, "1"})
      E("ctc_loss: input_lengths must be a tensor, a list of integers or an integer, got string", F.ctc_loss, lp, tg,
        "6", TL)
    end)

    it("on the targets", function()
      E("ctc_loss: targets must be a tensor, got table", F.ctc_loss, lp, TG, IL, TL)
      E("ctc_loss: targets must hold class indices, got dtype bool", F.ctc_loss, lp, pt.ones(3, 4, {dtype = "bool"}), IL, TL)
      E("ctc_loss: targets must be {N,S} (padded) or 1-D (concatenated), got shape {3,4,1}", F.ctc_loss, lp,
        tg:unsqueeze(3), IL, TL)
      E("ctc_loss: targets must be {N,S} (padded) or 1-D (concatenated), got shape {}", F.ctc_loss, lp,
        pt.tensor(2, I64), IL, TL)
      E("ctc_loss: padded targets have 2 rows (shape {2,4}), expected 3 (log_probs shape {6,3,5})", F.ctc_loss, lp,
        tg:narrow(1, 1, 2), IL, TL)
      E("ctc_loss: concatenated targets have 5 elements, but target_lengths sum to 6", F.ctc_loss, lp,
        pt.tensor({2, 3, 3, 4, 4}, I64), IL, TL)
      E("ctc_loss: targets[2][1] is 0, not a class in 1..5 (class indices are 1-based)", F.ctc_loss, lp,
        pt.tensor({{2, 3, 3, 1}, {0, 4, 5, 2}, {5, 1, 1, 1}}, I64), IL, TL)
      E("ctc_loss: targets[3][1] is 6, not a class in 1..5", F.ctc_loss, lp,
        pt.tensor({{2, 3, 3, 1}, {4, 4, 5, 2}, {6, 1, 1, 1}}, I64), IL, TL)
      E("ctc_loss: targets[1][3] is 1, the blank class (targets must not contain the blank)", F.ctc_loss, lp,
        pt.tensor({{2, 3, 1, 1}, {4, 4, 5, 2}, {5, 1, 1, 1}}, I64), IL, TL)
      E("ctc_loss: targets[5] is 3, the blank class (targets must not contain the blank)", F.ctc_loss, lp,
        pt.tensor({2, 4, 4, 4, 3, 5}, I64), IL, TL, 3)
      E("ctc_loss: targets[1][2] is 2.5, not a class in 1..5", F.ctc_loss, lp,
        pt.tensor({{2, 2.5, 3, 1}, {4, 4, 5, 2}, {5, 1, 1, 1}}), IL, TL)
    end)
  end)

  it("has help texts", function()
    local help = pt._docs
    assert.is_truthy(help[nn.CTCLoss]:find("1-BASED", 1, true))
    assert.is_truthy(help[F.ctc_loss]:find("blank 1 by default", 1, true))
  end)
end)
