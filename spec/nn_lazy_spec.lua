-- nn_lazy.lua: the lazy convolutions and normalisations, nn.utils.fusion / skip_init / stateless /
-- convert_parameters, nn.SyncBatchNorm, FractionalMaxPool2d/3d (F.fractional_max_pool2d/3d) and
-- AdaptiveLogSoftmaxWithLoss, CrossMapLRN2d, NLLLoss2d, F.conv_tbc, nn.utils.parametrize and
-- nn.utils.parametrizations.
--
-- Reference values (R below) were computed once with /usr/bin/python3 and torch 1.13.0a0 (the
-- script is not run at test time). sinx(shape, a, b) = sin(arange(n) * a + b) in float64, reshaped;
-- torch's 0-based indices and classes are printed + 1:
--[==[
S2 = [[[0.13, 0.91], [0.5, 0.27], [0.77, 0.02]], [[0.35, 0.64], [0.99, 0.48], [0.21, 0.83]]]   (float64)
x = sinx((2, 3, 7, 9), 1.7)
F.fractional_max_pool2d(x, (2, 3), output_size=(4, 3), return_indices=True, _random_samples=S2)  -> f2_64_*
F.fractional_max_pool2d(x.float(), 2, output_ratio=(0.5, 0.7), return_indices=True, _random_samples=S2.float())
F.fractional_max_pool2d(sinx((3, 7, 9), 0.9), 3, output_size=3, return_indices=True, _random_samples=S2[:1])
S3 = [[[0.13, 0.91, 0.44], [0.5, 0.27, 0.66]]]; x3 = sinx((1, 2, 5, 6, 7), 1.3)
F.fractional_max_pool3d(x3, 2, output_size=(3, 4, 3), ...S3); F.fractional_max_pool3d(x3.float(), (2, 3, 2), output_ratio=0.6, ...)
cw = sinx((3, 2, 2, 2), 0.7); cb = sinx((3,), 1.1, 0.3); rm = [0.1, -0.2, 0.3]; rv = [0.5, 1.5, 2.0]
bw = [1.2, 0.8, -0.5]; bb = [0.05, -0.1, 0.2]
fuse_conv_bn_weights(cw, cb, rm, rv, 1e-3, bw, bb); (cw, None, rm, rv, 1e-5, None, None);
  (sinx((2, 3, 2, 2), 0.7), cb, rm, rv, 1e-3, bw, bb, transpose=True)
fuse_linear_bn_weights(sinx((3, 4), 0.4), sinx((3,), 0.9), rm, rv, 1e-3, bw, bb)
nn.BatchNorm2d(3).double()(sinx((2, 3, 2, 2), 0.8)) and its running stats (SyncBatchNorm needs a GPU in
  torch 1.13; on one device it is this); eval with running stats rm, rv; BatchNorm3d on sinx((2, 3, 2, 1, 2), 0.8)
nn.LazyBatchNorm1d().double()(sinx((4, 3), 0.5)); nn.LazyInstanceNorm2d(affine=True).double()(sinx((2, 3, 2, 3), 0.6))
a = nn.AdaptiveLogSoftmaxWithLoss(4, 7, [2, 4], div_value=2.0, head_bias=True).double()
  the k-th of named_parameters() (head.weight, head.bias, tail.0.0.weight, tail.0.1.weight, tail.1.0.weight,
  tail.1.1.weight) set to sinx(shape, 0.3 + 0.1 * k, 0.2 * k)
xa = cos(arange(20) * 0.9).reshape(5, 4); ta = [0, 3, 6, 2, 5]; r = a(xa, ta): output, loss, xa's gradient
  of loss, a.log_prob(xa), a.predict(xa); xp = cos(arange(24) * 2.3).reshape(6, 4) * 3: a.predict(xp),
  a.log_prob(xp).argmax(1); a(xa[1], ta[1]) = -2.4140804586419056 (loss 2.4140804586419056)
and (R.lrn*, R.tbc):
nn.CrossMapLRN2d(s, alpha=0.3, beta=0.6, k=1.5)(sinx((2, 6, 2, 2), 0.7)) for s in 1, 3, 4, 5
F.conv_tbc(sinx((5, 2, 3), 0.5), sinx((2, 3, 4), 0.8), sinx((4,), 1.3), 1)
and (R.p_*): parametrize with Sym (forward X.triu() + X.triu(1).T, right_inverse A.triu()) and Scale (X * s,
  s = Parameter(2.0)): m = nn.Linear(3, 3).double(), weight sinx((3, 3), 0.7), bias sinx((3,), 1.1);
  register_parametrization(m, "weight", Sym()): original, m.weight; then Scale() chained; y = m(sinx((2, 3), 0.4));
  y.pow(2).sum().backward(): original's and s's gradients; remove_parametrizations(m, "weight") leaves m.weight
and (R.o_*, R.sn_*): lin(i, o, a) = nn.Linear(i, o).double() with weight fr((o, i), a), bias 0, where
  fr(shape, a) = sin(arange(n) ** 2 * a + 1) reshaped (full rank; sinx matrices have rank 2);
  m = lin(3, 3, 0.7); PZ.orthogonal(m): m.weight; m(sinx((2, 3), 0.4)).pow(3).sum().backward(): original's grad;
  PZ.orthogonal(lin(5, 3, 0.9)) (householder) and with orthogonal_map="cayley"; cayley on lin(3, 3, 0.7) and the
  same gradient; PZ.orthogonal(lin(5, 3, 0.9), use_trivialization=False): original, weight, and the gradient of
  m(sinx((2, 5), 0.3)).pow(3).sum(); lin(3, 3, 0.7) orthogonal then m.weight = fr((3, 3), 0.25)
  s = lin(4, 3, 0.6); PZ.spectral_norm(s); _u, _v set to sinx((3,), 0.5, 0.1), sinx((4,), 0.8, 0.2) normalized;
  s.weight, _u after it, the gradient of s(sinx((2, 4), 0.3)).pow(2).sum() on original, then s.eval(); s.weight
  nn.ConvTranspose1d(2, 3, 2) with weight sinx((2, 3, 2), 0.45), spectral_norm, the same _u, _v: c.weight
  spectral_norm of a 1-D bias [3, 4]: [0.6, 0.8]
]==]
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local optim = pt.optim
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)
local assert_error = support.assert_error
local help = require "partrain.help"

local F64 = {dtype = "float64"}
local I64 = {dtype = "int64"}
local function sinx(shape, a, b)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return (pt.arange(0, n, F64) * a + (b or 0)):sin():reshape(shape)
end
local function maxdiff(a, b) return (a - b):abs():max():item() end

