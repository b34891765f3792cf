-- nn_extra.lua: the activations, distances, losses and shape layers PyTorch users expect.
-- Reference values below were computed once with /usr/bin/python3 and torch 1.13 on the same
-- float64 inputs (the script is not run at test time).
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local F64 = {dtype = "float64"}

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

-- generated once by /usr/bin/python3 with torch 1.13.0a0 (float64)
local I = {
  X = {{-2.5, -1.0, -0.3, 0.2, 0.9, 3.5}, {21.0, -25.0, 4.0, -3.7, 1.7, -0.05}},
  A = {{0.3, -1.2, 0.8, 2.0}, {-0.5, 0.4, 1.5, -2.2}, {1.1, 0.0, -0.7, 0.6}},
  B = {{0.9, 0.2, -1.1, 0.5}, {0.3, -0.8, 1.2, 2.5}, {-0.4, 1.3, 0.6, -0.9}},
  Cn = {{1.4, -0.6, 0.1, 0.7}, {-1.0, 0.9, -0.3, 0.2}, {0.5, -1.5, 2.2, 0.0}},
  P = {{0.2, 0.5, 0.3}, {0.0, 0.6, 0.4}},
  LP = {{-1.2321664402303956, -1.7321664402303956, -0.6321664402303956}, {-0.46326421016308633, -1.3632642101630863, -2.1632642101630863}},
  LT = {{-0.8283901699061244, -1.1283901699061243, -1.4283901699061243}, {-1.7040188667067788, -0.6040188667067787, -1.304018866706779}},
  Y1 = {1.0, -1.0, 1.0},
  YR = {{1.0, -1.0, 1.0, -1.0}, {-1.0, 1.0, 1.0, -1.0}, {1.0, 1.0, -1.0, -1.0}},
  YH = {{1.0, -1.0, 1.0, -1.0}, {-1.0, 1.0, 0.0, -1.0}, {1.0, 1.0, -1.0, -1.0}},
  ML = {{1.0, 0.0, 1.0, 0.0}, {0.0, 0.0, 1.0, 1.0}, {1.0, 1.0, 0.0, 0.0}},
  CNT = {{0.0, 1.0, 3.0, 2.0}, {5.0, 0.0, 1.0, 4.0}, {2.0, 7.0, 0.0, 1.0}},
  RATE = {{0.5, 1.2, 2.5, 1.8}, {4.0, 0.3, 1.1, 3.3}, {2.2, 6.0, 0.2, 0.9}},
  VAR = {{0.5, 1e-08, 2.0, 0.3}, {1.5, 0.2, 0.9, 4.0}, {0.1, 0.6, 3.0, 0.0}},
  VROW = {0.5, 2.0, 1e-09},
}
local CASES = {
  {'F.elu(X)', {{-0.9179150013761012, -0.6321205588285577, -0.2591817793182821, 0.2, 0.9, 3.5}, {21.0, -0.9999999999861121, 4.0, -0.9752764735296606, 1.7, -0.048770575499285984}}},
  {'F.elu(X, 0.5)', {{-0.4589575006880506, -0.31606027941427883, -0.12959088965914106, 0.2, 0.9, 3.5}, {21.0, -0.49999999999305605, 4.0, -0.4876382367648303, 1.7, -0.024385287749642992}}},
  {'F.selu(X)', {{-1.6137857588732423, -1.1113307378125625, -0.45566731537912203, 0.2101401974710961, 0.9456308886199324, 3.677453455744182}, {22.06472073446509, -1.7580993408229604, 4.202803949421922, -1.7146329252564503, 1.7861916785043168, -0.0857435166380419}}},
  {'F.celu(X)', {{-0.9179150013761012, -0.6321205588285577, -0.2591817793182821, 0.2, 0.9, 3.5}, {21.0, -0.9999999999861121, 4.0, -0.9752764735296606, 1.7, -0.048770575499285984}}},
  {'F.celu(X, {alpha = 2.5})', {{-1.5803013970713942, -0.824199884910902, -0.2826989082071063, 0.2, 0.9, 3.5}, {21.0, -2.499886500175594, 4.0, -1.9309057790404682, 1.7, -0.04950331673311187}}},
  {'F.softplus(X)', {{0.07888973429254963, 0.31326168751822286, 0.5543552444685271, 0.7981388693815918, 1.2411538747320878, 3.5297504182726205}, {21.0, 1.3887943864867583e-11, 4.0181499279178094, 0.024422845933779157, 1.867786029386266, 0.6684596480132863}}},
  {'F.softplus(X, 2, 5)', {{0.003357674244559034, 0.06346400552148625, 0.21874397524294284, 0.4565076261999763, 0.976488805263037, 3.5}, {21.0, 9.643749239819589e-23, 4.0, 0.0003055330111265695, 1.7164142352124325, 0.32219833003678544}}},
  {'F.softplus(X, {beta = 0.5, threshold = 1})', {{0.5038581626907458, 0.9481539683602134, 1.2419140955790642, 1.488793320147142, 1.8864978919949096, 3.5}, {21.0, 7.453292456247981e-06, 4.0, 0.29207082210902013, 2.4117301368843918, 1.3614506070510497}}},
  {'F.mish(X)', {{-0.19681620390653332, -0.30340146137410895, -0.15113317713833455, 0.13259900186215923, 0.7612059289525154, 3.4939907151175196}, {21.0, -3.471985966216896e-10, 3.9974128069762385, -0.09034656750081307, 1.6207680739755408, -0.029198286428552614}}},
  {'F.hardtanh(X)', {{-1.0, -1.0, -0.3, 0.2, 0.9, 1.0}, {1.0, -1.0, 1.0, -1.0, 1.0, -0.05}}},
  {'F.hardtanh(X, -2, 3)', {{-2.0, -1.0, -0.3, 0.2, 0.9, 3.0}, {3.0, -2.0, 3.0, -2.0, 1.7, -0.05}}},
  {'F.relu6(X)', {{0.0, 0.0, 0.0, 0.2, 0.9, 3.5}, {6.0, 0.0, 4.0, 0.0, 1.7, 0.0}}},
  {'F.hardswish(X)', {{-0.20833333333333334, -0.3333333333333333, -0.135, 0.10666666666666669, 0.585, 3.5}, {21.0, -0.0, 4.0, -0.0, 1.3316666666666668, -0.024583333333333336}}},
  {'F.hardsigmoid(X)', {{0.08333333333333333, 0.3333333333333333, 0.45, 0.5333333333333333, 0.65, 1.0}, {1.0, 0.0, 1.0, 0.0, 0.7833333333333333, 0.4916666666666667}}},
  {'F.softsign(X)', {{-0.7142857142857143, -0.5, -0.23076923076923075, 0.16666666666666669, 0.4736842105263158, 0.7777777777777778}, {0.9545454545454546, -0.9615384615384616, 0.8, -0.7872340425531915, 0.6296296296296295, -0.047619047619047616}}},
  {'F.tanhshrink(X)', {{-1.5133857018485697, -0.23840584404423515, -0.008687387548409087, 0.002624679775096006, 0.18370212980097556, 2.501822102388801}, {20.0, -24.0, 3.000670700260933, -2.701221758718869, 0.764590929396901, -4.162504212002621e-05}}},
  {'F.threshold(X, 0.5, -7)', {{-7.0, -7.0, -7.0, -7.0, 0.9, 3.5}, {21.0, -7.0, 4.0, -7.0, 1.7, -7.0}}},
  {'F.glu(X)', {{-1.3745849932811949, -0.7109495026250039, -0.29120633077459307}, {0.5066674497710532, -21.138368372911632, 1.9500104140631584}}},
  {'F.glu(X, 1)', {{-2.49999999810436, -1.3887943864771144e-11, -0.2946041370113725, 0.00482540428353384, 0.7609812614248187, 1.7062591123052637}}},
  {'F.glu(A, {dim = 2})', {{0.20699234433828376, -1.0569564935734588}, {-0.4087872380968218, 0.03990019564787406}, {0.3649934506150173, 0.0}}},
  {'F.softshrink(X)', {{-2.0, -0.5, 0.0, 0.0, 0.4, 3.0}, {20.5, -24.5, 3.5, -3.2, 1.2, 0.0}}},
  {'F.softshrink(X, 1.5)', {{-1.0, 0.0, 0.0, 0.0, 0.0, 2.0}, {19.5, -23.5, 2.5, -2.2, 0.19999999999999996, 0.0}}},
  {'F.hardshrink(X)', {{-2.5, -1.0, 0.0, 0.0, 0.9, 3.5}, {21.0, -25.0, 4.0, -3.7, 1.7, 0.0}}},
  {'F.hardshrink(X, {lambd = 2})', {{-2.5, 0.0, 0.0, 0.0, 0.0, 3.5}, {21.0, -25.0, 4.0, -3.7, 0.0, 0.0}}},
  {'F.logsigmoid(X)', {{-2.5788897342925496, -1.3132616875182228, -0.8543552444685272, -0.5981388693815918, -0.3411538747320878, -0.029750418272620566}, {-7.582560425037146e-10, -25.000000000013888, -0.018149927917809738, -3.724422845933779, -0.16778602938626594, -0.7184596480132863}}},
  {'F.silu(X)', {{-0.18964545005310887, -0.2689414213699951, -0.1276672449565023, 0.1099667994624956, 0.6398545523625035, 3.3974071923702525}, {20.99999998407662, -3.4719859661927863e-10, 3.928055160151634, -0.08926997924537602, 1.437409049357991, -0.024375130175789482}}},
  {'F.prelu(X, pt.tensor({0.25}, F64))', {{-0.625, -0.25, -0.075, 0.2, 0.9, 3.5}, {21.0, -6.25, 4.0, -0.925, 1.7, -0.0125}}},
  {'F.prelu(A, pt.tensor({0.1, -0.2, 0.3, 0.5}, F64))', {{0.3, 0.24, 0.8, 2.0}, {-0.05, 0.4, 1.5, -1.1}, {1.1, -0.0, -0.21, 0.6}}},
  {'F.prelu(A:reshape({3, 2, 2}), pt.tensor({0.1, 0.7}, F64))', {{{0.3, -0.12}, {0.8, 2.0}}, {{-0.05, 0.4}, {1.5, -1.54}}, {{1.1, 0.0}, {-0.48999999999999994, 0.6}}}},
  {'F.softmin(X)', {{0.6958986535249262, 0.15527597800809345, 0.07710776871065729, 0.04676822582504413, 0.023224413629114787, 0.0017249603021640989}, {1.0530617351455305e-20, 0.9999999994208784, 2.543665645903831e-13, 5.6172989211642e-10, 2.537098525628896e-12, 1.459999396487424e-11}}},
  {'F.softmin(X, 1)', {{0.9999999999377585, 3.775134544136581e-11, 0.9866130821723351, 0.0198403057340775, 0.6899744811276125, 0.027922573784073024}, {6.224144622520382e-11, 0.9999999999622486, 0.013386917827664779, 0.9801596942659225, 0.3100255188723876, 0.9720774262159271}}},
  {'F.normalize(A)', {{0.12077545233427119, -0.48310180933708474, 0.32206787289138983, 0.8051696822284746}, {-0.18257418583505536, 0.1460593486680443, 0.5477225575051661, -0.8033264176742437}, {0.7664063157207794, 0.0, -0.4877131100041323, 0.41803980857497053}}},
  {'F.normalize(A, 1, 1)', {{0.15789473684210525, -0.7499999999999999, 0.26666666666666666, 0.4166666666666667}, {-0.2631578947368421, 0.25, 0.5, -0.45833333333333337}, {0.5789473684210527, 0.0, -0.2333333333333333, 0.125}}},
  {'F.normalize(A, {p = math.huge, dim = -1})', {{0.15, -0.6, 0.4, 1.0}, {-0.22727272727272727, 0.18181818181818182, 0.6818181818181818, -1.0}, {1.0, 0.0, -0.6363636363636362, 0.5454545454545454}}},
  {'F.normalize(pt.zeros(2, 3, F64))', {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}},
  {'F.cosine_similarity(A, B)', {0.039732206786433216, -0.5247462909194589, -0.5612947162615933}},
  {'F.cosine_similarity(A, B, 1)', {-0.24964978513122776, -0.28757681050621636, 0.15675752806523505, -0.6145793082786613}},
  {'F.cosine_similarity(A, B[{{1}}])', {0.039732206786433216, -0.749579968962705, 0.9443383354364534}},
  {'F.cosine_similarity(A, B, {eps = 2})', {0.030193863083567807, -0.5247462909194589, -0.35000000000000003}},
  {'F.cosine_similarity(pt.zeros(2, 3, F64), pt.ones(1, 3, F64))', {0.0, 0.0}},
  {'F.pairwise_distance(A, B)', {2.860070418714197, 4.925443330300736, 2.8071339120184486}},
  {'F.pairwise_distance(A, B, 1)', {5.4, 7.0, 5.6}},
  {'F.pairwise_distance(A, B, math.huge)', {1.900001, 4.699999, 1.500001}},
  {'F.pairwise_distance(A, B, {p = 3, eps = 0.1, keepdim = true})', {{2.4338940764798886}, {4.64066033012059}, {2.2668204432388253}}},
  {'F.pairwise_distance(A, B[1])', {2.860070418714197, 4.006244800309138, 0.5000010000030001}},
  {'F.pixel_shuffle(pt.arange(1, 17, F64):reshape({1, 4, 2, 2}), 2)', {{{{1.0, 5.0, 2.0, 6.0}, {9.0, 13.0, 10.0, 14.0}, {3.0, 7.0, 4.0, 8.0}, {11.0, 15.0, 12.0, 16.0}}}}},
  {'F.pixel_shuffle(pt.arange(1, 37, F64):reshape({1, 2, 9, 1, 2}), 3)', {{{{{1.0, 3.0, 5.0, 2.0, 4.0, 6.0}, {7.0, 9.0, 11.0, 8.0, 10.0, 12.0}, {13.0, 15.0, 17.0, 14.0, 16.0, 18.0}}}, {{{19.0, 21.0, 23.0, 20.0, 22.0, 24.0}, {25.0, 27.0, 29.0, 26.0, 28.0, 30.0}, {31.0, 33.0, 35.0, 32.0, 34.0, 36.0}}}}}},
  {'F.pixel_unshuffle(pt.arange(1, 33, F64):reshape({2, 4, 4}), 2)', {{{1.0, 3.0}, {9.0, 11.0}}, {{2.0, 4.0}, {10.0, 12.0}}, {{5.0, 7.0}, {13.0, 15.0}}, {{6.0, 8.0}, {14.0, 16.0}}, {{17.0, 19.0}, {25.0, 27.0}}, {{18.0, 20.0}, {26.0, 28.0}}, {{21.0, 23.0}, {29.0, 31.0}}, {{22.0, 24.0}, {30.0, 32.0}}}},
}
local RED_CASES = {
  {'F.kl_div(LP, P, %s)', none = {{-0.07545429444074098, 0.5195096298352251, -0.17154190922866214}, {0.0, 0.5114631518382573, 0.49878939131557254}}, sum = 1.2827659693196518, mean = 0.21379432821994196},
  {'F.kl_div(LP, LT, %s, true)', none = {{0.17635001968958808, 0.19535404858029848, -0.19085043221596312}, {-0.22575632299926052, 0.41501144747057805, 0.23323245791999286}}, sum = 0.6033412184452337, mean = 0.10055686974087229},
  {'F.huber_loss(A, B, %s)', none = {{0.18000000000000005, 0.8999999999999999, 1.4000000000000001, 1.0}, {0.32000000000000006, 0.7000000000000002, 0.04500000000000001, 4.2}, {1.0, 0.8, 0.7999999999999998, 1.0}}, sum = 12.345, mean = 1.02875},
  {'F.huber_loss(A, B, %s, 0.7)', none = {{0.18000000000000005, 0.7349999999999999, 1.0850000000000002, 0.8049999999999999}, {0.315, 0.5950000000000001, 0.04500000000000001, 3.0450000000000004}, {0.8049999999999999, 0.665, 0.6649999999999998, 0.8049999999999999}}, sum = 9.745000000000001, mean = 0.8120833333333334},
  {'F.margin_ranking_loss(A, B, YR, 0.5, %s)', none = {{1.1, 0.0, 0.0, 2.0}, {0.0, 0.0, 0.19999999999999996, 0.0}, {0.0, 1.8, 0.0, 2.0}}, sum = 7.1000000000000005, mean = 0.5916666666666667},
  {'F.margin_ranking_loss(A, B, YR, {reduction = %s})', none = {{0.6000000000000001, 0.0, 0.0, 1.5}, {0.0, 0.0, 0.0, 0.0}, {0.0, 1.3, 0.0, 1.5}}, sum = 4.9, mean = 0.4083333333333334},
  {'F.cosine_embedding_loss(A, B, Y1, {reduction = %s})', none = {0.9602677932135786, 0.0, 1.5612947162613642}, sum = 2.5215625094749425, mean = 0.8405208364916475},
  {'F.cosine_embedding_loss(A, Cn, Y1 * -1, -0.2, %s)', none = {0.8281077544830926, 1.0078648375763937, 0.0}, sum = 1.8359725920594863, mean = 0.6119908640198287},
  {'F.triplet_margin_loss(A, B, Cn, {reduction = %s})', none = {1.9235785906901282, 2.84323652348131, 0.4337084126181727}, sum = 5.200523526789611, mean = 1.7335078422632035},
  {'F.triplet_margin_loss(A, B, Cn, 2.5, 1, 1e-6, true, %s)', none = {5.200002, 4.3, 2.4999979999999997}, sum = 11.999999999999998, mean = 3.9999999999999996},
  {'F.poisson_nll_loss(A, CNT, {reduction = %s})', none = {{1.3498588075760032, 1.5011942119122021, -0.17445907150753248, 3.3890560989306504}, {3.106530659712633, 1.4918246976412703, 2.9816890703380645, 8.910803158362334}, {0.8041660239464332, 1.0, 0.4965853037914095, 1.222118800390509}}, sum = 26.079367761093977, mean = 2.1732806467578314},
  {'F.poisson_nll_loss(RATE, CNT, false, true, 1e-8, %s)', none = {{0.5, 1.0176784348727121, 1.5152093359205918, 1.276233143689187}, {1.8393752334927713, 0.3, 1.0046898111047662, 1.6815732722332304}, {1.2748917547850867, 1.9709483548564695, 0.2, 1.005360504546715}}, sum = 13.585959845501527, mean = 1.1321633204584607},
  {'F.poisson_nll_loss(A, CNT, true, true, {reduction = %s})', none = {{1.3498588075760032, 1.5011942119122021, 1.5896224720355243, 4.040862583535186}, {7.877377711304858, 1.4918246976412703, 2.9816890703380645, 12.068066316606515}, {1.4559725085509692, 9.513264651119522, 0.4965853037914095, 1.222118800390509}}, sum = 45.588437134802035, mean = 3.7990364279001696},
  {'F.gaussian_nll_loss(A, B, VAR, {reduction = %s})', none = {{0.013426409720027455, 979993.0922447209, 1.2490735902799728, 3.148013597837032}, {0.41606588738741557, 2.7952810437829507, -0.002680257828913131, 3.454397180559946}, {10.098707453502977, 1.152920521450338, 0.8309728110007215, 1124993.092244721}}, sum = 2105009.3406676794, mean = 175417.44505563995},
  {'F.gaussian_nll_loss(A, B, VROW, true, 1e-6, %s)', none = {{0.9323649429247001, 2.5323649429246995, 4.1823649429247, 2.8223649429247}, {1.4255121234846453, 1.6255121234846455, 1.2880121234846453, 6.788012123484647}, {1124994.0111832542, 844994.0111832543, 844994.011183254, 1124994.0111832542}}, sum = 3939997.641241282, mean = 328333.13677010685},
  {'F.gaussian_nll_loss(A, B, VROW:reshape({3, 1}), false, 0.3, %s)', none = {{0.013426409720027455, 1.613426409720027, 3.2634264097200276, 1.9034264097200273}, {0.5065735902799726, 0.7065735902799728, 0.36907359027997266, 5.8690735902799736}, {3.148013597837032, 2.214680264503699, 2.214680264503698, 3.148013597837032}}, sum = 24.970387724681462, mean = 2.080865643723455},
  {'F.soft_margin_loss(A, YR, %s)', none = {{0.554355244468527, 0.2632824673380313, 0.3711006659477777, 2.1269280110429727}, {0.4740769841801067, 0.5130152523999525, 0.20141327798275246, 0.10508331976869593}, {0.28733532511543075, 0.6931471805599453, 0.40318604888545784, 1.0374879504858856}}, sum = 7.030411728175537, mean = 0.5858676440146281},
  {'F.multilabel_soft_margin_loss(A, ML, nil, %s)', none = {0.8289165971993272, 0.973397208582877, 0.60528912626168}, sum = 2.4076029320438845, mean = 0.8025343106812949},
  {'F.multilabel_soft_margin_loss(A, ML, pt.tensor({0.5, 1, 2, 0.1}, F64), %s)', none = {0.37383855564303686, 0.4458471581080951, 0.4367339339842912}, sum = 1.2564196477354233, mean = 0.4188065492451411},
  {'F.hinge_embedding_loss(A, YH, {reduction = %s})', none = {{0.3, 2.2, 0.8, 0.0}, {1.5, 0.4, 1.5, 3.2}, {1.1, 0.0, 1.7, 0.4}}, sum = 13.1, mean = 1.0916666666666666},
  {'F.hinge_embedding_loss(A, YH, 0.4, %s)', none = {{0.3, 1.6, 0.8, 0.0}, {0.9, 0.4, 1.5, 2.6}, {1.1, 0.0, 1.1, 0.0}}, sum = 10.299999999999999, mean = 0.8583333333333333},
}
local KL_BATCHMEAN = 0.6413829846598259
local GRADS = {
  cos_eps2 = {{{0.17969508143089297, 0.04613087239347905, -0.22533658813420074, 0.09085889647513379}, {0.002768445659527101, -0.07268428240649386, 0.2559553850671893, 0.16067051900382842}, {-0.0037499999999999895, 0.325, 0.08875, -0.1725}}, {{0.05359410697333283, -0.24306059782272077, 0.16933724879367607, 0.39881060822879133}, {-0.044222795867743185, 0.000478245849194911, 0.2635433532719782, -0.12104103539467795}, {0.24000000000000002, 0.11375000000000002, -0.12249999999999998, 0.07124999999999998}}},
  gauss_clamped = {{{-1.2000000000000002, -4.666666666666667, 0.9500000000000001, 5.0}, {-0.5333333333333333, 4.000000000000001, 0.33333333333333337, -1.175}, {5.0, -2.166666666666667, -0.43333333333333324, 5.0}}, {{0.2799999999999998, -9.222222222222221, -0.20125000000000004, -10.833333333333334}, {0.19111111111111106, -6.333333333333337, 0.5, -0.5653125000000001}, {-10.833333333333334, -1.5138888888888888, 0.0727777777777778, -10.833333333333334}}},
  prelu = {{{0.9, -0.04000000000000001, -1.1, 0.5}, {0.03, -0.8, 1.2, 1.25}, {-0.4, -0.26, 0.18, -0.9}}, {-0.15, -0.24, -0.42, -5.5}},
  kl = {{{-0.1, -0.25, -0.15}, {-0.0, -0.3, -0.2}}},
  softplus = {{{0.006692850924284856, 0.11920292202211755, 0.35434369377420455, 0.598687660112452, 0.8581489350995122, 1.0}, {1.0, 1.9287498479639178e-22, 1.0, 0.000610879359434401, 0.9677045353015495, 0.47502081252106}}},
}
local PRELU_W_GRAD = {-0.15, -0.24, -0.42}

