-- pt.distributions: torch.distributions' core over partrain's tensor ops.
-- Expected numbers (REF, KL, GAMMA_GRAD, DIRICHLET_GRAD) were computed with PyTorch 1.13
-- (/usr/bin/python3, float64) on the parameters given next to them and are hard-coded here;
-- Categorical's values are 1-based here (torch's + 1). Random draws are checked statistically
-- (fixed seeds, generous tolerances) and for reproducibility, never against torch's streams.
local pt = require "partrain"
local support = require "spec.support"
local errmsg, assert_error = support.errmsg, support.assert_error
local gradcheck = require "spec.gradcheck"
local D = pt.distributions

local inf, nan = math.huge, 0 / 0

-- torch 1.13, float64
local REF = {
  normal = {mean = {0.5, -1.2, 3.0}, variance = {2.25, 0.09, 4.840000000000001}, stddev = {1.5, 0.3, 2.2}, mode = {0.5, -1.2, 3.0}, entropy = {1.824403641312837, 0.21496572887873655, 2.207395893568943}, value = {0.1, -1.0, 7.5}, log_prob = {-1.3599591968683926, 0.06281204889904135, -3.799338042329273}, cdf = {0.39486291046402516, 0.7475074624530771, 0.9795949669416939}, p = {0.05, 0.5, 0.975}, icdf = {-1.96728044042721, -1.2, 7.31192076598812}},
  uniform = {mean = {0.0, 0.625, 6.0}, variance = {0.3333333333333333, 0.005208333333333333, 5.333333333333333}, stddev = {0.5773502691896258, 0.07216878364870323, 2.3094010767585034}, mode = {nan, nan, nan}, entropy = {0.6931471805599453, -1.3862943611198906, 2.0794415416798357}, value = {0.3, 0.6, 9.99}, log_prob = {-0.6931471805599453, 1.3862943611198906, -2.0794415416798357}, cdf = {0.65, 0.3999999999999999, 0.99875}, p = {0.1, 0.5, 0.9}, icdf = {-0.8, 0.625, 9.2}},
  exponential = {mean = {2.0, 0.5, 0.13333333333333333}, variance = {4.0, 0.25, 0.017777777777777778}, stddev = {2.0, 0.5, 0.13333333333333333}, mode = {0.0, 0.0, 0.0}, entropy = {1.6931471805599454, 0.3068528194400547, -1.0149030205422647}, value = {0.0, 1.3, 0.2}, log_prob = {-0.6931471805599453, -1.9068528194400547, 0.5149030205422647}, cdf = {0.0, 0.9257264217856661, 0.7768698398515702}, p = {0.1, 0.5, 0.99}, icdf = {0.21072103131565256, 0.34657359027997264, 0.6140226914650788}},
  laplace = {mean = {0.0, -2.0, 1.5}, variance = {2.0, 0.5, 18.0}, stddev = {1.4142135623730951, 0.7071067811865476, 4.242640687119286}, mode = {0.0, -2.0, 1.5}, entropy = {1.6931471805599454, 1.0, 2.791759469228055}, value = {0.7, -2.5, 1.5}, log_prob = {-1.3931471805599451, -1.0, -1.791759469228055}, cdf = {0.7517073481042953, 0.18393972058572117, 0.5}, p = {0.2, 0.5, 0.9}, icdf = {-0.916290731874155, -2.0, 6.3283137373023015}},
  lognormal = {mean = {1.6487212707001282, 1.7010573018484008, 2.718281828459045}, variance = {4.670774270471604, 0.18662090474627063, 396.03973739380444}, stddev = {2.1611974158950877, 0.43199641751555146, 19.900747156672395}, mode = {0.36787944117144233, 1.5488302986341331, 0.006737946999085467}, entropy = {1.4189385332046727, 0.5326441720847821, 1.112085713764618}, value = {1.0, 2.3, 0.05}, log_prob = {-0.9189385332046727, -1.252181168087247, 0.8857781463262504}, cdf = {0.5, 0.9085101662343074, 0.15917213725252571}, p = {0.1, 0.5, 0.8}, icdf = {0.2776062418520097, 1.6487212707001282, 1.9802883534248372}},
  gamma = {mean = {0.5, 4.0, 2.5}, variance = {0.5, 8.0, 0.8333333333333334}, stddev = {0.7071067811865476, 2.8284271247461903, 0.9128709291752769}, mode = {0.0, 2.0, 2.1666666666666665}, entropy = {0.09060992991398853, 2.270362845461478, 1.2818283004910587}, value = {0.3, 4.0, 2.2}, log_prob = {-0.270378540761732, -2.0, -0.769799229380153}},
  beta = {mean = {0.5, 0.4, 0.7692307692307693}, variance = {0.125, 0.04, 0.023668639053254437}, stddev = {0.3535533905932738, 0.2, 0.15384615384615385}, mode = {1.0, 0.3333333333333333, 0.8888888888888888}, entropy = {-0.24156447527048996, -0.23490664978800035, -0.579905141061233}, value = {0.1, 0.4, 0.95}, log_prob = {0.05924291847653573, 0.5469646703818639, 0.9022511528172439}},
  dirichlet = {mean = {{0.14285714285714285, 0.2857142857142857, 0.5714285714285714}, {0.38961038961038963, 0.5194805194805194, 0.0909090909090909}}, variance = {{0.027210884353741496, 0.045351473922902494, 0.05442176870748299}, {0.02733495792161265, 0.02869201257020335, 0.00949938254013489}}, stddev = {{0.1649572197684645, 0.21295885499997996, 0.23328473740792172}, {0.16533287005799135, 0.1693871676668671, 0.09746477589434498}}, mode = {{0.0, 0.0, 1.0}, {0.4, 0.6, 0.0}}, entropy = {-1.4815696872089312, -1.878750355459477}, value = {{0.2, 0.3, 0.5}, {0.1, 0.6, 0.3}}, log_prob = {0.7401804350794791, -0.5956877560389446}},
  dirichlet_mode = {mode = {{1.0, 0.0, 0.0}, {0.4, 0.6, 0.0}}},
  bernoulli_probs = {mean = {0.1, 0.5, 0.99}, variance = {0.09000000000000001, 0.25, 0.00990000000000001}, stddev = {0.30000000000000004, 0.5, 0.09949874371066204}, mode = {0.0, nan, 1.0}, entropy = {0.3250829733914482, 0.6931471805599453, 0.05600153435484744}, value = {0.0, 1.0, 1.0}, log_prob = {-0.10536051565782635, -0.6931471805599453, -0.010050335853501506}, logits = {-2.197224577336219, 0.0, 4.59511985013459}},
  bernoulli_logits = {mean = {0.11920292202211755, 0.574442516811659, 0.9933071490757153}, variance = {0.1049935854035065, 0.24445831169074586, 0.006648056670790033}, stddev = {0.3240271368319427, 0.49442725621748024, 0.08153561596498816}, mode = {0.0, 1.0, 1.0}, entropy = {0.3653338550872077, 0.6820224894250293, 0.040179603110541626}, value = {1.0, 0.0, 1.0}, log_prob = {-2.1269280110429727, -0.854355244468527, -0.006715348489117967}, probs = {0.11920292202211755, 0.574442516811659, 0.9933071490757153}},
  categorical_probs = {entropy = {0.8018185525433373, 1.0888999753452238}, value = {3, 1}, log_prob = {-0.35667494393873245, -1.2039728043259361}, logits = {{-2.3025850929940455, -1.6094379124341003, -0.35667494393873245}, {-1.2039728043259361, -1.2039728043259361, -0.916290731874155}}, probs = {{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}}, mode = {3, 3}},
  categorical_logits = {entropy = {0.878281175268733, 0.42006001194560816}, value = {{2, 4}, {1, 3}}, log_prob = {{-1.8423495823898222, -2.911820436738077}, {-3.342349582389822, -3.011820436738077}}, logits = {{-3.342349582389822, -1.8423495823898222, -0.34234958238982216, -2.342349582389822}, {-0.11182043673807707, -6.111820436738077, -3.011820436738077, -2.911820436738077}}, probs = {{0.035353793408748876, 0.15844470951497974, 0.7100999228861743, 0.09610157419009724}, {0.8942048094177191, 0.0022165121177296974, 0.04920202800408884, 0.0543766504604626}}, mode = {3, 1}},
  onehot = {mean = {{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}}, variance = {{0.09000000000000001, 0.16000000000000003, 0.21000000000000002}, {0.21, 0.21, 0.24}}, stddev = {{0.30000000000000004, 0.4, 0.45825756949558405}, {0.458257569495584, 0.458257569495584, 0.4898979485566356}}, mode = {{0.0, 0.0, 1.0}, {0.0, 0.0, 1.0}}, entropy = {0.8018185525433373, 1.0888999753452238}, value = {{0.0, 1.0, 0.0}, {1.0, 0.0, 0.0}}, log_prob = {-1.6094379124341003, -1.2039728043259361}},
  poisson = {mean = {0.5, 3.0, 12.5}, variance = {0.5, 3.0, 12.5}, mode = {0.0, 3.0, 12.0}, value = {0.0, 2.0, 15.0}, log_prob = {-0.5, -1.4959226032237258, -2.5133417192170597}},
  binomial_probs = {mean = {1.0, 5.0, 18.0}, variance = {0.8, 2.5, 1.7999999999999996}, mode = {1.0, 5.0, 18.0}, value = {1.0, 5.0, 18.0}, log_prob = {-0.8925742052568388, -1.402042718088028, -1.254635395668485}},
  binomial_logits = {mean = {1.8242552380635635, 5.0, 9.241418199787566}, variance = {1.4914645207033286, 2.5, 0.7010371654510807}, stddev = {1.221255305291784, 1.5811388300841898, 0.8372796220206729}, mode = {2.0, 5.0, 10.0}, entropy = {1.5803529804447052, 1.875953605246802, 1.132143233045063}, value = {0.0, 4.0, 10.0}, log_prob = {-2.0141327798275235, -1.5843642748819828, -0.7888973429254946}},
  mvn_cov = {mean = {1.0, -1.0, 0.5}, variance = {2.0000000000000004, 1.0, 1.5}, stddev = {1.4142135623730951, 1.0, 1.224744871391589}, mode = {1.0, -1.0, 0.5}, entropy = 4.7301285654491325, value = {{0.3, 0.2, -0.1}, {1.0, -1.0, 0.5}}, log_prob = {-4.688840245697483, -3.230128565449132}, scale_tril = {{1.4142135623730951, 0.0, 0.0}, {0.21213203435596423, 0.9772410142846032, 0.0}, {-0.282842712474619, 0.2660551452502585, 1.1615569980357674}}, precision_matrix = {{0.5665502522312765, -0.20566550252231275, 0.1785021342646488}, {-0.20566550252231275, 1.1020566550252233, -0.20178502134264653}, {0.1785021342646488, -0.20178502134264653, 0.7411719053162593}}},
  mvn_prec = {mean = {1.0, -1.0, 0.5}, variance = {0.5665502522312768, 1.102056655025223, 0.7411719053162594}, stddev = {0.7526953249697229, 1.0497888621171512, 0.8609134133676043}, mode = {1.0, -1.0, 0.5}, entropy = 3.7835026337789044, value = {{0.3, 0.2, -0.1}, {1.0, -1.0, 0.5}}, log_prob = {-3.199502633778904, -2.2835026337789044}, scale_tril = {{0.7526953249697229, 0.0, 0.0}, {-0.273238713858872, 1.0136060675992289, 0.0}, {0.2371505818397758, -0.13514747567989724, 0.8164965809277261}}, covariance_matrix = {{0.5665502522312768, -0.20566550252231278, 0.17850213426464892}, {-0.20566550252231278, 1.102056655025223, -0.2017850213426466}, {0.17850213426464892, -0.2017850213426466, 0.7411719053162594}}},
  mvn_tril = {mean = {{0.0, 1.0}, {2.0, -1.0}}, variance = {{1.0, 4.25}, {0.09, 0.5299999999999999}}, stddev = {{1.0, 2.0615528128088303}, {0.3, 0.7280109889280517}}, mode = {{0.0, 1.0}, {2.0, -1.0}}, entropy = {3.5310242469692907, 1.2772293181446768}, value = {{{0.5, 0.5}, {1.0, 1.0}}, {{0.0, 0.0}, {2.5, -0.5}}, {{-1.0, 3.0}, {2.0, -1.0}}}, log_prob = {{-2.7263367469692907, -7.646843830616333}, {-2.6560242469692907, -2.3747349870789174}, {-3.8122742469692907, -0.2772293181446768}}, covariance_matrix = {{{1.0, 0.5}, {0.5, 4.25}}, {{0.09, -0.06}, {-0.06, 0.5299999999999999}}}},
  independent = {mean = {{0.0, 1.0, 2.0}, {-1.0, 0.5, 0.0}}, variance = {{1.0, 0.25, 4.0}, {0.09, 1.0, 2.25}}, stddev = {{1.0, 0.5, 2.0}, {0.3, 1.0, 1.5}}, mode = {{0.0, 1.0, 2.0}, {-1.0, 0.5, 0.0}}, entropy = {4.2568155996140185, 3.4583079033962463}, value = {{0.2, 0.8, 1.0}, {0.0, 0.0, 0.0}}, log_prob = {-2.981815599614018, -7.638863458951801}},
}
local KL = {
  normal = {0.3493971805599453, 0.0, 7.40138771133189},
  bernoulli = {0.5341108087103075, 0.5108256237659905, 0.5108256237659905, inf, inf},
  categorical = {0.2332113080895541, 0.2554128118829954, 0.2231435513142097},
  beta = {0.9347116558304349, 0.02371448006428656, 3.1402305987394445},
  gamma = {0.21624288952606607, 0.06094613559783946, 1.0036447475449801},
  dirichlet = {0.7884225066489858, 2.0570264475844025},
  exponential = {0.3068528194400546, 0.1931471805599454, 3.3308214468696438},
  laplace = {0.37708690114566656, 0.43194562200144304, 3.8474244890477456},
  uniform = {1.0986122886681098, 0.4054651081081644, inf},
  poisson = {0.15342640972002736, 0.21639532432449338, 1.6249546344283097},
  binomial = {0.2573209247798519, 5.108256237659906, 3.6806420716849706},
  binomial_inf = {0.2573209247798519, inf},
  onehot = {0.2332113080895541},
  mvn = {1.9811897807834606, 2.13707895044577},
  independent = {1.3068528194400546, 2.636294361119891},
  lognormal = {0.3493971805599453, 0.8068528194400547},
}
local GAMMA_GRAD = {alpha = {0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 7.9, 7.9, 7.9, 7.9, 7.9, 7.9, 7.9, 7.9, 7.9, 7.9, 7.9, 7.9, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0}, x = {0.05, 0.5, 0.79, 0.85, 1.5, 3.0, 7.5, 8.6, 9.0, 27.5, 30.5, 40.0, 0.05, 0.5, 0.79, 0.85, 1.5, 3.0, 7.5, 8.6, 9.0, 27.5, 30.5, 40.0, 0.05, 0.5, 0.79, 0.85, 1.5, 3.0, 7.5, 8.6, 9.0, 27.5, 30.5, 40.0, 0.05, 0.5, 0.79, 0.85, 1.5, 3.0, 7.5, 8.6, 9.0, 27.5, 30.5, 40.0, 0.05, 0.5, 0.79, 0.85, 1.5, 3.0, 7.5, 8.6, 9.0, 27.5, 30.5, 40.0, 0.05, 0.5, 0.79, 0.85, 1.5, 3.0, 7.5, 8.6, 9.0, 27.5, 30.5, 40.0}, grad = {0.49471098700419375, 1.9920919270579531, 2.470261208530069, 2.550538346071017, 3.212833391896362, 4.067139411725383, 5.197080968490017, 5.360905739372431, 5.414897797248103, 6.656609956709076, 6.762246574004886, 7.030560533370711, 0.17591374110774036, 0.8069784920049818, 1.0383919877424925, 1.079236069157106, 1.431010897885187, 1.9378658620077207, 2.710967887668968, 2.8337936851068477, 2.8749120661919583, 3.9159003269768546, 4.013691250043463, 4.269357836553489, 0.08324528620267369, 0.42683950298203893, 0.5662045243084929, 0.5915548051360218, 0.817771600145159, 1.1692164760887411, 1.7589336369503776, 1.8582474170592955, 1.8918265798774485, 2.7949415019810773, 2.884787921834662, 3.123527323424818, 0.03262105102983081, 0.18960776626091097, 0.2603250715913916, 0.2740592184852121, 0.39700464345542996, 0.6049608609803148, 0.9949540730261424, 1.065224508505982, 1.089264662259706, 1.7845794683370164, 1.8584442105448753, 2.058378051643317, 0.03071467062860153, 0.1798017731695152, 0.24735043936322954, 0.2606078453877785, 0.3787612871234717, 0.5790752562070776, 0.9572378332094696, 1.025730079306391, 1.049169583383442, 1.7330701291265576, 1.8063940467207023, 2.005629662352194, 0.010706527462428912, 0.06964496674882384, 0.0986915964547073, 0.1044351378423486, 0.15847594798643524, 0.2571859385626362, 0.46459898979347825, 0.5048373596832172, 0.5187951011336168, 0.9624992316363367, 1.013901333403447, 1.1571513494803003}}
local DIRICHLET_GRAD = {x = {0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.97, 0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.97, 0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.97, 0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.97, 0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.97, 0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.97, 0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.97}, alpha = {0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 6.5, 6.5, 6.5, 6.5, 6.5, 6.5, 6.5, 6.5, 6.5, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, total = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 20.0, 20.0, 20.0, 20.0, 20.0, 20.0, 20.0, 20.0, 20.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5}, grad = {0.1288956105725676, 0.7538236166530039, 1.5937160991316897, 2.060758420640348, 2.1990747213213204, 2.3306711884440743, 2.692102986485015, 3.1149265920480014, 3.2505156869140635, 0.04170129920475615, 0.21450072078325227, 0.41227156143492605, 0.5115026745651171, 0.5397207708399183, 0.5661233564001812, 0.636523592375, 0.7153455250734126, 0.7398856655401712, 0.019306061648782017, 0.10847466087166084, 0.22213778921565455, 0.2830796678485945, 0.3008535664657999, 0.31765856182824953, 0.3632935618435518, 0.41574737412166574, 0.43236646535597034, 0.005843377677009174, 0.02982840985096274, 0.057223849829335253, 0.07096224082839449, 0.07487048426020168, 0.07854940762626636, 0.08838429480586808, 0.09961097955048577, 0.1028859494050693, 0.005664076547993425, 0.02716503913887488, 0.05006140629930743, 0.06119928815133408, 0.06434013369746329, 0.0672698121375117, 0.07506493537492316, 0.08384695742022699, 0.08614137939660531, 0.006174360581043078, 0.026676325535682048, 0.046178809325840356, 0.055002878763169054, 0.057381265720741204, 0.059552963003559105, 0.06511918785740815, 0.0710830913354169, 0.07293021958273452, 0.08019221750232557, 0.4014400633483731, 0.7553986006857262, 0.9284574796912259, 0.9771572685331533, 1.0225276208639138, 1.1425684261843552, 1.2754249729124782, 1.3164633023256282}}