local R = {}
R.f2_64_idx = {{{{2, 13, 17}, {28, 24, 35}, {39, 31, 35}, {46, 50, 61}}, {{2, 13, 9}, {20, 24, 35}, {39, 31, 35}, {46, 50, 61}}, {{2, 5, 9}, {20, 24, 16}, {39, 31, 35}, {57, 50, 61}}}, {{{1, 5, 9}, {20, 24, 16}, {38, 31, 35}, {57, 49, 53}}, {{1, 5, 16}, {20, 31, 27}, {38, 42, 53}, {57, 49, 53}}, {{1, 5, 16}, {20, 23, 27}, {38, 42, 34}, {57, 49, 53}}}}
R.f2_64_sum = 66.32777945299767
R.f2_32_idx = {{{{2, 2, 13, 6, 6, 17}, {28, 20, 31, 24, 24, 35}, {46, 57, 57, 50, 61, 54}}, {{2, 13, 13, 5, 17, 9}, {28, 39, 31, 42, 35, 35}, {46, 57, 50, 50, 61, 53}}, {{2, 2, 13, 5, 16, 9}, {20, 20, 31, 24, 24, 35}, {46, 57, 57, 50, 61, 53}}}, {{{1, 12, 5, 5, 16, 9}, {38, 38, 31, 42, 35, 35}, {46, 57, 49, 50, 53, 53}}, {{1, 12, 5, 5, 16, 9}, {20, 20, 31, 23, 34, 27}, {46, 57, 49, 60, 60, 53}}, {{1, 12, 5, 5, 16, 8}, {20, 20, 23, 23, 34, 27}, {56, 57, 49, 60, 60, 53}}}}
R.f2_32_shape = {2, 3, 3, 6}
R.f2_u_idx = {{{3, 24, 17}, {38, 24, 45}, {38, 59, 45}}, {{3, 24, 17}, {37, 24, 44}, {37, 58, 44}}, {{2, 23, 16}, {37, 23, 44}, {37, 58, 44}}}
R.f2_u_y = {{{0.9738476308781951, 0.9611527245021165, 0.9656577765492774}, {0.9513287387867805, 0.9611527245021165, 0.9460125826269081}, {0.9513287387867805, 0.9345794583884147, 0.9460125826269081}}, {{0.9284657227653786, 0.9085567852785591, 0.915452546620805}, {0.9067053587029005, 0.9085567852785591, 0.9136686918591765}, {0.9067053587029005, 0.926818505417785, 0.9136686918591765}}, {{0.9330012680097132, 0.9499602278107335, 0.9445737651362344}, {0.9599259673143185, 0.9499602278107335, 0.9645024265574488}, {0.9599259673143185, 0.9728360549439274, 0.9645024265574488}}}
R.f3_idx = {{{{{2, 46, 7}, {51, 60, 55}, {65, 60, 70}, {36, 31, 41}}, {{51, 94, 55}, {99, 94, 104}, {65, 60, 70}, {113, 123, 118}}, {{128, 171, 181}, {176, 186, 181}, {191, 186, 147}, {205, 157, 210}}}, {{{44, 5, 48}, {58, 53, 63}, {29, 68, 34}, {29, 82, 34}}, {{92, 131, 140}, {92, 145, 140}, {155, 116, 111}, {121, 116, 126}}, {{169, 179, 174}, {184, 145, 140}, {198, 193, 203}, {198, 208, 203}}}}}
R.f3_sum = 69.20870971375842
R.f3_32_idx = {{{{{2, 60, 12, 7}, {65, 60, 12, 70}, {65, 31, 41, 41}}, {{99, 94, 89, 104}, {65, 94, 104, 70}, {65, 123, 118, 70}}, {{128, 186, 181, 181}, {176, 186, 181, 181}, {205, 157, 152, 210}}}, {{{58, 58, 5, 63}, {58, 58, 53, 63}, {29, 24, 82, 34}}, {{92, 87, 145, 140}, {92, 150, 145, 140}, {121, 121, 116, 111}}, {{169, 184, 145, 174}, {184, 150, 145, 140}, {198, 150, 208, 203}}}}}
R.fc_w = {{{{0.0, 1.092182032008204}, {1.670693788547944, 1.4634521510230323}}, {{0.567926099801347, -0.5947044702470108}, {-1.4776362354245196, -1.6656125903788037}}}, {{{-0.41220426265291554, 0.01097913470420509}, {0.42899887345622606, 0.6452537387294776}}, {{0.5580356883104693, 0.2083647341308907}, {-0.23930341029922586, -0.574423421646686}}}, {{{0.3461050906752827, 0.21848985624497896}, {-0.011884571575516794, -0.23666949968249315}}, {{-0.3501450640258507, -0.29894193359030446}, {-0.10714174069067511, 0.1350488869916575}}}}
R.fc_b = {0.38147748166569134, 0.6740745392612111, 0.09450053302511134}
R.fc_w2 = {{{{0.0, 0.9110522799349243}, {1.3936224370318953, 1.2207501860415038}}, {{0.4737400478079646, -0.49607743730210047}, {-1.2325819522252082, -1.3893839153925265}}}, {{{-0.5154253333949104, 0.013728446496118525}, {0.536425523487129, 0.8068332949021263}}, {{0.6977747606066576, 0.2605418533664855}, {-0.2992279585907021, -0.7182661860568563}}}, {{{-0.6923814813182015, -0.43708785104761555}, {0.023775025256732415, 0.47345613568782097}}, {{0.7004634275487372, 0.5980318243905106}, {0.21433650971640586, -0.27016461457767277}}}}
R.fc_b2 = {-0.14141994204496, 0.1632987718572129, -0.2121315040278671}
R.ft_w = {{{{0.0, 1.092182032008204}, {1.670693788547944, 1.4634521510230323}}, {{0.21874044207038779, -0.22905430612991592}, {-0.5691212350850589, -0.6415215544150964}}, {{0.22313068448814483, -0.005943125929533615}, {-0.2322217913586481, -0.34928291974620734}}}, {{{1.4488543088440105, 0.5409871611808413}, {-0.6213147015432468, -1.491402551821535}}, {{-0.6393831221801562, -0.4036309497154265}, {0.021955165308032664, 0.4372154230282021}}, {{-0.3501450640258507, -0.29894193359030446}, {-0.10714174069067511, 0.1350488869916575}}}}
R.ft_b = {0.38147748166569134, 0.6740745392612111, 0.09450053302511134}
R.fl_w = {{0.0, 0.6602049661623207, 1.2161780847582164, 1.580143425101535}, {0.6527012125934297, 0.5937527074457608, 0.4410637052303634, 0.21874044207038748}, {0.020633218671758, 0.1564155041444604, 0.2675032207777602, 0.33635806071261365}}
R.fl_b = {-0.11953617599220494, 0.5420924525584517, -0.038181576687372876}
R.sbn_y = {{{{0.022382741397263747, 1.045808126204975}, {1.4484374056207379, 0.986041061510179}}, {{-0.10118431921101043, -1.0980925407102426}, {-1.4397482857111104, -0.9189077638700948}}, {{0.17969866644650495, 1.1465603567937026}, {1.4259877979951945, 0.8484840537695754}}}, {{{-0.2263228253620609, -1.1586466433475304}, {-1.3745738844191187, -0.7431259816044453}}, {{0.31258426668541617, 1.2084691876547522}, {1.3604771917430347, 0.6764022634192548}}, {{-0.39782145269481956, -1.254084778586803}, {-1.3415832280259452, -0.60724141569741}}}}
R.sbn_rm = {-0.0015688877871026076, 0.001251502748968021, -0.0009298495252724637}
R.sbn_rv = {0.9561487791626472, 0.9560940070766172, 0.9560510754544594}
R.sbn_eval = {{{{-0.14141994204496, 0.8730646259611358}, {1.2721764680730552, 0.8138196964255208}}, {{0.11563664220750977, -0.4546258182540811}, {-0.6500635140953553, -0.35212656153769684}}, {{-0.1297189769672431, 0.3490750214951506}, {0.4874486722341044, 0.2014663755050911}}}, {{{-0.3879527750193445, -1.3121316548587303}, {-1.5261725191279079, -0.9002410517101258}}, {{0.3523251224170102, 0.8647991178206131}, {0.9517524165815324, 0.5604403144711322}}, {{-0.41570938262377244, -0.8397346032251904}, {-0.8830642054676606, -0.5194150340575886}}}}
R.sbn5_y = {{{{{0.022382741397263747, 1.045808126204975}}, {{1.4484374056207379, 0.986041061510179}}}, {{{-0.10118431921101043, -1.0980925407102426}}, {{-1.4397482857111104, -0.9189077638700948}}}, {{{0.17969866644650495, 1.1465603567937026}}, {{1.4259877979951945, 0.8484840537695754}}}}, {{{{-0.2263228253620609, -1.1586466433475304}}, {{-1.3745738844191187, -0.7431259816044453}}}, {{{0.31258426668541617, 1.2084691876547522}}, {{1.3604771917430347, 0.6764022634192548}}}, {{{-0.39782145269481956, -1.254084778586803}}, {{-1.3415832280259452, -0.60724141569741}}}}}
R.lbn_y = {{-0.057471271994261636, 0.6347496694221251, 1.1589870704024072}, {1.3660591488894382, 1.2283495257274732, 0.8265089839689417}, {0.1439218449300589, -0.5116658508259608, -1.0278172235065095}, {-1.4525097218252356, -1.3514333443236375, -0.9576788308648395}}
R.lbn_rm = {0.004027121924970617, 0.0019753865769281593, -0.0005599922991616796}
R.lbn_rv = {0.9654663050505983, 0.9699231478004329, 0.9712218018967398}
R.lin_y = {{{{-1.4898957540562723, 0.04566189055038888, 1.0448050716251194}, {1.1585043304887084, 0.3470412448718869, -1.1061167834798302}}, {{0.1494505962878881, -0.8226515109726602, -1.1049299543519167}, {-0.5987767523757014, 0.5189942193866417, 1.857913402025748}}, {{0.7011434256786193, 1.035558997607129, 0.8006003731655144}, {0.07834535967330195, -0.8789015872494701, -1.7367465688750945}}}, {{{-1.1430582021460145, -1.0588587852650655, -0.5357456570263077}, {0.24354271681726367, 1.006778487014801, 1.4873414406053227}}, {{1.4439984762777516, 1.0185887647230876, 0.2867520049944162}, {-0.49586016765926005, -1.0558588054364324, -1.1976202728995629}}, {{-1.6988574982072566, -0.9086455861687374, 0.01683160263709707}, {0.7542782600144602, 1.0460830520678903, 0.7903101696565469}}}}
R.als_out = {-3.0668058488329075, -2.4140804586419056, -1.183867276774118, -3.244745929735478, -1.6530254924844756}
R.als_loss = 2.312505001293777
R.als_grad = {{0.08598902190201452, -0.0035056002432208673, -0.09268707755928757, -0.1735890942823841}, {-0.06692793297072169, -0.01670319206734264, 0.037479712488435055, 0.09277590976835698}, {0.08533132791999093, 0.1021606506202406, 0.09218441941483006, 0.059643638836864965}, {-0.003113930595442683, 0.09858549959463275, 0.1856268715519415, 0.24550091655726886}, {-0.016261381688019865, -0.027362680747371877, -0.015576523329119817, 0.014170823755693314}}
R.als_lp = {{-3.0668058488329075, -1.497630872547012, -1.2054473601068922, -1.67444631280113, -2.4694150350335287, -2.3453227593627206, -2.7749848789283336}, {-0.848381508464047, -1.1266048326739293, -3.2331363910533386, -2.4140804586419056, -3.234993513614313, -3.248390089681269, -3.202005242302696}, {-3.9034389032678884, -3.5852903875849162, -1.9724183535143882, -2.9724100024968796, -1.430272100790908, -1.5303373917855092, -1.183867276774118}, {-1.5638855847191966, -0.4679417019176405, -3.244745929735478, -2.2703000071690873, -4.852779407105305, -4.659914047273681, -5.327698877941705}, {-3.505657735158582, -4.401074775548475, -3.006390451636766, -3.754083967302079, -1.4071835141824311, -1.6530254924844756, -0.8018122730922199}}
R.als_pred = {3, 1, 7, 2, 7}
R.als_pred2 = {2, 7, 2, 7, 2, 7}
R.als_pred2_full = {2, 7, 2, 7, 2, 7}
R.lrn1 = {{{{0.0, 0.4815041387022472}, {0.6945901620776963, 0.6226779064598615}}, {{0.2591738144324264, -0.2586730736915227}, {-0.5717341160846168, -0.6456423446544557}}, {{-0.4726899174299172, 0.012566728975994252}, {0.4440829853563198, 0.6487453695919627}}, {{0.617420973760388, 0.23585092298881483}, {-0.25488674262874067, -0.5882356691412444}}, {{-0.6910253327686707, -0.44349134124820055}, {0.02369637386674332, 0.4617036700916704}}, {{0.697511410428873, 0.5867842034574634}, {0.21170313625326928, -0.27148982801446075}}}, {{{-0.6374137325673148, -0.6890005987262381}, {-0.4545491029035672, 0.039521986909614074}}, {{0.46756464477219584, 0.6395214342074602}, {0.5841716487566703, 0.22280104544011936}}, {{-0.2809298623294219, -0.5860506789505598}, {-0.6626389418890528, -0.4450980893313796}}, {{0.04824345601095951, 0.4678566810624683}, {0.675336370046903, 0.6004465361547077}}, {{0.19308794252521191, -0.28671471956554817}, {-0.6231457288893597, -0.6842884527472552}}, {{-0.40116675811146835, 0.059261805934602646}, {0.50315022291575, 0.7005139583108408}}}}
R.lrn3 = {{{{0.0, 0.4945320910535279}, {0.7236442962278282, 0.6343441177783463}}, {{0.25742478579464395, -0.2692749249231662}, {-0.6303162978883716, -0.6977852070496017}}, {{-0.4718938449211016, 0.012856523900757765}, {0.47291016806612, 0.6840411158577497}}, {{0.6196597640706984, 0.24160123126666705}, {-0.27099209215437586, -0.6194181359721812}}, {{-0.6958461647300812, -0.45582361705133345}, {0.02517406368811039, 0.48506017145387786}}, {{0.7220247591851208, 0.6259711193583725}, {0.22808568799512136, -0.28457868342323867}}}, {{{-0.6631983742041352, -0.7111723135841204}, {-0.4550862222600315, 0.03940032562602473}}, {{0.5066193411525265, 0.7038703201184805}, {0.6083044220904468, 0.22123995870375357}}, {{-0.2952886901574444, -0.6245619700622792}, {-0.6829982033333265, -0.4440638142104503}}, {{0.05064810798701549, 0.49779370598190614}, {0.6963978180636993, 0.6023101034338152}}, {{0.20282352916852275, -0.3045314369628526}, {-0.6414382339586627, -0.688962204891211}}, {{-0.43259988072084027, 0.06303418724565206}, {0.5195236440201942, 0.726353311275745}}}}
R.lrn4 = {{{{0.0, 0.49711877772499485}, {0.7351108309254896, 0.6442870002270948}}, {{0.25870463593303145, -0.2706841067077689}, {-0.6425374896295584, -0.714184924576028}}, {{-0.4773868400400904, 0.012936110904780501}, {0.4825868354041575, 0.7040276593177729}}, {{0.6313005284963603, 0.24367434969028473}, {-0.27484452323144326, -0.635179666077068}}, {{-0.7121129770259153, -0.46259858882919735}, {0.02545763771688354, 0.49427309625902993}}, {{0.7347197670342404, 0.6347319086531722}, {0.2303824846613967, -0.2881363630649858}}}, {{{-0.670986996114672, -0.7236609640673347}, {-0.45967578714445956, 0.03943364199439807}}, {{0.5132671787572285, 0.7206923051023593}, {0.6193490855466657, 0.22217978439102717}}, {{-0.2991749906315425, -0.6417302231949105}, {-0.7006612707962864, -0.4487535747514328}}, {{0.05113977199970871, 0.5084075946051769}, {0.7149976688216632, 0.6130635272425818}}, {{0.20511004631468369, -0.3090501140847325}, {-0.656423268055278, -0.7047796775069686}}, {{-0.4374594997517451, 0.06370566515856929}, {0.5275302740638567, 0.7390730029687342}}}}
R.lrn5 = {{{{0.0, 0.4986848948812061}, {0.7351280023505836, 0.6365925438321699}}, {{0.2551231862351444, -0.27089158322402634}, {-0.6482587239309503, -0.712645678399584}}, {{-0.4705245083781024, 0.0128697663579383}, {0.48863991482687635, 0.7101011601833476}}, {{0.6235860547502221, 0.24030390617652828}, {-0.2720232862949156, -0.6302448976501414}}, {{-0.7162015777132577, -0.4667916101208737}, {0.025381835545453823, 0.4895264222656533}}, {{0.7308045482485833, 0.6386771371604211}, {0.2310767944683863, -0.28532800351436893}}}, {{{-0.673349420952511, -0.7186875052999345}, {-0.4527180885016541, 0.03912729544582651}}, {{0.5173160752490056, 0.7237957975577368}, {0.6128660808022574, 0.21922784725965352}}, {{-0.3010715901747055, -0.6502992646832397}, {-0.6997165354629838, -0.4421865567539446}}, {{0.05051618423882295, 0.5041933458021531}, {0.7088311895920563, 0.6054040342688111}}, {{0.20577145603833907, -0.30634631948183616}, {-0.6525989954913612, -0.709370772934176}}, {{-0.4404004498276816, 0.06341866142812418}, {0.5209878000282897, 0.7358310245314452}}}}
R.tbc = {{{-0.13127056481214203, 0.6286003954220815, 0.18003725735822074, -0.8202485677723562}, {-0.13568091727023474, 0.3878549145785011, -0.15101037368115178, -1.040789298246008}}, {{0.18216190702813057, 1.522086733745677, 1.1116006387581079, -0.41568199008908596}, {0.1682086817294955, 2.0775153557254953, 1.8994955590503242, 0.12675274238737055}}, {{-0.15836468414461502, 0.562626063099273, 0.1152018567426934, -0.8446167526736461}, {-0.19061323092825488, -0.20712061767403533, -0.9251249504586173, -1.5244754048820743}}, {{0.13139779103120625, 1.1988692225703743, 0.7119891375263804, -0.6492885069946583}, {0.2092026550139851, 2.167527477087903, 1.9839256835173555, 0.15438668939935696}}, {{-0.10180097023691995, 0.8985779854372765, 0.5267580594569281, -0.6071007396027507}, {-0.2236048865372188, -0.2496041412742912, -0.9513304067076669, -1.5185069156622513}}, {{0.05284161799490131, 0.9623099864648242, 0.4609204966571322, -0.7625716840896658}, {0.0511354194783117, 1.5324598825553226, 1.2570812110534006, -0.22334055730313923}}}
R.p_orig = {{0.0, 0.644217687237691, 0.9854497299884601}, {0.0, 0.3349881501559051, -0.35078322768961984}, {0.0, 0.0, -0.6312666378723216}}
R.p_w = {{0.0, 0.644217687237691, 0.9854497299884601}, {0.644217687237691, 0.3349881501559051, -0.35078322768961984}, {0.9854497299884601, -0.35078322768961984, -0.6312666378723216}}
R.p_y = {{1.9155770998650525, 0.6488354503778573, -0.3703923775722957}, {3.0800197970396277, 2.123837540646848, 0.796166166536892}}
R.p_gorig = {{11.482795345575108, 23.21666777954919, 19.667451849332824}, {0.0, 9.502401473185644, 12.192940684212461}, {0.0, 0.0, 1.8329944739336836}}
R.p_gs = 16.043438840649745
R.p_left = {{0.0, 1.288435374475382, 1.9708994599769203}, {1.288435374475382, 0.6699763003118102, -0.7015664553792397}, {1.9708994599769203, -0.7015664553792397, -1.2625332757446432}}
R.o_sq = {{0.5675152513697106, 0.8112454194952027, 0.14073844112689193}, {0.5735619661802243, -0.26688323975122485, -0.7744675637438702}, {0.5907225325093415, -0.5202443711256695, 0.6167598267541482}}
R.o_sq_g = {{0.0, 0.0, 0.0}, {-0.8237155214400573, 0.0, 0.0}, {-3.9806711144103843, -3.331822144294323, 0.0}}
R.o_h = {{0.5042561664517287, 0.5670755892303613, -0.5954748591173044, 0.1912214679107958, 0.1816453606996681}, {-0.3588422834317622, 0.5978983694642769, 0.2864117796789923, 0.4855698800835798, -0.44265103572697995}, {-0.44221347793828764, -0.24315446926532658, -0.2387210122746653, 0.6180143914259445, 0.5535283500372856}}
R.o_c = {{0.5042561664517287, 0.5670755892303613, -0.5954748591173044, 0.1912214679107958, 0.1816453606996681}, {-0.3588422834317622, 0.5978983694642769, 0.2864117796789923, 0.4855698800835798, -0.44265103572697995}, {-0.44221347793828764, -0.24315446926532658, -0.2387210122746653, 0.6180143914259445, 0.5535283500372856}}
R.o_c_g = {{0.0, 0.0, 0.0}, {-0.8237155214400573, 0.0, 0.0}, {-3.9806711144103835, -3.331822144294323, 0.0}}
R.o_nt_orig = {{-1.0, 0.3769807309934392, -0.39586000868583643, 0.12712028188779378, 0.12075427360762431}, {0.5309476512880809, -1.0, 0.08329249533026528, 0.3064814652870549, -0.23039756367527395}, {-0.9885289230660981, 0.36348375131077815, 1.0, -0.49570466881153796, -0.4187228888030061}}
R.o_nt = {{0.5042561664517284, 0.5670755892303612, -0.5954748591173042, 0.19122146791079578, 0.18164536069966808}, {-0.35884228343176217, 0.5978983694642769, 0.28641177967899223, 0.4855698800835799, -0.44265103572697995}, {-0.4422134779382873, -0.2431544692653265, -0.23872101227466522, 0.6180143914259443, 0.5535283500372856}}
R.o_nt_g = {{0.0, -0.9688896787656798, 2.6159193114298636, -1.1426020096030296, 0.1382537359123298}, {0.0, 0.0, 3.520880615130202, -0.28889252947786204, 0.49129421018435604}, {0.0, 0.0, 0.0, -1.5311815936040718, -2.7792431017684702}}
R.o_assign = {{0.8349263596867116, 0.35160661734962206, 0.42340377954885167}, {-0.10735363600167441, -0.6504954679576711, 0.7518848602038416}, {-0.5397899320453431, 0.673222424464966, 0.5053695642398709}}
R.sn_u0 = {0.09420601491254932, 0.5328147533714748, 0.8409718576409027}
R.sn_v0 = {0.14184647270635903, 0.6007957574633032, 0.6953103976376322, 0.3680590807626643}
R.sn_w = {{0.45448010676154443, 0.5398716367267686, -0.13801824356145895, 0.06294845100989155}, {-0.4983927903672882, -0.1554971382938571, -0.30889815274284227, -0.45906992598613966}, {0.5355380652161279, -0.33347984430375427, -0.5218020765836384, -0.5261941350148356}}
R.sn_u1 = {0.3400620387922105, -0.589538130896152, -0.7326681390588489}
R.sn_g = {{0.876543117812531, 0.38111535250493245, 0.34077032927773354, 0.08988797234135903}, {-1.3066489343652161, -0.3305987650231259, -0.34776905750415343, 0.04270495464620638}, {-0.7850649296166701, 0.5670006197504207, 0.5099901549932193, 0.9075993232303916}}
R.sn_eval = {{0.4523330601685495, 0.5373211850325277, -0.1373662203041126, 0.06265107109102525}, {-0.49603829227900825, -0.15476254156227903, -0.3074388617495471, -0.4569011962532624}, {0.5330080861010141, -0.33190442493359357, -0.5193369887743399, -0.5237082983235714}}
R.sn_ct = {{{0.0, 0.39583708719758315}, {0.7128607163415753, 0.8879496456240669}, {0.8862426545329795, 0.7080796148870648}}, {{0.3889338203871342, -0.007650951737961477}, {-0.40271237503250973, -0.7175914306212141}, {-0.8895938737194589, -0.8844730211015457}}}
R.sn_1d = {0.6, 0.8}

