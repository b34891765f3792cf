-- Second derivatives (pt.autograd.grad with create_graph) through the ops that refused them by
-- name before: copy_ and writes into views (CopyBackwards, CopySlices), fill_ (FillBackward),
-- masked_select, lerp, norm for p ~= 2, binary_cross_entropy with weights, nansum / nanmean,
-- logcumsumexp, dropout2d, max_unpool2d, linalg.inv, linalg.det, slogdet, logdet, linalg.solve and linalg.cholesky.
--
-- Each case is checked as in spec/create_graph_more_spec.lua:
--  * the first derivative (J^T v, recorded) and the second (the gradient of <u, J^T v>) against
--    numbers computed once with /usr/bin/python3 and torch 1.13.0a0 in float64 on the same
--    inputs (the `ref` table below; the script is not run at test time), or against the same
--    function composed from simpler ops that support create_graph (1e-12);
--  * pt.autograd.gradgradcheck (finite differences of the recorded first derivative).
--  * pt.autograd.gradgradcheck (finite differences of the recorded first derivative).
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local F64 = {dtype = "float64"}
local grad = pt.autograd.grad

-- deterministic values sin(k i + c), i = 1.. in row-major order (the reference script's det)
local function det(shape, k, c)
  local t = pt.zeros(shape, F64)
  for i = 1, t:numel() do t:_set_flat(i, math.sin((k or 1.7) * i + (c or 0.3))) end
  return t
end

-- the first derivatives of f at xs (J^T v, with create_graph) and the gradients of
-- sum_i <u_i, (J^T v)_i>: second derivatives, as the reference script computes them
local function second(f, xs)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  local y = f(table.unpack(ins))
  local v = det(y:size(), 2.3, 0.1)
  local gs = grad(y, ins, {grad_outputs = v, create_graph = true, allow_unused = true})
  local s
  for i, x in ipairs(ins) do
    if gs[i] ~= nil then
      local term = (gs[i] * det(x:size(), 0.9, 0.5)):sum()
      s = s and s + term or term
    end
  end
  local hs = grad(s, ins, {allow_unused = true})
  return gs, hs
end

-- second(f, xs) against ref[name] (false: no gradient), then gradgradcheck
local function check(ref, f, xs, opts)
  local gs, hs = second(f, xs)
  for i = 1, #xs do
    for _, p in ipairs({{"g", gs}, {"h", hs}}) do
      local want, got = ref[p[1]][i], p[2][i]
      if want == false then
        assert.is_nil(got)
      else
        local ok, e = pcall(assert_close, got, want, opts and opts.tol)
        if not ok then error(string.format("%s%d of %s: %s", p[1], i, ref.name, e), 2) end
      end
    end
  end
end

-- second(f, xs) against second(f_simple, xs): f_simple is the same function made of ops that
-- already have formulas
local function check_same(f, f_simple, xs, tol)
  local gs, hs = second(f, xs)
  local gs2, hs2 = second(f_simple, xs)
  for i = 1, #xs do
    if gs2[i] == nil then assert.is_nil(gs[i]) else assert_close(gs[i], gs2[i]:detach(), tol) end
    if hs2[i] == nil then assert.is_nil(hs[i]) else assert_close(hs[i], hs2[i], tol) end
  end
end

local function gradgradcheck(f, xs, opts)
  pt.manual_seed(7)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  assert.is_true(pt.autograd.gradgradcheck(f, ins, opts))
end

local function refused(name, f, xs)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  local y = f(table.unpack(ins))
  support.assert_error("autograd.grad: create_graph is not supported through " .. name, function()
    grad((y * y):sum(), ins, {create_graph = true})
  end)
end

-- torch 1.13 numbers (first derivatives g, second derivatives h, per input)

-- torch 1.13 numbers (first derivatives g, second derivatives h, per input)
local ref = {
  ["copy_"] = {name = "copy_", g = {{{0.9102906634716293, 0.962508336815971, -0.8221555469862423}, {0.15056632976371426, -0.855585088971105, -1.2939853846979852}}}, h = {{{0.34020546238833244, -1.0871583910476408, -0.03422778564342137}, {-0.10246512328133998, 1.0609026128064416, -0.21692944395328106}}}},
  ["copy_ broadcast"] = {name = "copy_ broadcast", g = {{{0.6405952363171135, -0.05723584877377391, 0.376289085522089}, {0.11802998761851846, -0.04709890751325665, 0.5567173128550852}}, {1.3729700326886114, 0.023211437826120517, 2.062690614280409}}, h = {{{1.2964541528767153, -0.3567915604543933, 0.05804831031790406}, {0.23887231583512106, -0.29360083002826, 0.08588210654880823}}, {2.4874315056422915, 0.09310504728880299, 0.7672095848369287}}},
  ["setitem row"] = {name = "setitem row", g = {{{0.0, 0.0, 0.0}, {0.7257873731469064, -3.8502927360013564, -6.840567021102538}}, {0.6280527015332322, -0.4604116374365183, -0.6559124395930125}}, h = {{{0.0, 0.0, 0.0}, {-0.8147056490123722, 6.312242508819668, -2.907287382492196}}, {-0.4899590745339393, -1.3238043604871512, -0.004384302315181221}}},
  ["copy_ into a slice"] = {name = "copy_ into a slice", g = {{{3.6851815919439144, -0.5145602695114606, 0.6380070247757728}, {0.5443405298601798, -0.6803326285670872, 0.2583028911812025}}, {{0.7601040290071864, -1.0006175993650004}, {-0.8752653193429119, -0.8815804208537562}}}, h = {{{3.9938100533476693, -1.413728230890234, 0.9655797739905555}, {-0.6110292367592791, 0.08735059237344817, -0.8200301885851877}}, {{-0.025616621915334647, -0.8327690001964658}, {1.4911158527947308, 1.0246921965290756}}}},
  ["fill_"] = {name = "fill_", g = {{{3.2547834056347575, -1.9401788127074782, 0.9555679715762135}, {0.554810113807917, -3.4310589689064654, 1.2058807489092922}}}, h = {{{1.3312700177825565, -1.4912959698845503, -0.07670205988721711}, {-0.20367641225309305, 1.578060627204917, -0.726821845623049}}}},
  ["fill_ a slice"] = {name = "fill_ a slice", g = {{{1.350926361102302, -0.8421143777698272, 1.1769881144853305}, {0.24890884701412694, -0.8445384071075452, 2.2566066765997275}}}, h = {{{0.0, 2.3704275049080548, 0.17781788400970203}, {0.0, 2.769104376833139, 1.9181462875481397}}}},
  ["masked_select"] = {name = "masked_select", g = {{{1.2283938639813048, -0.0, 1.5454103674536726}, {0.0, 0.7685655141802, -0.21896405733776456}}}, h = {{{1.3312700177825565, 0.0, 0.11673932730723985}, {-0.0, -1.260000795279633, -0.09306120956838124}}}},
  ["masked_select broadcast"] = {name = "masked_select broadcast", g = {{0.37969237545819834, 0.6382730828258195, -0.6364965986028654}}, h = {{-0.5505165399552373, -0.11609761481352206, 0.03508853006488842}}},
  ["lerp number"] = {name = "lerp number", g = {{{1.0520542756820475, 0.7245429173572449, -0.5978875515494794}, {0.16242178658626416, -0.6879309010542143, -1.0300840348364184}}, {0.4118910098065834, 0.006963431347836148, 0.6188071842841228}}, h = {{{1.320825258310804, -1.1509446470555031, -0.036276948825680756}, {-0.07091179382662881, 1.0165621900349637, -0.48301065997149173}}, {0.7462294516926874, 0.027931514186640874, 0.2301628754510786}}},
  ["lerp tensor"] = {name = "lerp tensor", g = {{{0.014570026262451626, -0.007131853869507522, 0.05554334262136103}, {0.022306331969541043, -0.12486547202973373, -0.11314687273796663}}, {0.6717056965123673, -1.030422535360877, 0.5137278410788941}, {{0.7735105955546081, -0.9714026080319057, -0.5252164854403243}, {0.1287426954386964, -0.3311203774028049, -0.7531897919287266}}}, h = {{{-0.3975406466837792, 0.6295712988774164, 0.016785127976757696}, {0.031260194805516894, 0.2637831511444615, -0.2535703728031699}}, {1.1608614634903642, -1.10131578878632, 0.048443080020376304}, {{1.1496442483788583, -1.9566600946675092, -0.04176213923311335}, {0.09907614443392412, -0.4442710697880717, -0.29679840827807563}}}},
  ["norm 3"] = {name = "norm 3", g = {{{0.2930970970919381, -0.09951367172844387, -0.21168686174916565}, {0.18837261237684752, 0.12127977066513332, -0.27432449624126143}}}, h = {{{0.5981275126518558, 0.2927328654003072, -0.0051432038028138664}, {-0.44678369717908367, -0.41303283316764033, -0.19840000880807188}}}},
  ["norm 3 dim 2"] = {name = "norm 3 dim 2", g = {{{1.0076606710923675, -0.34212557623965456, -0.7277742675994203}, {-0.981776982621275, -0.6320965972399999, 1.4297485859571228}}}, h = {{{1.7103860465000416, 1.1238709739497352, 0.23218569671215855}, {1.8375125464122943, 1.836513120669261, 1.7491832463383152}}}},
  ["norm 3 zeros"] = {name = "norm 3 zeros", g = {{{0.7978362034416402, -1.0664867159812614, 0.6448136979621392}, {-0.19164221483950403, -0.8796362188930285, 0.8140840056265652}}}, h = {{{0.47783971074424725, -0.7468430359073914, 0.6226943732799273}, {0.005735231026593457, 1.1826856018619956, -1.0571590099300472}}}},
  ["norm 1.5"] = {name = "norm 1.5", g = {{{0.41178734883897616, -0.3143336012778928, -0.3796152028179188}, {0.36870120819320684, 0.3302685443755252, -0.40502913842961935}}}, h = {{{0.2572014678149036, 0.19519787014356896, -0.04574105847082434}, {-0.17643565365681452, -0.2434032578551304, -0.11957550776416168}}}},
  ["norm 1.5 dim 2"] = {name = "norm 1.5 dim 2", g = {{{1.6044452947714074, -1.2247366728988036, -1.4790930991497568}, {-2.112875471828476, -1.892633631300367, 2.3210559470565095}}}, h = {{{1.055513034482987, 0.7198015232096762, -0.22743026183643963}, {1.7887659675852343, 2.0914654918967988, -0.1690722914347526}}}},
  ["norm 0.5"] = {name = "norm 0.5", g = {{{3.6246734270947063, -4.748441321202749, -3.9318621853675695}, {4.048249986119561, 4.519336419920422, -3.6851537811267345}}}, h = {{{-2.5797554353406253, -2.5350338098999616, 0.8163183702686866}, {1.584525067755229, 2.9369490340432027, 1.4090182803967237}}}},
  ["norm 0.5 dim 2"] = {name = "norm 0.5 dim 2", g = {{{23.78335767160839, -31.156980234583465, -25.79898204650738}, {-39.13704022320833, -43.691336220611575, 35.626755327655225}}}, h = {{{-11.83745703279482, -23.30128120663551, -0.16471075824538173}, {19.67998887492276, 10.677951119792795, -45.48140012618532}}}},
  ["norm 4"] = {name = "norm 4", g = {{{0.28931803124008154, -0.05723772336808888, -0.1775820570223237}, {0.14906815164220164, 0.07700887448884196, -0.2619721419527618}}}, h = {{{0.7756249676831979, 0.27432040800528895, 0.06104457299306988}, {-0.587017087295384, -0.42267313027465747, -0.18459816239242163}}}},
  ["norm 4 dim 2"] = {name = "norm 4 dim 2", g = {{{0.9601194985562209, -0.18994686927434, -0.5893168663220011}, {-0.7753422520850252, -0.40054319798655225, 1.3625852892623438}}}, h = {{{1.9943539722178707, 1.0250160513302657, 0.5583387896646923}, {2.215904502688213, 1.765869799362224, 2.431655251166316}}}},
  ["norm 4 zeros"] = {name = "norm 4 zeros", g = {{{0.7598940492839967, -1.0098342289911886, 0.6157845666943129}, {-0.20217721193067778, -0.8096971975930192, 0.7727351365715676}}}, h = {{{0.4977244727613293, -0.74538203507051, 0.637615663255343}, {-0.013255338612553902, 1.1328618591818267, -0.9844562478533135}}}},
  ["norm 3 dims"] = {name = "norm 3 dims", g = {{{0.667997135269266, -1.290510038886745, 1.0978595543144025}, {0.0018637899776752231, -1.2452292535147036, 1.5892161119048447}}}, h = {{{-0.391332086841538, -0.38183643604684764, -0.002247777661649422}, {0.47122192769383153, 0.3374798576959628, 0.18060663231260454}}}},
  ["norm 1"] = {name = "norm 1", g = {{{1.7395905137524346, -2.9957182310406476, 2.2523599339539557}, {0.0887968488854059, -2.7492139553799078, 2.9120840730625064}}}, h = {{{-0.28995232834084045, 0.73332123113478, -0.6872363760601663}, {0.11414510316200879, 0.8088611667067075, -0.7128484433211724}}}},
  ["norm 1 dim 1"] = {name = "norm 1 dim 1", g = {{{0.675463180551151, -0.0, -0.6569865987187884}, {0.675463180551151, -0.9999232575641008, 0.0}}}, h = {{{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}}},
  ["norm inf"] = {name = "norm inf", g = {{{1.350926361102302, 1.1820605659645143, 1.5197921562400896}, {-1.3748944791506388, -1.4998848863461514, -1.624875293541664}}}, h = {{{-0.2715629994760003, -0.8365139188160975, 0.2933879198640968}, {1.2976396567248956, 0.22218317093070777, -0.8532733148634799}}}},
  ["norm -inf"] = {name = "norm -inf", g = {{{0.8621448158117462, -0.2499808143910252, 0.9854798980781826}, {0.062227211753531735, -2.411260812612556, 1.6020493067473498}}}, h = {{{1.22943181165601, -0.958850684478458, 0.24563195836714122}, {0.12264357804090516, -0.8324126422626418, 0.7651728755666576}}}},
  ["norm inf all"] = {name = "norm inf all", g = {{{1.350926361102302, -3.2928109325040333, 2.6069376148134085}, {0.24890884701412694, -1.6456571899374177, 1.9440150027899512}}}, h = {{{-0.2715629994760003, 0.2993002349630565, -0.16142609113434125}, {-0.05003561632783214, 0.33080974320761564, -0.390785582682109}}}},
  ["norm 0"] = {name = "norm 0", g = {{{4.913575455925219, -0.0, -4.061567298320607}, {0.7257873731469064, -3.8502927360013564, 0.0}}}, h = {{{5.325080071130226, -5.965183879538201, -0.30680823954886843}, {-0.8147056490123722, 6.312242508819668, -2.907287382492196}}}},
  ["nansum"] = {name = "nansum", g = {{{0.1844459468182093, 0.0, 0.1844459468182093}, {0.0, 0.5895118901092395, 0.5895118901092395}}}, h = {{{1.2524108486194718, 0.0, 1.2524108486194718}, {0.0, 2.665397314205418, 2.665397314205418}}}},
  ["nansum all"] = {name = "nansum all", g = {{{-1.3367455450064114, 0.0, -1.3338217067145623}, {-0.0, -1.0996474223463903, -1.383672387231896}}}, h = {{{0.7788508324165828, 0.0, 0.7863472501015042}, {0.0, 1.3867457918352315, 0.6585352831820952}}}},
  ["nanmean"] = {name = "nanmean", g = {{{1.2283938639813048, -0.0, -0.5428221187706015}, {0.0, -1.1697446098431596, -0.5428221187706015}}}, h = {{{1.3312700177825565, 0.0, -0.14199149415537488}, {0.0, 1.917701368956916, -0.14199149415537488}}}},
  ["nanmean all keepdim"] = {name = "nanmean all keepdim", g = {{{0.03501122792434043, 0.0, 0.03501122792434043}, {0.0, 0.06815155026487378, 0.06815155026487378}}}, h = {{{0.21060644301130302, 0.0, 0.21060644301130302}, {0.0, 0.29557478724913117, 0.29557478724913117}}}},
  ["bce mean"] = {name = "bce mean", g = {{{-0.5150681763491458, -0.11220056000384664, 0.052313986462467356}, {0.572241845202203, -2.13683861200325, -0.13296054395469856}}}, h = {{{2.596771533304384, 0.24039040682375964, -0.025318056627489132}, {-5.1857918495856135, -41.09711118193153, -0.1339492413091142}}}},
  ["bce sum target"] = {name = "bce sum target", g = {{{-3.090409058094875, -0.6732033600230798, 0.31388391877480415}, {3.4334510712132182, -12.8210316720195, -0.7977632637281914}}, {{0.9363907983421671, -0.5723185076513255, 0.13554566620027608}, {-1.4841443013926812, 1.988860117806548, -0.2738767515252569}}}, h = {{{11.420410394255816, -0.9562119132024816, 0.0074031130897816155}, {-24.973461541827305, -232.9464978185014, 0.24855422364568103}}, {{-4.160218805570488, -2.3985543541450394, 0.1593114528547164}, {6.141289555686379, 13.636169273087766, 1.0522496715003662}}}},
  ["bce none"] = {name = "bce none", g = {{{-0.13798824910581237, 0.48983941135317616, -0.004205066590788211}, {0.012780306027573303, 0.24226500832915518, -0.5068311043322836}}, {{-0.3020865465577664, -1.4263647772683505, 0.5895520953030209}, {0.05942302070023084, 0.07030340128317991, 1.848182776570592}}}, h = {{{-0.639302954571201, 0.9215847905822664, 0.010803632848044755}, {0.01154018756986403, -0.8224435644020502, 0.46900793792416584}}, {{-1.9768139339235515, 0.2895854180351877, -0.04569272371412607}, {0.16990686025691037, -1.9180068166045083, -0.1038348726856343}}}},
  ["bce logits pos_weight"] = {name = "bce logits pos_weight", g = {{{-0.00961050939729928, -0.1250839539651265, -0.015050734455261353}, {0.0342303660076703, -0.07316268978779997, -0.10159063805433578}}, {{-0.12141845663548094, 0.17140882969890933, 0.15186199129574535}, {-0.10422422624528789, -0.01599256838702574, 0.1680863436092116}}}, h = {{{-0.08288560028779192, -0.09940555247092538, 0.00716148659619277}, {0.061382697098979186, 0.09816851060602821, 0.04438728640495417}}, {{-0.09501143059137496, -0.13679092505552606, 0.008819473461215642}, {0.0771305586808878, 0.14657880136272144, 0.05696372897279082}}}},
  ["bce logits pos_weight none"] = {name = "bce logits pos_weight none", g = {{{-0.1161307394287707, -0.7743721096083617, -0.2544166989062014}, {0.04884490959659128, 0.7335654910283129, 0.5789288292577202}}, {{-0.6810376170079769, -0.28185477596741837, -0.24828721099261555}, {-0.09490465052409695, -0.1600530351962293, -0.5678723780529649}}}, h = {{{-0.9033162801271526, -0.43213828262559817, -0.1135007178055211}, {0.026860762922435236, -1.9972723538732915, -0.8445784683312945}}, {{-1.0263291299935902, -1.130121630739659, -0.06979329943344632}, {0.12099193818631626, -1.3063643327025853, -0.7402905619377487}}}},
  ["logcumsumexp 1"] = {name = "logcumsumexp 1", g = {{{0.7357300623809605, -0.9336283605106496, 0.6011935007149783, 0.02397975790319473}, {0.018421023566433187, 0.24539106450284442, -0.3676433237386586, -0.07443183529461876}, {0.02727873371228857, -0.2348658279810019, 0.21510295672847196, 0.3757015516611229}}}, h = {{{0.023292861183929814, 0.06066837844950901, 0.03333044119746302, 0.13744995600982085}, {-0.028697721979203547, -0.05017092540167285, 0.016509439912052393, -0.032633837245201844}, {0.005404860795274002, -0.010497453047836173, -0.04983988110951537, -0.10481611876461905}}}},
  ["logcumsumexp 2"] = {name = "logcumsumexp 2", g = {{{1.188239522947227, -2.631040973740024, 1.4532535349113094, 0.27873627441744936}, {-0.7710897290370989, 3.9933388285984517, -1.062323390983484, -0.8096313241380326}, {-2.3714088212470728, -1.9791296166115022, 0.8685995581030495, 1.2889893810698438}}}, h = {{{0.5341505238469575, -1.0508868642566411, 0.6231941797390812, 0.11403178175249401}, {1.107699469753486, -0.9550081297886959, 0.16981987547074895, 0.13516063901649814}, {1.299894516300757, -0.033116517038594695, -0.6694053244886391, -0.3461814794732181}}}},
  ["logcumsumexp 0-d"] = {name = "logcumsumexp 0-d", g = {0.9456484527716112}, h = {1.3312700177825565}},
  ["max_unpool2d"] = {name = "max_unpool2d", g = {{{{{-0.8585693818507408, -1.114347519962463}, {0.0017572475007465187, -0.174294463344943}}, {{0.2573376931468877, 0.07616090593757661}, {-0.7164700784679104, -0.1343530830012992}}}}}, h = {{{{{-1.4137282308902341, 0.8732376448232598}, {-0.006100774638330839, 0.15160682187659635}}, {{0.39478315160284055, 0.053067876792036124}, {-0.36421265366188327, 1.444543561404078}}}}}},
  ["det"] = {name = "det", g = {{{3.32347291701727, 0.6133130548938013, 0.5491549115316778}, {0.4592572767397867, 3.086383257130403, 1.9750726274639665}, {1.6853039969322685, -1.5103393948054864, 5.270579663877631}}}, h = {{{-0.6007712856989827, 1.503002275255916, -0.7884179976200294}, {-1.4237472726841274, 2.8188209121367946, -1.334658567447931}, {-0.053546223941114746, 0.6606018110778857, 0.17451054357150664}}}},
  ["det batch"] = {name = "det batch", g = {{{{0.1931629137459585, 0.9324671793533563, -0.06179985717568234}, {-0.8829585397245284, 2.466883112293268, -0.5245677567079915}, {-0.4709428924570174, 1.1999361043704013, 0.33224465923456037}}, {{-0.2910323322527424, -1.3945635177618687, 0.1064391082264967}, {1.2957821771181657, -3.6613388763520747, 0.7929334971398837}, {0.6804969382908187, -1.7698421305319527, -0.48617427072383296}}}}, h = {{{{-0.465501770261557, 1.0625535673940205, -0.789634949105491}, {-1.1876657989478192, 2.120414373588299, -1.4629846324358227}, {-0.5613355861387512, 1.0641187484574204, -0.5839047307799974}}, {{-0.5673415209470807, 0.9191733857130822, -0.16442364884387023}, {-1.8755679946576027, 2.327713200154095, -1.1041419223166695}, {-1.46649696324033, 1.574710315887522, -0.8261895642654316}}}}},
  ["slogdet"] = {name = "slogdet", g = {{{{0.12161276866514897, 0.5870687761507029, -0.038908357657773986}, {-0.5558988035025093, 1.5531163795439522, -0.3302607938997288}, {-0.29649930167337646, 0.7554636086390615, 0.20917676224776457}}, {{-0.18271796631672582, -0.8755446788079218, 0.0668253497512495}, {0.8135270825747214, -2.2986875317428344, 0.4978250866504665}, {0.4272343752558618, -1.111154737651704, -0.30523335099768434}}}}, h = {{{{-0.36555367700616315, 0.31908210770795753, -0.4739545234574585}, {-0.41642808536811715, 0.40934200469847165, -0.7242431834192755}, {-0.17669861119504512, 0.21970583498668025, -0.4922858784209111}}, {{-0.4244847966831513, 0.24983935496187767, -0.07825304805784822}, {-0.8734693704469304, 0.602246536213656, -0.5071436322469131}, {-0.761023824340024, 0.5733418245735312, -0.632787801998351}}}}},
  ["logdet"] = {name = "logdet", g = {{{3.106925444256857, 2.0310223759456787, 2.005552312623889}, {1.969863959896707, 3.012803508461797, 2.571625652861752}, {2.456590756564118, 1.1879561721432985, 3.879904984155681}}}, h = {{{-0.020643660473823655, 0.800947399522964, -0.10904231202314676}, {-0.36171147956607136, 1.3357077837149693, -0.31874692539445915}, {0.18838797219332673, 0.4558800181825833, 0.2968935202894063}}}},
  ["inv"] = {name = "inv", g = {{{-0.11627885450955346, 0.17740150616006287, -0.11613478356753654}, {-0.06804212629757947, 0.21209238960379231, -0.21687177873282146}, {-0.016453459575248297, 0.16231198851044584, -0.20512692240648345}}}, h = {{{0.011875738318604813, -0.022069534728908304, 0.009347280638571613}, {-0.024666220244245002, -0.021436573630396024, 0.0398131231782767}, {-0.04314219940630921, -0.0026492450706908, 0.03457288888570443}}}},
  ["inv batch"] = {name = "inv batch", g = {{{{-0.423171583378262, 2.0143113291323633, -0.09214007122700515}, {-0.4850822559097421, 1.3264922819022489, 2.197727252720486}, {0.1157297727009777, 0.6842350688214114, 0.5447682567291532}}, {{-0.09429300060769101, -0.5690649120063305, -0.23613048731368932}, {-1.2369559564963075, -0.6385270000048591, -0.1539883544422845}, {-0.3365954803158587, -1.4737905593065221, 0.02152953700906307}}}}, h = {{{{-0.49331851275469096, 1.5993444851559633, 0.20906065265147156}, {0.21646208641462455, -0.885459454523257, 0.3049721654855716}, {0.5642399566878036, 0.3748751569193951, -0.0788401423145445}}, {{-0.2451925956178363, 0.14186577392287772, 0.5401747830917095}, {-0.0329144213976926, -1.6963624145240281, 0.34123116059191466}, {0.2655315487665188, 0.3940001634349889, 0.09586504214217945}}}}},
  ["solve"] = {name = "solve", g = {{{0.017327290730716916, 0.029754366660993653, -0.045996666808595744}, {-0.08459618505866899, -0.07322135844145464, -0.0794130290831705}, {0.03074877805641366, 0.0018407523915967491, 0.13338928688298365}}, {{0.1947380958339284, -0.17899303565705038}, {0.04045401913107545, 0.12586866439294186}, {-0.38274605143313933, 0.34086074619996015}}}, h = {{{-0.0727649376634038, -0.096951598541547, -0.03371115070757585}, {-0.011832528053899567, -0.11111020998511306, 0.06821613346912109}, {-0.014952717699734944, 0.1311904032340083, -0.19470054561383476}}, {{-0.07045456493433105, 0.219926978041242}, {0.10447887406132703, 0.11548013944631136}, {-0.07072904313958436, -0.06419961042784424}}}},
  ["solve vector"] = {name = "solve vector", g = {{{-0.21404701152747166, -0.08556670361902022, -0.39562415904319365}, {0.1588201161454256, 0.06348938819549854, 0.2935480128444217}, {-0.6565443126148884, -0.2624579161810039, -1.2134941277585658}}, {1.1345995966561886, 0.23999421878682442, 2.196265900457462}}, h = {{{0.1422502510312609, -0.28129171063135305, 0.43474930161105085}, {0.5882124969907112, 0.4860500841120279, 0.9597023426562517}, {-0.3007881883145416, -1.157468302202538, -0.028903636264312027}}, {-1.2012540839145027, -2.119158810696883, -0.3187631884334392}}},
  ["solve batch broadcast"] = {name = "solve batch broadcast", g = {{{{3.880685464585843, -14.467592023680638, 1.6917203367863431}, {10.984087117275662, -39.89932461514355, 4.463182081819649}, {5.394872508733503, -19.17223854041756, 2.0607285029203193}}, {{2.8566490608832757, -6.910846961897958, 0.08428665927241541}, {6.3201778645185795, -13.616705495324872, -0.33983340357169567}, {2.761125910354659, -5.283614697712952, -0.3577049360786826}}}, {{9.226434240808914, -3.4391406692738533}, {24.685312107448958, -10.513690498947973}, {12.20207378111444, -5.908574481241637}}}, h = {{{{4.416994886470569, -12.467724649972302, 10.114978400130006}, {8.815000441818563, -23.10474295031497, 27.180876039060795}, {5.578586916737727, -15.080370831179538, 13.477090357538103}}, {{-3.824077046690729, -3.2978451996622606, 1.1061361302230721}, {-4.030922700520058, -22.701989951745073, 5.244749567660499}, {-1.2115615473452337, -12.672330803704732, 3.229572530448774}}}, {{-0.9844574936520338, 5.196938853976468}, {-3.843418271066365, 15.2562389332628}, {-1.2259238146181342, 8.058814601975978}}}},
  ["solve left false"] = {name = "solve left false", g = {{{-0.07250020268919996, 0.1610078362003714, -0.04257565370054254}, {-0.11318016750639827, 0.22243514753542465, -0.09203416740812215}, {-0.10781203296223899, 0.2012953336067819, -0.09703356247955074}}, {{0.4170181550990525, -0.891451673323719, 0.536700746501998}, {0.06609010541448443, -0.3156810573866757, 0.03196776344889371}}}, h = {{{-0.12338494915910639, 0.049791438938433595, -0.07016806579251103}, {-0.1410462077895974, 0.06763486353805968, -0.017868442388858034}, {-0.10288768298996433, 0.05469943242223913, 0.04331692666833515}}, {{0.44814697977592044, -0.40134895617509425, -0.12579830102437403}, {-0.06805176516482415, 0.6322867012085553, -0.16481888803910677}}}},
  ["cholesky"] = {name = "cholesky", g = {{{0.1585833716300283, -0.10557960648518683, -0.14999153008295893}, {-0.10557960648518683, -0.28390319965303235, 0.029189657972044102}, {-0.1499915300829589, 0.029189657972044113, 0.3475802464909725}}}, h = {{{-0.009453545167930974, -0.002658248015686894, -0.02811203752409259}, {-0.0026582480156868904, -0.09065434395085599, -0.07215079904171631}, {-0.028112037524092588, -0.0721507990417163, -0.08762648065719701}}}},
  ["cholesky upper batch"] = {name = "cholesky upper batch", g = {{{{1.623955914581818, 0.8469348939034501, -0.05718517021963795}, {-0.006651676978473849, -2.069033332727908, -0.4912967006675085}, {0.021415235065130604, 0.016914582744957923, 1.8701392154480525}}, {{-2.015921008869251, 0.03685071685145008, -0.20351084346780912}, {0.26171389193656647, 1.9025566211601888, -0.12738231842395517}, {-0.1426054697756261, -0.14994655095809165, -1.236026365399495}}}}, h = {{{{0.21968787448533497, -0.2839703444196058, -0.0840955562306392}, {-0.14325602232107257, 0.2557784907430387, 0.015135035111001283}, {-0.18833242863540617, -0.19948838490818258, 0.4201967505779149}}, {{0.19221707633716828, 0.11327230512786624, -0.20958991481361366}, {0.21460430026152755, 0.1639816654597157, 0.07435343441352843}, {-0.16939629368489834, 0.08320253171771982, 0.26463054091745863}}}}},
  ["cholesky of a product"] = {name = "cholesky of a product", g = {{{0.008913761147291165, 0.3296060259580319, 0.16742469055546616}, {0.09163501202688448, 0.029393958774517115, -0.0759093129452392}, {-0.28079119400940766, -0.28473598585274207, 0.1284581086436568}}}, h = {{{-0.5415909072653271, -0.5752239536819563, -0.015712048804422743}, {0.04334153834026211, -0.005756954614280955, -0.03784620078576631}, {-0.03568430423206838, -0.4215707136421383, -0.17466339039434042}}}},
}

local x = det({2, 3})
local y3 = det({3}, 1.1, 0.7)
local y22 = det({2, 2}, 0.6, 0.2)

describe("create_graph through copy_, writes into views and fill_", function()
  local function copy_sin(a) local d = pt.zeros({2, 3}, F64); d:copy_(a:sin()); return d * a end
  local function copy_bcast(a, b) local d = pt.zeros({2, 3}, F64); d:copy_(b * b); return d * a end
  local function set_row(a, b) local base = a * 2; base[{1}] = b:sin(); return base * base end
  local function copy_slice(a, b) local base = a * 3; base:narrow(2, 2, 2):copy_(b * b); return base * a end
  local function fill(a) local d = a:sin(); d:fill_(3.0); return d * a + a * a end
  local function fill_slice(a) local d = a * a; d:narrow(2, 1, 1):fill_(2.0); return d * a end

  it("copy_ (CopyBackwards): the gradient goes to the source, summed where it was broadcast", function()
    check(ref["copy_"], copy_sin, {x})
    check(ref["copy_ broadcast"], copy_bcast, {x, y3})
    gradgradcheck(copy_sin, {x})
    gradgradcheck(copy_bcast, {x, y3})
  end)

  it("writes into a view (CopySlices): the view's part to the written values, zeros to the old ones", function()
    check(ref["setitem row"], set_row, {x, y3})
    check(ref["copy_ into a slice"], copy_slice, {x, y22})
    gradgradcheck(set_row, {x, y3})
    gradgradcheck(copy_slice, {x, y22})
    -- a stepped slice and a 0-d element against the same values put together with cat
    check_same(function(a, b) local base = a * a; base:select(2, 3):copy_(b:sin()); return base end,
      function(a, b) return pt.cat({(a * a):narrow(2, 1, 2), b:sin():reshape(2, 1)}, 2) end,
      {x, det({2}, 0.4, 0.1)})
    check_same(function(a, b) local base = a * a; base[{2, 2}] = b * b; return base * a end,
      function(a, b)
        local m = pt.tensor({{0, 0, 0}, {0, 1, 0}}, F64)
        return ((a * a) * (1 - m) + (b * b) * m) * a
      end, {x, pt.tensor(0.7, F64)})
  end)

  it("fill_ (FillBackward): zeros for the overwritten values, as torch", function()
    check(ref["fill_"], fill, {x})
    check(ref["fill_ a slice"], fill_slice, {x})
    gradgradcheck(fill, {x})
    gradgradcheck(fill_slice, {x})
  end)
end)

describe("create_graph through masked_select and lerp", function()
  local m = pt.tensor({{true, false, true}, {false, true, true}})
  local w = det({2, 3}, 0.4, 0.9)
  local function sel(a) return (a * a):masked_select(m) end
  local function sel_b(a) return a:masked_select(m):sin() end
  local function lerp_n(a, b) return pt.lerp(a, b * b, 0.3) * a end
  local function lerp_t(a, b, c) return pt.lerp(a:sin(), b, c) * c end

  it("masked_select (MaskedSelectBackward), with the input broadcast by the mask", function()
    check(ref["masked_select"], sel, {x})
    check(ref["masked_select broadcast"], sel_b, {y3})
    gradgradcheck(sel, {x})
    gradgradcheck(sel_b, {y3})
  end)

  it("lerp (LerpBackward) with a number weight and a tensor weight, broadcast", function()
    check(ref["lerp number"], lerp_n, {x, y3})
    check(ref["lerp tensor"], lerp_t, {x, y3, w})
    gradgradcheck(lerp_n, {x, y3})
    gradgradcheck(lerp_t, {x, y3, w})
  end)
end)

describe("create_graph through norm with p ~= 2, nansum and nanmean", function()
  local xz = x:clone()
  xz:_set_flat(2, 0)
  xz:_set_flat(6, 0)
  local xt = pt.tensor({{0.5, -2.0, 2.0}, {1.5, -0.25, -1.5}}, F64) -- ties at the largest |x|
  local xn = x:clone()
  xn:_set_flat(2, 0 / 0)
  xn:_set_flat(4, 0 / 0)

  it("p = 3, 1.5, 0.5, 4 over all elements, a dim and two dims; zeros for p > 2", function()
    for _, c in ipairs({{3, "3"}, {1.5, "1.5"}, {0.5, "0.5"}, {4, "4"}}) do
      local p, nm = c[1], c[2]
      check(ref["norm " .. nm], function(a) return a:norm(p) end, {x})
      check(ref["norm " .. nm .. " dim 2"], function(a) return a:norm(p, 2) ^ 2 end, {x})
      if p > 2 then check(ref["norm " .. nm .. " zeros"], function(a) return a:norm(p, 2, true) * a end, {xz}) end
      gradgradcheck(function(a) return a:norm(p, 2) end, {x})
    end
    check(ref["norm 3 dims"], function(a) return a:norm(3, {1, 2}) * a end, {x})
    gradgradcheck(function(a) return a:norm(3, {1, 2}) * a end, {x})
  end)

  it("p = 1, inf, -inf (shared between ties) and 0, as torch", function()
    check(ref["norm 1"], function(a) return a:norm(1) * a end, {xz})
    check(ref["norm 1 dim 1"], function(a) return a:norm(1, 1) end, {xz})
    check(ref["norm inf"], function(a) return a:norm(math.huge, 2) * a:sum(2) end, {xt})
    check(ref["norm -inf"], function(a) return a:norm(-math.huge, 1, true) * a end, {xt})
    check(ref["norm inf all"], function(a) return a:norm(math.huge) * a end, {xt})
    check(ref["norm 0"], function(a) return a:norm(0) * a * a end, {xz})
    gradgradcheck(function(a) return a:norm(1, 2, true) * a end, {x})
    gradgradcheck(function(a) return a:norm(math.huge, 2, true) * a end, {x})
    gradgradcheck(function(a) return a:norm(-math.huge) * a end, {x})
  end)

  it("nansum and nanmean (NaN places get 0), over a dim and over all elements", function()
    check(ref["nansum"], function(a) return a:nansum(2) ^ 2 end, {xn})
    check(ref["nansum all"], function(a) return a:nansum() * a:nan_to_num() end, {xn})
    check(ref["nanmean"], function(a) return a:nanmean(1) ^ 2 end, {xn})
    check(ref["nanmean all keepdim"], function(a) return a:nanmean(2, true) * a:nanmean() end, {xn})
    gradgradcheck(function(a) return a:nansum(2) ^ 2 end, {x})
    gradgradcheck(function(a) return a:nanmean(1) * a:nanmean() end, {x})
  end)
end)

describe("create_graph through binary_cross_entropy, logcumsumexp, dropout2d and max_unpool2d", function()
  local p = pt.tensor({{0.2, 0.7, 0.45}, {0.9, 0.05, 0.6}}, F64)
  local t = det({2, 3}, 0.8, 0.4):abs()
  local pw = pt.tensor({0.5, 2.0, 1.5}, F64)

  it("binary_cross_entropy (mean, sum, none; the target's gradient too) and bce_with_logits with pos_weight", function()
    local bce_none = function(a, b) return F.binary_cross_entropy(a:sigmoid(), b, {reduction = "none"}) * b end
    local logits_pw = function(a, b) return F.binary_cross_entropy_with_logits(a, b, {pos_weight = pw}) end
    local logits_pw_none = function(a, b)
      return F.binary_cross_entropy_with_logits(a * a, b, {pos_weight = pw, reduction = "none"})
    end
    -- torch 1.13's double backward adds 1e-12 to p and 1 - p in its denominators: 1e-10
    check(ref["bce mean"], function(a) return F.binary_cross_entropy(a, t) end, {p}, {tol = 1e-10})
    check(ref["bce sum target"], function(a, b) return F.binary_cross_entropy(a, b, {reduction = "sum"}) end,
      {p, t}, {tol = 1e-10})
    check(ref["bce none"], bce_none, {x, t}, {tol = 1e-10})
    check(ref["bce logits pos_weight"], logits_pw, {x, t})
    check(ref["bce logits pos_weight none"], logits_pw_none, {x, t})
    gradgradcheck(function(a, b) return F.binary_cross_entropy(a, b, {reduction = "sum"}) end, {p, t})
    gradgradcheck(bce_none, {x, t})
    gradgradcheck(logits_pw, {x, t})
    gradgradcheck(logits_pw_none, {x, t})
  end)

  it("logcumsumexp (LogcumsumexpBackward) along either dim and of a 0-d tensor", function()
    local x34 = det({3, 4}, 1.3, 0.2) * 2
    check(ref["logcumsumexp 1"], function(a) return a:logcumsumexp(1) end, {x34})
    check(ref["logcumsumexp 2"], function(a) return a:logcumsumexp(2) * a end, {x34})
    check(ref["logcumsumexp 0-d"], function(a) return a:logcumsumexp(1) * a end, {pt.tensor(0.7, F64)})
    gradgradcheck(function(a) return a:logcumsumexp(1) end, {x34})
    gradgradcheck(function(a) return a:logcumsumexp(2) * a end, {x34})
    -- zeros in the incoming gradient: the same as logcumsumexp written with logsumexp over prefixes
    local g0 = pt.tensor({{1, 0, -2, 0}, {0, 0, 3, -1}, {2, -1, 0, 0}}, F64)
    check_same(function(a) return a:logcumsumexp(2) * g0 end, function(a)
      local cols = {}
      for k = 1, 4 do cols[k] = a:narrow(2, 1, k):logsumexp(2, true) end
      return pt.cat(cols, 2) * g0
    end, {x34})
  end)

  it("dropout2d (Dropout2dBackward): the same as multiplying by its constant per-channel mask", function()
    local x4 = det({2, 3, 2, 2}, 0.7, 0.1)
    pt.manual_seed(3)
    local m = pt.dropout2d(pt.ones({2, 3, 2, 2}, F64), 0.5, true)
    local function drop(a) pt.manual_seed(3); return pt.dropout2d(a:sin(), 0.5, true) * a end
    check_same(drop, function(a) return a:sin() * m * a end, {x4})
    check_same(function(a) return pt.dropout2d(a:sin(), 0.5, false) * a end, function(a) return a:sin() * a end, {x4})
    gradgradcheck(drop, {x4})
  end)

  it("max_unpool2d (MaxUnpool2dBackward): g read at the pooled places", function()
    local xp = det({1, 2, 4, 4}, 0.7, 0.3)
    local _, idx = F.max_pool2d(xp, 2, {return_indices = true})
    local wu = det({1, 2, 4, 4}, 0.3, 0.2)
    local function unpool(a) return F.max_unpool2d(a * a, idx, 2) * wu end
    check(ref["max_unpool2d"], unpool, {det({1, 2, 2, 2}, 1.9, 0.6)})
    gradgradcheck(unpool, {det({1, 2, 2, 2}, 1.9, 0.6)})
  end)
end)

describe("create_graph through linalg.inv, det, slogdet, logdet, solve and cholesky", function()
  local A = det({3, 3}, 1.3, 0.4) + pt.eye(3, F64) * 2
  local B = det({2, 3, 3}, 0.7, 0.9) + pt.eye(3, F64)
  local function slog(a) local _, l = pt.linalg.slogdet(a); return l end

  it("inverse, determinant and log-determinants of a matrix and of a batch, as torch", function()
    check(ref["det"], pt.linalg.det, {A})
    check(ref["det batch"], pt.linalg.det, {B})
    check(ref["slogdet"], slog, {B})
    check(ref["logdet"], function(a) return pt.logdet(a) * a:sum() end, {A})
    check(ref["inv"], pt.linalg.inv, {A})
    check(ref["inv batch"], function(a) return pt.linalg.inv(a) * a end, {B})
    gradgradcheck(pt.linalg.det, {B})
    gradgradcheck(slog, {B})
    gradgradcheck(pt.linalg.inv, {B})
  end)

  it("linalg.solve with a matrix, a vector, a batch broadcast against B, and left = false", function()
    local b32, b3, b23 = det({3, 2}, 0.5, 0.1), det({3}, 0.5, 0.1), det({2, 3}, 0.5, 0.1)
    local function solve_sin(a, b) return pt.linalg.solve(a, b:sin()) end
    local function solve_vec(a, b) return pt.linalg.solve(a, b) * b:sum() end
    local function solve_right(a, b) return pt.linalg.solve(a, b, {left = false}) * b end
    check(ref["solve"], solve_sin, {A, b32})
    check(ref["solve vector"], solve_vec, {A, b3})
    check(ref["solve batch broadcast"], function(a, b) return pt.linalg.solve(a, b) ^ 2 end, {B, b32})
    check(ref["solve left false"], solve_right, {A, b23})
    gradgradcheck(solve_sin, {A, b32})
    gradgradcheck(solve_vec, {B, b3})
    gradgradcheck(solve_right, {A, b23})
  end)

  it("linalg.cholesky, lower and upper, of a matrix and a batch, and through the product it factors", function()
    local M, Mb = det({3, 3}, 1.3, 0.4), det({2, 3, 3}, 0.7, 0.9)
    local S = M:matmul(M:t()) + pt.eye(3, F64)
    local Sb = Mb:matmul(Mb:transpose(2, 3)) + pt.eye(3, F64)
    local function upper(a) return pt.linalg.cholesky(a, {upper = true}) * a end
    local function of_product(m) return pt.linalg.cholesky(m:matmul(m:transpose(1, 2)) + pt.eye(3, F64)):sin() end
    check(ref["cholesky"], pt.linalg.cholesky, {S})
    check(ref["cholesky upper batch"], upper, {Sb})
    check(ref["cholesky of a product"], of_product, {M})
    gradgradcheck(of_product, {M})
  end)

  it("a singular matrix's determinant still refuses by name (its gradient is the cofactor matrix)", function()
    refused("LinalgDetBackward", pt.linalg.det, {pt.tensor({{1, 2}, {2, 4}}, F64)})
  end)
end)