local function f64(v) return pt.tensor(v, {dtype = "float64"}) end
local function flat(v) return support.flat(pt.is_tensor(v) and v:tolist() or v) end

-- element by element: nan with nan, infinities exactly, else within tol (relative above 1)
local function close(got, want, tol, what)
  tol = tol or 1e-10
  local a, b = flat(got), flat(want)
  assert.are.equal(#b, #a, (what or "value") .. ": number of elements")
  for i = 1, #b do
    local x, y = a[i], b[i]
    local ok
    if y ~= y then ok = x ~= x
    elseif y == inf or y == -inf then ok = x == y
    else ok = math.abs(x - y) <= tol * math.max(1, math.abs(y)) end
    if not ok then
      error(string.format("%s[%d]: got %.17g, expected %.17g", what or "value", i, x, y), 2)
    end
  end
end

local function shape(t) return pt.is_tensor(t) and t:size() or t end

-- the distributions of REF, built from the same parameters as the torch script
local function build()
  local covm = f64 {{2.0, 0.3, -0.4}, {0.3, 1.0, 0.2}, {-0.4, 0.2, 1.5}}
  local loc3 = f64 {1.0, -1.0, 0.5}
  local L = f64 {{{1.0, 0.0}, {0.5, 2.0}}, {{0.3, 0.0}, {-0.2, 0.7}}}
  local loc2 = f64 {{0.0, 1.0}, {2.0, -1.0}}
  return {
    normal = D.Normal(f64 {0.5, -1.2, 3.0}, f64 {1.5, 0.3, 2.2}),
    uniform = D.Uniform(f64 {-1.0, 0.5, 2.0}, f64 {1.0, 0.75, 10.0}),
    exponential = D.Exponential(f64 {0.5, 2.0, 7.5}),
    laplace = D.Laplace(f64 {0.0, -2.0, 1.5}, f64 {1.0, 0.5, 3.0}),
    lognormal = D.LogNormal(f64 {0.0, 0.5, -1.0}, f64 {1.0, 0.25, 2.0}),
    gamma = D.Gamma(f64 {0.5, 2.0, 7.5}, f64 {1.0, 0.5, 3.0}),
    beta = D.Beta(f64 {0.5, 2.0, 5.0}, f64 {0.5, 3.0, 1.5}),
    dirichlet = D.Dirichlet(f64 {{0.5, 1.0, 2.0}, {3.0, 4.0, 0.7}}),
    dirichlet_mode = D.Dirichlet(f64 {{0.5, 0.9, 0.2}, {3.0, 4.0, 0.7}}),
    bernoulli_probs = D.Bernoulli(f64 {0.1, 0.5, 0.99}),
    bernoulli_logits = D.Bernoulli {logits = f64 {-2.0, 0.3, 5.0}},
    categorical_probs = D.Categorical(f64 {{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}} * 2),
    categorical_logits = D.Categorical {logits = f64 {{-1.0, 0.5, 2.0, 0.0}, {3.0, -3.0, 0.1, 0.2}}},
    onehot = D.OneHotCategorical(f64 {{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}}),
    poisson = D.Poisson(f64 {0.5, 3.0, 12.5}),
    binomial_probs = D.Binomial(f64 {5.0, 10.0, 20.0}, f64 {0.2, 0.5, 0.9}),
    binomial_logits = D.Binomial(10, nil, f64 {-1.5, 0.0, 2.5}),
    mvn_cov = D.MultivariateNormal(loc3, covm),
    mvn_prec = D.MultivariateNormal(loc3, {precision_matrix = covm}),
    mvn_tril = D.MultivariateNormal(loc2, {scale_tril = L}),
    independent = D.Independent(D.Normal(f64 {{0.0, 1.0, 2.0}, {-1.0, 0.5, 0.0}}, f64 {{1.0, 0.5, 2.0}, {0.3, 1.0, 1.5}}), 1),
  }
end

describe("distributions: values against torch 1.13", function()
  local dists = build()

  it("log_prob, cdf, icdf, entropy, mean, mode, variance and stddev", function()
    local checked = 0
    for name, ref in pairs(REF) do
      local d = assert(dists[name], name)
      for _, k in ipairs {"mean", "variance", "stddev", "mode", "probs", "logits", "scale_tril",
                          "precision_matrix", "covariance_matrix"} do
        if ref[k] then
          close(d[k], ref[k], 1e-10, name .. "." .. k)
          checked = checked + 1
        end
      end
      if ref.entropy then close(d:entropy(), ref.entropy, 1e-10, name .. ":entropy()") end
      if ref.log_prob then
        local v = ref.value
        local value = name:match("^categorical") and pt.tensor(v, {dtype = "int64"}) or f64(v)
        close(d:log_prob(value), ref.log_prob, 1e-10, name .. ":log_prob")
      end
      if ref.cdf then close(d:cdf(f64(ref.value)), ref.cdf, 1e-10, name .. ":cdf") end
      if ref.icdf then close(d:icdf(f64(ref.p)), ref.icdf, 1e-10, name .. ":icdf") end
    end
    assert.is_true(checked > 60)
  end)

  it("log_prob's shape broadcasts value with the batch shape (mvn: sample dims in front)", function()
    assert.are.same({3, 2}, dists.mvn_tril:log_prob(f64(REF.mvn_tril.value)):size())
    assert.are.same({2, 2}, dists.categorical_logits:log_prob(pt.tensor(REF.categorical_logits.value,
      {dtype = "int64"})):size())
    assert.are.same({4, 3}, dists.normal:log_prob(pt.zeros({4, 1}, {dtype = "float64"})):size())
  end)

  it("kl_divergence for the registered same-family pairs", function()
    local L = f64 {{{1.0, 0.0}, {0.5, 2.0}}, {{0.3, 0.0}, {-0.2, 0.7}}}
    local loc2 = f64 {{0.0, 1.0}, {2.0, -1.0}}
    local pairs_ = {
      normal = {D.Normal(f64 {0.0, 1.0, -2.0}, f64 {1.0, 0.5, 3.0}), D.Normal(f64 {0.5, 1.0, 1.0}, f64 {2.0, 0.5, 1.0})},
      bernoulli = {D.Bernoulli(f64 {0.2, 0.0, 1.0, 0.5, 0.3}), D.Bernoulli(f64 {0.7, 0.4, 0.6, 0.0, 1.0})},
      categorical = {D.Categorical(f64 {{0.2, 0.3, 0.5}, {0.0, 0.5, 0.5}, {0.5, 0.5, 0.0}}),
                     D.Categorical(f64 {{0.4, 0.4, 0.2}, {0.2, 0.3, 0.5}, {0.2, 0.8, 0.0}})},
      beta = {D.Beta(f64 {0.5, 2.0, 5.0}, f64 {0.5, 3.0, 1.5}), D.Beta(f64 {1.0, 1.5, 2.0}, f64 {2.0, 2.5, 4.0})},
      gamma = {D.Gamma(f64 {0.5, 2.0, 7.5}, f64 {1.0, 0.5, 3.0}), D.Gamma(f64 {1.0, 3.0, 5.0}, f64 {2.0, 0.7, 1.0})},
      dirichlet = {D.Dirichlet(f64 {{0.5, 1.0, 2.0}, {3.0, 4.0, 0.7}}), D.Dirichlet(f64 {{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}})},
      exponential = {D.Exponential(f64 {0.5, 2.0, 7.5}), D.Exponential(f64 {1.0, 1.0, 0.1})},
      laplace = {D.Laplace(f64 {0.0, -2.0, 1.5}, f64 {1.0, 0.5, 3.0}), D.Laplace(f64 {1.0, -2.0, 0.0}, f64 {2.0, 1.5, 0.5})},
      uniform = {D.Uniform(f64 {0.0, -1.0, 0.0}, f64 {1.0, 1.0, 2.0}), D.Uniform(f64 {-1.0, -2.0, 0.5}, f64 {2.0, 1.0, 3.0})},
      poisson = {D.Poisson(f64 {0.5, 3.0, 12.5}), D.Poisson(f64 {1.0, 2.0, 20.0})},
      binomial = {D.Binomial(10, f64 {0.2, 0.5, 0.9}), D.Binomial(10, f64 {0.3, 0.1, 0.5})},
      binomial_inf = {D.Binomial(f64 {10.0, 12.0}, f64 {0.2, 0.5}), D.Binomial(f64 {10.0, 10.0}, f64 {0.3, 0.1})},
      onehot = {D.OneHotCategorical(f64 {{0.2, 0.3, 0.5}}), D.OneHotCategorical(f64 {{0.4, 0.4, 0.2}})},
      mvn = {D.MultivariateNormal(loc2, {scale_tril = L}),
             D.MultivariateNormal(f64 {1.0, 0.0}, f64 {{2.0, 0.3}, {0.3, 1.0}})},
      independent = {D.Independent(D.Normal(f64 {{0.0, 1.0}, {2.0, 3.0}}, f64 {{1.0, 2.0}, {0.5, 1.0}}), 1),
                     D.Independent(D.Normal(f64 {{1.0, 1.0}, {0.0, 3.0}}, f64 {{1.0, 1.0}, {1.0, 2.0}}), 1)},
      lognormal = {D.LogNormal(f64 {0.0, 1.0}, f64 {1.0, 0.5}), D.LogNormal(f64 {0.5, 1.0}, f64 {2.0, 0.25})},
    }
    local n = 0
    for name, want in pairs(KL) do
      local pq = assert(pairs_[name], name)
      close(D.kl_divergence(pq[1], pq[2]), want, 1e-10, "kl " .. name)
      n = n + 1
    end
    assert.are.equal(16, n)
  end)

  it("Gamma's and Dirichlet's implicit reparameterization gradients (torch._standard_gamma_grad, _dirichlet_grad)", function()
    -- the grids cover every branch of ATen's approximations
    close(D._standard_gamma_grad(f64(GAMMA_GRAD.alpha), f64(GAMMA_GRAD.x)), GAMMA_GRAD.grad, 1e-10, "gamma grad")
    local g = DIRICHLET_GRAD
    close(D._dirichlet_grad(f64(g.x), f64(g.alpha), f64(g.total)), g.grad, 1e-10, "dirichlet grad")
  end)
end)

describe("distributions: shapes and parameters", function()
  it("numbers make 0-d float32 parameters and an empty batch shape, as torch", function()
    local d = D.Normal(0, 1)
    assert.are.same({}, d.batch_shape)
    assert.are.same({}, d.event_shape)
    assert.are.equal("float32", d.loc:dtype())
    assert.are.equal(0, d.loc:dim())
    assert.are.same({}, d:sample():size())
    assert.are.same({5, 2}, d:sample({5, 2}):size())
    assert.are.same({7}, d:sample(7):size())
    assert.are.equal("Normal(loc: 0, scale: 1)", tostring(d))
  end)

  it("numbers take the dtype of the tensor parameter and broadcast against it", function()
    local d = D.Normal(f64 {{0.0}, {1.0}}, 2)
    assert.are.equal("float64", d.scale:dtype())
    assert.are.same({2, 1}, d.scale:size())
    local g = D.Gamma(pt.ones(3), f64 {{1.0}, {2.0}})
    assert.are.same({2, 3}, g.batch_shape)
    assert.are.same({4, 2, 3}, g:sample({4}):size())
    assert.are.equal("Normal(loc: {2,1}, scale: {2,1})", tostring(d))
  end)

  it("batch and event shapes of every family", function()
    local cases = {
      {D.Uniform(pt.zeros(2), 1), {2}, {}},
      {D.Exponential(pt.ones(3, 1)), {3, 1}, {}},
      {D.Laplace(0, pt.ones(2)), {2}, {}},
      {D.LogNormal(pt.zeros(4), 1), {4}, {}},
      {D.Beta(pt.ones(2, 3), 1), {2, 3}, {}},
      {D.Dirichlet(pt.ones(2, 5)), {2}, {5}},
      {D.Bernoulli(0.5), {}, {}},
      {D.Categorical(pt.ones(4, 3)), {4}, {}},
      {D.Categorical(pt.ones(3)), {}, {}},
      {D.OneHotCategorical(pt.ones(4, 3)), {4}, {3}},
      {D.Poisson(pt.ones(2)), {2}, {}},
      {D.Binomial(5, pt.full({3}, 0.5)), {3}, {}},
      {D.MultivariateNormal(pt.zeros(4, 2), pt.eye(2)), {4}, {2}},
      {D.MultivariateNormal(pt.zeros(2), {scale_tril = pt.eye(2):expand(3, 2, 2)}), {3}, {2}},
      {D.Independent(D.Normal(pt.zeros(2, 3, 4), 1), 2), {2}, {3, 4}},
      {D.Independent(D.Dirichlet(pt.ones(2, 3, 4)), 1), {2}, {3, 4}},
    }
    for i, c in ipairs(cases) do
      local d = c[1]
      assert.are.same(c[2], d.batch_shape, "case " .. i)
      assert.are.same(c[3], d.event_shape, "case " .. i)
      local s = d:sample({2})
      local want = {2}
      for _, v in ipairs(c[2]) do want[#want + 1] = v end
      for _, v in ipairs(c[3]) do want[#want + 1] = v end
      assert.are.same(want, s:size(), "case " .. i)
      want[1] = 0
      assert.are.same(want, d:sample({0}):size(), "case " .. i)
      assert.are.same(c[2], d:log_prob(d:sample()):size(), "case " .. i)
    end
  end)

  it("expand views the parameters with a larger batch shape", function()
    local d = D.Normal(f64 {0.0, 1.0}, f64 {1.0, 2.0})
    local e = d:expand({3, 2})
    assert.are.same({3, 2}, e.batch_shape)
    assert.are.same({3, 2}, e.loc:size())
    close(e:log_prob(f64 {0.5, 0.5}), {d:log_prob(f64 {0.5, 0.5}):tolist(), d:log_prob(f64 {0.5, 0.5}):tolist(),
      d:log_prob(f64 {0.5, 0.5}):tolist()}, 0)
    local c = D.Categorical {logits = f64 {0.1, 0.2, 0.7}}:expand({4})
    assert.are.same({4}, c.batch_shape)
    assert.are.same({4, 3}, c.logits:size())
    assert.are.same({4, 3}, c.param_shape)
    local m = D.MultivariateNormal(f64 {0.0, 0.0}, f64 {{1.0, 0.5}, {0.5, 1.0}}):expand({5})
    assert.are.same({5, 2, 2}, m.covariance_matrix:size())
    assert.are.same({5}, m:entropy():size())
    local b = D.Beta(2, 3):expand({2})
    assert.are.same({2}, b.concentration1:size())
    local i = D.Independent(D.Normal(pt.zeros(3), 1), 1):expand({2})
    assert.are.same({2}, i.batch_shape)
    assert.are.same({2, 3}, i.base_dist.batch_shape)
    local l = D.LogNormal(0, 1):expand({2, 2})
    assert.are.same({2, 2}, l:sample():size())
    local o = D.OneHotCategorical(pt.ones(3)):expand({2})
    assert.are.same({2, 3}, o:sample():size())
  end)

  it("Bernoulli, Categorical and Binomial derive the other parameter lazily (torch's clamp of probs)", function()
    local b = D.Bernoulli(f64 {0.0, 1.0})
    local eps = 2 ^ -52
    close(b.logits, {math.log(eps) - math.log(1 - eps), math.log(1 - eps) - math.log(eps)}, 1e-12)
    assert.is_true(rawequal(b.logits, b.logits)) -- cached, as torch's lazy_property
    local c = D.Categorical(f64 {1.0, 3.0})
    close(c.probs, {0.25, 0.75}, 1e-15)
    local bl = D.Binomial{total_count = 4, logits = f64 {0.0}}
    close(bl.probs, {0.5}, 0)
    close(bl:entropy(), {-(1 / 16 * math.log(1 / 16) * 2 + 4 / 16 * math.log(4 / 16) * 2 + 6 / 16 * math.log(6 / 16))}, 1e-14)
  end)

  it("enumerate_support", function()
    assert.are.same({{0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}}, D.Bernoulli(pt.full({3}, 0.5)):enumerate_support():tolist())
    assert.are.same({2, 1}, D.Bernoulli(pt.full({3}, 0.5)):enumerate_support(false):size())
    local c = D.Categorical(pt.ones(2, 3)):enumerate_support()
    assert.are.equal("int64", c:dtype())
    assert.are.same({{1, 1}, {2, 2}, {3, 3}}, c:tolist())
    assert.are.same({3, 2, 3}, D.OneHotCategorical(pt.ones(2, 3)):enumerate_support():size())
    assert.are.same({0.0, 1.0, 2.0, 3.0}, D.Binomial(3, 0.5):enumerate_support():tolist())
    assert.is_true(D.Categorical(pt.ones(2)).has_enumerate_support)
    assert.is_false(D.Independent(D.Bernoulli(pt.full({2}, 0.5)), 1).has_enumerate_support)
    assert.is_true(D.Independent(D.Bernoulli(pt.full({2}, 0.5)), 0).has_enumerate_support)
  end)

  it("has_rsample where torch has it", function()
    for _, d in ipairs {D.Normal(0, 1), D.Uniform(0, 1), D.Exponential(1), D.Laplace(0, 1), D.LogNormal(0, 1),
                        D.Gamma(1, 1), D.Beta(1, 1), D.Dirichlet(pt.ones(2)),
                        D.MultivariateNormal(pt.zeros(2), pt.eye(2)), D.Independent(D.Normal(pt.zeros(2), 1), 1)} do
      assert.is_true(d.has_rsample, tostring(d))
    end
    for _, d in ipairs {D.Bernoulli(0.5), D.Categorical(pt.ones(2)), D.OneHotCategorical(pt.ones(2)), D.Poisson(1),
                        D.Binomial(2, 0.5), D.Independent(D.Poisson(pt.ones(2)), 1)} do
      assert.is_false(d.has_rsample, tostring(d))
    end
  end)

  it("float32 parameters give float32 draws, log_probs and gradients", function()
    local a = pt.tensor {0.5, 3.0}
    a.requires_grad = true
    for _, d in ipairs {D.Gamma(a, 1), D.Dirichlet(a), D.Normal(a, 1), D.Beta(a, 2)} do
      local x = d:rsample({3})
      assert.are.equal("float32", x:dtype(), tostring(d))
      assert.are.equal("float32", d:log_prob(x:detach()):dtype(), tostring(d))
      a.grad = nil
      x:sum():backward()
      assert.are.equal("float32", a.grad:dtype(), tostring(d))
      assert.is_true(a.grad:isfinite():all():item(), tostring(d))
    end
    assert.are.equal("float32", D.Categorical(pt.ones(3)).probs:dtype())
    assert.are.equal("float32", D.Binomial(4, 0.5):sample():dtype())
  end)

  it("print as torch's repr, with shapes for tensors of more than one element", function()
    assert.are.equal("OneHotCategorical(probs: {3})", tostring(D.OneHotCategorical(pt.ones(3))))
    assert.are.equal("Bernoulli(logits: 0)", tostring(D.Bernoulli {logits = 0.0}))
    assert.are.equal("Beta(concentration1: 2, concentration0: 3)", tostring(D.Beta(2, 3)))
    assert.are.equal("MultivariateNormal(loc: {2}, scale_tril: {2,2})",
      tostring(D.MultivariateNormal(pt.zeros(2), {scale_tril = pt.eye(2)})))
    assert.are.equal("Independent(Exponential(rate: {2,3}), 1)", tostring(D.Independent(D.Exponential(pt.ones(2, 3)), 1)))
  end)

  it("perplexity is exp(entropy)", function()
    local d = D.Categorical(f64 {0.25, 0.25, 0.25, 0.25})
    close(d:perplexity(), 4, 1e-14)
  end)
end)

-- mean and variance of n draws of d (floating results), flattened over the sample dim
local function moments(d, n)
  local s = d:sample({n}):to("float64")
  return s:mean(1), s:var(1)
end

describe("distributions: sampling", function()
  it("draws are reproducible after pt.manual_seed", function()
    for _, d in ipairs {D.Normal(0, 1), D.Gamma(f64 {0.3, 4.0}, 1), D.Dirichlet(f64 {1.0, 2.0}),
                        D.Categorical(pt.ones(3)), D.Binomial(7, 0.3), D.Poisson(2.5),
                        D.MultivariateNormal(pt.zeros(2), pt.eye(2)), D.Laplace(0, 1), D.Bernoulli(0.3)} do
      pt.manual_seed(123)
      local a = d:sample({50})
      pt.manual_seed(123)
      local b = d:sample({50})
      assert.is_true(a:equal(b), tostring(d))
    end
  end)

  it("sample means and variances match the distributions' (fixed seed, 5 standard errors)", function()
    pt.manual_seed(2024)
    local n = 40000
    local cases = {
      D.Normal(f64 {0.5, -2.0}, f64 {1.5, 0.2}),
      D.Uniform(f64 {-1.0, 2.0}, f64 {1.0, 2.5}),
      D.Exponential(f64 {0.5, 4.0}),
      D.Laplace(f64 {1.0, -1.0}, f64 {2.0, 0.5}),
      D.LogNormal(f64 {0.0, 1.0}, f64 {0.5, 0.25}),
      D.Gamma(f64 {0.2, 0.9, 1.0, 3.5, 40.0}, f64 {1.0, 2.0, 0.5, 1.0, 4.0}),
      D.Beta(f64 {0.5, 2.0, 8.0}, f64 {0.5, 5.0, 1.5}),
      D.Dirichlet(f64 {0.3, 1.0, 4.0}),
      D.Bernoulli(f64 {0.1, 0.5, 0.95}),
      D.OneHotCategorical(f64 {0.2, 0.3, 0.5}),
      D.Poisson(f64 {0.5, 4.0, 30.0}),
      D.Binomial(f64 {1.0, 10.0, 60.0}, f64 {0.5, 0.2, 0.9}),
      D.MultivariateNormal(f64 {1.0, -1.0}, f64 {{2.0, 0.6}, {0.6, 1.0}}),
    }
    for _, d in ipairs(cases) do
      local mean, var = moments(d, n)
      local m, v = flat(d.mean), flat(d.variance)
      local gm, gv = flat(mean), flat(var)
      for i = 1, #m do
        local se = math.sqrt(v[i] / n)
        assert(math.abs(gm[i] - m[i]) <= 5 * se + 1e-12,
          string.format("%s mean[%d]: %.6g vs %.6g (se %.3g)", tostring(d), i, gm[i], m[i], se))
        -- the variance of a sample variance is about (kurtosis-dependent) 2 v^2 / n; 10x covers heavy tails
        assert(math.abs(gv[i] - v[i]) <= 10 * v[i] * math.sqrt(2 / n) + 1e-12,
          string.format("%s var[%d]: %.6g vs %.6g", tostring(d), i, gv[i], v[i]))
      end
    end
  end)

  it("Categorical's draws are 1-based categories with the given frequencies", function()
    pt.manual_seed(7)
    local s = D.Categorical(f64 {{0.1, 0.6, 0.3}, {1.0, 0.0, 0.0}}):sample({30000})
    assert.are.equal("int64", s:dtype())
    assert.are.same({30000, 2}, s:size())
    local first = s:select(2, 1)
    for k, p in ipairs {0.1, 0.6, 0.3} do
      local freq = first:eq(k):to("float64"):mean():item()
      assert(math.abs(freq - p) < 5 * math.sqrt(p * (1 - p) / 30000), string.format("category %d: %.4f", k, freq))
    end
    assert.is_true(s:select(2, 2):eq(1):all():item())
    assert.are.equal(1, s:min():item())
  end)

  it("MultivariateNormal's draws have its covariance", function()
    pt.manual_seed(11)
    local cov = f64 {{2.0, 0.6, -0.3}, {0.6, 1.0, 0.2}, {-0.3, 0.2, 0.5}}
    local s = D.MultivariateNormal(f64 {0.0, 1.0, 2.0}, {precision_matrix = pt.linalg.inv(cov)}):sample({40000})
    close(pt.cov(s:t()), cov:tolist(), 0.05)
  end)

  it("small Gamma concentrations stay positive (torch clamps to the smallest normal number)", function()
    pt.manual_seed(5)
    local s = D.Gamma(f64 {1e-3}, 1):sample({2000})
    assert.is_true(s:gt(0):all():item())
    assert.is_true(s:isfinite():all():item())
  end)
end)

describe("distributions: gradients", function()
  local function lp(make, value)
    return function(...) return make(...):log_prob(value) end
  end

  it("log_prob w.r.t. the parameters (and the value where continuous)", function()
    gradcheck(function(loc, scale, v) return D.Normal(loc, scale):log_prob(v) end,
      {f64 {0.5, -1.0}, f64 {1.5, 0.3}, f64 {0.1, -0.8}})
    gradcheck(lp(function(a, b) return D.Uniform(a, b) end, f64 {0.3, 0.6}), {f64 {-1.0, 0.5}, f64 {1.0, 0.75}})
    gradcheck(lp(function(r) return D.Exponential(r) end, f64 {0.2, 1.3}), {f64 {0.5, 2.0}})
    gradcheck(lp(function(l, s) return D.Laplace(l, s) end, f64 {0.7, -2.5}), {f64 {0.0, -2.0}, f64 {1.0, 0.5}})
    gradcheck(lp(function(l, s) return D.LogNormal(l, s) end, f64 {1.3, 0.05}), {f64 {0.0, -1.0}, f64 {1.0, 2.0}})
    gradcheck(lp(function(a, r) return D.Gamma(a, r) end, f64 {0.3, 4.0}), {f64 {0.5, 2.0}, f64 {1.0, 0.5}})
    gradcheck(lp(function(a, b) return D.Beta(a, b) end, f64 {0.1, 0.4}), {f64 {0.5, 2.0}, f64 {0.7, 3.0}})
    gradcheck(lp(function(c) return D.Dirichlet(c) end, f64 {{0.2, 0.3, 0.5}, {0.1, 0.6, 0.3}}),
      {f64 {{0.5, 1.0, 2.0}, {3.0, 4.0, 0.7}}})
    gradcheck(lp(function(p) return D.Bernoulli(p) end, f64 {0.0, 1.0, 1.0}), {f64 {0.1, 0.5, 0.9}})
    gradcheck(lp(function(l) return D.Bernoulli {logits = l} end, f64 {1.0, 0.0}), {f64 {-2.0, 0.3}})
    local idx = pt.tensor({3, 1}, {dtype = "int64"})
    gradcheck(lp(function(p) return D.Categorical(p) end, idx), {f64 {{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}}})
    gradcheck(lp(function(l) return D.Categorical {logits = l} end, idx), {f64 {{-1.0, 0.5, 2.0}, {3.0, -3.0, 0.1}}})
    gradcheck(lp(function(p) return D.OneHotCategorical(p) end, f64 {{0.0, 1.0, 0.0}}), {f64 {{0.1, 0.2, 0.7}}})
    gradcheck(lp(function(r) return D.Poisson(r) end, f64 {0.0, 2.0, 15.0}), {f64 {0.5, 3.0, 12.5}})
    gradcheck(lp(function(p) return D.Binomial(10, p) end, f64 {1.0, 5.0}), {f64 {0.2, 0.5}})
    gradcheck(lp(function(l) return D.Binomial(10, nil, l) end, f64 {0.0, 10.0}), {f64 {-1.5, 2.5}})
    gradcheck(lp(function(l, s) return D.Independent(D.Normal(l, s), 1) end, f64 {{0.2, 0.8}, {0.0, 0.0}}),
      {f64 {{0.0, 1.0}, {-1.0, 0.5}}, f64 {{1.0, 0.5}, {0.3, 1.0}}})
  end)

  it("MultivariateNormal's log_prob w.r.t. loc, scale_tril, covariance_matrix and precision_matrix", function()
    local v = f64 {{0.3, 0.2, -0.1}, {1.0, -1.0, 0.5}}
    local A = f64 {{1.2, 0.0, 0.0}, {0.3, 0.9, 0.0}, {-0.4, 0.2, 1.1}}
    gradcheck(function(loc, a) return D.MultivariateNormal(loc, {scale_tril = a:tril()}):log_prob(v) end,
      {f64 {1.0, -1.0, 0.5}, A})
    -- covariance and precision as a a^T + I/2: symmetric under every perturbation
    local function spd(a) return pt.matmul(a, a:t()) + pt.eye(3, {dtype = "float64"}) * 0.5 end
    gradcheck(function(loc, a) return D.MultivariateNormal(loc, spd(a)):log_prob(v) end, {f64 {1.0, -1.0, 0.5}, A})
    gradcheck(function(a) return D.MultivariateNormal(f64 {1.0, -1.0, 0.5}, {precision_matrix = spd(a)}):log_prob(v) end, {A})
  end)

  it("rsample w.r.t. the parameters (a fixed seed makes the draw a function of them)", function()
    local function rs(make, n)
      return function(...)
        pt.manual_seed(99)
        return make(...):rsample({n})
      end
    end
    gradcheck(rs(function(l, s) return D.Normal(l, s) end, 3), {f64 {0.5, -1.0}, f64 {1.5, 0.3}})
    gradcheck(rs(function(a, b) return D.Uniform(a, b) end, 3), {f64 {-1.0, 0.5}, f64 {1.0, 0.75}})
    gradcheck(rs(function(r) return D.Exponential(r) end, 3), {f64 {0.5, 2.0}})
    gradcheck(rs(function(l, s) return D.Laplace(l, s) end, 3), {f64 {0.0, -2.0}, f64 {1.0, 0.5}})
    gradcheck(rs(function(l, s) return D.LogNormal(l, s) end, 3), {f64 {0.0, -1.0}, f64 {1.0, 0.4}})
    local A = f64 {{1.2, 0.0}, {0.3, 0.9}}
    gradcheck(rs(function(loc, a) return D.MultivariateNormal(loc, {scale_tril = a:tril()}) end, 4), {f64 {1.0, -1.0}, A})
    gradcheck(rs(function(loc, a) return D.MultivariateNormal(loc, pt.matmul(a, a:t()) + pt.eye(2, {dtype = "float64"})) end, 4),
      {f64 {1.0, -1.0}, A})
    gradcheck(rs(function(l, s) return D.Independent(D.Normal(l, s), 1) end, 2), {f64 {0.5, -1.0}, f64 {1.5, 0.3}})
  end)

  it("cdf, icdf and entropy w.r.t. the parameters", function()
    local v, p = f64 {0.3, 1.2}, f64 {0.2, 0.7}
    for _, make in ipairs {function(a, b) return D.Normal(a, b) end, function(a, b) return D.Laplace(a, b) end,
                           function(a, b) return D.LogNormal(a, b) end} do
      gradcheck(function(a, b) return make(a, b):cdf(v) end, {f64 {0.1, 0.5}, f64 {1.0, 2.0}})
      gradcheck(function(a, b) return make(a, b):icdf(p) end, {f64 {0.1, 0.5}, f64 {1.0, 2.0}})
      gradcheck(function(a, b) return make(a, b):entropy() end, {f64 {0.1, 0.5}, f64 {1.0, 2.0}})
    end
    gradcheck(function(a, b) return D.Uniform(a, b):cdf(v) end, {f64 {0.0, 1.0}, f64 {1.0, 2.0}})
    gradcheck(function(r) return D.Exponential(r):cdf(v) + D.Exponential(r):icdf(p) end, {f64 {0.5, 2.0}})
    gradcheck(function(a, r) return D.Gamma(a, r):entropy() end, {f64 {0.5, 3.0}, f64 {1.0, 0.5}})
    gradcheck(function(a, b) return D.Beta(a, b):entropy() end, {f64 {0.5, 3.0}, f64 {1.0, 0.5}})
    gradcheck(function(c) return D.Dirichlet(c):entropy() end, {f64 {0.5, 3.0, 1.2}})
    gradcheck(function(p) return D.Bernoulli(p):entropy() end, {f64 {0.2, 0.7}})
    gradcheck(function(l) return D.Categorical {logits = l}:entropy() end, {f64 {{0.2, 0.7, -1.0}}})
    gradcheck(function(a) return D.MultivariateNormal(f64 {0.0, 0.0}, {scale_tril = a:tril()}):entropy() end,
      {f64 {{1.2, 0.0}, {0.3, 0.9}}})
  end)

  it("kl_divergence w.r.t. both distributions' parameters", function()
    gradcheck(function(a, b, c, d) return D.kl_divergence(D.Normal(a, b), D.Normal(c, d)) end,
      {f64 {0.0, 1.0}, f64 {1.0, 0.5}, f64 {0.5, 1.0}, f64 {2.0, 0.7}})
    gradcheck(function(a, b, c, d) return D.kl_divergence(D.Gamma(a, b), D.Gamma(c, d)) end,
      {f64 {0.5, 2.0}, f64 {1.0, 0.5}, f64 {1.0, 3.0}, f64 {2.0, 0.7}})
    gradcheck(function(a, b, c, d) return D.kl_divergence(D.Beta(a, b), D.Beta(c, d)) end,
      {f64 {0.5, 2.0}, f64 {1.0, 0.5}, f64 {1.0, 3.0}, f64 {2.0, 0.7}})
    gradcheck(function(a, b) return D.kl_divergence(D.Dirichlet(a), D.Dirichlet(b)) end,
      {f64 {0.5, 2.0, 1.0}, f64 {1.0, 0.5, 3.0}})
    gradcheck(function(a, b) return D.kl_divergence(D.Bernoulli(a), D.Bernoulli(b)) end, {f64 {0.2, 0.6}, f64 {0.5, 0.1}})
    gradcheck(function(a, b) return D.kl_divergence(D.Categorical {logits = a}, D.Categorical {logits = b}) end,
      {f64 {0.2, 0.6, -1.0}, f64 {0.5, 0.1, 0.0}})
    gradcheck(function(a, b) return D.kl_divergence(D.Laplace(a, 1.0), D.Laplace(0.3, b)) end, {f64 {0.2, 0.6}, f64 {0.5, 1.1}})
    gradcheck(function(la, a, lb, b)
      return D.kl_divergence(D.MultivariateNormal(la, {scale_tril = a:tril()}), D.MultivariateNormal(lb, {scale_tril = b:tril()}))
    end, {f64 {0.0, 1.0}, f64 {{1.2, 0.0}, {0.3, 0.9}}, f64 {0.5, -1.0}, f64 {{0.8, 0.0}, {-0.3, 1.4}}})
  end)

  it("Gamma's rsample carries torch's implicit gradient, whose average is d mean / d concentration", function()
    pt.manual_seed(31)
    local alpha = f64 {0.4, 2.5, 12.0}
    alpha.requires_grad = true
    local rate = f64 {2.0, 1.0, 0.5}
    local x = D.Gamma(alpha, rate):rsample({20000})
    x:sum():backward()
    -- d x / d alpha = standard_gamma_grad(alpha, x * rate) / rate for every draw
    local xs = (x:detach() * rate)
    local want = (D._standard_gamma_grad(alpha:detach():expand(20000, 3), xs) / rate):sum(1)
    close(alpha.grad, want:tolist(), 1e-12)
    -- E[x] = alpha / rate: the average gradient is 1 / rate
    local per = flat(alpha.grad / 20000)
    for i, r in ipairs {2.0, 1.0, 0.5} do
      assert(math.abs(per[i] - 1 / r) < 0.03 / r, string.format("alpha[%d]: %.4f vs %.4f", i, per[i], 1 / r))
    end
    -- the value is the draw itself (the surrogate term is zero)
    pt.manual_seed(31)
    local plain = D.Gamma(alpha:detach(), rate):sample({20000})
    assert.is_true(plain:equal(x:detach()))
  end)

  it("Dirichlet's and Beta's rsample carry torch's implicit gradient", function()
    pt.manual_seed(37)
    local conc = f64 {0.7, 2.0, 5.0}
    conc.requires_grad = true
    local n = 20000
    local x = D.Dirichlet(conc):rsample({n})
    local w = f64 {1.0, -2.0, 0.5}
    local loss = (x * w):sum()
    loss:backward()
    -- torch's _Dirichlet backward: G * (w - sum(x * w))
    local xd = x:detach()
    local c = conc:detach():expand(n, 3)
    local G = D._dirichlet_grad(xd, c, c:sum(-1, true):expand(n, 3))
    local want = (G * (w - (xd * w):sum(-1, true))):sum(1)
    close(conc.grad, want:tolist(), 1e-10)
    -- d E[x_i] / d a_j = (delta_ij a0 - a_i) / a0^2, so the average is w_j / a0 - sum(w a) / a0^2
    local a0, wa = 7.7, 0.7 - 4.0 + 2.5
    local per = flat(conc.grad / n)
    for j, wj in ipairs {1.0, -2.0, 0.5} do
      local expect = wj / a0 - wa / a0 ^ 2
      assert(math.abs(per[j] - expect) < 0.01, string.format("conc[%d]: %.4f vs %.4f", j, per[j], expect))
    end
    -- Beta: the first coordinate of a Dirichlet(c1, c0); E[x] = c1 / (c1 + c0)
    pt.manual_seed(41)
    local c1, c0 = f64 {2.0}, f64 {3.0}
    c1.requires_grad, c0.requires_grad = true, true
    D.Beta(c1, c0):rsample({n}):mean():backward()
    assert(math.abs(c1.grad:item() - 3 / 25) < 0.01, c1.grad:item())
    assert(math.abs(c0.grad:item() + 2 / 25) < 0.01, c0.grad:item())
  end)

  it("sample() records no graph", function()
    local loc = f64 {0.0}
    loc.requires_grad = true
    assert.is_false(D.Normal(loc, 1.0):sample({3}).requires_grad)
    assert.is_true(D.Normal(loc, 1.0):rsample({3}).requires_grad)
  end)
end)

describe("distributions: validation", function()
  it("names the distribution, the parameter and the first bad element", function()
    assert_error("Normal: scale must be positive (> 0), got -1 at [2]", D.Normal, f64 {0.0, 0.0}, f64 {1.0, -1.0})
    assert_error("Normal: loc must be real (not nan), got nan", D.Normal, nan, 1)
    assert_error("Exponential: rate must be positive (> 0), got 0 at [1,2]", D.Exponential, f64 {{1.0, 0.0}})
    assert_error("Gamma: concentration must be positive (> 0), got -0.5", D.Gamma, -0.5, 1)
    assert_error("Gamma: rate must be positive (> 0), got -inf at [3]", D.Gamma, 1, f64 {1.0, 2.0, -inf})
    assert_error("Beta: concentration0 must be positive (> 0), got 0 at [2]", D.Beta, f64 {1.0, 1.0}, f64 {1.0, 0.0})
    assert_error("LogNormal: scale must be positive (> 0), got 0", D.LogNormal, 0, 0)
    assert_error("Laplace: scale must be positive (> 0), got -2", D.Laplace, 0, -2)
    assert_error("Poisson: rate must be non-negative (>= 0), got -1 at [1]", D.Poisson, f64 {-1.0})
    assert_error("Bernoulli: probs must be in [0, 1], got 1.5 at [2]", D.Bernoulli, f64 {0.5, 1.5})
    assert_error("Bernoulli: logits must be real (not nan), got nan", D.Bernoulli, {logits = nan})
    assert_error("Binomial: total_count must be a non-negative integer, got 2.5", D.Binomial, 2.5, 0.5)
    assert_error("Binomial: probs must be in [0, 1], got -0.1 at [1]", D.Binomial, 3, f64 {-0.1})
    assert_error("Uniform: low must be less than high, got low 2 >= high 1 at [2]", D.Uniform, f64 {0.0, 2.0}, f64 {1.0, 1.0})
    assert_error("Categorical: probs must be a probability vector (non-negative, summing to 1 along the last dim), violated at batch index [2]",
      D.Categorical, f64 {{0.5, 0.5}, {-1.0, 2.0}})
    assert_error("Dirichlet: concentration must be positive (> 0) in every element of the last dim, violated at batch index [1]",
      D.Dirichlet, f64 {{1.0, 0.0}})
    assert_error("MultivariateNormal: scale_tril must be lower triangular with a positive diagonal, violated",
      D.MultivariateNormal, f64 {0.0, 0.0}, {scale_tril = f64 {{1.0, 0.5}, {0.0, 1.0}}})
    assert_error("MultivariateNormal: covariance_matrix must be symmetric positive definite, violated at batch index [2]",
      D.MultivariateNormal, f64 {0.0, 0.0}, f64 {{{1.0, 0.0}, {0.0, 1.0}}, {{1.0, 2.0}, {2.0, 1.0}}})
    assert_error("MultivariateNormal: precision_matrix must be symmetric positive definite, violated",
      D.MultivariateNormal, f64 {0.0, 0.0}, nil, f64 {{1.0, 0.5}, {0.0, 1.0}})
    assert_error("MultivariateNormal: loc must be a real vector (no nan), violated at batch index [1]",
      D.MultivariateNormal, f64 {{0.0, nan}}, pt.eye(2, {dtype = "float64"}))
  end)

  it("checks values against the support and the shapes in log_prob and cdf", function()
    local n = D.Normal(f64 {0.0, 0.0}, 1.0)
    assert_error("Normal.log_prob: value nan at [2] is outside the support (real (not nan))", n.log_prob, n, f64 {0.0, nan})
    assert_error("Normal.log_prob: value of shape {3} does not broadcast with batch_shape + event_shape {2}",
      n.log_prob, n, f64 {0.0, 0.0, 0.0})
    assert_error("Normal.cdf: value must be a Tensor or a number, got string", n.cdf, n, "x")
    local e = D.Exponential(1.0)
    assert_error("Exponential.log_prob: value -1 is outside the support (non-negative (>= 0))", e.log_prob, e, -1)
    assert_error("Exponential.cdf: value -0.5 at [2] is outside the support (non-negative (>= 0))", e.cdf, e,
      pt.tensor {0.5, -0.5})
    local u = D.Uniform(f64 {0.0, 0.0}, f64 {1.0, 2.0})
    assert_error("Uniform.log_prob: value 1.5 at [1] is outside the support (in [low, high])", u.log_prob, u, f64 {1.5, 1.5})
    local b = D.Bernoulli(0.3)
    assert_error("Bernoulli.log_prob: value 0.5 is outside the support (0 or 1)", b.log_prob, b, 0.5)
    local c = D.Categorical(pt.ones(3))
    assert_error("Categorical.log_prob: value 0 at [1] is outside the support (an integer in [1, 3])", c.log_prob, c,
      pt.tensor({0, 3}, {dtype = "int64"}))
    assert_error("Categorical.log_prob: value 4 is outside the support (an integer in [1, 3])", c.log_prob, c, 4)
    local o = D.OneHotCategorical(pt.ones(3))
    assert_error("OneHotCategorical.log_prob: value at batch index [2] is outside the support (a one-hot vector (0s and a single 1 along the last dim))",
      o.log_prob, o, pt.tensor {{0, 1, 0}, {1, 1, 0}})
    assert_error("OneHotCategorical.log_prob: the rightmost sizes of value (shape {2}) must match event_shape {3}",
      o.log_prob, o, pt.tensor {0, 1})
    local p = D.Poisson(2.0)
    assert_error("Poisson.log_prob: value 1.5 is outside the support (a non-negative integer)", p.log_prob, p, 1.5)
    local bi = D.Binomial(f64 {3.0, 5.0}, 0.5)
    assert_error("Binomial.log_prob: value 4 at [1] is outside the support (an integer in [0, total_count])", bi.log_prob,
      bi, f64 {4.0, 4.0})
    local g = D.Gamma(1.0, 1.0)
    assert_error("Gamma.log_prob: value -0.1 is outside the support (non-negative (>= 0))", g.log_prob, g, -0.1)
    local ln = D.LogNormal(0.0, 1.0)
    assert_error("LogNormal.log_prob: value 0 is outside the support (positive (> 0))", ln.log_prob, ln, 0)
    assert_error("LogNormal.cdf: value -1 is outside the support (non-negative (>= 0))", ln.cdf, ln, -1)
    local d = D.Dirichlet(pt.ones(3))
    assert_error("Dirichlet.log_prob: value is outside the support (a probability vector (non-negative, summing to 1 along the last dim))",
      d.log_prob, d, pt.tensor {0.5, 0.6, 0.1})
    local bt = D.Beta(2, 2)
    assert_error("Beta.log_prob: value 1.5 is outside the support (in [0, 1])", bt.log_prob, bt, 1.5)
    local m = D.MultivariateNormal(pt.zeros(2), pt.eye(2))
    assert_error("MultivariateNormal.log_prob: the rightmost sizes of value (shape {3}) must match event_shape {2}",
      m.log_prob, m, pt.zeros(3))
    local ind = D.Independent(D.Exponential(pt.ones(2)), 1)
    assert_error("Exponential.log_prob: value -1 at [2] is outside the support (non-negative (>= 0))", ind.log_prob, ind,
      pt.tensor {1.0, -1.0})
  end)

  it("raises at the caller's line", function()
    -- (not as a tail call from the spec's function: that frame would be gone)
    local err = errmsg(function() local d = D.Normal(0, -1) return d end)
    assert.matches("distributions_spec%.lua:%d+: Normal: scale must be positive", err)
    local n = D.Normal(0, 1)
    err = errmsg(function() local lp = n:log_prob(nan) return lp end)
    assert.matches("distributions_spec%.lua:%d+: Normal%.log_prob: value nan", err)
  end)

  it("validate_args = false skips the checks, as torch", function()
    local e = D.Exponential(-1.0, {validate_args = false})
    close(e:log_prob(2.0), {0 / 0}, 0)  -- log(-1) - (-1) * 2
    local n = D.Normal(0.0, 1.0, {validate_args = false})
    close(n:log_prob(nan), {nan}, 0)
    local b = D.Bernoulli {probs = 0.5, validate_args = false}
    close(b:log_prob(0.5), {math.log(0.5)}, 1e-7)
    -- expand keeps the setting
    close(e:expand({2}):log_prob(f64 {-1.0, 1.0}), {nan, nan}, 0)
  end)

  it("Distribution.set_default_validate_args switches the default, also for existing distributions", function()
    local e = D.Exponential(1.0)
    D.Distribution.set_default_validate_args(false)
    local ok, err = pcall(function()
      local bad = D.Exponential(-1.0)
      assert.are.equal(-1, bad.rate:item())
      close(e:log_prob(-1.0), {1.0}, 1e-7) -- no check of the value either
    end)
    D.Distribution.set_default_validate_args(true)
    assert(ok, err)
    assert_error("Exponential.log_prob: value -1 is outside the support (non-negative (>= 0))", e.log_prob, e, -1)
    assert_error("set_default_validate_args: expected a boolean, got number", D.Distribution.set_default_validate_args, 1)
    -- an explicit validate_args = true stays on
    local strict = D.Exponential(1.0, {validate_args = true})
    D.Distribution.set_default_validate_args(false)
    local ok2 = pcall(strict.log_prob, strict, -1)
    D.Distribution.set_default_validate_args(true)
    assert.is_false(ok2)
  end)
end)

describe("distributions: argument errors", function()
  it("constructors", function()
    assert_error("Normal: scale must be a number or a Tensor, got string", D.Normal, 0, "1")
    assert_error("Normal: loc must be a number or a Tensor, got a table of values (pt.tensor(t) makes one)", D.Normal,
      {0, 1}, 1)
    assert_error("Normal: loc must be a number or a Tensor, got nil", D.Normal, nil, 1)
    assert_error("Normal: scale of shape {3} does not broadcast with loc (shape {2})", D.Normal, pt.zeros(2), pt.ones(3))
    assert_error("Normal: expected at most 2 positional arguments (loc, scale), got 3", D.Normal, 0, 1, 2)
    assert_error("Normal: unknown argument 'std' (expected loc, scale or validate_args)", D.Normal, {loc = 0, std = 1})
    assert_error("Normal: loc given both by position and by name", D.Normal, 0, {loc = 1, scale = 1})
    assert_error("Normal: validate_args must be a boolean, got number", D.Normal, 0, 1, {validate_args = 1})
    assert_error("Normal: the table of named arguments must come last", D.Normal, {scale = 1}, 0)
    assert_error("Bernoulli: exactly one of probs or logits must be given", D.Bernoulli, 0.5, 0.1)
    assert_error("Bernoulli: exactly one of probs or logits must be given", D.Bernoulli)
    assert_error("Categorical: probs must be a Tensor, got number", D.Categorical, 0.5)
    assert_error("Categorical: logits must be at least one-dimensional, got a 0-D tensor", D.Categorical,
      {logits = pt.tensor(1.0)})
    assert_error("Dirichlet: concentration must be at least one-dimensional, got a 0-D tensor", D.Dirichlet, pt.tensor(1.0))
    assert_error("MultivariateNormal: exactly one of covariance_matrix, precision_matrix or scale_tril must be given, got none",
      D.MultivariateNormal, pt.zeros(2))
    assert_error("MultivariateNormal: exactly one of covariance_matrix, precision_matrix or scale_tril must be given, got covariance_matrix and scale_tril",
      D.MultivariateNormal, pt.zeros(2), pt.eye(2), {scale_tril = pt.eye(2)})
    assert_error("MultivariateNormal: loc must be at least one-dimensional, got a 0-D tensor", D.MultivariateNormal,
      pt.tensor(0.0), pt.eye(2))
    assert_error("MultivariateNormal: scale_tril must be at least two-dimensional, got a 1-D tensor", D.MultivariateNormal,
      pt.zeros(2), {scale_tril = pt.ones(2)})
    assert_error("MultivariateNormal: covariance_matrix must hold 2 x 2 matrices (loc's last dim is 2), got shape {3,3}",
      D.MultivariateNormal, pt.zeros(2), pt.eye(3))
    assert_error("MultivariateNormal: the batch dims of loc (shape {3,2}) and covariance_matrix (shape {2,2,2}) do not broadcast",
      D.MultivariateNormal, pt.zeros(3, 2), pt.eye(2):expand(2, 2, 2))
    assert_error("Independent: base_distribution must be a distribution, got Tensor", D.Independent, pt.zeros(2), 1)
    assert_error("Independent: reinterpreted_batch_ndims must be a non-negative integer, got -1", D.Independent,
      D.Normal(pt.zeros(2), 1), -1)
    assert_error("Independent: reinterpreted_batch_ndims must be at most the number of base_distribution's batch dims, got 2 > 1",
      D.Independent, D.Normal(pt.zeros(2), 1), 2)
  end)

  it("methods", function()
    local n = D.Normal(pt.zeros(2), 1)
    assert_error("Normal.sample: sample_shape must be a table of sizes, got string", n.sample, n, "3")
    assert_error("Normal.rsample: sample_shape must hold non-negative integers, got -1 at position 2", n.rsample, n, {2, -1})
    assert_error("Normal.expand: batch_shape {2} cannot be expanded to {3}", n.expand, n, {3})
    assert_error("Normal.expand: batch_shape {2} cannot be expanded to {}", n.expand, n, {})
    local c = D.Categorical(pt.ones(2))
    assert_error("Categorical.rsample: Categorical has no reparameterized sampler (has_rsample is false); use sample()",
      c.rsample, c)
    assert_error("Categorical.cdf: not implemented for Categorical (as in torch 1.13)", c.cdf, c, 1)
    local g = D.Gamma(1, 1)
    assert_error("Gamma.icdf: not implemented for Gamma (as in torch 1.13)", g.icdf, g, 0.5)
    local p = D.Poisson(1)
    assert_error("Poisson.entropy: not implemented for Poisson (as in torch 1.13)", p.entropy, p)
    assert_error("Normal.enumerate_support: not implemented for Normal (as in torch 1.13)", n.enumerate_support, n)
    local bi = D.Binomial(f64 {2.0, 3.0}, 0.5)
    assert_error("Binomial.entropy: total_count must be the same for every batch element (got 2 and 3)", bi.entropy, bi)
    local i = D.Independent(D.Bernoulli(pt.full({2}, 0.5)), 1)
    assert_error("Independent.enumerate_support: not implemented for reinterpreted_batch_ndims > 0 (the cartesian product)",
      i.enumerate_support, i)
  end)

  it("kl_divergence and register_kl", function()
    -- (Normal || Laplace has torch 1.13's closed form since the cross-family pairs came in)
    assert_error("kl_divergence: no KL(p || q) is registered for p of type LogNormal and q of type Normal",
      D.kl_divergence, D.LogNormal(0, 1), D.Normal(0, 1))
    assert_error("kl_divergence: p must be a distribution, got number", D.kl_divergence, 1, D.Normal(0, 1))
    assert_error("kl_divergence: q must be a distribution, got table", D.kl_divergence, D.Normal(0, 1), {})
    assert_error("kl_divergence: MultivariateNormal p and q have different event shapes {2} and {3}",
      D.kl_divergence, D.MultivariateNormal(pt.zeros(2), pt.eye(2)), D.MultivariateNormal(pt.zeros(3), pt.eye(3)))
    assert_error("kl_divergence: KL between Binomials where q.total_count > p.total_count is not implemented",
      D.kl_divergence, D.Binomial(2, 0.5), D.Binomial(3, 0.5))
    assert_error("kl_divergence: Independent p and q reinterpret different numbers of batch dims (1 and 0)",
      D.kl_divergence, D.Independent(D.Normal(pt.zeros(2), 1), 1), D.Independent(D.Normal(pt.zeros(2), 1), 0))
    assert_error("register_kl: type_p must be a distribution class, got table", D.register_kl, {}, D.Normal, function() end)
    assert_error("register_kl: fn must be a function, got nil", D.register_kl, D.Normal, D.Laplace)
    -- a registered pair is used (the registration stays in this state, as torch's registry: the
    -- built-in Normal || Laplace is put back after, for the spec files that run later)
    local builtin = D._kl_registered(D.Normal, D.Laplace)
    D.register_kl(D.Normal, D.Laplace, function(p, q) return p.loc + q.loc end)
    close(D.kl_divergence(D.Normal(1.0, 1.0), D.Laplace(2.0, 1.0)), {3.0}, 0)
    D.register_kl(D.Normal, D.Laplace, builtin)
  end)
end)

describe("distributions: help", function()
  it("documents the module, its classes and their methods", function()
    local help = require "partrain.help"
    local text = help.text(D)
    assert.matches("^pt%.distributions: probability distributions as torch%.distributions", text)
    assert.matches("\n  MultivariateNormal +pt%.distributions%.MultivariateNormal%(loc, covariance_matrix%)", text)
    assert.matches("\n  kl_divergence +pt%.distributions%.kl_divergence%(p, q%)", text)
    local normal = help.text(D.Normal)
    assert.matches("\n  log_prob +normal:log_prob%(value%)", normal)
    assert.matches("\nInherited from pt%.distributions%.Distribution: [^\n]*expand", normal)
    for _, cls in ipairs {"Normal", "Uniform", "Bernoulli", "Categorical", "OneHotCategorical", "Beta", "Gamma",
                          "Dirichlet", "Exponential", "Laplace", "LogNormal", "Poisson", "Binomial",
                          "MultivariateNormal", "Independent", "Distribution"} do
      assert.is_string(pt._docs[D[cls]], cls)
      for k, v in pairs(D[cls]) do
        if type(v) == "function" and not k:match("^_") then assert.is_string(pt._docs[v], cls .. "." .. k) end
      end
    end
  end)
end)