describe("lazy convolutions", function()
  local cases = {
    {"LazyConv1d", "Conv1d", {2, 3, 7}},
    {"LazyConv2d", "Conv2d", {2, 3, 5, 6}},
    {"LazyConv3d", "Conv3d", {2, 3, 4, 5, 6}},
    {"LazyConvTranspose1d", "ConvTranspose1d", {2, 3, 7}},
    {"LazyConvTranspose2d", "ConvTranspose2d", {2, 3, 5, 6}},
    {"LazyConvTranspose3d", "ConvTranspose3d", {2, 3, 4, 5, 6}},
  }
  it("infer in_channels from the first input and become the ordinary class, drawn as it draws", function()
    for _, c in ipairs(cases) do
      local lazy, base = nn[c[1]], nn[c[2]]
      local m = lazy(4, 3, {stride = 2, bias = true})
      assert.are.equal(c[1] .. "(0, 4, kernel_size=3, stride=2)", tostring(m))
      assert.is_true(m:has_uninitialized_params())
      assert.are.same({0}, m.weight:size())
      assert.are.same({0}, m.bias:size())
      local w, b = m.weight, m.bias
      pt.manual_seed(3)
      local x = pt.randn(c[3], F64)
      m:double()
      pt.manual_seed(5)
      local y = m(x)
      pt.manual_seed(5)
      local ref = base(3, 4, 3, {stride = 2, dtype = "float64"})
      assert.are.equal(base, getmetatable(m))
      assert.are.equal(c[2] .. "(3, 4, kernel_size=3, stride=2)", tostring(m))
      assert.is_nil(rawget(m, "_uninitialized"))
      assert.are.equal(3, m.in_channels)
      -- the same tensor objects, with data now
      assert.are.equal(w, m.weight)
      assert.are.equal(b, m.bias)
      assert.are.same(ref.weight:size(), m.weight:size())
      assert.are.equal(0, maxdiff(m.weight, ref.weight))
      assert.are.equal(0, maxdiff(m.bias, ref.bias))
      assert_close(y, ref(x))
      -- an unbatched input gives the channels too
      local u = lazy(2, 2, {bias = false, dtype = "float64"})
      local xu = x[1]
      u(xu)
      assert.are.equal(3, u.in_channels)
      assert.is_nil(u.bias)
    end
  end)

  it("keep groups, padding modes and options; a subclass keeps its class", function()
    local m = nn.LazyConv2d(4, {3, 1}, {groups = 2, padding = "same", padding_mode = "circular", bias = false})
    m(pt.randn(1, 6, 5, 5))
    assert.are.same({4, 3, 3, 1}, m.weight:size())
    assert.are.equal("Conv2d(6, 4, kernel_size={3, 1}, stride=1, padding=same, groups=2, bias=false, padding_mode=circular)",
      tostring(m))
    local t = nn.LazyConvTranspose2d(4, 2, {groups = 2, stride = 2, output_padding = 1})
    local y = t(pt.randn(1, 6, 3, 3))
    assert.are.same({6, 2, 2, 2}, t.weight:size())
    assert.are.same({1, 4, 7, 7}, y:size())
    local Sub = nn.LazyConv1d:extend("SubLazyConv")
    local s = Sub(2, 3)
    s(pt.randn(1, 5, 8))
    assert.are.equal(Sub, getmetatable(s))
    assert.is_false(s:has_uninitialized_params())
    s:initialize_parameters(pt.randn(1, 9, 8)) -- nothing once initialized
    assert.are.same({2, 5, 3}, s.weight:size())
    s:reset_parameters()
  end)

  it("an optimizer built before holds the same tensors; reset_parameters waits", function()
    local m = nn.LazyConv1d(2, 1, {bias = false, dtype = "float64"})
    m:reset_parameters()
    assert.are.same({0}, m.weight:size())
    local opt = optim.SGD(m:parameters(), 0.1)
    m(pt.ones(1, 3, 4, F64)):sum():backward()
    local before = m.weight:clone()
    opt:step()
    assert_close(m.weight, before - 0.4)
  end)

  it("take a state_dict's shapes when loading into an uninitialized module (PyTorch's lazy load hook)", function()
    local src = nn.Conv2d(3, 4, 2, {groups = 1})
    local m = nn.LazyConv2d(4, 2)
    m:load_state_dict(src:state_dict())
    assert.are.equal(nn.Conv2d, getmetatable(m))
    assert.are.equal(3, m.in_channels)
    assert.are.equal(0, maxdiff(m.weight, src.weight))
    local t = nn.LazyConvTranspose1d(4, 2, {groups = 2})
    t:load_state_dict(nn.ConvTranspose1d(6, 4, 2, {groups = 2}):state_dict())
    assert.are.equal(6, t.in_channels)
    -- a lazy child loads after the dry run
    local seq = nn.Sequential(nn.LazyConv1d(2, 1))
    assert_error("load_state_dict: size mismatch for 1.weight: copying a param with shape {2,3,1} from checkpoint, the "
      .. "shape in current model is {0}", function() seq:load_state_dict(nn.Sequential(nn.Conv1d(3, 2, 1)):state_dict()) end)
  end)

  it("report bad arguments and inputs", function()
    assert_error("LazyConv2d: out_channels must be a positive integer, got 0", nn.LazyConv2d, 0, 3)
    assert_error("LazyConv1d: groups must be a positive integer, got 0", nn.LazyConv1d, 2, 3, {groups = 0})
    assert_error("LazyConv3d: groups=2 must divide in_channels 2 and out_channels 3", nn.LazyConv3d, 3, 1, {groups = 2})
    assert_error("LazyConv2d: options must be a table, got number", nn.LazyConv2d, 3, 1, 5)
    assert_error("LazyConv2d: expected a 3-D (unbatched) or 4-D (batched) input, got shape {2,3}",
      function() nn.LazyConv2d(4, 3)(pt.randn(2, 3)) end)
    assert_error("LazyConv2d:forward: in_channels must be divisible by groups: the input has 3 channels, groups=2",
      function() nn.LazyConv2d(4, 1, {groups = 2})(pt.randn(1, 3, 5, 5)) end)
    assert_error("LazyConvTranspose1d:forward: input must be a tensor, got string",
      function() nn.LazyConvTranspose1d(4, 1)("x") end)
    assert_error("LazyConv1d:initialize_parameters: input must be a tensor, got nil",
      function() nn.LazyConv1d(4, 1):initialize_parameters() end)
  end)
end)

