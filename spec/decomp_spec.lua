-- pt.linalg (lib/ops_decomp.c through LAPACKE) against torch 1.13: values (decompositions through
-- invariants and sign-normalised factors, since signs are not unique), batches, float32,
-- gradients (float64 finite differences, and against torch's formulas), every error message.
-- Expected values: torch 1.13, float64 (E below, computed once and hard-coded).
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local close = support.assert_close_with(1e-9)
local close32 = support.assert_close_with(2e-5)

local E = {}
E.solve_vec = {-0.272727272727273, -0.181818181818182, 0.545454545454545}
E.solve_mat = {{-0.272727272727273, -0.454545454545455}, {-0.181818181818182, 0.363636363636364}, {0.545454545454545, -0.0909090909090909}}
E.solve_right = {{1.0, -3.33066907387547e-17, -0.0}, {0.409090909090909, 0.0454545454545455, -0.409090909090909}}
E.solve_batch_vec = {{-0.272727272727273, -0.181818181818182, 0.545454545454545}, {0.686567164179104, 0.134328358208955, -0.0149253731343284}}
E.solve_bcast = {{{{-0.272727272727273, -0.454545454545455}, {-0.181818181818182, 0.363636363636364}, {0.545454545454545, -0.0909090909090909}}, {{0.0895522388059702, -0.149253731343284}, {0.104477611940299, 0.492537313432836}, {0.432835820895522, -0.388059701492537}}}, {{{-0.545454545454546, -0.909090909090909}, {-0.363636363636364, 0.727272727272727}, {1.09090909090909, -0.181818181818182}}, {{0.17910447761194, -0.298507462686567}, {0.208955223880597, 0.985074626865672}, {0.865671641791045, -0.776119402985075}}}}
E.inv = {{1.09090909090909, -0.545454545454546, -0.090909090909091}, {0.227272727272727, 0.136363636363636, -0.227272727272727}, {-0.181818181818182, 0.0909090909090909, 0.181818181818182}}
E.inv_batch = {{{1.09090909090909, -0.545454545454546, -0.090909090909091}, {0.227272727272727, 0.136363636363636, -0.227272727272727}, {-0.181818181818182, 0.0909090909090909, 0.181818181818182}}, {{0.313432835820896, -0.134328358208955, 0.0149253731343284}, {-0.134328358208955, 0.343283582089552, -0.149253731343284}, {0.0149253731343284, -0.149253731343284, 0.238805970149254}}}
E.det = {22.0, 67.0}
E.slogdet_neg = {-1.0, 0.0}
E.logdet_A3 = 4.20469261939097
E.chol = {{2.0, 0.0, 0.0}, {1.0, 2.0, 0.0}, {0.5, 1.25, 2.04633819296811}}
E.chol_upper = {{2.0, 1.0, 0.5}, {0.0, 2.0, 1.25}, {0.0, 0.0, 2.04633819296811}}
E.qr_tall_Q = {{0.408248290463863, 0.707106781186548, -0.554700196225229}, {0.0, 0.471404520791032, 0.739600261633639}, {0.816496580927726, -0.471404520791032, 0.0924500327042048}, {0.408248290463863, 0.235702260395516, 0.369800130816819}}
E.qr_tall_R = {{2.44948974278318, 1.22474487139159, 1.22474487139159}, {-0.0, 2.12132034355964, 0.235702260395516}, {-0.0, -0.0, 1.20185042515466}}
E.qr_wide_Q = {{0.447213595499958, -0.365148371670111, 0.816496580927726}, {0.894427190999916, 0.182574185835055, -0.408248290463863}, {0.0, 0.912870929175277, 0.408248290463863}}
E.qr_wide_R = {{2.23606797749979, 0.894427190999916, 0.894427190999916, 3.1304951684997}, {-0.0, 1.09544511501033, 0.182574185835055, 2.00831604418561}, {0.0, 0.0, 2.04124145231931, 0.408248290463863}}
E.eigh_L = {1.92134694196169, 3.73015912368826, 9.34849393435005}
E.eigh_V = {{-0.51454029846407, 0.775875858999378, 0.365054698200808}, {0.746084508629819, 0.195270947285594, 0.636574554258013}, {-0.422618252373354, -0.599904916272706, 0.679343730516981}}
E.eigh_U_L = {-0.515729471589256, 0.17091518882718, 11.3448142827621}
E.eigh_L_L = {0.807417596432748, 4.0, 6.19258240356725}
E.svd_S = {3.2631909206443, 1.79191307195381, 1.06800400654007}
E.svd_U = {{0.580275049019067, -0.576117272718313, -0.552927418311397}, {0.317182718305964, -0.283214298248206, 0.767082494720474}, {0.538804663462631, 0.766433089986825, -0.140377172788408}, {0.521886506172444, 0.0214212025021441, 0.293513144054642}}
E.svd_Vh = {{0.667987541987395, 0.612780364724025, 0.422247401837274}, {-0.545880335975747, 0.789116203969036, -0.281620800773851}, {-0.50577396388569, -0.0423773670983708, 0.861624544806592}}
E.svdvals_W = {4.55888187037751, 1.92708790754672, 1.22593975730067}
E.lstsq_gels = {{{0.666666666666667, -0.82051282051282}, {1.17756934401283e-16, 0.461538461538461}, {1.0, 0.846153846153846}}, {4.33333333333333, 0.410256410256411}, {}, {}}
E.lstsq_gelsy = {{{0.666666666666667, -0.82051282051282}, {1.17756934401283e-16, 0.461538461538461}, {1.0, 0.846153846153846}}, {}, 3, {}}
E.lstsq_gelsd = {{{0.666666666666667, -0.820512820512821}, {9.99200722162641e-16, 0.461538461538462}, {1.0, 0.846153846153846}}, {4.33333333333333, 0.410256410256411}, 3, {3.2631909206443, 1.79191307195381, 1.06800400654007}}
E.lstsq_gelss = {{{0.666666666666667, -0.82051282051282}, {4.79237765744347e-16, 0.461538461538461}, {1.0, 0.846153846153846}}, {4.33333333333333, 0.410256410256411}, 3, {3.2631909206443, 1.79191307195381, 1.06800400654007}}
E.lstsq_wide = {-0.758620689655173, 0.724137931034483, 0.413793103448276, 0.93103448275862}
E.lstsq_rankdef = {{{2.33333333333334}, {-1.66666666666667}, {0.666666666666667}}, 2}
E.pinv_T = {{0.205128205128205, -0.384615384615385, 0.41025641025641, -0.0256410256410256}, {0.384615384615385, 0.153846153846154, -0.230769230769231, 0.076923076923077}, {-0.461538461538461, 0.615384615384615, 0.0769230769230767, 0.307692307692308}}
E.pinv_Rk = {{-0.033333333333334, -0.0666666666666665, 0.833333333333334}, {0.0666666666666672, 0.133333333333333, -0.666666666666667}, {0.0333333333333332, 0.0666666666666667, 0.166666666666667}}
E.pinv_herm = {{0.313432835820895, -0.134328358208955, 0.0149253731343283}, {-0.134328358208955, 0.343283582089552, -0.149253731343284}, {0.0149253731343284, -0.149253731343284, 0.238805970149254}}
E.rank = {2, 3, 0, 1}
E.vn = {5.5, 10.5, 4.64352202368786, 46.9686961351207, 4.0, 0.0, 5.0, 0.0}
E.vn_dim = {2.23606797749979, 5.02493781056044}
E.vn_dim_keep = {{4.0, 2.5, 4.0}}
E.mn = {9.59166304662544, 12.9026057657891, 9.06066469121162, 0.797560606949736, 14.0, 2.0, 9.0, 6.0}
E.mn_dims = {12.0, 12.0, 14.0}
E.mn_dims_keep_nuc = {{{21.3384925175137}, {20.5750155023025}, {25.4427054952886}}}
E.norm = {34.6987031457949, 9.06066469121162, 3.30192724889463}
E.norm_dim = {{11.8321595661992, 10.3440804327886, 8.94427190999916, 7.68114574786861}, {11.8321595661992, 13.3790881602597, 14.9666295470958, 16.583123951777}}
E.norm_dims = {16.7332005306815, 16.9115345252878, 17.4355957741627, 18.2756668824971}
E.mpow3 = {{35.0, 48.0, 248.0}, {55.0, 74.0, 395.0}, {46.0, 22.0, 265.0}}
E.mpow_m2 = {{1.08264462809917, -0.677685950413223, 0.00826446280991728}, {0.320247933884298, -0.12603305785124, -0.0929752066115703}, {-0.210743801652893, 0.128099173553719, 0.0289256198347108}}
E.mdot = {1029.0, -69.0}
E.mdot2 = {{16.0, 19.0, 11.0}, {9.0, 11.0, 8.0}, {16.0, 9.0, 10.0}, {15.0, 14.0, 11.0}}
E.cross = {{-3.0, 6.0, -3.0}, {6.0, 0.0, -4.0}}
E.st_upper = {{-0.114285714285714, -0.128571428571429}, {-0.0285714285714286, 0.342857142857143}, {0.428571428571429, -0.142857142857143}}
E.st_lower_right = {{0.075, 0.1, 0.5}, {-0.108333333333333, 0.3, -0.166666666666667}}
E.st_unit = {{1.0, 0.0}, {0.0, 1.0}, {2.0, -4.0}}
E.trisolve_T = {{0.5, 0.0}, {0.2, 0.2}, {0.0714285714285714, -0.285714285714286}}
E.chol_solve = {{0.0895522388059702, -0.149253731343284}, {0.104477611940298, 0.492537313432836}, {0.432835820895522, -0.388059701492537}}
E.chol_solve_up = {{0.0895522388059702, -0.149253731343284}, {0.104477611940298, 0.492537313432836}, {0.432835820895522, -0.388059701492537}}
E.tsvd_V = {{0.667987541987395, -0.545880335975747, -0.50577396388569}, {0.612780364724025, 0.789116203969036, -0.0423773670983708}, {0.422247401837274, -0.281620800773851, 0.861624544806592}}
E.f32_inv = {{1.09090900421143, -0.545454502105713, -0.0909090638160706}, {0.227272719144821, 0.136363625526428, -0.227272719144821}, {-0.181818157434464, 0.0909090861678123, 0.181818172335625}}
E.f32_det = 22.0
E.f32_svdvals = {3.26319098472595, 1.79191339015961, 1.06800389289856}
-- float32 (torch 1.13 float32: LAPACK's s* routines)
E.f32_solve = {{-0.27272719144821167, -0.4545454978942871}, {-0.1818181574344635, 0.363636314868927}, {0.5454545021057129, -0.09090904891490936}}
E.f32_solve_batch = {{{-0.27272719144821167, -0.4545454978942871}, {-0.1818181574344635, 0.363636314868927}, {0.5454545021057129, -0.09090904891490936}}, {{0.17910447716712952, -0.2985074520111084}, {0.20895522832870483, 0.9850746393203735}, {0.8656716346740723, -0.7761194109916687}}}
E.f32_chol = {{2.0, 0.0, 0.0}, {1.0, 2.0, 0.0}, {0.5, 1.25, 2.0463380813598633}}
E.f32_chol_upper = {{2.0, 1.0, 0.5}, {0.0, 2.0, 1.25}, {0.0, 0.0, 2.0463380813598633}}
E.f32_qr_tall_Q = {{0.40824830532073975, 0.70710688829422, -0.5547001361846924}, {0.0, 0.4714045524597168, 0.7396003007888794}, {0.8164966106414795, -0.471404492855072, 0.09245002269744873}, {0.40824830532073975, 0.2357023060321808, 0.3698001503944397}}
E.f32_qr_tall_R = {{2.4494898319244385, 1.2247447967529297, 1.2247449159622192}, {-0.0, 2.1213202476501465, 0.2357022762298584}, {-0.0, -0.0, 1.201850414276123}}
E.f32_qr_wide_Q = {{0.4472135305404663, -0.3651483952999115, 0.8164965510368347}, {0.8944271802902222, 0.18257418274879456, -0.40824830532073975}, {0.0, 0.9128709435462952, 0.40824830532073975}}
E.f32_qr_wide_R = {{2.2360680103302, 0.8944271802902222, 0.8944270610809326, 3.130495071411133}, {-0.0, 1.095445156097412, 0.18257415294647217, 2.0083160400390625}, {0.0, 0.0, 2.041241407394409, 0.40824827551841736}}
E.f32_eigh_L = {1.9213461875915527, 3.730158805847168, 9.348492622375488}
E.f32_eigh_V = {{-0.5145400762557983, 0.7758757472038269, 0.3650546967983246}, {0.7460843324661255, 0.19527097046375275, 0.636574387550354}, {-0.42261815071105957, -0.5999047160148621, 0.6793438196182251}}
E.f32_eigvalsh_U = {-0.5157297253608704, 0.17091482877731323, 11.34481430053711}
E.f32_svd_tall_S = {3.2631912231445312, 1.7919135093688965, 1.0680040121078491}
E.f32_svd_tall_U = {{0.5802751183509827, -0.5761172771453857, -0.5529276132583618}, {0.31718286871910095, -0.2832144498825073, 0.7670825719833374}, {0.5388045907020569, 0.7664331197738647, -0.14037704467773438}, {0.5218865275382996, 0.021421177312731743, 0.2935131788253784}}
E.f32_svd_tall_Vh = {{0.667987585067749, 0.6127805113792419, 0.42224743962287903}, {-0.5458804965019226, 0.789116382598877, -0.2816207706928253}, {-0.5057739019393921, -0.04237755388021469, 0.8616245985031128}}
E.f32_svd_wide_S = {4.558882236480713, 1.9270877838134766, 1.2259397506713867}
E.f32_svd_wide_U = {{0.39473843574523926, 0.8217405676841736, -0.4110034704208374}, {0.7844996452331543, -0.5342933535575867, -0.31478673219680786}, {0.47826942801475525, 0.19817380607128143, 0.8555614352226257}}
E.f32_svd_wide_Vh = {{0.43074995279312134, 0.27699097990989685, 0.2780827581882477, 0.8126503229141235}, {-0.1280929446220398, -0.1744184046983719, 0.9556673765182495, -0.19967535138130188}, {0.8487995266914368, -0.44111043214797974, -0.027370421215891838, -0.2901930809020996}}
E.f32_slogdet = {1.0, 3.0910425186157227}
E.f32_lstsq_gels = {{{0.6666666865348816, -0.8205127716064453}, {1.1239160357945366e-07, 0.4615384340286255}, {1.0, 0.8461538553237915}}, {4.333333492279053, 0.41025638580322266}, {}, {}}
E.f32_lstsq_gelsy = {{{0.6666668653488159, -0.8205127716064453}, {5.726629126456828e-08, 0.4615384042263031}, {0.9999997019767761, 0.846153736114502}}, {}, 3, {}}
E.f32_lstsq_gelsd = {{{0.6666669249534607, -0.8205128312110901}, {0.0, 0.4615386128425598}, {1.0000001192092896, 0.8461538553237915}}, {4.333333492279053, 0.41025638580322266}, 3, {3.263190507888794, 1.7919131517410278, 1.0680041313171387}}
E.f32_lstsq_gelss = {{{0.6666668653488159, -0.820512592792511}, {2.151385558590846e-07, 0.4615384638309479}, {1.0000001192092896, 0.8461538553237915}}, {4.333333492279053, 0.41025638580322266}, 3, {3.2631912231445312, 1.7919132709503174, 1.0680040121078491}}
E.f32_lstsq_wide = {-0.7586202621459961, 0.724138081073761, 0.41379281878471375, 0.9310344457626343}
E.f32_pinv_T = {{0.2051282674074173, -0.38461539149284363, 0.41025635600090027, -0.025641027837991714}, {0.3846155107021332, 0.1538461148738861, -0.23076923191547394, 0.07692305743694305}, {-0.4615385830402374, 0.6153846979141235, 0.07692313194274902, 0.30769234895706177}}
E.f32_pinv_W = {{0.26724135875701904, 0.32758620381355286, -0.5603448748588562}, {-0.1982758790254593, -0.017241409048438072, 0.3189655542373657}, {0.42241379618644714, -0.22413793206214905, 0.1465517282485962}, {-0.11206895858049393, 0.12068961560726166, 0.26724138855934143}}
E.f32_pinv_herm = {{0.3134327232837677, -0.13432830572128296, 0.014925403520464897}, {-0.13432830572128296, 0.3432835340499878, -0.149253711104393}, {0.014925404451787472, -0.149253711104393, 0.23880590498447418}}
E.f32_rank = {2, 3, 2, 3}
E.f32_st_upper = {{-0.11428572982549667, -0.12857142090797424}, {-0.028571462258696556, 0.34285715222358704}, {0.4285714626312256, -0.1428571492433548}}
E.f32_svdvals_T = {3.263190984725952, 1.791913390159607, 1.0680038928985596}
E.g_eigh = {{-0.144549126586343, 0.105590547436617, 0.323855846937425}, {0.105590547436617, 0.358097255199793, -0.0160759427613889}, {0.323855846937425, -0.0160759427613889, 0.38645187138655}}
E.g_svd = {{-0.0718640555602942, -0.413616757542587, 0.907391854564141}, {-0.175171502773341, 0.862116483657224, -0.654831899592076}, {0.770905137820784, -0.512302333235744, -0.862543374715271}, {-0.1861059284913, 0.30400848497628, 0.296925446090957}}
E.g_svd_wide = {{-0.216903234051357, -0.037438286871766, -0.151679229633273, 0.490439472516076}, {0.266137988157315, -0.273135893367537, -0.0884842432884306, -0.0244580460193795}, {-0.0699936749716354, 0.184205425273723, 0.640229494099355, -0.490189321730103}}
E.g_qr = {{0.14531010300241, 0.853955730878808, -0.139447731755424}, {-0.173328950252027, 1.09520052596976, -0.00723208415516141}, {1.49432390970853, -1.12542187157572, 0.976660092044708}, {0.466042077580539, 0.196888012272628, 1.18612754766601}}
E.g_qr_wide = {{1.12088888888889, 0.197777777777777, 1.31333333333333, 0.226666666666667}, {0.939555555555555, -0.498888888888888, 0.343333333333333, 1.98666666666667}, {0.964444444444443, 1.13888888888889, 0.216666666666667, 0.133333333333333}}
E.g_chol = {{0.136176112196008, -0.0242611219600841, -0.196182204863865}, {-0.0242611219600841, 0.0926112196008409, 0.0118220486386546}, {-0.196182204863865, 0.0118220486386546, 0.0610847221781526}}
E.g_det = {{24.0, 5.0, -4.0}, {-12.0, 3.0, 2.0}, {-2.0, -5.0, 4.0}}
E.g_pinv = {{-0.00545693622616697, -0.263116370808678, 0.147534516765286}, {0.137475345167653, 0.149112426035503, -0.00355029585798816}, {-0.292965154503616, 0.0699211045364893, 0.229684418145957}, {0.255489809335963, 0.130966469428008, -0.476134122287968}}
E.g_lstsq = {{{-0.143261012491782, -0.000986193293886245, -0.65266272189349}, {0.934319526627219, -0.0952662721893495, -0.327218934911243}, {0.0827087442472054, 0.0903353057199213, -0.336094674556213}, {-0.386259040105194, -0.0873767258382636, 1.19408284023669}}, {{0.423076923076923, 0.0205128205128206}, {-0.530769230769231, 0.261538461538462}, {0.0461538461538463, -0.158974358974359}, {-0.215384615384615, 0.0974358974358975}}}
E.g_mn2 = {{0.93042521799996, 0.597819025820567, 0.508883788877124}, {-0.377274435729941, 1.01539145320854, 1.09406219232692}, {0.173042187227598, -0.246066332740408, 1.43427280983864}}

local function T(v) return pt.tensor(v, {dtype = "float64"}) end
local A3 = T {{4, 2, 1}, {2, 5, 3}, {1, 3, 6}}
local N3 = T {{1, 2, 3}, {0, 4, 5}, {1, 0, 6}}
local T43 = T {{1, 2, 0}, {0, 1, 1}, {2, 0, 1}, {1, 1, 1}}
local W34 = T {{1, 0, 2, 1}, {2, 1, 0, 3}, {0, 1, 1, 2}}
local NB = pt.stack({N3, A3})
local b3 = T {1, 2, 3}
local B32 = T {{1, 0}, {2, 1}, {3, -1}}
local B42 = T {{1, 0}, {2, 1}, {3, -1}, {0, 1}}
local Rk = T {{1, 2, 3}, {2, 4, 6}, {1, 0, 1}}
local Wt = T {{0.3, -0.2, 0.5}, {0.1, 0.4, -0.6}, {-0.7, 0.2, 0.25}}

-- columns (rows) of a 2-D tensor with signs chosen so that each one's largest entry is positive
local function normcols(t)
  local v = t:tolist()
  for j = 1, #v[1] do
    local best = 1
    for i = 2, #v do if math.abs(v[i][j]) > math.abs(v[best][j]) then best = i end end
    local s = v[best][j] < 0 and -1 or 1
    for i = 1, #v do v[i][j] = v[i][j] * s end
  end
  return v
end
local function normrows(t) return normcols(t:t()) and pt.tensor(normcols(t:t()), {dtype = "float64"}):t() end

local function err(f, ...)
  local ok, msg = pcall(f, ...)
  assert.is_false(ok)
  return tostring(msg)
end

local function eye(n) local e = pt.zeros(n, n, {dtype = "float64"}); for i = 1, n do e[{i, i}] = 1 end; return e end

describe("pt.linalg against torch 1.13", function()
  it("solve: vectors, matrices, left = false, batches and broadcasting", function()
    close(pt.linalg.solve(N3, b3), E.solve_vec)
    close(pt.linalg.solve(N3, B32), E.solve_mat)
    close(pt.linalg.solve(N3, B32:t(), {left = false}), E.solve_right)
    local X = pt.linalg.solve(NB, T {{1, 2, 3}, {3, 2, 1}}) -- B shaped like A without its last dim: vectors
    assert.are.same({2, 3}, X:size())
    close(X, E.solve_batch_vec)
    local Y = pt.linalg.solve(NB:unsqueeze(1), pt.stack({B32, B32 * 2}):unsqueeze(2))
    assert.are.same({2, 2, 3, 2}, Y:size())
    close(Y, E.solve_bcast)
    assert.are.same({2, 5, 3, 2}, pt.linalg.solve(eye(3):expand(2, 1, 3, 3), pt.ones(5, 3, 2, {dtype = "float64"})):size())
  end)

  it("inv, det, slogdet, logdet, batched", function()
    close(pt.linalg.inv(N3), E.inv)
    close(pt.linalg.inv(NB), E.inv_batch)
    close(N3:inverse(), E.inv)
    close(pt.inverse(N3), E.inv)
    close(pt.linalg.det(NB), E.det)
    assert.are.same({2}, pt.linalg.det(NB):size())
    close(N3:det(), E.det[1])
    assert.are.equal(0, pt.linalg.det(Rk):item())
    local s, l = pt.linalg.slogdet(T {{0, 1}, {1, 0}})
    close({s:item(), l:item()}, E.slogdet_neg)
    s, l = pt.slogdet(Rk)
    assert.are.equal(0, s:item())
    assert.are.equal(-math.huge, l:item())
    close(A3:logdet(), E.logdet_A3)
    local neg = pt.logdet(T {{0, 1}, {1, 0}}):item()
    assert.is_true(neg ~= neg)
    assert.are.equal(-math.huge, pt.logdet(Rk):item())
    assert.are.equal(1, pt.linalg.det(pt.zeros(0, 0, {dtype = "float64"})):item())
    assert.are.same({2, 0, 0}, pt.linalg.inv(pt.zeros(2, 0, 0)):size())
  end)

  it("cholesky: lower, upper, batched; solves with it", function()
    close(pt.linalg.cholesky(A3), E.chol)
    close(pt.linalg.cholesky(A3, {upper = true}), E.chol_upper)
    close(pt.cholesky(A3, true), E.chol_upper)
    close(A3:cholesky(), E.chol)
    local Lb = pt.linalg.cholesky(pt.stack({A3, A3 * 4}))
    close(Lb[1], E.chol)
    close(Lb[2], pt.tensor(E.chol, {dtype = "float64"}) * 2)
    local L = pt.linalg.cholesky(A3)
    close(pt.cholesky_solve(B32, L), E.chol_solve)
    close(B32:cholesky_solve(L:t(), true), E.chol_solve_up)
  end)

  it("qr: sign-normalised factors, invariants, modes", function()
    for _, case in ipairs {{T43, E.qr_tall_Q, E.qr_tall_R}, {W34, E.qr_wide_Q, E.qr_wide_R}} do
      local A, eQ, eR = case[1], case[2], case[3]
      local Q, R = pt.linalg.qr(A)
      local k = math.min(A:size(1), A:size(2))
      local s = R:diagonal():sign()
      close(Q * s, eQ)
      close(R * s:unsqueeze(2), eR)
      close(Q:t():mm(Q), eye(k))
      close(Q:mm(R), A)
      close(R, R:triu())
    end
    local Q, R = pt.linalg.qr(T43, "complete")
    assert.are.same({4, 4}, Q:size()); assert.are.same({4, 3}, R:size())
    close(Q:t():mm(Q), eye(4)); close(Q:mm(R), T43)
    Q, R = pt.linalg.qr(T43, {mode = "r"})
    assert.are.same({0}, Q:size()); assert.are.same({3, 3}, R:size())
    Q, R = pt.qr(T43, false)
    assert.are.same({4, 4}, Q:size())
    Q, R = T43:qr()
    assert.are.same({4, 3}, Q:size())
    local Qb, Rb = pt.linalg.qr(pt.stack({T43, T43 * 2}))
    close(Qb:matmul(Rb), pt.stack({T43, T43 * 2}))
  end)

  it("eigh and eigvalsh: values, sign-normalised vectors, UPLO", function()
    local L, V = pt.linalg.eigh(A3)
    close(L, E.eigh_L)
    close(normcols(V), E.eigh_V)
    close(V:mm(eye(3) * L):mm(V:t()), A3)
    close(pt.linalg.eigvalsh(N3, "U"), E.eigh_U_L)
    close(pt.linalg.eigvalsh(N3, {UPLO = "L"}), E.eigh_L_L)
    local Lb = pt.linalg.eigvalsh(pt.stack({A3, A3 * 2}))
    close(Lb[2], pt.tensor(E.eigh_L, {dtype = "float64"}) * 2)
  end)

  it("svd, svdvals and torch.svd", function()
    local U, S, Vh = pt.linalg.svd(T43, false)
    close(S, E.svd_S)
    close(normcols(U), E.svd_U)
    close(normrows(Vh), E.svd_Vh)
    close((U * S):mm(Vh), T43)
    U, S, Vh = pt.linalg.svd(T43)
    assert.are.same({4, 4}, U:size()); assert.are.same({3, 3}, Vh:size())
    close(U:t():mm(U), eye(4))
    close(pt.linalg.svdvals(W34), E.svdvals_W)
    local U2, S2, V2 = pt.svd(T43)
    assert.are.same({4, 3}, U2:size()); assert.are.same({3, 3}, V2:size())
    close(normcols(V2), E.tsvd_V)
    U2, S2, V2 = T43:svd(true, false)
    assert.are.same({4, 4}, U2:size()); assert.are.same({3, 3}, V2:size())
    assert.are.equal(0, U2:abs():sum():item())
    close(S2, E.svd_S)
    local Sb = pt.linalg.svdvals(pt.stack({W34, W34 * 3}))
    close(Sb[2], pt.tensor(E.svdvals_W, {dtype = "float64"}) * 3)
  end)

  it("lstsq with each driver: solution, residuals, rank, singular values", function()
    for _, d in ipairs {"gels", "gelsy", "gelsd", "gelss"} do
      local x, res, rank, sv = pt.linalg.lstsq(T43, B42, {driver = d})
      local e = E["lstsq_" .. d]
      close(x, e[1])
      close(res, e[2])
      assert.are.same(e[3], rank:dim() == 0 and rank:item() or rank:tolist())
      assert.are.equal("int64", rank:dtype())
      close(sv, e[4])
    end
    close(pt.linalg.lstsq(W34, b3, nil, {driver = "gelsd"}), E.lstsq_wide)
    local x, _, rank = pt.linalg.lstsq(Rk, T {{1}, {2}, {3}}, {driver = "gelsd"})
    close(x, E.lstsq_rankdef[1])
    assert.are.equal(E.lstsq_rankdef[2], rank:item())
    local xb = pt.linalg.lstsq(pt.stack({T43, T43}), B42:expand(2, 4, 2))
    close(xb[2], E.lstsq_gelsy[1])
  end)

  it("pinv, pinverse and matrix_rank", function()
    close(pt.linalg.pinv(T43), E.pinv_T)
    close(pt.linalg.pinv(Rk), E.pinv_Rk)
    close(pt.linalg.pinv(A3, {hermitian = true}), E.pinv_herm)
    close(T43:pinverse(), E.pinv_T)
    assert.are.same(E.rank, {pt.linalg.matrix_rank(Rk):item(), pt.linalg.matrix_rank(T43):item(),
                             pt.linalg.matrix_rank(Rk, {atol = 20}):item(), pt.linalg.matrix_rank(Rk, {rtol = 0.2}):item()})
    assert.are.equal("int64", pt.linalg.matrix_rank(Rk):dtype())
    local D = T {{1, 0, 0}, {0, 0, 0}, {0, 0, 2}}
    assert.are.same({3, 2}, pt.linalg.matrix_rank(pt.stack({A3, D}), {hermitian = true}):tolist())
  end)

  it("vector_norm, matrix_norm and norm", function()
    local x = T {{1, -2, 0}, {3, 0.5, -4}}
    local got = {}
    for i, ord in ipairs {2, 1, 3, 0.5, math.huge, -math.huge, 0, -1} do got[i] = pt.linalg.vector_norm(x, ord):item() end
    close(got, E.vn)
    close(pt.linalg.vector_norm(x, 2, 2), E.vn_dim)
    close(pt.linalg.vector_norm(x, {ord = 1, dim = 1, keepdim = true}), E.vn_dim_keep)
    assert.are.same({1, 3}, pt.linalg.vector_norm(x, 1, {1}, true):size())
    got = {}
    for i, ord in ipairs {"fro", "nuc", 2, -2, 1, -1, math.huge, -math.huge} do got[i] = pt.linalg.matrix_norm(N3, ord):item() end
    close(got, E.mn)
    local X3 = pt.arange(24, {dtype = "float64"}):reshape(2, 3, 4) - 10
    close(pt.linalg.matrix_norm(X3, 1, {1, 3}), E.mn_dims)
    close(pt.linalg.matrix_norm(X3, "nuc", {3, 1}, true), E.mn_dims_keep_nuc)
    assert.are.same({1, 3, 1}, pt.linalg.matrix_norm(X3, "nuc", {3, 1}, true):size())
    close({pt.linalg.norm(X3):item(), pt.linalg.norm(N3, 2):item(), pt.linalg.norm(b3, 3):item()}, E.norm)
    close(pt.linalg.norm(X3, nil, 2), E.norm_dim)
    close(pt.linalg.norm(X3, "fro", {1, 2}), E.norm_dims)
  end)

  it("matrix_power, multi_dot, cross, trace", function()
    close(pt.linalg.matrix_power(N3, 3), E.mpow3)
    close(N3:matrix_power(-2), E.mpow_m2)
    close(pt.matrix_power(N3, 0), eye(3))
    close(pt.linalg.matrix_power(pt.stack({N3, A3}), 1), pt.stack({N3, A3}))
    local v = pt.linalg.multi_dot({b3, N3, A3, B32})
    assert.are.same({2}, v:size())
    close(v, E.mdot)
    close(pt.linalg.multi_dot({T43, W34, T43}), E.mdot2)
    assert.are.same({}, pt.linalg.multi_dot({b3, N3, b3}):size())
    close(pt.linalg.cross(T {{1, 2, 3}, {0, 1, 0}}, T {{4, 5, 6}}), E.cross)
    close(pt.linalg.cross(T {{1, 4}, {2, 5}, {3, 6}}, T {{4, 1}, {5, 2}, {6, 3}}, 1),
          T {{-3, 3}, {6, -6}, {-3, 3}})
    assert.are.equal(11, N3:trace():item())
    local ti = pt.trace(pt.tensor({{1, 2}, {3, 4}}, {dtype = "int64"}))
    assert.are.equal("int64", ti:dtype()); assert.are.equal(5, ti:item())
  end)

  it("solve_triangular and triangular_solve", function()
    local U3 = N3:triu() + eye(3)
    close(pt.linalg.solve_triangular(U3, B32, {upper = true}), E.st_upper)
    -- the other triangle is not read
    close(pt.linalg.solve_triangular(U3 + T {{0, 0, 0}, {9, 0, 0}, {9, 9, 0}}, B32, {upper = true}), E.st_upper)
    close(pt.linalg.solve_triangular(A3:tril(), B32:t(), {upper = false, left = false}), E.st_lower_right)
    close(pt.linalg.solve_triangular(A3, B32, {upper = false, unitriangular = true}), E.st_unit)
    local X, C = pt.triangular_solve(B32, U3, true, true)
    close(X, E.trisolve_T)
    close(C, U3)
    X = B32:triangular_solve(U3, {transpose = true})
    close(X, E.trisolve_T)
  end)

  it("float32 in, float32 out (factorised in float32, by LAPACK's s* routines as torch)", function()
    local N = N3:float()
    local r = pt.linalg.inv(N)
    assert.are.equal("float32", r:dtype())
    close32(r, E.f32_inv)
    close32(pt.linalg.det(N):item(), E.f32_det)
    local s = pt.linalg.svdvals(T43:float())
    assert.are.equal("float32", s:dtype())
    close32(s, E.f32_svdvals)
    local Q, R = pt.linalg.qr(T43:float())
    assert.are.equal("float32", Q:dtype()); assert.are.equal("float32", R:dtype())
    local w, V = pt.linalg.eigh(A3:float())
    assert.are.equal("float32", w:dtype()); assert.are.equal("float32", V:dtype())
    assert.are.equal("float32", pt.linalg.solve(N, b3:float()):dtype())
    assert.are.equal("float32", pt.linalg.vector_norm(N):dtype())
  end)

  it("float32 values against torch's float32", function()
    local F = function(t) return t:float() end
    close32(pt.linalg.solve(F(N3), F(B32)), E.f32_solve)
    close32(pt.linalg.solve(F(NB), F(pt.stack({B32, B32 * 2}))), E.f32_solve_batch)
    close32(pt.linalg.solve(F(N3), F(B32:t()), {left = false}), pt.linalg.solve(N3, B32:t(), {left = false}))
    close32(pt.linalg.cholesky(F(A3)), E.f32_chol)
    close32(pt.linalg.cholesky(F(A3), {upper = true}), E.f32_chol_upper)
    for _, c in ipairs {{T43, "tall"}, {W34, "wide"}} do
      local Q, R = pt.linalg.qr(F(c[1]))
      local sg = R:diagonal():sign()
      close32(Q * sg, E["f32_qr_" .. c[2] .. "_Q"])
      close32(R * sg:unsqueeze(2), E["f32_qr_" .. c[2] .. "_R"])
      local U, S, Vh = pt.linalg.svd(F(c[1]), false)
      close32(S, E["f32_svd_" .. c[2] .. "_S"])
      close32(normcols(U), E["f32_svd_" .. c[2] .. "_U"])
      close32(normrows(Vh), E["f32_svd_" .. c[2] .. "_Vh"])
      close32(pt.linalg.pinv(F(c[1])), E["f32_pinv_" .. (c[2] == "tall" and "T" or "W")])
    end
    close32(pt.linalg.svdvals(F(T43)), E.f32_svdvals_T)
    local L, V = pt.linalg.eigh(F(A3))
    close32(L, E.f32_eigh_L)
    close32(normcols(V), E.f32_eigh_V)
    close32(pt.linalg.eigvalsh(F(N3), "U"), E.f32_eigvalsh_U)
    local sg, la = pt.linalg.slogdet(F(N3))
    close32({sg:item(), la:item()}, E.f32_slogdet)
    for _, d in ipairs {"gels", "gelsy", "gelsd", "gelss"} do
      local x, res, rank, sv = pt.linalg.lstsq(F(T43), F(B42), {driver = d})
      local e = E["f32_lstsq_" .. d]
      close32(x, e[1]); close32(res, e[2]); close32(sv, e[4])
      assert.are.same(e[3], rank:dim() == 0 and rank:item() or rank:tolist())
      assert.are.equal("float32", x:dtype())
    end
    close32(pt.linalg.lstsq(F(W34), F(b3), nil, {driver = "gelsd"}), E.f32_lstsq_wide)
    close32(pt.linalg.pinv(F(A3), {hermitian = true}), E.f32_pinv_herm)
    assert.are.same(E.f32_rank, {pt.linalg.matrix_rank(F(Rk)):item(), pt.linalg.matrix_rank(F(T43)):item(),
                                 pt.linalg.matrix_rank(F(Rk:t())):item(),
                                 pt.linalg.matrix_rank(F(A3), {hermitian = true}):item()})
    close32(pt.linalg.solve_triangular(F(N3:triu() + eye(3)), F(B32), {upper = true}), E.f32_st_upper)
  end)

  it("float32 invariants: batches, complete QR, full SVD, singular det, both Cholesky triangles", function()
    pt.manual_seed(3)
    local X = pt.randn(3, 6, 4)
    local Q, R = pt.linalg.qr(X, "complete")
    assert.are.same({3, 6, 6}, Q:size()); assert.are.same({3, 6, 4}, R:size())
    close32(Q:matmul(Q:transpose(2, 3)), pt.eye(6):expand(3, 6, 6))
    close32(Q:matmul(R), X)
    close32(R, R:triu())
    for _, shape in ipairs {{3, 6, 4}, {3, 4, 6}, {2, 5, 5}} do
      local Y = pt.randn(table.unpack(shape))
      local U, S, Vh = pt.linalg.svd(Y)
      local m, n = shape[2], shape[3]
      assert.are.same({shape[1], m, m}, U:size()); assert.are.same({shape[1], n, n}, Vh:size())
      close32(U:matmul(U:transpose(2, 3)), pt.eye(m):expand(shape[1], m, m))
      close32(Vh:matmul(Vh:transpose(2, 3)), pt.eye(n):expand(shape[1], n, n))
      local k = math.min(m, n)
      close32((U:narrow(3, 1, k) * S:unsqueeze(2)):matmul(Vh:narrow(2, 1, k)), Y)
      close32(pt.linalg.svdvals(Y), pt.linalg.svdvals(Y:double()))
      close32(pt.linalg.pinv(Y), pt.linalg.pinv(Y:double()), 1e-4)
    end
    local P = pt.randn(4, 5, 5)
    P = P:matmul(P:transpose(2, 3)) + pt.eye(5) * 5
    local L = pt.linalg.cholesky(P)
    close32(L:matmul(L:transpose(2, 3)), P)
    local U = pt.linalg.cholesky(P, {upper = true})
    close32(U, L:transpose(2, 3))
    local w, V = pt.linalg.eigh(P, "U")
    close32(V:matmul(w:unsqueeze(3) * V:transpose(2, 3)), P, 1e-4)
    close32(pt.linalg.inv(P):matmul(P), pt.eye(5):expand(4, 5, 5), 1e-4)
    close32(pt.linalg.det(P), pt.linalg.det(P:double()), 1e-4)
    assert.are.equal(0, pt.linalg.det(Rk:float()):item())
    local s, l = pt.linalg.slogdet(Rk:float())
    assert.are.equal(0, s:item()); assert.are.equal(-math.huge, l:item())
    local x = pt.linalg.solve(P, pt.randn(2, 1, 5, 3))
    assert.are.same({2, 4, 5, 3}, x:size())
  end)

  it("lstsq with no columns in B: the rank and singular values of A alone", function()
    for _, A in ipairs {T43, T43:float()} do
      local x, res, rank, sv = pt.linalg.lstsq(A, pt.zeros(4, 0, {dtype = A:dtype()}), {driver = "gelsd"})
      assert.are.same({3, 0}, x:size())
      assert.are.equal(3, rank:item())
      close32(sv, E.svd_S)
    end
  end)

  it("NaN input gives NaN results (LAPACK never sees it)", function()
    for _, A in ipairs {T {{0 / 0, 1}, {1, 1}}, pt.tensor({{0 / 0, 1}, {1, 1}})} do
      local d = pt.linalg.det(A):item()
      assert.is_true(d ~= d)
      local i = pt.linalg.inv(A):tolist()
      assert.is_true(i[2][2] ~= i[2][2])
      local x = pt.linalg.solve(pt.stack({A, pt.eye(2, {dtype = A:dtype()}) * 2}), pt.ones(2, 2, {dtype = A:dtype()})):tolist()
      assert.is_true(x[1][1] ~= x[1][1])
      assert.are.equal(0.5, x[2][1])
      local w = pt.linalg.eigvalsh(A):tolist()
      assert.is_true(w[1] ~= w[1])
    end
  end)
end)

describe("pt.linalg gradients (float64 finite differences)", function()
  local function spd(x) return x:mm(x:t()) + eye(x:size(1)) end
  local function r(...) local s = {...}; s[#s + 1] = {dtype = "float64"}; return pt.randn(table.unpack(s)) end
  before_each(function() pt.manual_seed(7) end)

  it("solve (matrix, vector, broadcast, left = false), inv", function()
    assert.is_true(gradcheck(function(a, b) return pt.linalg.solve(a, b) end, {N3, B32}))
    assert.is_true(gradcheck(function(a, b) return pt.linalg.solve(a, b) end, {N3, b3}))
    assert.is_true(gradcheck(function(a, b) return pt.linalg.solve(a, b) end, {NB:unsqueeze(1), r(2, 3, 1)}))
    assert.is_true(gradcheck(function(a, b) return pt.linalg.solve(a, b, {left = false}) end, {N3, r(2, 3)}))
    assert.is_true(gradcheck(function(a) return pt.linalg.inv(a) end, {NB}))
  end)

  it("det (also singular: the cofactor matrix), slogdet, logdet", function()
    assert.is_true(gradcheck(function(a) return pt.linalg.det(a) end, {NB}))
    assert.is_true(gradcheck(function(a) return pt.linalg.det(a) end, {Rk}))
    local a = N3:clone(); a.requires_grad = true
    pt.linalg.det(a):backward()
    close(a.grad, E.g_det)
    assert.is_true(gradcheck(function(x) local _, l = pt.linalg.slogdet(x); return l end, {NB}))
    assert.is_true(gradcheck(function(x) return pt.logdet(x) end, {A3}))
  end)

  it("cholesky (lower and upper)", function()
    assert.is_true(gradcheck(function(x) return pt.linalg.cholesky(spd(x)) end, {r(3, 3)}))
    assert.is_true(gradcheck(function(x) return pt.linalg.cholesky(spd(x), {upper = true}) end, {r(3, 3)}))
    local a = A3:clone(); a.requires_grad = true
    ;(pt.linalg.cholesky(a) * Wt):sum():backward()
    close(a.grad, E.g_chol)
  end)

  it("qr (reduced; tall, square and wide), against torch too", function()
    for _, shape in ipairs {{4, 3}, {3, 3}, {3, 4}} do
      local x = r(shape[1], shape[2])
      assert.is_true(gradcheck(function(a) local q = pt.linalg.qr(a); return q end, {x}))
      assert.is_true(gradcheck(function(a) local _, rr = pt.linalg.qr(a); return rr end, {x}))
    end
    assert.is_true(gradcheck(function(a) local q, rr = pt.linalg.qr(a, "complete"); return q:sum() + rr:sum() end, {r(2, 3)}))
    local a = T43:clone(); a.requires_grad = true
    local Q, R = pt.linalg.qr(a)
    ;((Q * Q) * pt.cat({Wt, Wt}):narrow(1, 1, 4)):sum():add(((R * R) * Wt):sum()):backward()
    close(a.grad, E.g_qr)
    a = W34:clone(); a.requires_grad = true
    Q, R = pt.linalg.qr(a)
    ;((Q * Q) * Wt):sum():add(((R * R) * pt.cat({Wt, Wt}, 2):narrow(2, 1, 4)):sum()):backward()
    close(a.grad, E.g_qr_wide)
  end)

  it("eigh (eigenvalues and eigenvectors), eigvalsh, against torch too", function()
    local sym = function(x) return x + x:transpose(x:dim() - 1, x:dim()) end
    local x = r(4, 4)
    assert.is_true(gradcheck(function(a) local w = pt.linalg.eigh(sym(a)); return w end, {x}))
    assert.is_true(gradcheck(function(a) local _, v = pt.linalg.eigh(sym(a)); return v end, {x}))
    assert.is_true(gradcheck(function(a) local _, v = pt.linalg.eigh(sym(a), "U"); return v end, {x}))
    assert.is_true(gradcheck(function(a) return pt.linalg.eigvalsh(sym(a)) end, {pt.stack({x, x * 2})}))
    local a = A3:clone(); a.requires_grad = true
    local w, V = pt.linalg.eigh(a)
    ;((V * V) * Wt):sum():add((w * Wt[1]):sum()):backward()
    close(a.grad, E.g_eigh)
  end)

  it("svd (U, S, Vh; tall, wide, full_matrices) and svdvals, against torch too", function()
    for _, shape in ipairs {{4, 3}, {3, 3}, {3, 4}} do
      local x = r(shape[1], shape[2])
      for k = 1, 3 do
        assert.is_true(gradcheck(function(a) return ({pt.linalg.svd(a, false)})[k] end, {x}))
      end
      assert.is_true(gradcheck(function(a) return pt.linalg.svdvals(a) end, {x}))
    end
    -- full_matrices: only the first k columns of U count
    assert.is_true(gradcheck(function(a) local u = pt.linalg.svd(a); return u:narrow(2, 1, 2) end, {r(4, 2)}))
    local a = T43:clone(); a.requires_grad = true
    local U, S, Vh = pt.linalg.svd(a, false)
    ;((U * U) * pt.cat({Wt, Wt}):narrow(1, 1, 4)):sum():add(((Vh * Vh) * Wt):sum()):add((S * Wt[2]):sum()):backward()
    close(a.grad, E.g_svd)
    a = W34:clone(); a.requires_grad = true
    U, S, Vh = pt.linalg.svd(a, false)
    ;((Vh * Vh) * pt.cat({Wt, Wt}, 2):narrow(2, 1, 4)):sum():add(((U * U) * Wt):sum()):backward()
    close(a.grad, E.g_svd_wide)
    assert.is_true(gradcheck(function(x) local u, s, v = pt.svd(x); return v end, {r(3, 2)}))
  end)

  it("lstsq and pinv, against torch too", function()
    assert.is_true(gradcheck(function(a, b) return pt.linalg.lstsq(a, b) end, {r(4, 3), r(4, 2)}))
    assert.is_true(gradcheck(function(a, b) return pt.linalg.lstsq(a, b, {driver = "gelsd"}) end, {r(2, 3), r(2)}))
    for _, shape in ipairs {{4, 3}, {3, 3}, {2, 4}} do
      assert.is_true(gradcheck(function(a) return pt.linalg.pinv(a) end, {r(shape[1], shape[2])}))
    end
    assert.is_true(gradcheck(function(a) return pt.linalg.pinv(a + a:t(), {hermitian = true}) end, {r(3, 3)}))
    local a = T43:clone(); a.requires_grad = true
    ;(pt.linalg.pinv(a) * pt.cat({Wt, Wt}, 2):narrow(2, 1, 4)):sum():backward()
    close(a.grad, E.g_pinv)
    local b = B42:clone(); b.requires_grad = true
    a = T43:clone(); a.requires_grad = true
    ;(pt.linalg.lstsq(a, b) * Wt:narrow(2, 1, 2)):sum():backward()
    close(a.grad, E.g_lstsq[1])
    close(b.grad, E.g_lstsq[2])
  end)

  it("float32 inputs: float32 gradients, computed in float64 from the float32 factors", function()
    local W32 = Wt:float()
    local function g32(f, ...)
      local xs = {}
      for i, x in ipairs {...} do xs[i] = x:float(); xs[i].requires_grad = true end
      f(table.unpack(xs)):backward()
      for i = 1, #xs do assert.are.equal("float32", xs[i].grad:dtype()) end
      return table.unpack(xs)
    end
    local function same64(f, ...) -- the float32 gradients against float64's
      local xs = {g32(f, ...)}
      local ys = {}
      for i, x in ipairs {...} do ys[i] = x:clone(); ys[i].requires_grad = true end
      f(table.unpack(ys)):backward()
      for i = 1, #xs do close(xs[i].grad, ys[i].grad, 1e-4) end
    end
    close(g32(function(a) return pt.linalg.det(a) end, N3).grad, E.g_det, 1e-4)
    close(g32(function(a) return (pt.linalg.cholesky(a) * W32):sum() end, A3).grad, E.g_chol, 1e-4)
    close(g32(function(a)
      local w, V = pt.linalg.eigh(a)
      return ((V * V) * W32):sum() + (w * W32[1]):sum()
    end, A3).grad, E.g_eigh, 1e-4)
    close(g32(function(a)
      local U, S, Vh = pt.linalg.svd(a, false)
      return ((U * U) * pt.cat({W32, W32}):narrow(1, 1, 4)):sum() + ((Vh * Vh) * W32):sum() + (S * W32[2]):sum()
    end, T43).grad, E.g_svd, 1e-4)
    close(g32(function(a)
      local Q, R = pt.linalg.qr(a)
      return ((Q * Q) * pt.cat({W32, W32}):narrow(1, 1, 4)):sum() + ((R * R) * W32):sum()
    end, T43).grad, E.g_qr, 1e-4)
    close(g32(function(a) return (pt.linalg.pinv(a) * pt.cat({W32, W32}, 2):narrow(2, 1, 4)):sum() end, T43).grad,
          E.g_pinv, 1e-4)
    local a, b = g32(function(x, y) return (pt.linalg.lstsq(x, y) * W32:narrow(2, 1, 2)):sum() end, T43, B42)
    close(a.grad, E.g_lstsq[1], 1e-4)
    close(b.grad, E.g_lstsq[2], 1e-4)
    close(g32(function(x) return pt.linalg.matrix_norm(x, 2) + pt.linalg.matrix_norm(x, "nuc") end, N3).grad, E.g_mn2, 1e-4)
    same64(function(x, y) return (pt.linalg.solve(x, y) * Wt:narrow(2, 1, 2):to(x:dtype())):sum() end, NB, pt.stack({B32, B32}))
    same64(function(x) return (pt.linalg.inv(x) * Wt:to(x:dtype())):sum() end, NB)
    same64(function(x) local _, l = pt.linalg.slogdet(x); return l:sum() end, NB)
    same64(function(x, y)
      return (pt.linalg.solve_triangular(x, y, {upper = true}) * Wt:narrow(2, 1, 2):to(x:dtype())):sum()
    end, N3:triu() + eye(3), B32)
  end)

  it("vector and matrix norms", function()
    local x = r(3, 4)
    for _, ord in ipairs {2, 1, 3, 0.5, -1, math.huge, -math.huge} do
      assert.is_true(gradcheck(function(a) return pt.linalg.vector_norm(a, ord, 2) end, {x}))
    end
    assert.is_true(gradcheck(function(a) return pt.linalg.vector_norm(a, 2, {1, 3}, true) end, {r(2, 3, 2)}))
    for _, ord in ipairs {"fro", "nuc", 2, -2, 1, -1, math.huge, -math.huge} do
      assert.is_true(gradcheck(function(a) return pt.linalg.matrix_norm(a, ord) end, {r(2, 3, 4)}))
    end
    local a = N3:clone(); a.requires_grad = true
    ;(pt.linalg.matrix_norm(a, 2) + pt.linalg.matrix_norm(a, "nuc")):backward()
    close(a.grad, E.g_mn2)
    -- the 2-norm's gradient at zero is zero, as torch
    local z = pt.zeros(3, {dtype = "float64", requires_grad = true})
    pt.linalg.vector_norm(z):backward()
    close(z.grad, {0, 0, 0})
  end)

  it("matrix_power, multi_dot, cross, trace, solve_triangular, cholesky_solve", function()
    assert.is_true(gradcheck(function(a) return pt.linalg.matrix_power(a, 3) end, {r(3, 3)}))
    assert.is_true(gradcheck(function(a) return pt.linalg.matrix_power(a, -2) end, {N3}))
    assert.is_true(gradcheck(function(a, b, c) return pt.linalg.multi_dot({a, b, c}) end, {r(3), r(3, 4), r(4, 2)}))
    assert.is_true(gradcheck(function(a, b) return pt.linalg.cross(a, b) end, {r(2, 3), r(1, 3)}))
    assert.is_true(gradcheck(function(a) return a:trace() end, {r(3, 4)}))
    local U3 = N3:triu() + eye(3)
    assert.is_true(gradcheck(function(a, b) return pt.linalg.solve_triangular(a, b, {upper = true}) end, {U3, B32}))
    assert.is_true(gradcheck(function(a, b)
      return pt.linalg.solve_triangular(a, b, {upper = false, left = false, unitriangular = true})
    end, {A3, r(2, 3, 3)}))
    assert.is_true(gradcheck(function(b, l) return pt.cholesky_solve(b, l) end, {B32, pt.linalg.cholesky(A3)}))
    local t = N3:clone(); t.requires_grad = true
    t:trace():backward()
    close(t.grad, eye(3))
  end)
end)

describe("pt.linalg errors", function()
  it("singular matrices name the pivot and the batch element", function()
    local S = T {{1, 2}, {2, 4}}
    assert.matches("linalg.solve: the matrix is singular %(U%[2,2%] is zero%)$", err(pt.linalg.solve, S, T {1, 2}))
    local batch = pt.stack({eye(2), S, eye(2), S})
    assert.matches("linalg.solve: the matrix is singular %(U%[2,2%] is zero%), batch element 2$",
                   err(pt.linalg.solve, batch, pt.ones(4, 2, {dtype = "float64"})))
    assert.matches("linalg.inv: the matrix is singular %(U%[2,2%] is zero%), batch element 2$", err(pt.linalg.inv, batch))
    assert.matches("inverse: the matrix is singular", err(pt.inverse, S))
    assert.matches("linalg.matrix_power: the matrix is singular", err(pt.linalg.matrix_power, S, -1))
  end)

  it("cholesky of a matrix that is not positive-definite", function()
    assert.matches("linalg.cholesky: the matrix is not positive%-definite %(the leading minor of order 2 is not " ..
                   "positive%-definite%)$", err(pt.linalg.cholesky, T {{1, 2}, {2, 1}}))
    assert.matches("cholesky: the matrix is not positive%-definite %(the leading minor of order 1 is not " ..
                   "positive%-definite%), batch element 2$", err(pt.cholesky, pt.stack({eye(2), -eye(2)})))
  end)

  it("float32 inputs give the same messages", function()
    local S = pt.tensor({{1, 2}, {2, 4}})
    local batch = pt.stack({pt.eye(2), S})
    assert.matches("linalg.solve: the matrix is singular %(U%[2,2%] is zero%), batch element 2$",
                   err(pt.linalg.solve, batch, pt.ones(2, 2)))
    assert.matches("linalg.inv: the matrix is singular %(U%[2,2%] is zero%)$", err(pt.linalg.inv, S))
    assert.matches("linalg.cholesky: the matrix is not positive%-definite %(the leading minor of order 2 is not " ..
                   "positive%-definite%), batch element 2$", err(pt.linalg.cholesky, batch))
    assert.matches("linalg.svd: the algorithm failed to converge because the matrix contains non%-finite values, batch element 2",
                   err(pt.linalg.svd, pt.stack({N3:float(), N3:float() / 0})))
    assert.matches("linalg.pinv: the algorithm failed to converge because the matrix contains non%-finite values$",
                   err(pt.linalg.pinv, pt.tensor({{1, 0}, {0, 1 / 0}, {1, 1}})))
    for _, dt in ipairs {"float32", "float64"} do
      assert.matches("linalg.lstsq: the matrix does not have full rank %(diagonal element 2 of its triangular " ..
                     "factor is zero%): use driver gelsy, gelsd or gelss, batch element 2$",
                     err(pt.linalg.lstsq, pt.tensor({{{1, 0}, {0, 1}, {1, 1}}, {{1, 0}, {0, 0}, {1, 0}}}, {dtype = dt}),
                         pt.ones(2, 3, 1, {dtype = dt}), {driver = "gels"}))
    end
    assert.matches("linalg.solve: expected tensors of the same dtype, got float32 and float64",
                   err(pt.linalg.solve, pt.eye(2), eye(2)))
  end)

  it("LAPACKE that cannot be opened, or lacks a routine: every call says why", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write('local pt = require "partrain"\n',
            'print(select(2, pcall(pt.linalg.inv, pt.eye(2))))\n',
            'print(select(2, pcall(pt.linalg.svdvals, pt.eye(2, {dtype = "float64"}))))\n')
    f:close()
    local function run(lib)
      local p = io.popen("PARTRAIN_LAPACKE=" .. support.quote(lib) .. " " .. support.quote(support.exe) .. " " ..
                         support.quote(script) .. " 2>&1")
      local out = p:read("*a")
      p:close()
      return out
    end
    local out = run("/nonexistent/liblapacke.so.3")
    assert.matches("linalg.inv: LAPACK is not available %(/nonexistent/liblapacke.so.3: cannot open", out)
    assert.matches("linalg.svdvals: LAPACK is not available %(/nonexistent/liblapacke.so.3: cannot open", out)
    out = run("libm.so.6")
    assert.matches("linalg.inv: LAPACK is not available %(libm.so.6 has no LAPACKE_sgetrf_work%)", out)
    assert.matches("linalg.svdvals: LAPACK is not available %(libm.so.6 has no LAPACKE_sgetrf_work%)", out)
    os.remove(script)
  end)

  it("shapes", function()
    assert.matches("linalg.inv: expected square matrices, got shape {2,3} %(2 by 3 matrices%)",
                   err(pt.linalg.inv, pt.ones(2, 3)))
    for _, f in ipairs {"det", "slogdet", "cholesky", "eigh", "eigvalsh", "matrix_power"} do
      assert.matches("linalg." .. f .. ": expected square matrices, got shape {2,3}",
                     err(pt.linalg[f], pt.ones(2, 3), f == "matrix_power" and 2 or nil))
    end
    assert.matches("linalg.svd: expected a matrix or a batch of matrices %(2 or more dims%), got shape {3}",
                   err(pt.linalg.svd, pt.ones(3)))
    assert.matches("trace: expected a 2%-D tensor, got shape {2,2,2}", err(pt.trace, pt.ones(2, 2, 2)))
    assert.matches("linalg.solve: A of shape {3,3} and B of shape {2} do not fit A X = B %(3x3 and 2x1%)",
                   err(pt.linalg.solve, eye(3), T {1, 2}))
    assert.matches("linalg.solve: A of shape {3,3} and B of shape {5,3} do not fit A X = B %(3x3 and 5x3%)",
                   err(pt.linalg.solve, eye(3), pt.ones(5, 3, {dtype = "float64"})))
    assert.matches("linalg.solve: A of shape {3,3} and B of shape {3,2} do not fit X A = B %(3x3 and 3x2%)",
                   err(pt.linalg.solve, eye(3), pt.ones(3, 2, {dtype = "float64"}), {left = false}))
    assert.matches("linalg.solve: with left = false B must be a matrix or a batch of matrices, got shape {3}",
                   err(pt.linalg.solve, eye(3), b3, {left = false}))
    assert.matches("linalg.solve: the batch dims of A {2,3,3} and B {4,3,1} cannot be broadcast",
                   err(pt.linalg.solve, pt.stack({eye(3), eye(3)}), pt.ones(4, 3, 1, {dtype = "float64"})))
    assert.matches("linalg.lstsq: A of shape {4,3} and B of shape {3,2} need the same number of rows %(4 and 3%)",
                   err(pt.linalg.lstsq, T43, B32))
    assert.matches("linalg.solve_triangular: B must be a matrix or a batch of matrices %(2 or more dims%), got shape {3}",
                   err(pt.linalg.solve_triangular, eye(3), b3, {upper = true}))
    assert.matches("linalg.solve_triangular: A of shape {3,3} and B of shape {2,3} do not fit A X = B",
                   err(pt.linalg.solve_triangular, eye(3), pt.ones(2, 3, {dtype = "float64"}), {upper = true}))
    assert.matches("linalg.multi_dot: expected at least 2 tensors, got 1", err(pt.linalg.multi_dot, {N3}))
    assert.matches("linalg.multi_dot: tensors 1 and 2 of shapes {4,3} and {4,3} cannot be multiplied",
                   err(pt.linalg.multi_dot, {T43, T43}))
    assert.matches("linalg.multi_dot: tensor 1 must be 1%-D or 2%-D %(the first and the last may be vectors%), got shape {2,3,3}",
                   err(pt.linalg.multi_dot, {NB, N3}))
    assert.matches("linalg.multi_dot: tensor 2 must be 2%-D, got shape {3}", err(pt.linalg.multi_dot, {N3, b3, N3}))
    assert.matches("linalg.cross: inputs must have the same number of dims, got shapes {2,3} and {4,1,3}",
                   err(pt.linalg.cross, pt.ones(2, 3), pt.ones(4, 1, 3)))
    assert.matches("linalg.cross: dimension 2 must have size 3 in both inputs, got shapes {2,2} and {2,3}",
                   err(pt.linalg.cross, pt.ones(2, 2), pt.ones(2, 3)))
    assert.matches("linalg.cross: shapes {2,3} and {4,3} cannot be broadcast", err(pt.linalg.cross, pt.ones(2, 3), pt.ones(4, 3)))
    assert.matches("linalg.matrix_norm: expected a matrix or a batch of matrices %(2 or more dims%), got shape {3}",
                   err(pt.linalg.matrix_norm, b3))
    assert.matches("linalg.norm: without dim, an ord needs a 1%-D or 2%-D input, got shape {2,3,4}",
                   err(pt.linalg.norm, pt.ones(2, 3, 4), 2))
    assert.matches("linalg.pinv: hermitian = true needs square matrices, got shape {4,3}",
                   err(pt.linalg.pinv, T43, {hermitian = true}))
  end)

  it("dtypes, options and arguments", function()
    assert.matches("linalg.det: expected a float32 or float64 tensor, got int64 %(convert with float%(%)%)",
                   err(pt.linalg.det, pt.ones(2, 2, {dtype = "int64"})))
    assert.matches("linalg.solve: expected tensors of the same dtype, got float64 and float32",
                   err(pt.linalg.solve, eye(2), pt.ones(2)))
    assert.matches("linalg.qr: mode must be 'reduced', 'complete' or 'r', got 'x'", err(pt.linalg.qr, N3, "x"))
    assert.matches("linalg.eigh: UPLO must be 'L' or 'U', got 'X'", err(pt.linalg.eigh, A3, "X"))
    assert.matches("linalg.lstsq: driver must be 'gels', 'gelsy', 'gelsd' or 'gelss', got 'gelsx'",
                   err(pt.linalg.lstsq, T43, B42, {driver = "gelsx"}))
    assert.matches("linalg.matrix_norm: order 3 is not supported %(use 'fro', 'nuc', inf, %-inf, 1, %-1, 2 or %-2%)",
                   err(pt.linalg.matrix_norm, N3, 3))
    assert.matches("linalg.matrix_norm: ord must be a number, 'fro' or 'nuc', got 'frob'", err(pt.linalg.matrix_norm, N3, "frob"))
    assert.matches("linalg.matrix_norm: dimension %-2 appears more than once in the list of dimensions",
                   err(pt.linalg.matrix_norm, N3, "fro", {1, -2}))
    assert.matches("linalg.matrix_norm: dim must be a list of 2 dims", err(pt.linalg.matrix_norm, N3, "fro", 1))
    assert.matches("linalg.vector_norm: ord must be a number, got string", err(pt.linalg.vector_norm, b3, "fro"))
    assert.matches("linalg.vector_norm: dimension %-2 appears more than once", err(pt.linalg.vector_norm, N3, 2, {1, -2}))
    assert.matches("linalg.vector_norm: cannot compute the inf norm of an empty reduction",
                   err(pt.linalg.vector_norm, pt.zeros(2, 0), math.huge, 2))
    assert.matches("linalg.norm: ord 'nuc' is a matrix norm", err(pt.linalg.norm, N3, "nuc", 1))
    assert.matches("linalg.solve_triangular: option 'upper' is required", err(pt.linalg.solve_triangular, eye(2), eye(2)))
    assert.matches("linalg.solve: unknown option 'lft'", err(pt.linalg.solve, eye(2), eye(2), {lft = true}))
    assert.matches("linalg.svd: full_matrices must be a boolean, got number", err(pt.linalg.svd, N3, 1))
    assert.matches("linalg.inv: unexpected argument #2", err(pt.linalg.inv, N3, 1))
    assert.matches("linalg.matrix_power: n must be an integer, got number", err(pt.linalg.matrix_power, N3, 1.5))
    assert.matches("linalg.pinv: give rcond or rtol, not both", err(pt.linalg.pinv, N3, 0.1, {rtol = 0.1}))
    assert.matches("linalg.multi_dot: expected a list of tensors, got userdata", err(pt.linalg.multi_dot, N3))
    assert.matches("linalg.svd: the algorithm failed to converge because the matrix contains non%-finite values, batch element 2",
                   err(pt.linalg.svd, pt.stack({N3, N3 / 0})))
  end)

  it("backward through qr where torch refuses", function()
    local a = T43:clone(); a.requires_grad = true
    local _, R = pt.linalg.qr(a, "r")
    assert.matches("linalg.qr: the derivative depends on Q, which mode 'r' does not compute",
                   err(function() R:sum():backward() end))
    local Q = pt.linalg.qr(a, "complete")
    assert.matches("linalg.qr: the QR decomposition is not differentiable when mode is 'complete' and the matrix " ..
                   "has more rows than columns %(4 > 3%)", err(function() Q:sum():backward() end))
  end)

  it("help texts", function()
    local help = require "partrain.help"
    for name, f in pairs(pt.linalg) do
      assert.is_truthy(pt._docs[f], "no help for pt.linalg." .. name)
      assert.matches("^pt%.linalg%." .. name .. "%(", help.text(f))
    end
    for _, name in ipairs {"det", "inverse", "logdet", "slogdet", "pinverse", "matrix_power", "svd", "qr",
                           "cholesky", "cholesky_solve", "triangular_solve", "trace"} do
      assert.is_truthy(pt._docs[pt[name]], name)
      assert.are.equal(pt[name], pt.Tensor[name])
    end
    assert.matches("^pt%.linalg: linear algebra", help.text(pt.linalg))
  end)
end)

-- values from torch 1.13: torch.linalg.vector_norm(A, ord=1) = 6, torch.linalg.norm(A, ord=1,
-- keepdim=True) = [[4]], torch.linalg.matrix_norm(A, ord=1, dim=(0, 1), keepdim=True) = [[4]],
-- torch.svd(A, some=True, compute_uv=False) gives zero U and V
describe("options given in the trailing table are not read from the slots of earlier options", function()
  local A = pt.tensor({{2, 1}, {0, 3}}, {dtype = "float64"})
  it("reads dim and keepdim from the table, not the pushed ord", function()
    assert.are.equal(6, pt.linalg.vector_norm(A, {ord = 1}):item())
    local n = pt.linalg.norm(A, {ord = 1, keepdim = true})
    assert.are.same({1, 1}, n:size())
    assert.are.equal(4, n:item())
    local m = pt.linalg.matrix_norm(A, {ord = 1, dim = {1, 2}, keepdim = true})
    assert.are.same({1, 1}, m:size())
    assert.are.equal(4, m:item())
  end)
  it("triangular_solve reads transpose from the table, not the pushed upper", function()
    -- torch.triangular_solve(b, A, upper=False, transpose=True).solution = [[1/6], [2/3]]
    local L = pt.tensor({{2, 0}, {1, 3}}, {dtype = "float64"})
    local x = pt.triangular_solve(pt.tensor({{1}, {2}}, {dtype = "float64"}), L, {upper = false, transpose = true})
    assert.is_true(pt.allclose(x, pt.tensor({{1 / 6}, {2 / 3}}, {dtype = "float64"}), {atol = 1e-15}))
  end)
  it("svd's compute_uv = false with some = true gives zero U and V", function()
    local u, _, v = pt.svd(A, {some = true, compute_uv = false})
    assert.are.equal(0, u:abs():sum():item())
    assert.are.equal(0, v:abs():sum():item())
  end)
end)