local T = {}
for k, v in pairs(I) do T[k] = pt.tensor(v, F64) end

-- evaluates a case's Lua expression over the inputs
local function eval(expr)
  local env = setmetatable({pt = pt, nn = nn, F = F, F64 = F64, math = math}, {__index = T})
  local chunk = assert(load("return " .. expr, expr, "t", env))
  return chunk()
end

describe("nn_extra against PyTorch (float64)", function()
  it("activations, normalize, distances and pixel shuffles match", function()
    for _, c in ipairs(CASES) do
      local ok, e = pcall(function() assert_close(eval(c[1]), c[2]) end)
      if not ok then error(c[1] .. ": " .. tostring(e), 0) end
    end
  end)

  it("losses match with reduction none, sum and mean", function()
    for _, c in ipairs(RED_CASES) do
      for _, r in ipairs({"none", "sum", "mean"}) do
        local expr = c[1]:format("'" .. r .. "'")
        local ok, e = pcall(function()
          local v = eval(expr)
          if r == "none" then assert_close(v, c.none) else
            assert.are.equal(0, v:dim())
            assert_close(v:item(), c[r])
          end
          -- the same through the options table (where the reduction is the last setting)
          if c[1]:find(", %%s%)$") then
            local v2 = eval(c[1]:gsub(", %%s%)$", ", {reduction = '" .. r .. "'})"))
            if r == "none" then assert_close(v2, c.none) else assert_close(v2:item(), c[r]) end
          end
        end)
        if not ok then error(expr .. ": " .. tostring(e), 0) end
      end
    end
  end)

  it("kl_div: 'batchmean' divides the sum by the batch size; 0 * log(0) is 0", function()
    assert_close(F.kl_div(T.LP, T.P, "batchmean"):item(), KL_BATCHMEAN)
    assert_close(nn.KLDivLoss({reduction = "batchmean"})(T.LP, T.P):item(), KL_BATCHMEAN)
    local none = F.kl_div(T.LP, T.P, "none")
    assert.are.equal(0, none:tolist()[2][1]) -- target 0
  end)

  it("gradients match PyTorch's where the formula has a twist", function()
    local a, b = T.A:clone(), T.B:clone()
    a.requires_grad, b.requires_grad = true, true
    F.cosine_similarity(a, b, {eps = 2}):sum():backward()
    assert_close(a.grad, GRADS.cos_eps2[1])
    assert_close(b.grad, GRADS.cos_eps2[2])

    a = T.A:clone(); a.requires_grad = true
    local v = T.VAR:clone(); v.requires_grad = true
    F.gaussian_nll_loss(a, T.B, v, {eps = 0.3, reduction = "sum"}):backward()
    assert_close(a.grad, GRADS.gauss_clamped[1])
    assert_close(v.grad, GRADS.gauss_clamped[2])

    a = T.A:clone(); a.requires_grad = true
    local w = pt.tensor({0.1, -0.2, 0.3, 0.5}, F64); w.requires_grad = true;
    (F.prelu(a, w) * T.B):sum():backward()
    assert_close(a.grad, GRADS.prelu[1])
    assert_close(w.grad, GRADS.prelu[2])

    local lp = T.LP:clone(); lp.requires_grad = true
    F.kl_div(lp, T.P, "batchmean"):backward()
    assert_close(lp.grad, GRADS.kl[1])

    local x = T.X:clone(); x.requires_grad = true
    F.softplus(x, 2, 5):sum():backward()
    assert_close(x.grad, GRADS.softplus[1])
  end)

  it("PReLU learns one slope per channel, initialised to init", function()
    local m = nn.PReLU(3, 0.1, {dtype = "float64"})
    assert.are.same({0.1, 0.1, 0.1}, m.weight:tolist())
    assert.are.equal(1, #m:parameters())
    local x = T.A[{{}, {1, 3}}];
    (m(x) * T.B[{{}, {1, 3}}]):sum():backward()
    assert_close(m.weight.grad, PRELU_W_GRAD)
    local d = nn.PReLU()
    assert.are.same({1}, d.weight:size())
    assert.are.equal("float32", d.weight:dtype())
    assert.are.equal(0.25, d.weight:item())
    assert.are.same({4}, nn.PReLU({num_parameters = 4}).weight:size())
  end)
end)

describe("nn_extra modules", function()
  local X = T.X
  local function same(a, b) assert_close(a, b) end

  it("compute what their functions compute, with the same settings", function()
    same(nn.ELU()(X), F.elu(X)); same(nn.ELU(0.5)(X), F.elu(X, 0.5)); same(nn.ELU({alpha = 0.5})(X), F.elu(X, 0.5))
    same(nn.SELU()(X), F.selu(X)); same(nn.CELU(2.5)(X), F.celu(X, 2.5))
    same(nn.Softplus(2, 5)(X), F.softplus(X, 2, 5)); same(nn.Softplus({threshold = 1})(X), F.softplus(X, 1, 1))
    same(nn.Mish()(X), F.mish(X)); same(nn.Hardtanh(-2, 3)(X), F.hardtanh(X, -2, 3))
    same(nn.ReLU6()(X), F.relu6(X)); same(nn.Hardswish()(X), F.hardswish(X))
    same(nn.Hardsigmoid()(X), F.hardsigmoid(X)); same(nn.Softsign()(X), F.softsign(X))
    same(nn.Tanhshrink()(X), F.tanhshrink(X)); same(nn.Threshold(0.5, -7)(X), F.threshold(X, 0.5, -7))
    same(nn.GLU(1)(X), F.glu(X, 1)); same(nn.LogSigmoid()(X), F.logsigmoid(X))
    same(nn.Softshrink()(X), F.softshrink(X)); same(nn.Hardshrink({lambd = 2})(X), F.hardshrink(X, 2))
    same(nn.SiLU()(X), F.silu(X)); same(nn.Softmin(1)(X), F.softmin(X, 1))
    same(nn.CosineSimilarity(1)(T.A, T.B), F.cosine_similarity(T.A, T.B, 1))
    same(nn.PairwiseDistance(1, 0.1, true)(T.A, T.B), F.pairwise_distance(T.A, T.B, 1, 0.1, true))
    same(nn.KLDivLoss("sum", true)(T.LP, T.LT), F.kl_div(T.LP, T.LT, "sum", true))
    same(nn.HuberLoss({delta = 0.7})(T.A, T.B), F.huber_loss(T.A, T.B, {delta = 0.7}))
    same(nn.MarginRankingLoss(0.5)(T.A, T.B, T.YR), F.margin_ranking_loss(T.A, T.B, T.YR, 0.5))
    same(nn.CosineEmbeddingLoss(0.1)(T.A, T.B, T.Y1), F.cosine_embedding_loss(T.A, T.B, T.Y1, 0.1))
    same(nn.TripletMarginLoss({swap = true})(T.A, T.B, T.Cn), F.triplet_margin_loss(T.A, T.B, T.Cn, {swap = true}))
    same(nn.PoissonNLLLoss(false, true)(T.RATE, T.CNT), F.poisson_nll_loss(T.RATE, T.CNT, false, true))
    same(nn.GaussianNLLLoss({full = true})(T.A, T.B, T.VAR), F.gaussian_nll_loss(T.A, T.B, T.VAR, true))
    same(nn.SoftMarginLoss("sum")(T.A, T.YR), F.soft_margin_loss(T.A, T.YR, "sum"))
    local w = pt.tensor({0.5, 1, 2, 0.1}, F64)
    same(nn.MultiLabelSoftMarginLoss(w)(T.A, T.ML), F.multilabel_soft_margin_loss(T.A, T.ML, w))
    same(nn.HingeEmbeddingLoss(0.4, "none")(T.A, T.YH), F.hinge_embedding_loss(T.A, T.YH, 0.4, "none"))
    local y = pt.randn(2, 8, 3, 3, F64)
    same(nn.PixelShuffle(2)(y), F.pixel_shuffle(y, 2))
    same(nn.PixelUnshuffle(3)(y), F.pixel_unshuffle(y, 3))
  end)

  it("take their settings as fields that a later change affects", function()
    local m = nn.ELU()
    assert.are.equal(1.0, m.alpha)
    m.alpha = 0.5
    same(m(X), F.elu(X, 0.5))
    local l = nn.HuberLoss()
    assert.are.equal("mean", l.reduction)
    assert.are.equal(1.0, l.delta)
    assert.are.equal(0, #nn.ELU():parameters())
  end)

  it("are also plain nn functions, as nn.relu is", function()
    for _, k in ipairs({"elu", "selu", "celu", "softplus", "mish", "hardtanh", "relu6", "hardswish",
                        "hardsigmoid", "softsign", "tanhshrink", "threshold", "glu", "logsigmoid",
                        "softshrink", "hardshrink",
                        "prelu", "softmin", "normalize", "cosine_similarity", "pairwise_distance",
                        "kl_div", "huber_loss", "margin_ranking_loss", "cosine_embedding_loss",
                        "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
                        "soft_margin_loss", "multilabel_soft_margin_loss", "hinge_embedding_loss",
                        "pixel_shuffle", "pixel_unshuffle"}) do
      assert.is_function(F[k], k)
      assert.are.equal(F[k], nn[k], k)
      assert.are.equal(F[k], nn.F[k], k)
    end
    assert.are.equal(nn.silu, F.silu)
  end)

  it("Unflatten splits a dim and undoes Flatten", function()
    local x = pt.randn(4, 6, 5)
    assert.are.same({4, 2, 3, 5}, nn.Unflatten(2, {2, 3})(x):size())
    assert.are.same({4, 6, 5, 1}, nn.Unflatten(-1, {5, 1})(x):size())
    assert.are.same({4, 3, 2, 5}, nn.Unflatten(2, {-1, 2})(x):size())
    assert.are.same({2, 2, 6, 5}, nn.Unflatten({dim = 1, unflattened_size = {2, 2}})(x):size())
    local f = nn.Flatten(2)(x)
    assert.is_true(nn.Unflatten(2, {6, 5})(f):equal(x))
    local u = nn.Unflatten(2, {2, 3})(x)
    assert.are.same(x:tolist()[3][5], u:tolist()[3][2][2])
  end)

  it("PixelShuffle keeps batch dims and PixelUnshuffle inverts it", function()
    local y = pt.randn(2, 3, 8, 4, 5)
    local s = F.pixel_shuffle(y, 2)
    assert.are.same({2, 3, 2, 8, 10}, s:size())
    assert.is_true(F.pixel_unshuffle(s, 2):equal(y))
    local z = pt.randn(8, 6, 6)
    assert.are.same({72, 2, 2}, F.pixel_unshuffle(z, 3):size())
    assert.is_true(F.pixel_shuffle(F.pixel_unshuffle(z, 3), 3):equal(z))
  end)

  it("work in float32, close to float64", function()
    local x32 = T.X:to("float32")
    for _, f in ipairs({F.elu, F.selu, F.celu, F.softplus, F.mish, F.hardswish, F.logsigmoid, F.softsign,
                        F.tanhshrink, F.glu, F.softmin, F.hardtanh, F.relu6, F.hardsigmoid, F.softshrink,
                        F.hardshrink, function(x) return F.threshold(x, 0.5, -7) end}) do
      local a, b = f(x32), f(T.X)
      assert.are.equal("float32", a:dtype())
      support.assert_close_with(1e-6)(a, b)
    end
    local l = F.huber_loss(T.A:to("float32"), T.B:to("float32"))
    assert.are.equal("float32", l:dtype())
    support.assert_close_with(1e-6)(l:item(), F.huber_loss(T.A, T.B):item())
  end)

  it("stay finite at extreme inputs", function()
    local x = pt.tensor({-1000, -100, 0, 100, 1000}, F64)
    for _, f in ipairs({F.elu, F.selu, F.celu, F.softplus, F.mish, F.logsigmoid, F.softsign}) do
      for _, v in ipairs(f(x):tolist()) do assert.is_true(v == v and math.abs(v) < math.huge) end
    end
    assert.are.same({-0.0, 0, 0, 100, 1000}, {F.softplus(x):tolist()[1] * 0, 0, 0, F.softplus(x):tolist()[4],
      F.softplus(x):tolist()[5]})
    assert_close(F.logsigmoid(x):tolist()[1], -1000)
    assert_close(F.soft_margin_loss(x, -pt.ones(5, F64), "none"), {0, 3.720075976020836e-44, 0.6931471805599453, 100, 1000})
  end)

  it("inplace=true writes the result into the input", function()
    local x = T.X:clone()
    local y = F.elu(x, {inplace = true})
    assert.are.equal(x, y)
    assert_close(x, F.elu(T.X))
    local z = T.X:clone()
    nn.Hardtanh(-1, 1, true)(z)
    assert_close(z, F.hardtanh(T.X))
    assert.are.equal("Hardtanh(min_val=-1, max_val=1, inplace=true)", tostring(nn.Hardtanh(-1, 1, true)))
  end)

  it("inplace=true gives the gradients of the out-of-place form", function()
    local base = pt.tensor({-2.5, -1.1, -0.3, 0.2, 0.9, 3.5, 4.2}, F64)
    local w = pt.arange(1, 8, F64)
    for _, n in ipairs({"elu", "selu", "celu", "mish", "hardtanh", "relu6", "hardswish", "hardsigmoid"}) do
      local grads = {}
      for _, inplace in ipairs({false, true}) do
        local a = base:clone(); a.requires_grad = true
        local y = F[n](a * 1, {inplace = inplace});
        (y * w):sum():backward()
        grads[#grads + 1] = a.grad
      end
      local ok, e = pcall(assert_close, grads[2], grads[1])
      if not ok then error(n .. ": " .. tostring(e), 0) end
    end
    local a = base:clone(); a.requires_grad = true
    local y = nn.Threshold(0.5, -7, true)(a * 1);
    (y * w):sum():backward()
    assert_close(a.grad, {0, 0, 0, 0, 5, 6, 7})
  end)

  it("leave their outputs free to be modified in place before backward (they save only the input)", function()
    for _, n in ipairs({"elu", "selu", "celu", "softplus", "mish", "hardtanh", "relu6", "hardswish",
                        "hardsigmoid", "softsign", "tanhshrink", "logsigmoid", "softshrink", "hardshrink"}) do
      local a = T.X:clone(); a.requires_grad = true
      local y = F[n](a)
      y:mul_(2)
      y:sum():backward()
      local b = T.X:clone(); b.requires_grad = true;
      (F[n](b) * 2):sum():backward()
      local ok, e = pcall(assert_close, a.grad, b.grad)
      if not ok then error(n .. ": " .. tostring(e), 0) end
    end
  end)
end)

describe("nn_extra printing", function()
  it("shows PyTorch's settings (numbers as Python writes them)", function()
    local expect = {
      {nn.ELU(), "ELU(alpha=1.0)"}, {nn.ELU(0.5), "ELU(alpha=0.5)"}, {nn.SELU(), "SELU()"},
      {nn.CELU(), "CELU(alpha=1.0)"}, {nn.Softplus(), "Softplus(beta=1, threshold=20)"},
      {nn.Mish(), "Mish()"}, {nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"},
      {nn.ReLU6(), "ReLU6()"}, {nn.Hardswish(), "Hardswish()"}, {nn.Hardsigmoid(), "Hardsigmoid()"},
      {nn.Softsign(), "Softsign()"}, {nn.Tanhshrink(), "Tanhshrink()"},
      {nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"}, {nn.GLU(), "GLU(dim=-1)"},
      {nn.LogSigmoid(), "LogSigmoid()"}, {nn.PReLU(), "PReLU(num_parameters=1)"},
      {nn.Softshrink(), "Softshrink(0.5)"}, {nn.Hardshrink(0.25), "Hardshrink(0.25)"}, {nn.Softshrink(1), "Softshrink(1)"},
      {nn.PReLU(3), "PReLU(num_parameters=3)"}, {nn.Softmin(2), "Softmin(dim=2)"},
      {nn.CosineSimilarity(), "CosineSimilarity(dim=2, eps=1e-08)"},
      {nn.PairwiseDistance(), "PairwiseDistance(p=2.0, eps=1e-06, keepdim=false)"},
      {nn.KLDivLoss(), "KLDivLoss(reduction='mean', log_target=false)"},
      {nn.HuberLoss({delta = 0.5}), "HuberLoss(reduction='mean', delta=0.5)"},
      {nn.MarginRankingLoss(), "MarginRankingLoss(margin=0.0, reduction='mean')"},
      {nn.CosineEmbeddingLoss(), "CosineEmbeddingLoss(margin=0.0, reduction='mean')"},
      {nn.TripletMarginLoss(), "TripletMarginLoss(margin=1.0, p=2.0, eps=1e-06, swap=false, reduction='mean')"},
      {nn.PoissonNLLLoss(), "PoissonNLLLoss(log_input=true, full=false, eps=1e-08, reduction='mean')"},
      {nn.GaussianNLLLoss(), "GaussianNLLLoss(full=false, eps=1e-06, reduction='mean')"},
      {nn.SoftMarginLoss("sum"), "SoftMarginLoss(reduction='sum')"},
      {nn.MultiLabelSoftMarginLoss(), "MultiLabelSoftMarginLoss(reduction='mean')"},
      {nn.HingeEmbeddingLoss(), "HingeEmbeddingLoss(margin=1.0, reduction='mean')"},
      {nn.Unflatten(2, {2, 3}), "Unflatten(dim=2, unflattened_size={2, 3})"},
      {nn.PixelShuffle(2), "PixelShuffle(upscale_factor=2)"},
      {nn.PixelUnshuffle(3), "PixelUnshuffle(downscale_factor=3)"},
    }
    for _, e in ipairs(expect) do assert.are.equal(e[2], tostring(e[1])) end
    assert.are.equal("Sequential(\n  (1): Linear(in_features=2, out_features=2, bias=true)\n  (2): ELU(alpha=1.0)\n)",
      tostring(nn.Sequential(nn.Linear(2, 2), nn.ELU())))
  end)

  it("keeps MultiLabelSoftMarginLoss's weight as a buffer", function()
    local m = nn.MultiLabelSoftMarginLoss({weight = pt.ones(4)})
    assert.are.same({"weight"}, (function() local k = {} for n in pairs(m:state_dict()) do k[#k + 1] = n end return k end)())
  end)
end)

describe("nn_extra errors", function()
  it("check the settings' types and ranges", function()
    assert_err("ELU: alpha must be a number, got string", nn.ELU, "a")
    assert_err("elu: alpha must be a number, got string", F.elu, T.X, "a")
    assert_err("ELU: inplace must be a boolean, got number", nn.ELU, 1, 1)
    assert_err("ELU: unknown option 'alpah'", nn.ELU, {alpah = 1})
    assert_err("ELU: alpha given twice (as an argument and as an option)", nn.ELU, 1, {alpha = 2})
    assert_err("ELU: too many arguments (2 settings at most, got 3)", nn.ELU, 1, false, 3)
    assert_err("CELU: alpha must not be 0", nn.CELU, 0)
    assert_err("Softplus: beta must not be 0", nn.Softplus, 0)
    assert_err("Softplus: threshold must be a number, got boolean", nn.Softplus, 1, true)
    assert_err("Hardtanh: max_val (-2) must be greater than min_val (1)", nn.Hardtanh, 1, -2)
    assert_err("hardtanh: max_val (0) must be greater than min_val (0)", F.hardtanh, T.X, 0, 0)
    assert_err("Threshold: missing argument 'threshold'", nn.Threshold)
    assert_err("Threshold: missing argument 'value'", nn.Threshold, 0.5)
    assert_err("threshold: missing argument 'value'", F.threshold, T.X, 0.5)
    assert_err("Softshrink: lambd must be non-negative, got -1", nn.Softshrink, -1)
    assert_err("softshrink: lambd must be non-negative, got -0.5", F.softshrink, T.X, -0.5)
    assert_err("Hardshrink: lambd must be a number, got string", nn.Hardshrink, "x")
    assert_err("GLU: dim must be a non-zero integer (1-based, negative from the end), got 0", nn.GLU, 0)
    assert_err("Softmin: dim must be a non-zero integer (1-based, negative from the end), got 1.5", nn.Softmin, 1.5)
    assert_err("PReLU: num_parameters must be a positive integer, got 0", nn.PReLU, 0)
    assert_err("PReLU: init must be a number, got string", nn.PReLU, 1, "x")
    assert_err("PReLU: dtype must be \"float32\" or \"float64\", got 'int64'", nn.PReLU, {dtype = "int64"})
    assert_err("normalize: eps must be non-negative, got -1.0", F.normalize, T.A, 2, 2, -1.0)
    assert_err("PairwiseDistance: p must be non-negative, got -1", nn.PairwiseDistance, -1)
    assert_err("PairwiseDistance: keepdim must be a boolean, got number", nn.PairwiseDistance, 2, 1e-6, 1)
    assert_err("KLDivLoss: reduction must be 'mean', 'batchmean', 'sum' or 'none', got 'avg'", nn.KLDivLoss, "avg")
    assert_err("HuberLoss: reduction must be 'mean', 'sum' or 'none', got 'batchmean'", nn.HuberLoss, "batchmean")
    assert_err("HuberLoss: delta must be positive, got 0", nn.HuberLoss, {delta = 0})
    assert_err("huber_loss: delta must be positive, got -1.0", F.huber_loss, T.A, T.B, {delta = -1.0})
    assert_err("MarginRankingLoss: margin must be a number, got string", nn.MarginRankingLoss, "1")
    assert_err("TripletMarginLoss: swap must be a boolean, got string", nn.TripletMarginLoss, {swap = "yes"})
    assert_err("PoissonNLLLoss: log_input must be a boolean, got number", nn.PoissonNLLLoss, 1)
    assert_err("GaussianNLLLoss: eps must be non-negative, got -1", nn.GaussianNLLLoss, {eps = -1})
    assert_err("MultiLabelSoftMarginLoss: weight must be a tensor, got table", nn.MultiLabelSoftMarginLoss, {weight = {1, 2}})
    assert_err("Unflatten: missing argument 'dim'", nn.Unflatten)
    assert_err("Unflatten: missing argument 'unflattened_size'", nn.Unflatten, 2)
    assert_err("Unflatten: unflattened_size must be a list of integers, got number", nn.Unflatten, 2, 3)
    assert_err("Unflatten: unflattened_size may contain -1 only once", nn.Unflatten, 2, {-1, -1})
    assert_err("PixelShuffle: upscale_factor must be a positive integer, got 0", nn.PixelShuffle, 0)
    assert_err("PixelShuffle: upscale_factor must be a positive integer, got 1.5", nn.PixelShuffle, 1.5)
    assert_err("pixel_unshuffle: missing argument 'downscale_factor'", F.pixel_unshuffle, pt.zeros(1, 4, 4))
  end)

  it("are checked again by the fused kernels (pt._nn_act, which the layers call)", function()
    local x = pt.zeros(3)
    assert_err("celu: alpha must not be 0", pt._nn_act, x, "celu", 0)
    assert_err("softplus: beta must not be 0", pt._nn_act, x, "softplus", 0, 20)
    assert_err("hardtanh: max_val (0) must be greater than min_val (1)", pt._nn_act, x, "hardtanh", 1, 0)
    assert_err("softshrink: lambda must be non-negative, got -0.5", pt._nn_act, x, "softshrink", -0.5)
    assert_err("mish: input must be float32 or float64, got int64", pt._nn_act, pt.tensor({1}, {dtype = "int64"}), "mish")
    assert_err("invalid option 'swish'", pt._nn_act, x, "swish")
  end)

  it("differentiate twice under create_graph (second derivatives by hand)", function()
    local a = pt.tensor({-1.5, 0.3, 2.0}, {dtype = "float64", requires_grad = true})
    local g = pt.autograd.grad(F.softsign(a):sum(), a, {create_graph = true})
    local gg = pt.autograd.grad(g:sum(), a) -- -2 sign(x) / (1 + |x|)^3
    local want = {0.128, -0.9103322712790168, -0.07407407407407407}
    for i, v in ipairs(gg:tolist()) do assert.is_true(math.abs(v - want[i]) < 1e-12, tostring(v)) end
    g = pt.autograd.grad(F.selu(a):sum(), a, {create_graph = true})
    gg = pt.autograd.grad(g:sum(), a) -- alpha scale exp(x) below 0, 0 above
    want = {0.392284987480124, 0, 0}
    for i, v in ipairs(gg:tolist()) do assert.is_true(math.abs(v - want[i]) < 1e-12, tostring(v)) end
  end)

  it("check the inputs, naming the layer's forward or the function", function()
    assert_err("ELU:forward: input must be a tensor, got nil", function() return nn.ELU()(nil) end)
    assert_err("elu: input must be a tensor, got number", F.elu, 3)
    assert_err("softplus: input must be float32 or float64, got int64", F.softplus, pt.tensor({1, 2}, {dtype = "int64"}))
    assert_err("GLU:forward: halving dimension must be even, but dimension 2 has size 3 (input shape {2,3})",
      function() return nn.GLU()(pt.zeros(2, 3)) end)
    assert_err("glu: dim 3 out of range for a 2-dimensional input", F.glu, pt.zeros(2, 4), 3)
    assert_err("PReLU:forward: weight has 3 parameters, but the input has 4 channels (dim 2 of input shape {2,4})",
      function() return nn.PReLU(3)(pt.zeros(2, 4)) end)
    assert_err("prelu: weight must be a tensor, got number", F.prelu, pt.zeros(2), 0.25)
    assert_err("prelu: weight has 3 parameters, but an input of fewer than 2 dimensions (shape {3}) has 1 channel",
      F.prelu, pt.zeros(3), pt.ones(3))
    assert_err("elu: inplace=true on a leaf tensor that requires grad", F.elu,
      pt.zeros(3, {requires_grad = true}), {inplace = true})
    assert_err("cosine_similarity: x1 shape {2,3} and x2 shape {4,3} cannot be broadcast",
      F.cosine_similarity, pt.zeros(2, 3), pt.zeros(4, 3))
    assert_err("CosineSimilarity:forward: x2 must be a tensor, got nil", function() return nn.CosineSimilarity()(pt.zeros(2)) end)
    assert_err("pairwise_distance: x1 shape {2,3} and x2 shape {2,4} cannot be broadcast",
      F.pairwise_distance, pt.zeros(2, 3), pt.zeros(2, 4))
    assert_err("HuberLoss:forward: input shape {3} and target shape {3,1} differ",
      function() return nn.HuberLoss()(pt.zeros(3), pt.zeros(3, 1)) end)
    assert_err("kl_div: target must be a tensor, got nil", F.kl_div, pt.zeros(3))
    assert_err("margin_ranking_loss: input1 shape {3} and target shape {2} differ",
      F.margin_ranking_loss, pt.zeros(3), pt.zeros(3), pt.zeros(2))
    assert_err("cosine_embedding_loss: target shape {2} does not match inputs of shape {3,4} (expected {3})",
      F.cosine_embedding_loss, pt.zeros(3, 4), pt.zeros(3, 4), pt.zeros(2))
    assert_err("triplet_margin_loss: anchor, positive and negative must have the same number of dimensions, got shapes {3,4}, {4} and {3,4}",
      F.triplet_margin_loss, pt.zeros(3, 4), pt.zeros(4), pt.zeros(3, 4))
    assert_err("gaussian_nll_loss: var shape {2} does not fit input shape {3,4}",
      F.gaussian_nll_loss, pt.zeros(3, 4), pt.zeros(3, 4), pt.ones(2))
    assert_err("gaussian_nll_loss: var has negative entries",
      F.gaussian_nll_loss, pt.zeros(3), pt.zeros(3), pt.tensor({1, -1, 1}))
    assert_err("multilabel_soft_margin_loss: weight shape {3} does not broadcast to input shape {3,4}",
      F.multilabel_soft_margin_loss, pt.zeros(3, 4), pt.zeros(3, 4), pt.ones(3))
    assert_err("Unflatten:forward: unflattened_size {2,4} multiplies to 8, not to the size 6 of dim 2 (input shape {3,6})",
      function() return nn.Unflatten(2, {2, 4})(pt.zeros(3, 6)) end)
    assert_err("pixel_shuffle: the channel dimension (size 6, dim 2 of input shape {1,6,2,2}) must be divisible by upscale_factor^2 = 4",
      F.pixel_shuffle, pt.zeros(1, 6, 2, 2), 2)
    assert_err("pixel_unshuffle: height 3 and width 4 (input shape {1,1,3,4}) must be divisible by downscale_factor 2",
      F.pixel_unshuffle, pt.zeros(1, 1, 3, 4), 2)
    assert_err("PixelShuffle:forward: input must have at least 3 dimensions {*, C, H, W}, got shape {4,4}",
      function() return nn.PixelShuffle(2)(pt.zeros(4, 4)) end)
  end)

  it("point at the caller's line", function()
    -- (not tail calls: a tail call leaves no frame of the caller to point at)
    local msg = err_of(function() local m = nn.ELU("a"); return m end)
    assert.matches("nn_extra_spec%.lua:%d+: ELU: alpha", msg)
    msg = err_of(function() local y = F.glu(pt.zeros(3)); return y end)
    assert.matches("nn_extra_spec%.lua:%d+: glu: halving", msg)
    msg = err_of(function() local l = nn.HuberLoss()(pt.zeros(3), pt.zeros(2)); return l end)
    assert.matches("nn_extra_spec%.lua:%d+: HuberLoss:forward:", msg)
  end)
end)

describe("nn_extra gradients (finite differences, float64)", function()
  local X = T.X
  -- inputs away from the kinks (0, +-3, thresholds) where the derivative jumps
  local XS = pt.tensor({{-2.5, -1.1, -0.3, 0.2, 0.9, 3.5}, {2.1, -2.7, 4.0, -3.7, 1.7, -0.05}}, F64)
  local _ = X

  it("of every activation", function()
    for _, f in ipairs({
      F.elu, function(x) return F.elu(x, 0.5) end, F.selu, function(x) return F.celu(x, 2.5) end,
      F.softplus, function(x) return F.softplus(x, 2, 5) end, F.mish, F.hardtanh,
      function(x) return F.hardtanh(x, -2, 3) end, F.relu6, F.hardswish, F.hardsigmoid, F.softsign,
      F.tanhshrink, function(x) return F.threshold(x, 0.5, -7) end, F.glu, F.softshrink,
      function(x) return F.softshrink(x, 1.5) end, F.hardshrink, function(x) return F.hardshrink(x, 2) end,
      function(x) return F.glu(x, 1) end, F.logsigmoid, F.silu, F.softmin,
      function(x) return F.softmin(x, 1) end, function(x) return F.normalize(x) end,
      function(x) return F.normalize(x, 1, 1) end, function(x) return F.normalize(x, 3) end,
      function(x) return F.pixel_shuffle(x:reshape({1, 4, 3, 1}), 2) end,
      function(x) return F.pixel_unshuffle(x:reshape({1, 2, 6}), 2) end,
      function(x) return nn.Unflatten(2, {2, 3})(x) end,
    }) do
      gradcheck(f, {XS})
    end
    gradcheck(F.prelu, {T.A + 0.05, pt.tensor({0.1, -0.2, 0.3, 0.5}, F64)})
    gradcheck(F.prelu, {XS, pt.tensor({0.25}, F64)})
  end)

  it("of the distances", function()
    gradcheck(F.cosine_similarity, {T.A, T.B})
    gradcheck(function(a, b) return F.cosine_similarity(a, b, 1) end, {T.A, T.B})
    gradcheck(function(a, b) return F.cosine_similarity(a, b) end, {T.A, T.B[{{1}}]})
    gradcheck(F.pairwise_distance, {T.A, T.B})
    gradcheck(function(a, b) return F.pairwise_distance(a, b, 1) end, {T.A, T.B})
    gradcheck(function(a, b) return F.pairwise_distance(a, b, 3, 0.1, true) end, {T.A, T.B})
  end)

  it("of every loss", function()
    local A, B, Cn = T.A, T.B, T.Cn
    local Bs = B + 0.013 -- no |input - target| at a kink
    for _, r in ipairs({"none", "sum", "mean"}) do
      local o = {reduction = r}
      gradcheck(function(x, y) return F.kl_div(x, y, o) end, {T.LP, T.P}, {skip = {[2] = true}})
      gradcheck(function(x, y) return F.kl_div(x, y, {reduction = r, log_target = true}) end, {T.LP, T.LT})
      gradcheck(function(x, y) return F.huber_loss(x, y, o) end, {A, Bs})
      gradcheck(function(x, y) return F.huber_loss(x, y, {reduction = r, delta = 0.7}) end, {A, Bs})
      gradcheck(function(a, b) return F.margin_ranking_loss(a, b, T.YR, 0.5, o) end, {A, Bs})
      gradcheck(function(a, b) return F.cosine_embedding_loss(a, b, T.Y1, o) end, {A, B})
      gradcheck(function(a, b) return F.cosine_embedding_loss(a, b, T.Y1 * -1, -0.2, o) end, {A, Cn})
      gradcheck(function(a, p, n) return F.triplet_margin_loss(a, p, n, o) end, {A, B, Cn})
      gradcheck(function(a, p, n) return F.triplet_margin_loss(a, p, n, 2.5, 1, 1e-6, true, o) end, {A, B, Cn})
      gradcheck(function(x) return F.poisson_nll_loss(x, T.CNT, o) end, {A})
      -- (not the target's: Stirling's term starts where target > 1, a jump at 1)
      gradcheck(function(x, y) return F.poisson_nll_loss(x, y, false, true, 1e-8, o) end, {T.RATE, T.CNT},
        {skip = {[2] = true}})
      gradcheck(function(x, y) return F.poisson_nll_loss(x, y, false, true, 1e-8, o) end, {T.RATE, T.CNT + 0.5})
      gradcheck(function(x, y, v) return F.gaussian_nll_loss(x, y, v, o) end, {A, B, T.VAR + 0.1})
      gradcheck(function(x, y, v) return F.gaussian_nll_loss(x, y, v, true, 1e-6, o) end, {A, B, T.VROW + 0.2})
      gradcheck(function(x) return F.soft_margin_loss(x, T.YR, o) end, {A})
      gradcheck(function(x) return F.multilabel_soft_margin_loss(x, T.ML, nil, o) end, {A})
      gradcheck(function(x) return F.multilabel_soft_margin_loss(x, T.ML, pt.tensor({0.5, 1, 2, 0.1}, F64), o) end, {A})
      gradcheck(function(x) return F.hinge_embedding_loss(x, T.YH, 0.45, o) end, {A})
    end
    gradcheck(function(x, y) return F.kl_div(x, y, "batchmean") end, {T.LP, T.P + 0.1})
  end)

  it("flow into module parameters", function()
    local m = nn.PReLU(4, 0.3, {dtype = "float64"})
    gradcheck(function(x, w)
      m.weight = nn.Parameter(w)
      return m(x)
    end, {T.A + 0.05, pt.tensor({0.3, 0.1, -0.4, 0.2}, F64)})
  end)
end)

describe("nn.functional conveniences from the core", function()
  it("conv2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d and dropout2d", function()
    for _, k in ipairs({"conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "dropout2d"}) do
      assert.is_function(F[k], k)
    end
    local x = pt.randn(1, 1, 4, 4)
    assert.are.same({1, 1, 2, 2}, F.max_pool2d(x, 2):size())
    assert.are.same({1, 1, 2, 2}, F.avg_pool2d(x, 2):size())
    assert.are.same({1, 1, 1, 1}, F.adaptive_avg_pool2d(x, 1):size())
    assert.is_true(F.dropout2d(x, 0.5, false):equal(x))
    assert.are.same({1, 2, 3, 3}, F.conv2d(x, pt.randn(2, 1, 2, 2)):size())
  end)
end)

describe("functional forms PyTorch has: in place, _with_indices, upsample; max_unpool3d; more constructors", function()
  local function det(shape, f)
    local n = 1
    for _, s in ipairs(shape) do n = n * s end
    return f(pt.arange(n, F64)):reshape(shape)
  end

  it("TripletMarginWithDistanceLoss and its functional form match torch 1.13", function()
    local a = det({4, 3}, function(t) return (t * 0.7):sin() end)
    local p = det({4, 3}, function(t) return (t * 1.3):cos() end)
    local n = det({4, 3}, function(t) return (t * 0.4):sin() * 2 end)
    assert_close(0.7060274892349145, F.triplet_margin_with_distance_loss(a, p, n):item())
    local cos = function(x, y) return 1 - F.cosine_similarity(x, y) end
    assert_close({1.9214749927095578, 1.6338897505161003, 0.0, 0.0},
      F.triplet_margin_with_distance_loss(a, p, n, {distance_function = cos, margin = 0.5, swap = true,
        reduction = "none"}):tolist())
    local m = nn.TripletMarginWithDistanceLoss({swap = true, reduction = "sum"})
    assert_close(2.824109956939658, m(a, p, n):item())
    -- a module as the distance is a child, as in torch
    local md = nn.TripletMarginWithDistanceLoss({distance_function = nn.PairwiseDistance()})
    assert.are.equal(1, #md:children())
    assert_close(0.7060274892349145, md(a, p, n):item())
    gradcheck(function(x) return F.triplet_margin_with_distance_loss(x, p, n) end, {a:clone()})
    assert_err("triplet_margin_with_distance_loss: margin must be greater than 0, got 0",
      F.triplet_margin_with_distance_loss, a, p, n, {margin = 0})
    assert_err("TripletMarginWithDistanceLoss: distance_function must be a function (or a callable module), got number",
      nn.TripletMarginWithDistanceLoss, {distance_function = 3})
    assert_err("triplet_margin_with_distance_loss: anchor, positive and negative must have the same number of "
      .. "dimensions, got shapes {4,3}, {3} and {4,3}", F.triplet_margin_with_distance_loss, a, p[1], n)
    assert_err("triplet_margin_with_distance_loss: unknown option 'p'", F.triplet_margin_with_distance_loss, a, p, n, {p = 1})
  end)

  it("F.relu_, elu_, celu_, selu_, leaky_relu_, hardtanh_, threshold_, rrelu_ change x and give it back", function()
    local cases = {
      {"relu_", {}, "relu", {}},
      {"elu_", {0.5}, "elu", {alpha = 0.5}},
      {"celu_", {2.0}, "celu", {alpha = 2.0}},
      {"selu_", {}, "selu", {}},
      {"leaky_relu_", {0.2}, "leaky_relu", {negative_slope = 0.2}},
      {"hardtanh_", {-0.5, 0.75}, "hardtanh", {min_val = -0.5, max_val = 0.75}},
      {"threshold_", {0.1, -7}, "threshold", {threshold = 0.1, value = -7}},
      {"rrelu_", {0.1, 0.3, false}, "rrelu", {lower = 0.1, upper = 0.3}},
    }
    for _, c in ipairs(cases) do
      local name, args, base, opts = c[1], c[2], c[3], c[4]
      local x = det({2, 3}, function(t) return (t * 1.1):sin() * 2 end)
      local want = F[base](x:clone(), opts)
      local r = F[name](x, table.unpack(args))
      assert.is_true(rawequal(r, x), name)
      assert.is_true(x:equal(want), name)
      -- under autograd on a non-leaf: the gradient of base, through the copy
      local w = det({2, 3}, function(t) return (t * 1.1):sin() * 2 end)
      w.requires_grad = true
      local h = w * 1
      F[name](h, table.unpack(args))
      ;(h * h):sum():backward()
      local w2 = w:detach():clone()
      w2.requires_grad = true
      local y = F[base](w2, opts)
      ;(y * y):sum():backward()
      assert.is_true(w.grad:equal(w2.grad), name)
      if name ~= "relu_" then
        assert_err(name .. ": a leaf tensor that requires grad cannot change in place", F[name], w, table.unpack(args))
      end
    end
    -- settings as an options table too
    local x = pt.tensor({-1.0, 2})
    F.leaky_relu_(x, {negative_slope = 0.5})
    assert.are.same({-0.5, 2}, x:tolist())
    assert_err("elu_: too many arguments (1 settings at most, got 2)", F.elu_, x, 1, 2)
    assert_err("elu_: unknown option 'inplace' (elu_ is in place)", F.elu_, x, {inplace = false})
    assert_err("relu_: expected one tensor argument, got 2 arguments", F.relu_, x, 1)
  end)

  it("F.*_with_indices give the output and the indices; F.upsample is interpolate", function()
    local x = det({1, 2, 4, 4, 4}, function(t) return (t * 1.37):sin() end)
    for _, c in ipairs({{"max_pool3d", x, 2}, {"max_pool2d", x[1], 2}, {"max_pool1d", x[1][1], 2},
                        {"adaptive_max_pool3d", x, 2}, {"adaptive_max_pool2d", x[1], 3},
                        {"adaptive_max_pool1d", x[1][1], 3}}) do
      local base, input, size = c[1], c[2], c[3]
      local y, i = F[base .. "_with_indices"](input, size)
      local y2, i2 = F[base](input, size, {return_indices = true})
      assert.is_true(y:equal(y2), base)
      assert.is_true(i:equal(i2), base)
    end
    local y, i = F.max_pool2d_with_indices(x[1][1], 2, {stride = 1})
    assert.are.same({4, 3, 3}, y:size())
    assert.are.same({4, 3, 3}, i:size())
    assert_err("max_pool2d_with_indices: unknown option 'return_indices' (the indices are returned)",
      F.max_pool2d_with_indices, x[1], 2, {return_indices = false})
    assert.is_true(F.upsample(x[1]:unsqueeze(1), {scale_factor = 2}):equal(F.interpolate(x[1]:unsqueeze(1), {scale_factor = 2})))
  end)

  it("max_unpool3d and MaxUnpool3d invert max_pool3d as torch 1.13 (positions, output_size, gradient)", function()
    local x = det({1, 2, 4, 4, 4}, function(t) return (t * 1.37):sin() end)
    local y, i = F.max_pool3d(x, 2, {return_indices = true})
    -- torch's indices plus one
    assert.are.same({2, 7, 25, 16, 34, 39, 57, 48, 21, 7, 30, 16, 53, 39, 62, 48}, i:reshape(16):tolist())
    local function nonzero_positions(u)
      local out = {}
      for k, v in ipairs(u:reshape(u:numel()):tolist()) do if v ~= 0 then out[#out + 1] = k end end
      return out
    end
    local u = F.max_unpool3d(y, i, 2)
    assert.are.same({1, 2, 4, 4, 4}, u:size())
    assert.are.same({2, 7, 16, 25, 34, 39, 48, 57, 71, 80, 85, 94, 103, 112, 117, 126}, nonzero_positions(u))
    assert.is_true(F.max_pool3d(u, 2):equal(y))
    local u2 = nn.MaxUnpool3d(2)(y, i, {5, 5, 5})
    assert.are.same({1, 2, 5, 5, 5}, u2:size())
    assert.are.same({2, 7, 16, 25, 34, 39, 48, 57, 132, 141, 146, 155, 164, 173, 178, 187}, nonzero_positions(u2))
    assert.is_true(F.max_unpool3d(y[1], i[1], 2):equal(u[1]))
    -- torch's gradient of (unpool(y) * arange).sum()
    local yy = y:clone()
    yy.requires_grad = true
    ;(F.max_unpool3d(yy, i, 2) * pt.arange(128, F64):reshape({1, 2, 4, 4, 4})):sum():backward()
    assert.are.same({1, 6, 24, 15, 33, 38, 56, 47, 84, 70, 93, 79, 116, 102, 125, 111}, yy.grad:reshape(16):tolist())
    gradcheck(function(t) return F.max_unpool3d(t, i, 2) end, {y:clone()})
    assert.are.equal("MaxUnpool3d(kernel_size={2, 1, 3}, stride=1, padding=0)",
      tostring(nn.MaxUnpool3d({2, 1, 3}, {stride = 1})))
    assert_err("max_unpool3d: expected a 4-D {C,D,H,W} or 5-D {N,C,D,H,W} input, got shape {2,2,2}",
      F.max_unpool3d, y[1][1], i[1][1], 2)
    assert_err("max_unpool3d: indices have shape {1,2,2,2,1}, expected the input's shape {1,2,2,2,2}",
      F.max_unpool3d, y, i:narrow(5, 1, 1), 2)
    assert_err("max_unpool3d: output_size {9, 5, 5}: the depth must be from 3 to 5, got 9",
      F.max_unpool3d, y, i, 2, {output_size = {9, 5, 5}})
  end)

  it("EmbeddingBag.from_pretrained: the tensor itself as weight, frozen unless freeze = false", function()
    local w = pt.tensor({{1.0, 2}, {3, 4}, {5, 6}})
    local bag = nn.EmbeddingBag.from_pretrained(w, {mode = "sum"})
    w[{1, 1}] = 9 -- the same storage
    assert.are.equal(9, bag.weight[{1, 1}])
    w[{1, 1}] = 1
    assert.is_false(bag.weight.requires_grad)
    assert.are.same({{4, 6}, {6, 8}}, bag(pt.tensor({{1, 2}, {1, 3}}, {dtype = "int64"})):tolist())
    local mean = nn.EmbeddingBag.from_pretrained(w, {freeze = false, padding_idx = 2})
    assert.is_true(mean.weight.requires_grad)
    assert.are.same({{3, 4}}, mean(pt.tensor({{1, 2, 3}}, {dtype = "int64"})):tolist())
    assert_err("EmbeddingBag.from_pretrained: embeddings must be a 2-D tensor {num_embeddings, embedding_dim}, got shape {3}",
      nn.EmbeddingBag.from_pretrained, pt.zeros(3))
    assert_err("EmbeddingBag.from_pretrained: unknown option 'mod'", nn.EmbeddingBag.from_pretrained, w, {mod = "sum"})
  end)
end)