describe("lazy normalisations", function()
  it("LazyBatchNorm1d: PyTorch's values and running statistics", function()
    local m = nn.LazyBatchNorm1d():double()
    assert.are.equal("LazyBatchNorm1d(0, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)", tostring(m))
    assert.are.same({0}, m.running_mean:size())
    local w = m.weight
    local y = m(sinx({4, 3}, 0.5))
    assert.are.equal(nn.BatchNorm1d, getmetatable(m))
    assert.are.equal(w, m.weight)
    assert.are.equal(3, m.num_features)
    assert_close(y, pt.tensor(R.lbn_y, F64))
    assert_close(m.running_mean, pt.tensor(R.lbn_rm, F64))
    assert_close(m.running_var, pt.tensor(R.lbn_rv, F64))
    assert.are.equal(1, m.num_batches_tracked:item())
  end)

  it("LazyInstanceNorm2d (affine): PyTorch's values; every class becomes its ordinary one", function()
    local m = nn.LazyInstanceNorm2d({affine = true}):double()
    assert_close(m(sinx({2, 3, 2, 3}, 0.6)), pt.tensor(R.lin_y, F64))
    assert.are.equal(nn.InstanceNorm2d, getmetatable(m))
    for _, c in ipairs {{"LazyBatchNorm2d", "BatchNorm2d", {2, 3, 2, 2}}, {"LazyBatchNorm3d", "BatchNorm3d", {2, 3, 2, 2, 2}},
                        {"LazyInstanceNorm1d", "InstanceNorm1d", {2, 3, 4}}, {"LazyInstanceNorm3d", "InstanceNorm3d", {2, 3, 2, 2, 2}}} do
      local l = nn[c[1]]({affine = true, track_running_stats = true, momentum = 0.3, eps = 1e-3})
      local ref = nn[c[2]](3, {affine = true, track_running_stats = true, momentum = 0.3, eps = 1e-3})
      local x = pt.randn(c[3])
      assert_close(l(x), ref(x), 1e-6)
      assert_close(l.running_var, ref.running_var, 1e-6)
      assert.are.equal(nn[c[2]], getmetatable(l))
      assert.are.equal(tostring(ref), tostring(l))
    end
    -- without affine or running statistics there is nothing to infer but num_features
    local plain = nn.LazyInstanceNorm1d()
    assert.is_nil(plain.weight)
    assert.is_nil(plain.running_mean)
    plain(pt.randn(3, 5)) -- unbatched: the channels are dim 1
    assert.are.equal(3, plain.num_features)
    local a = nn.LazyInstanceNorm1d({affine = true})
    a(pt.randn(3, 5))
    assert.are.same({3}, a.weight:size())
  end)

  it("load a state_dict into an uninitialized module; report bad inputs and options", function()
    local src = nn.BatchNorm2d(5)
    src(pt.randn(2, 5, 3, 3))
    local m = nn.LazyBatchNorm2d()
    m:load_state_dict(src:state_dict())
    assert.are.equal(5, m.num_features)
    assert_close(m.running_mean, src.running_mean)
    assert_error("LazyBatchNorm2d:forward: expected a 4-D input, got shape {2,3}", function() nn.LazyBatchNorm2d()(pt.randn(2, 3)) end)
    assert_error("LazyBatchNorm1d:forward: expected a 2-D or 3-D input, got shape {2}", function() nn.LazyBatchNorm1d()(pt.randn(2)) end)
    assert_error("LazyInstanceNorm3d:forward: expected a 4-D or 5-D input, got shape {2,3}",
      function() nn.LazyInstanceNorm3d()(pt.randn(2, 3)) end)
    assert_error("LazyBatchNorm3d: unknown option 'num_features' (options: eps, momentum, affine, track_running_stats, dtype)", nn.LazyBatchNorm3d, {num_features = 3})
  end)
end)

describe("nn.utils.fusion", function()
  local rm, rv = pt.tensor({0.1, -0.2, 0.3}, F64), pt.tensor({0.5, 1.5, 2.0}, F64)
  local bw, bb = pt.tensor({1.2, 0.8, -0.5}, F64), pt.tensor({0.05, -0.1, 0.2}, F64)
  local fusion = nn.utils.fusion
  it("fuse_conv_bn_weights and fuse_linear_bn_weights: PyTorch's values", function()
    local cw, cb = sinx({3, 2, 2, 2}, 0.7), sinx({3}, 1.1, 0.3)
    local w, b = fusion.fuse_conv_bn_weights(cw, cb, rm, rv, 1e-3, bw, bb)
    assert_close(w, pt.tensor(R.fc_w, F64))
    assert_close(b, pt.tensor(R.fc_b, F64))
    assert.is_true(w.requires_grad and w.is_leaf and b.is_leaf)
    w, b = fusion.fuse_conv_bn_weights(cw, nil, rm, rv, 1e-5, nil, nil)
    assert_close(w, pt.tensor(R.fc_w2, F64))
    assert_close(b, pt.tensor(R.fc_b2, F64))
    w, b = fusion.fuse_conv_bn_weights(sinx({2, 3, 2, 2}, 0.7), cb, rm, rv, 1e-3, bw, bb, true)
    assert_close(w, pt.tensor(R.ft_w, F64))
    assert_close(b, pt.tensor(R.ft_b, F64))
    w, b = fusion.fuse_linear_bn_weights(sinx({3, 4}, 0.4), sinx({3}, 0.9), rm, rv, 1e-3, bw, bb)
    assert_close(w, pt.tensor(R.fl_w, F64))
    assert_close(b, pt.tensor(R.fl_b, F64))
  end)

  it("fuse_conv_bn_eval and fuse_linear_bn_eval compute bn(layer(x)) in a copy", function()
    pt.manual_seed(7)
    for _, c in ipairs {{nn.Conv2d(2, 3, 2, {dtype = "float64"}), nn.BatchNorm2d(3, {dtype = "float64"}), {2, 2, 4, 4}, false},
                        {nn.Conv1d(2, 3, 2, {dtype = "float64"}), nn.BatchNorm1d(3, {dtype = "float64"}), {2, 2, 5}, false},
                        {nn.ConvTranspose2d(2, 3, 2, {dtype = "float64"}), nn.BatchNorm2d(3, {dtype = "float64"}), {2, 2, 3, 3}, true},
                        {nn.Linear(4, 3, {dtype = "float64"}), nn.BatchNorm1d(3, {dtype = "float64"}), {5, 4}}} do
      local layer, bn = c[1], c[2]
      bn(layer(pt.randn(c[3], F64))) -- running statistics
      pt.no_grad(function() bn.weight:copy_(pt.tensor({1.5, -0.5, 2.0}, F64)); bn.bias:copy_(pt.tensor({0.1, 0.2, -0.3}, F64)) end)
      layer:eval(); bn:eval()
      local w0 = layer.weight:clone()
      local fused = c[4] == nil and fusion.fuse_linear_bn_eval(layer, bn) or fusion.fuse_conv_bn_eval(layer, bn, c[4])
      local x = pt.randn(c[3], F64)
      assert_close(fused(x), bn(layer(x)), 1e-12)
      assert.are.equal(0, maxdiff(layer.weight, w0))
      assert.are_not.equal(layer.weight, fused.weight)
    end
  end)

  it("report bad arguments", function()
    local conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)
    assert_error("fuse_conv_bn_eval: Fusion only for eval! (call :eval() on both modules)", fusion.fuse_conv_bn_eval, conv, bn)
    assert_error("fuse_linear_bn_eval: Fusion only for eval! (call :eval() on both modules)", fusion.fuse_linear_bn_eval,
      nn.Linear(2, 3):eval(), bn)
    assert_error("fuse_conv_bn_eval: bn must have running statistics (track_running_stats=true)", fusion.fuse_conv_bn_eval,
      conv:eval(), nn.BatchNorm2d(3, {track_running_stats = false}):eval())
    assert_error("fuse_conv_bn_eval: conv must be a module, got number", fusion.fuse_conv_bn_eval, 1, bn)
    assert_error("fuse_conv_bn_weights: conv_w must be a tensor, got nil", fusion.fuse_conv_bn_weights)
    assert_error("fuse_conv_bn_weights: bn_eps must be a number, got nil", fusion.fuse_conv_bn_weights, pt.ones(3, 1),
      nil, pt.ones(3), pt.ones(3))
    assert_error("fuse_linear_bn_weights: bn_w must be a tensor, got nil", fusion.fuse_linear_bn_weights, pt.ones(3, 2),
      nil, pt.ones(3), pt.ones(3), 1e-5)
  end)
end)

describe("nn.utils.skip_init, stateless, convert_parameters", function()
  it("skip_init builds the module and leaves the random generator as it was", function()
    pt.manual_seed(11)
    local m = nn.utils.skip_init(nn.Linear, 3, 2, {bias = false})
    local after = pt.rand(3)
    pt.manual_seed(11)
    assert.are.equal(0, maxdiff(after, pt.rand(3)))
    assert.are.same({2, 3}, m.weight:size())
    assert.is_nil(m.bias)
    assert_error("skip_init: expected a Module class, got number", nn.utils.skip_init, 5)
    assert_error("skip_init: expected a Module class, got a Linear module", nn.utils.skip_init, nn.Linear(1, 1))
    assert_error("Linear: in_features must be a non-negative integer, got -1", nn.utils.skip_init, nn.Linear, -1, 2)
  end)

  it("stateless.functional_call is pt.func.functional_call; convert_parameters holds the vector functions", function()
    local m = nn.Linear(2, 1, {dtype = "float64"})
    local w, b = pt.tensor({{1.0, 2.0}}, F64), pt.tensor({0.5}, F64)
    local y = nn.utils.stateless.functional_call(m, {weight = w, bias = b}, {pt.tensor({{3.0, 4.0}}, F64)})
    assert_close(y, pt.tensor({{11.5}}, F64))
    assert.are_not.equal(w, m.weight)
    local cp = nn.utils.convert_parameters
    assert.are.equal(nn.utils.parameters_to_vector, cp.parameters_to_vector)
    assert.are.equal(nn.utils.vector_to_parameters, cp.vector_to_parameters)
    local v = cp.parameters_to_vector(m:parameters())
    assert.are.same({3}, v:size())
  end)
end)

describe("nn.SyncBatchNorm", function()
  it("is batch normalisation of any {N,C,...} on one process (PyTorch's BatchNorm values)", function()
    local m = nn.SyncBatchNorm(3, {dtype = "float64"})
    local x = sinx({2, 3, 2, 2}, 0.8)
    assert_close(m(x), pt.tensor(R.sbn_y, F64))
    assert_close(m.running_mean, pt.tensor(R.sbn_rm, F64))
    assert_close(m.running_var, pt.tensor(R.sbn_rv, F64))
    m:eval()
    pt.no_grad(function()
      m.running_mean:copy_(pt.tensor({0.1, -0.2, 0.3}, F64))
      m.running_var:copy_(pt.tensor({0.5, 1.5, 2.0}, F64))
    end)
    assert_close(m(x), pt.tensor(R.sbn_eval, F64))
    local m5 = nn.SyncBatchNorm(3, {dtype = "float64"})
    assert_close(m5(sinx({2, 3, 2, 1, 2}, 0.8)), pt.tensor(R.sbn5_y, F64))
    assert.are.same({4, 3}, nn.SyncBatchNorm(3)(pt.randn(4, 3)):size())
    assert.are.equal("SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)", tostring(nn.SyncBatchNorm(3)))
    gradcheck(function(a, w, b) return F.batch_norm(a, nil, nil, w, b, true) end,
      {pt.randn(3, 2, 2, F64), pt.rand(2, F64), pt.rand(2, F64)})
    local g = nn.SyncBatchNorm(2, {dtype = "float64"})
    gradcheck(function(a) return g(a) end, {pt.randn(3, 2, 2, 2, F64)})
  end)

  it("convert_sync_batchnorm replaces BatchNorm*d recursively, sharing their tensors", function()
    local bn = nn.BatchNorm1d(3, {momentum = 0.2, eps = 1e-3})
    local inner = nn.BatchNorm3d(3, {affine = false})
    local net = nn.Sequential(nn.Linear(2, 3), bn, nn.Sequential(nn.InstanceNorm1d(3), inner))
    local out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert.are.equal(net, out)
    assert.are.equal(nn.SyncBatchNorm, getmetatable(net[2]))
    assert.are.equal(nn.InstanceNorm1d, getmetatable(net[3][1]))
    assert.are.equal(nn.SyncBatchNorm, getmetatable(net[3][2]))
    assert.are.equal(bn.weight, net[2].weight)
    assert.are.equal(bn.running_mean, net[2].running_mean)
    assert.are.equal(bn.num_batches_tracked, net[2].num_batches_tracked)
    assert.are.equal(0.2, net[2].momentum)
    assert.are.equal(1e-3, net[2].eps)
    assert.is_nil(net[3][2].weight)
    assert.are.equal(inner.running_var, net[3][2].running_var)
    local x = pt.randn(4, 2)
    net:eval()
    bn:eval()
    assert_close(net[2](net[1](x)), bn(net[1](x:clone())), 1e-6)
    local top = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(4))
    assert.are.equal(nn.SyncBatchNorm, getmetatable(top))
    assert_error("convert_sync_batchnorm: module must be a Module, got number", nn.SyncBatchNorm.convert_sync_batchnorm, 3)
  end)

  it("reports bad inputs", function()
    assert_error("SyncBatchNorm:forward: expected at least 2D input (got 1D input)", function() nn.SyncBatchNorm(3)(pt.randn(3)) end)
    assert_error("SyncBatchNorm:forward: input has 4 channels, expected 3 (input shape {2,4})",
      function() nn.SyncBatchNorm(3)(pt.randn(2, 4)) end)
    assert_error("SyncBatchNorm: num_features must be a positive integer, got 0", nn.SyncBatchNorm, 0)
    assert_error("SyncBatchNorm: unknown option 'foo' (options: eps, momentum, affine, track_running_stats, process_group, dtype)", nn.SyncBatchNorm, 2, {foo = 1})
  end)
end)

local S2 = pt.tensor({{{0.13, 0.91}, {0.5, 0.27}, {0.77, 0.02}}, {{0.35, 0.64}, {0.99, 0.48}, {0.21, 0.83}}}, F64)
local S3 = pt.tensor({{{0.13, 0.91, 0.44}, {0.5, 0.27, 0.66}}}, F64)

describe("fractional max pooling", function()
  it("F.fractional_max_pool2d: PyTorch's windows for given _random_samples", function()
    local x = sinx({2, 3, 7, 9}, 1.7)
    local y, i = F.fractional_max_pool2d(x, {2, 3}, {4, 3}, nil, true, S2)
    assert.are.same(R.f2_64_idx, i:tolist())
    assert.are.equal("int64", i:dtype())
    assert.is_true(math.abs(y:sum():item() - R.f2_64_sum) < 1e-12)
    assert_close(y, x:reshape(2, 3, 63):gather(3, i:reshape(2, 3, 12)):reshape(2, 3, 4, 3))
    -- float32: the intervals in float32 arithmetic, as PyTorch's
    local y32, i32 = F.fractional_max_pool2d(x:float(), 2, {output_ratio = {0.5, 0.7}, return_indices = true,
      _random_samples = S2:float()})
    assert.are.same(R.f2_32_idx, i32:tolist())
    assert.are.same(R.f2_32_shape, y32:size())
    assert.are.equal("float32", y32:dtype())
    -- unbatched
    local yu, iu = F.fractional_max_pool2d(sinx({3, 7, 9}, 0.9), 3, {output_size = 3, return_indices = true,
      _random_samples = S2:narrow(1, 1, 1)})
    assert.are.same(R.f2_u_idx, iu:tolist())
    assert_close(yu, pt.tensor(R.f2_u_y, F64))
    -- without return_indices one value; without samples new windows each call, of the right size
    local only = F.fractional_max_pool2d(x, {2, 3}, {output_size = {4, 3}, _random_samples = S2})
    assert_close(only, y)
    assert.are.same({2, 3, 3, 4}, F.fractional_max_pool2d(x, 2, {output_ratio = 0.5}):size())
  end)

  it("F.fractional_max_pool3d: PyTorch's windows", function()
    local x3 = sinx({1, 2, 5, 6, 7}, 1.3)
    local y, i = F.fractional_max_pool3d(x3, 2, {output_size = {3, 4, 3}, return_indices = true, _random_samples = S3})
    assert.are.same(R.f3_idx, i:tolist())
    assert.is_true(math.abs(y:sum():item() - R.f3_sum) < 1e-12)
    local _, i32 = F.fractional_max_pool3d(x3:float(), {2, 3, 2}, {output_ratio = 0.6, return_indices = true,
      _random_samples = S3:float()})
    assert.are.same(R.f3_32_idx, i32:tolist())
  end)

  it("pass gradcheck", function()
    gradcheck(function(a) return F.fractional_max_pool2d(a, {2, 3}, {4, 3}, nil, false, S2) end, {sinx({2, 3, 7, 9}, 1.7)})
    gradcheck(function(a) return F.fractional_max_pool3d(a, 2, {3, 4, 3}, nil, false, S3) end, {sinx({1, 2, 5, 6, 7}, 1.3)})
  end)

  it("FractionalMaxPool2d/3d modules: settings, _random_samples buffer, errors", function()
    local m = nn.FractionalMaxPool2d({2, 3}, {output_size = {4, 3}, return_indices = true, _random_samples = S2})
    assert.are.equal("FractionalMaxPool2d(kernel_size={2, 3}, output_size={4, 3}, return_indices=true)", tostring(m))
    local y, i = m(sinx({2, 3, 7, 9}, 1.7))
    assert.are.same(R.f2_64_idx, i:tolist())
    assert.is_true(math.abs(y:sum():item() - R.f2_64_sum) < 1e-12)
    assert.are.equal(0, maxdiff(S2, m:state_dict()._random_samples))
    assert.are.equal(S2, m._random_samples)
    local m3 = nn.FractionalMaxPool3d(2, nil, 0.5)
    assert.are.same({1, 2, 2, 3, 3}, m3(pt.randn(1, 2, 5, 6, 7)):size())
    assert.are.equal("FractionalMaxPool3d(kernel_size=2, output_ratio=0.5)", tostring(m3))
    assert_error("FractionalMaxPool2d requires specifying either an output size, or a pooling ratio", nn.FractionalMaxPool2d, 2)
    assert_error("FractionalMaxPool2d: only one of output_size and output_ratio may be specified", nn.FractionalMaxPool2d, 2, 3, 0.5)
    assert_error("FractionalMaxPool3d: output_ratio must be between 0 and 1 (got 1.5)", nn.FractionalMaxPool3d, 2, nil, 1.5)
    assert_error("FractionalMaxPool2d: output_ratio must be between 0 and 1 (got {0.5, 0})", nn.FractionalMaxPool2d, 2,
      {output_ratio = {0.5, 0}})
    assert_error("FractionalMaxPool2d: unknown option 'ratio'", nn.FractionalMaxPool2d, 2, {ratio = 0.5})
    local x = pt.randn(1, 1, 5, 5)
    assert_error("fractional_max_pool2d requires specifying either an output_size or an output_ratio",
      F.fractional_max_pool2d, x, 2)
    assert_error("fractional_max_pool2d: pool height 3 too large relative to input height 5 (output height 4)",
      F.fractional_max_pool2d, x, 3, 4)
    assert_error("fractional_max_pool2d: expected a 3-D or 4-D input, got shape {5,5}", F.fractional_max_pool2d, pt.randn(5, 5), 2, 2)
    assert_error("fractional_max_pool3d: _random_samples must have shape {1,1,3} (batch, channels, 3), got {1,1,2}",
      F.fractional_max_pool3d, pt.randn(1, 1, 4, 4, 4), 2, {output_size = 2, _random_samples = pt.rand(1, 1, 2)})
    assert_error("fractional_max_pool2d: input must be float32 or float64, got int64", F.fractional_max_pool2d,
      pt.ones(1, 1, 4, 4, I64), 2, 2)
    assert_error("fractional_max_pool2d: return_indices must be a boolean, got number", F.fractional_max_pool2d, x, 2, 2, nil, 1)
    assert_error("fractional_max_pool2d: expected input to have non-zero size for non-batch dimensions, got shape {1,0,4,4}",
      F.fractional_max_pool2d, pt.randn(1, 0, 4, 4), 2, 2)
  end)
end)

describe("nn.AdaptiveLogSoftmaxWithLoss", function()
  local function model()
    local a = nn.AdaptiveLogSoftmaxWithLoss(4, 7, {2, 4}, {div_value = 2.0, head_bias = true, dtype = "float64"})
    pt.no_grad(function()
      local k = 0
      for _, p in a:named_parameters() do
        p:copy_(sinx(p:size(), 0.3 + 0.1 * k, 0.2 * k))
        k = k + 1
      end
    end)
    return a
  end
  local xa = (pt.arange(0, 20, F64) * 0.9):cos():reshape(5, 4)
  local ta = pt.tensor({1, 4, 7, 3, 6}, I64)

  it("forward, log_prob and predict: PyTorch's values with the same weights", function()
    local a = model()
    local names = {}
    for n in a:named_parameters() do names[#names + 1] = n end
    assert.are.same({"head.weight", "head.bias", "tail.1.1.weight", "tail.1.2.weight", "tail.2.1.weight", "tail.2.2.weight"}, names)
    local x = xa:clone():requires_grad_()
    local r = a(x, ta)
    assert_close(r.output, pt.tensor(R.als_out, F64))
    assert.is_true(math.abs(r.loss:item() - R.als_loss) < 1e-12)
    assert.are.equal(r.output, r[1])
    assert.are.equal(r.loss, r[2])
    r.loss:backward()
    assert_close(x.grad, pt.tensor(R.als_grad, F64))
    assert_close(a:log_prob(xa), pt.tensor(R.als_lp, F64))
    assert.are.same(R.als_pred, a:predict(xa):tolist())
    local xp = (pt.arange(0, 24, F64) * 2.3):cos():reshape(6, 4) * 3
    assert.are.same(R.als_pred2, a:predict(xp):tolist())
    assert.are.same(R.als_pred2_full, a:log_prob(xp):argmax(2):tolist())
    local r1 = a(xa[2], ta[{2}] and pt.tensor(4, I64))
    assert.is_true(math.abs(r1.output:item() + 2.4140804586419056) < 1e-12)
    assert.are.same({}, r1.output:size())
    assert.is_true(math.abs(r1.loss:item() - 2.4140804586419056) < 1e-12)
  end)

  it("passes gradcheck in the input and the weights", function()
    local a = model()
    gradcheck(function(x) return a(x, ta).output end, {xa})
    gradcheck(function(x) return a:log_prob(x) end, {xa})
    local hw = a.head.weight
    gradcheck(function(w)
      local saved = a.head._parameters.weight
      a.head._parameters.weight = w
      local out = a(xa, ta).loss
      a.head._parameters.weight = saved
      return out
    end, {hw:detach():clone()})
  end)

  it("has PyTorch's structure and messages", function()
    local a = nn.AdaptiveLogSoftmaxWithLoss(16, 20, {5, 10})
    assert.are.same({5, 10, 20}, a.cutoffs)
    assert.are.equal(5, a.shortlist_size)
    assert.are.equal(2, a.n_clusters)
    assert.are.same({7, 16}, a.head.weight:size())
    assert.is_nil(a.head.bias)
    assert.are.same({4, 16}, a.tail[1][1].weight:size())
    assert.are.same({5, 4}, a.tail[1][2].weight:size())
    assert.are.same({1, 16}, a.tail[2][1].weight:size())
    assert.are.same({10, 1}, a.tail[2][2].weight:size())
    local msg = "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive integers sorted in an "
      .. "increasing order, where each value is between 1 and n_classes-1"
    assert_error(msg, nn.AdaptiveLogSoftmaxWithLoss, 4, 10, {5, 3})
    assert_error(msg, nn.AdaptiveLogSoftmaxWithLoss, 4, 10, {0, 3})
    assert_error(msg, nn.AdaptiveLogSoftmaxWithLoss, 4, 10, {3, 10})
    assert_error(msg, nn.AdaptiveLogSoftmaxWithLoss, 4, 10, {3, 3})
    assert_error(msg, nn.AdaptiveLogSoftmaxWithLoss, 4, 10, {2.5})
    assert_error("AdaptiveLogSoftmaxWithLoss: missing argument 'cutoffs'", nn.AdaptiveLogSoftmaxWithLoss, 4, 10)
    assert_error("AdaptiveLogSoftmaxWithLoss: cluster 2's projection size in_features / div_value^2 = 0 must be at least 1",
      nn.AdaptiveLogSoftmaxWithLoss, 4, 10, {3, 6}, 4.0)
    local m = model()
    local fname = "AdaptiveLogSoftmaxWithLoss:forward: "
    assert_error(fname .. "Target values should be in [1, 7], but values in range [0, 7] were found",
      function() m(xa, pt.tensor({1, 0, 7, 2, 3}, I64)) end)
    assert_error(fname .. "Input and target should have the same size in the batch dimension (input {5,4}, target {3})",
      function() m(xa, pt.tensor({1, 2, 3}, I64)) end)
    assert_error(fname .. "1D target tensor expects 2D input tensors, but found inputs with size {4}",
      function() m(xa[1], ta) end)
    assert_error(fname .. "0D target tensor expects 1D input tensors, but found inputs with size {5,4}",
      function() m(xa, pt.tensor(1, I64)) end)
    assert_error(fname .. "0D or 1D target tensor expected, multi-target not supported",
      function() m(xa, pt.ones(5, 1, I64)) end)
    assert_error("AdaptiveLogSoftmaxWithLoss:log_prob: input has 3 features, expected 4 (input shape {2,3})",
      function() m:log_prob(pt.randn(2, 3, F64)) end)
  end)
end)

describe("CrossMapLRN2d, F.conv_tbc, NLLLoss2d, the other aliases", function()
  it("CrossMapLRN2d: PyTorch's values (its own channel windows) and gradcheck", function()
    local x = sinx({2, 6, 2, 2}, 0.7)
    for _, s in ipairs {1, 3, 4, 5} do
      assert_close(nn.CrossMapLRN2d(s, 0.3, 0.6, 1.5)(x), pt.tensor(R["lrn" .. s], F64))
    end
    assert.are.equal("CrossMapLRN2d(3, alpha=0.3, beta=0.6, k=1.5)", tostring(nn.CrossMapLRN2d(3, {alpha = 0.3, beta = 0.6, k = 1.5})))
    gradcheck(function(a) return nn.CrossMapLRN2d(4, 0.3, 0.6, 1.5)(a) end, {x})
    assert_error("CrossMapLRN2d:forward: expected a 4-D input {N,C,H,W}, got shape {2,3}", function() nn.CrossMapLRN2d(3)(pt.randn(2, 3)) end)
    assert_error("CrossMapLRN2d: size must be a positive integer, got 0", nn.CrossMapLRN2d, 0)
  end)

  it("F.conv_tbc: PyTorch's values and gradcheck", function()
    local x, w, b = sinx({5, 2, 3}, 0.5), sinx({2, 3, 4}, 0.8), sinx({4}, 1.3)
    assert_close(F.conv_tbc(x, w, b, 1), pt.tensor(R.tbc, F64))
    gradcheck(function(a, ww, bb) return F.conv_tbc(a, ww, bb, 1) end, {x, w, b})
    assert_error("conv_tbc: input has 3 channels, weight expects 2 (input shape {5,2,3}, weight shape {2,2,4})",
      F.conv_tbc, x, sinx({2, 2, 4}, 0.1), b)
    assert_error("conv_tbc: bias must be a Tensor, got nil", F.conv_tbc, x, w)
    assert_error("conv_tbc: pad must be a non-negative integer, got -1", F.conv_tbc, x, w, b, -1)
  end)

  it("NLLLoss2d is NLLLoss; the fusion functions are in nn.utils; *_with_indices", function()
    local lp = sinx({2, 3, 2, 2}, 0.3):log_softmax(2)
    local t = pt.tensor({{{1, 2}, {3, 1}}, {{2, 2}, {3, 3}}}, I64)
    assert_close(nn.NLLLoss2d()(lp, t), nn.NLLLoss()(lp, t))
    assert.are.equal("NLLLoss2d(reduction='mean')", tostring(nn.NLLLoss2d()))
    assert.are.equal(nn.utils.fusion.fuse_conv_bn_eval, nn.utils.fuse_conv_bn_eval)
    assert.are.equal(nn.utils.fusion.fuse_conv_bn_weights, nn.utils.fuse_conv_bn_weights)
    local y, i = F.fractional_max_pool2d_with_indices(sinx({2, 3, 7, 9}, 1.7), {2, 3}, {4, 3}, nil, false, S2)
    assert.are.same(R.f2_64_idx, i:tolist())
    assert.is_true(math.abs(y:sum():item() - R.f2_64_sum) < 1e-12)
    local _, i3 = F.fractional_max_pool3d_with_indices(sinx({1, 2, 5, 6, 7}, 1.3), 2, {output_size = {3, 4, 3}, _random_samples = S3})
    assert.are.same(R.f3_idx, i3:tolist())
  end)
end)

describe("nn.utils.parametrize", function()
  local P = nn.utils.parametrize
  local Sym = nn.Module:extend("Sym")
  function Sym:forward(X) return X:triu() + X:triu(1):t() end
  function Sym:right_inverse(A) return A:triu() end
  local Scale = nn.Module:extend("Scale")
  function Scale:__init() self.s = nn.Parameter(pt.tensor(2.0, F64)) end
  function Scale:forward(X) return X * self.s end
  local function linear()
    local m = nn.Linear(3, 3, {dtype = "float64"})
    pt.no_grad(function() m.weight:copy_(sinx({3, 3}, 0.7)); m.bias:copy_(sinx({3}, 1.1)) end)
    return m
  end

  it("register_parametrization, chaining, gradients and remove_parametrizations: PyTorch's values", function()
    local m = linear()
    local w0 = m.weight
    assert.are.equal(m, P.register_parametrization(m, "weight", Sym()))
    assert.are.equal(w0, m.parametrizations.weight.original) -- the same tensor, right_inverse's value
    assert_close(w0, pt.tensor(R.p_orig, F64))
    assert_close(m.weight, pt.tensor(R.p_w, F64))
    assert.is_true(P.is_parametrized(m))
    assert.is_true(P.is_parametrized(m, "weight"))
    assert.is_false(P.is_parametrized(m, "bias"))
    assert.are.equal(nn.Linear, P.type_before_parametrizations(m))
    assert.are.equal("ParametrizedLinear", getmetatable(m).__name)
    P.register_parametrization(m, "weight", Scale())
    local keys = {}
    for k in pairs(m:state_dict({index_base = 0})) do keys[#keys + 1] = k end
    assert.are.same({"bias", "parametrizations.weight.original", "parametrizations.weight.1.s"}, keys)
    local y = m(sinx({2, 3}, 0.4))
    assert_close(y, pt.tensor(R.p_y, F64))
    y:pow(2):sum():backward()
    assert_close(w0.grad, pt.tensor(R.p_gorig, F64))
    assert.is_true(math.abs(m.parametrizations.weight[2].s.grad:item() - R.p_gs) < 1e-12)
    P.remove_parametrizations(m, "weight")
    assert.are.equal(nn.Linear, getmetatable(m))
    assert.are.equal(w0, m.weight)
    assert.is_nil(m.parametrizations)
    assert_close(m.weight, pt.tensor(R.p_left, F64))
    assert.is_true(w0.requires_grad)
  end)

  it("assigning runs right_inverse; leave_parametrized=false gives the original back; buffers too; cached", function()
    local m = linear()
    P.register_parametrization(m, "weight", Sym())
    m.weight = pt.tensor({{1, 2, 3}, {2, 4, 5}, {3, 5, 6}}, F64)
    assert_close(m.parametrizations.weight.original, pt.tensor({{1, 2, 3}, {0, 4, 5}, {0, 0, 6}}, F64))
    P.remove_parametrizations(m, "weight", false)
    assert_close(m.weight, pt.tensor({{1, 2, 3}, {0, 4, 5}, {0, 0, 6}}, F64))
    local bn = nn.BatchNorm1d(3, {dtype = "float64"})
    local Double = nn.Module:extend("Double")
    function Double:forward(X) return X * 2 end
    P.register_parametrization(bn, "running_var", Double())
    bn:eval()
    local x = sinx({4, 3}, 0.3)
    assert_close(bn(x), x / pt.sqrt(pt.full({3}, 2.0, F64) + 1e-5))
    P.remove_parametrizations(bn, "running_var")
    assert_close(bn.running_var, pt.full({3}, 2.0, F64))
    -- cached: computed once per module and name
    local calls = 0
    local Count = nn.Module:extend("Count")
    function Count:forward(X) calls = calls + 1; return X end
    local c = linear()
    P.register_parametrization(c, "weight", Count())
    calls = 0
    local r = P.cached(function() local a, b = c.weight, c.weight; return a == b end)
    assert.is_true(r)
    assert.are.equal(1, calls)
    local _ = c.weight, c.weight
    assert.are.equal(3, calls)
  end)

  it("a Sequential that fused a Linear with its ReLU sees the parametrization (and its removal)", function()
    local m = nn.Sequential(nn.Linear(3, 3, {dtype = "float64"}), nn.ReLU())
    local x = sinx({4, 3}, 0.45)
    m(x)
    P.register_parametrization(m[1], "weight", Sym())
    assert_close(m(x), F.relu(F.linear(x, m[1].weight, m[1].bias)))
    P.remove_parametrizations(m[1], "weight", false)
    assert_close(m(x), F.relu(F.linear(x, m[1].weight, m[1].bias)))
    local c = nn._deepcopy_module(nn.Sequential(P.register_parametrization(linear(), "weight", Sym())))
    assert.are.equal("ParametrizedLinear", getmetatable(c[1]).__name)
    assert_close(c[1].weight, pt.tensor(R.p_w, F64))
  end)

  it("transfer_parametrizations_and_params shares the parametrizations and the original", function()
    local a, b = linear(), nn.Linear(3, 3, {dtype = "float64"})
    P.register_parametrization(a, "weight", Sym())
    P.register_parametrization(a, "weight", Scale())
    assert.are.equal(b, P.transfer_parametrizations_and_params(a, b))
    assert.are.equal(a.parametrizations.weight.original, b.parametrizations.weight.original)
    assert.are.equal(a.parametrizations.weight[2], b.parametrizations.weight[2])
    assert_close(b.weight, a.weight)
    local x = sinx({2, 3}, 0.4)
    assert_close(b(x) - b.bias, a(x) - a.bias)
    -- a name to_module lacks becomes a parameter first
    local Plain = nn.Module:extend("Plain")
    local c = Plain()
    P.transfer_parametrizations_and_params(a, c, "weight")
    assert_close(c.weight, a.weight)
    assert.are.equal(c, P.transfer_parametrizations_and_params(linear(), c)) -- nothing to transfer
    assert_error("transfer_parametrizations_and_params: Module ParametrizedLinear does not have a parametrization on bias",
      P.transfer_parametrizations_and_params, a, linear(), "bias")
  end)

  it("reports bad registrations", function()
    local Grow = nn.Module:extend("Grow")
    function Grow:forward(X) return pt.cat({X, X}, 1) end
    assert_error("Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
      .. "unparametrized shape: {3,3}\nparametrized shape: {6,3}", P.register_parametrization, linear(), "weight", Grow())
    local m = P.register_parametrization(linear(), "weight", Grow(), {unsafe = true})
    assert.are.same({6, 3}, m.weight:size())
    assert_error("register_parametrization: Module 'Linear' does not have a parameter, a buffer, or a parametrized element "
      .. "with name 'foo'", P.register_parametrization, linear(), "foo", Sym())
    assert_error("register_parametrization: parametrization must be a Module (with forward and optionally right_inverse), "
      .. "got function", P.register_parametrization, linear(), "weight", function(x) return x end)
    local s = P.register_parametrization(linear(), "weight", Scale())
    assert_error("parametrization Scale does not implement right_inverse.", function() s.weight = pt.eye(3, F64) end)
    assert_error("remove_parametrizations: Module Linear does not have a parametrization on weight",
      P.remove_parametrizations, linear(), "weight")
  end)
end)

describe("nn.utils.parametrizations", function()
  local PZ = nn.utils.parametrizations
  local function fr(shape, a)
    local n = 1
    for _, v in ipairs(shape) do n = n * v end
    return (pt.arange(0, n, F64):pow(2) * a + 1):sin():reshape(shape)
  end
  local function lin(i, o, a)
    local m = nn.Linear(i, o, {dtype = "float64"})
    pt.no_grad(function() m.weight:copy_(fr({o, i}, a)); m.bias:zero_() end)
    return m
  end

  it("orthogonal: PyTorch's values and gradients for the three maps, with and without the trivialization", function()
    local m = PZ.orthogonal(lin(3, 3, 0.7))
    assert_close(m.weight, pt.tensor(R.o_sq, F64))
    assert_close(pt.matmul(m.weight, m.weight:t()), pt.eye(3, F64), 1e-12)
    m(sinx({2, 3}, 0.4)):pow(3):sum():backward()
    assert_close(m.parametrizations.weight.original.grad, pt.tensor(R.o_sq_g, F64))
    assert_close(PZ.orthogonal(lin(5, 3, 0.9)).weight, pt.tensor(R.o_h, F64))
    assert_close(PZ.orthogonal(lin(5, 3, 0.9), "weight", "cayley").weight, pt.tensor(R.o_c, F64))
    local c = PZ.orthogonal(lin(3, 3, 0.7), {orthogonal_map = "cayley"})
    c(sinx({2, 3}, 0.4)):pow(3):sum():backward()
    assert_close(c.parametrizations.weight.original.grad, pt.tensor(R.o_c_g, F64))
    local h = PZ.orthogonal(lin(5, 3, 0.9), {use_trivialization = false})
    assert_close(h.parametrizations.weight.original, pt.tensor(R.o_nt_orig, F64))
    assert_close(h.weight, pt.tensor(R.o_nt, F64))
    h(sinx({2, 5}, 0.3)):pow(3):sum():backward()
    assert_close(h.parametrizations.weight.original.grad, pt.tensor(R.o_nt_g, F64))
    local a = PZ.orthogonal(lin(3, 3, 0.7))
    a.weight = fr({3, 3}, 0.25)
    assert_close(a.weight, pt.tensor(R.o_assign, F64))
    gradcheck(function(x) return c.parametrizations.weight(x) end, {sinx({3, 3}, 0.3)})
  end)

  it("orthogonal reports bad arguments", function()
    assert_error("orthogonal: Expected a matrix or batch of matrices. Got a tensor of 1 dimensions.", PZ.orthogonal,
      nn.Linear(2, 2), "bias")
    assert_error("orthogonal: Module 'Linear' has no parameter or buffer with name 'foo'", PZ.orthogonal, nn.Linear(2, 2), "foo")
    assert_error("orthogonal: orthogonal_map has to be one of \"matrix_exp\", \"cayley\", \"householder\". Got: qr",
      PZ.orthogonal, nn.Linear(2, 2), "weight", "qr")
    local m = PZ.orthogonal(nn.Linear(2, 2), {use_trivialization = false})
    assert_error("orthogonal: it is not possible to assign to the matrix exponential or the Cayley parametrizations when "
      .. "use_trivialization=false", function() m.weight = pt.eye(2) end)
  end)

  it("spectral_norm: PyTorch's values and gradient with its _u, _v", function()
    local function unit(t) return t / t:norm() end
    local s = PZ.spectral_norm(lin(4, 3, 0.6))
    local sn = s.parametrizations.weight[1]
    pt.no_grad(function()
      sn._u:copy_(unit(sinx({3}, 0.5, 0.1)))
      sn._v:copy_(unit(sinx({4}, 0.8, 0.2)))
    end)
    assert_close(sn._u, pt.tensor(R.sn_u0, F64))
    assert_close(s.weight, pt.tensor(R.sn_w, F64))
    assert_close(sn._u, pt.tensor(R.sn_u1, F64))
    s(sinx({2, 4}, 0.3)):pow(2):sum():backward()
    assert_close(s.parametrizations.weight.original.grad, pt.tensor(R.sn_g, F64))
    s:eval()
    assert_close(s.weight, pt.tensor(R.sn_eval, F64))
    local ct = nn.ConvTranspose1d(2, 3, 2, {dtype = "float64"})
    pt.no_grad(function() ct.weight:copy_(sinx({2, 3, 2}, 0.45)) end)
    PZ.spectral_norm(ct)
    sn = ct.parametrizations.weight[1]
    assert.are.equal(1, sn.dim)
    pt.no_grad(function()
      sn._u:copy_(unit(sinx({3}, 0.5, 0.1)))
      sn._v:copy_(unit(sinx({4}, 0.8, 0.2)))
    end)
    assert_close(ct.weight, pt.tensor(R.sn_ct, F64))
    local b = nn.Linear(3, 2, {dtype = "float64"})
    pt.no_grad(function() b.bias:copy_(pt.tensor({3.0, 4.0}, F64)) end)
    PZ.spectral_norm(b, "bias")
    assert_close(b.bias, pt.tensor(R.sn_1d, F64))
    -- the largest singular value is 1 after enough iterations (one per read in training mode)
    local sm = PZ.spectral_norm(lin(4, 3, 0.6))
    for _ = 1, 200 do local _ = sm.weight end
    local w = sm.weight
    assert.is_true(math.abs(pt.linalg.svdvals(w):max():item() - 1) < 1e-6)
    assert_error("spectral_norm: Expected n_power_iterations to be positive, but got n_power_iterations=0",
      PZ.spectral_norm, lin(2, 2, 0.1), "weight", 0)
    assert_error("spectral_norm: Module 'Linear' has no parameter or buffer with name 'foo'", PZ.spectral_norm, lin(2, 2, 0.1), "foo")
    assert_error("spectral_norm: Dimension out of range (expected to be in range of [-2, 1] but got 2)", PZ.spectral_norm,
      lin(2, 2, 0.1), {dim = 3})
  end)
end)

describe("help texts", function()
  it("exist for the new names", function()
    for _, v in ipairs {nn.LazyConv1d, nn.LazyConv2d, nn.LazyConv3d, nn.LazyConvTranspose1d, nn.LazyConvTranspose2d,
                        nn.LazyConvTranspose3d, nn.LazyBatchNorm1d, nn.LazyBatchNorm2d, nn.LazyBatchNorm3d,
                        nn.LazyInstanceNorm1d, nn.LazyInstanceNorm2d, nn.LazyInstanceNorm3d, nn.LazyConv2d.initialize_parameters,
                        nn.LazyConv2d.has_uninitialized_params, nn.LazyBatchNorm2d.load_state_dict,
                        nn.utils.fusion, nn.utils.fusion.fuse_conv_bn_eval, nn.utils.fusion.fuse_conv_bn_weights,
                        nn.utils.fusion.fuse_linear_bn_eval, nn.utils.fusion.fuse_linear_bn_weights, nn.utils.skip_init,
                        nn.utils.stateless, nn.utils.stateless.functional_call, nn.utils.convert_parameters,
                        nn.SyncBatchNorm, nn.SyncBatchNorm.convert_sync_batchnorm, nn.FractionalMaxPool2d,
                        nn.FractionalMaxPool3d, F.fractional_max_pool2d, F.fractional_max_pool3d,
                        nn.AdaptiveLogSoftmaxWithLoss, nn.AdaptiveLogSoftmaxWithLoss.log_prob,
                        nn.AdaptiveLogSoftmaxWithLoss.predict, nn.CrossMapLRN2d, F.conv_tbc, nn.NLLLoss2d,
                        F.fractional_max_pool2d_with_indices, F.fractional_max_pool3d_with_indices,
                        nn.utils.parametrize, nn.utils.parametrize.register_parametrization,
                        nn.utils.parametrize.remove_parametrizations, nn.utils.parametrize.is_parametrized,
                        nn.utils.parametrize.cached, nn.utils.parametrize.type_before_parametrizations,
                        nn.utils.parametrize.ParametrizationList, nn.utils.parametrizations,
                        nn.utils.parametrize.transfer_parametrizations_and_params,
                        nn.utils.parametrizations.orthogonal, nn.utils.parametrizations.spectral_norm} do
      assert.is_string(pt._docs[v])
      assert.is_not_nil(help.text(v):match("%S"))
    end
  end)
end)

-- nn.grad: torch 1.13's torch.nn.grad values (float64 inputs as sinx)
R.gi2 = {0.004503147150451926, 0.30313025168636432, 0.10378264577668662, 0.42392617283243578, 0.19047802386899843, -0.26281406317537781, 0.75612936535962438, 1.2373354693368066, 0.85490530403298237, 1.3597399838351176, 0.85002006399452734, 1.0672651346266169, 0.25407707026257031, 0.50289484163958253, 0.28686810966073101, 0.45149227698099559, 0.28487507854023064, -0.39567603159798753, 0.74206600294550129, 1.1150746375179694, 0.54413304460292711, 0.77767156911743995, 0.28022146557160738, 0.35125310698304024, 0.24833964104116266, 0.19732157498153857, 0.18169188608453046, 0.025372797912474376, 0.093013158826002681, -0.13093981216032297, 0.0056576621116496261, -0.050906807969991912, 0.18011340453815636, 0.23449345620668771, 0.33272957277072007, 0.64502569680737298, -0.94423828755382067, -1.609659530457634, -1.0672914546777468, -1.6940075567181363, -1.0609306508051002, -0.77432176998117175, 0.44500075829820646, 0.68883536471507834, 0.50331356631273327, 0.8026859743415713, 0.50059730210195619, 0.96895418468804928, -0.92592715250169788, -1.2611639668583901, -0.67865075148403764, -0.7964566159673343, -0.34908484249324567, -0.25431028993805993, 0.43718132512645325, 0.73639587646231497, 0.32075511267854229, 0.56429314655556806, 0.16543587558656253, 0.31922140126123916, -0.01271730653664328, -0.22922045886810349, -0.3652829233241191, -0.76437892280038766, -0.67355631474295408, -0.67367591752797984, 0.61477678623625243, 1.0996722345088514, 0.69465738586168713, 1.0997296341265819, 0.69030759987647117, 0.056945238722911164, -0.90015792194702571, -1.5029905286839074, -1.0176112635179184, -1.6168836347868223, -1.0116745845227264, -1.0111142563119448, 0.60225485972856063, 0.71596469135343588, 0.44117596294099931, 0.37867560373178905, 0.22660246257332145, 0.017971002530043582, -0.88306773444579822, -1.2664686857890821, -0.64738488214595136, -0.84465004615933881, -0.33320365154984549, -0.33252644257481628, 0.014262281444168586, 0.31660563511026379, 0.11284190380377801, 0.43301101911710133, 0.19773892915386362, -0.27293379987098271, 0.76988244339933187, 1.2559940758916825, 0.85902518215884605, 1.3628901714235029, 0.84400718813820474, 1.059692781383978, 0.25865920482582744, 0.50055982036412838, 0.28821586872650062, 0.44351263646427957, 0.28282504015672744, -0.39289645667462114, 0.7266494618093019, 1.0879888461224536, 0.52118216431957609, 0.73952446846491449, 0.25251914535980075, 0.31645975004746751, 0.24314038173988581, 0.18152251359188404, 0.17397383983876344, 0.0083470754404098846, 0.08371217404773891, -0.1180540034500963, 0.022794458065582092, -0.023195565955088246, 0.19604718058524681, 0.26095193470132344, 0.34552828567930799, 0.66977906999241421, -0.96138380235750831, -1.6265893767785689, -1.072409161946466, -1.691249924385797, -1.0534000051225629, -0.76880730745040293, 0.45311250558289917, 0.70370459516199868, 0.5057547615096577, 0.80862396959959415, 0.49707193912671221, 0.96209191311649189, -0.90666127910438343, -1.2223811561032898, -0.64998572564935508, -0.74570432311667867, -0.31449642972623226, -0.22905709176445799, 0.42811687036587709, 0.72348163159704393, 0.30725067273593143, 0.5437438171067529, 0.14912892557839741, 0.28763909276264688, -0.047356748377251671, -0.28292881382825658, -0.3974758668721573, -0.81187789760353501, -0.699399218332874, -0.69949472729826101, 0.62591667433282183, 1.1055934726529966, 0.69796772579542987, 1.0925757377518925, 0.68538699778791567, 0.056511338982777222, -0.91651721530521524, -1.522243616848485, -1.0225033074922993, -1.6175251594300784, -1.0045061964037016, -1.0039307420073356, 0.58969996112927858, 0.6867430923993354, 0.4225091067160951, 0.34313724659928091, 0.20408709042796105, 0.016100134788444975, -0.86470811408319537, -1.2319198893353256, -0.62006021749124052, -0.797789479534182, -0.300227183183774, -0.2995590153243573}
R.gw2 = {-0.76815691647711559, -0.9803358877514895, -0.96067900665060901, 0.83343409111564959, 0.8529160076797403, 0.86556852708692855, -0.5156212778838476, -0.7272465221804858, -0.3584706020119417, 0.58867684569556178, 0.68770622261363279, 0.3790899545293045, 0.1546494111664134, 0.11502792102063886, 0.53415586999852716, -0.13300205208289162, -0.034654723440461055, -0.41451163268154145, 0.76433709858619403, 0.97699154034785129, 0.95770027546569381, -0.83407146139832067, -0.85477270374608294, -0.86518913793749919, 0.51236409429029672, 0.7253172850325782, 0.35792211188021339, -0.58480788261226602, -0.685020257681765, -0.37480192137648061, -0.15470512492348698, -0.11397905970443167, -0.53182975503958607, 0.13824287453323381, 0.039707291584591076, 0.41923432258725501, -0.76046325501232492, -0.97357813619516853, -0.95465385109731482, 0.83464987696008064, 0.85656898186441333, 0.86474859457464059, -0.50907069523610371, -0.72333678024143944, -0.35734832271933659, 0.58089758351988507, 0.68228587342375646, 0.3704873960779631, 0.15474990364934671, 0.11292214199981432, 0.52946604872758574, -0.14347392555455274, -0.044757053095959343, -0.42392737972931993, 0.75653565957061208, 0.97009591656328209, 0.9515399488760613, -0.8351692969167438, -0.85830471506829964, -0.86424692813730553, 0.50574131350877827, 0.72130514779520305, 0.35674927508648269, -0.57694622481030944, -0.67950326311425213, -0.36614668359759639, -0.15478374417889862, -0.11185724261296048, -0.52706491813651501, 0.14869483540016892, 0.049803651041972152, 0.4285904723881}
R.gi1 = {0.26536762847848971, -0.14163883488213241, -0.53180366850037131, -0.23716835344839307, -0.67894053804078724, -0.30394012427859379, -0.14167157007938438, -0.63992501910179655, -0.52798748811772134, -0.49961570304912128, -0.13920427716135411, 0.15563485339107047, 0.26645808916368219, 0.34587069458291136, -0.60762836950076793, -0.37630027367663582, -0.21280681967123202, -0.023933884218080882, 0.37505341824012262, 0.33133459818280825, 0.33568212450425683, 0.38982616248082375, 0.61217331742939518, 0.90046791266091264, 0.31931115993419962, 0.3959129302943617, -0.012268936329730225, -0.22266180625298101, 0.25110012030292739, -0.146724146144318, -0.54052427562963157, -0.24111402620615513, -0.68404099354446513, -0.30626772766134075, -0.13166777408226088, -0.62501469576717161, -0.51041859480482787, -0.4689003220028497, -0.11970688761830996, 0.18728020673561763, 0.28551982726777114, 0.3579648531192654, -0.59040545246065679, -0.36008757013190673, -0.18458381122256615, -0.0065811593487192857, 0.40271099105691299, 0.34772324710973368, 0.34211388948398835, 0.38729085400088437, 0.5995462572138236, 0.87827685256056931, 0.30395634313633263, 0.36993925985381659, -0.028489667935532394, -0.24233972838291812}
R.gw1 = {1.8192328451457627, 1.6930389080213868, 1.2297511126506324, -1.8202299959134793, -1.6872821637352946, -1.2183866744601231, 3.5010637666241031, 4.2245546213499452, 4.1069121684262306, -3.5216608417457191, -4.2302604007203737, -4.0965905983061521, 1.6648230890440607, 2.5109932316204739, 2.8572100698356167, -1.6843229547798786, -2.5224280371473324, -2.8583030791050552, -1.8465816574079579, -1.7142910194613901, -1.2406751047184943, 1.8475126262288959, 1.708374790221765, 1.2290896329462058, -3.541314908007986, -4.2396477076382304, -4.0938420786700442, 3.561501743920386, 4.2448376429046579, 4.0830017671017469, -1.6775298819762985, -2.5047608857012342, -2.8332794812557056, 1.6966876833524625, 2.515841837998873, 2.8340773026549728}
R.gi3 = {0.72151349421774169, 1.6872206853038207, 1.1928997170846525, 1.4774267080734811, 3.3513945514701455, 1.9130154933573678, 1.8919332204079318, 3.7971354395195638, 1.912268147063038, 1.4305529687820129, 2.2483055032958488, 0.98429748808948492, -0.38012640153442473, -0.79933521098623683, -0.88128318751779289, -0.66567599994637394, -2.6990425414081507, -2.2336417468732073, -2.1656288126991101, -5.5660668987819584, -3.4108996096694728, -2.3916432188092829, -4.318242361677278, -2.0108518168686595, 0.45205025942063898, 0.40092166596373685, 0.24791713190444103, -0.12836374169587655, -0.017124775291315064, 0.39187685706392694, 0.6522689267433196, 1.9788088903776475, 1.5474030403618684, 1.2163535423908303, 2.4408313916077096, 1.3163444809299631, -0.093915472733271582, 0.040359424678892863, 0.36515867087978005, 0.1348020067581619, 1.2079024976016699, 1.2911408968688614, 0.11278297722541231, 1.4297130588766094, 1.2444226441052968, 0.79851492586152428, 1.8749164569608177, 1.0651615044730713, -0.23363694027075688, 0.043077603694133382, -0.16939233321908365, 0.65464224610021604, 0.65831446538808303, -0.65067622325733876, 0.85450006819049917, -0.27538134907239109, -1.373668451103482, -1.0613930411170376, -3.0779892259519253, -2.0705195730767265, 0.8517823698466529, 1.1342960397937101, 0.52795883483101669, 0.22276331170238656, -0.099432608845980319, 0.13526994465060507, -0.44322309006966631, -0.47913295443839277, 0.30853904599844895, 0.48644091010754942, 1.4506871213821553, 1.1531095293398423}
R.gw3 = {0.40516089126643545, 0.49586025608433215, 0.3826717111318847, 0.20132029662253972, 0.024355762239144148, 0.2412826923186395, 0.49738799468388084, 0.48557431706302295, -0.49941580635076505, -0.48193213773613669, -0.18168474803433646, 0.041297977741112456, -0.25970727514419673, -0.42217834473933019, -0.47933355296827501, -0.36263775841243656, 0.046884706271956941, -0.086702693991052029, -0.27892760752705226, -0.29929202651501036, 0.25879786787118303, 0.16696841820371464, -0.091520695951973749, -0.20671367979121627, 0.09869875883973904, 0.21213366842497802, 0.29811645141645798, 0.25354465443353552, -0.15634282162208216, -0.02937056887984546, 0.21567223574765854, 0.28495334513633935}

describe("nn.grad", function()
  it("nn.grad: PyTorch's values", function()
    local xi, w, go = sinx({2, 3, 5, 6}, 0.45), sinx({4, 3, 2, 3}, 0.65), sinx({2, 4, 3, 3}, 0.35)
    assert_close(nn.grad.conv2d_input(xi:size(), w, go, 2, 1), pt.tensor(R.gi2, F64))
    assert_close(nn.grad.conv2d_weight(xi, w:size(), go, 2, 1), pt.tensor(R.gw2, F64))
    local x1, w1, go1 = sinx({2, 4, 7}, 0.45), sinx({6, 2, 3}, 0.65), sinx({2, 6, 3}, 0.35)
    assert_close(nn.grad.conv1d_input(x1:size(), w1, go1, 2, 0, 1, 2), pt.tensor(R.gi1, F64))
    assert_close(nn.grad.conv1d_weight(x1, w1:size(), go1, 2, 0, 1, 2), pt.tensor(R.gw1, F64))
    local x3, w3, go3 = sinx({1, 2, 3, 4, 3}, 0.45), sinx({2, 2, 2, 2, 2}, 0.65), sinx({1, 2, 2, 3, 2}, 0.35)
    assert_close(nn.grad.conv3d_input(x3:size(), w3, go3), pt.tensor(R.gi3, F64))
    assert_close(nn.grad.conv3d_weight(x3, w3:size(), go3), pt.tensor(R.gw3, F64))
    -- conv*_input is differentiable (a transposed convolution)
    gradcheck(function(ww, g) return nn.grad.conv2d_input({2, 3, 5, 6}, ww, g, 2, 1) end, {w, go})
    assert_error("conv2d_input: input_size {2,3,9,6} does not fit grad_output shape {2,4,3,3} (input sizes between 4 and 5 "
      .. "in spatial dim 1)", nn.grad.conv2d_input, {2, 3, 9, 6}, w, go, 2, 1)
    assert_error("conv2d_weight: grad_output has shape {2,4,3,3}, the convolution's output has {2,4,4,4}",
      nn.grad.conv2d_weight, xi, w:size(), go)
    assert_error("conv1d_weight: weight_size must be a list of sizes, got nil", nn.grad.conv1d_weight, x1, nil, go1)
  end)
end)
