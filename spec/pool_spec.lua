-- Pooling beyond conv_spec and conv_more_spec: max pooling's return_indices (1-based positions in the
-- flattened input plane, as adaptive_max_pool's), max unpooling (F.max_unpool1d/2d, nn.MaxUnpool1d/2d),
-- average pooling's options (ceil_mode, count_include_pad, divisor_override) and power-average pooling
-- (F.lp_pool1d/2d, nn.LPPool1d/2d). The expected values are PyTorch 1.13's (float64) on the
-- inputs seq() makes, hard-coded here; indices are PyTorch's plus one.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local nn = pt.nn
local F = nn.functional

local EXPECTED = {
  mpi_a_idx = {shape = {2,3,4,5}, 2, 4, 4, 6, 18, 20, 21, 22, 35, 36, 38, 38, 40, 53, 54, 55, 56, 58, 53, 54, 10, 11, 6, 8, 9, 10, 11, 24, 26, 26, 28, 40, 42, 43, 44, 46, 58, 60, 60, 62, 11, 13, 14, 15, 17, 29, 31, 14, 15, 17, 47, 31, 31, 33, 45, 47, 48, 49, 62, 63, 2, 2, 4, 17, 18, 19, 20, 33, 35, 36, 37, 38, 51, 53, 36, 55, 56, 51, 53, 53, 10, 4, 6, 7, 8, 10, 22, 24, 24, 26, 38, 40, 41, 42, 44, 56, 58, 58, 60, 54, 11, 12, 13, 15, 9, 29, 12, 13, 26, 27, 29, 29, 31, 44, 45, 46, 47, 60, 62, 63},
  mpi_b_idx = {shape = {2,3,3,6}, 10, 32, 33, 34, 35, 36, 49, 50, 51, 52, 53, 54, 49, 50, 51, 52, 53, 54, 10, 11, 12, 13, 14, 15, 10, 11, 12, 13, 14, 54, 28, 29, 30, 31, 32, 54, 31, 14, 30, 31, 14, 15, 31, 14, 48, 31, 14, 15, 31, 47, 48, 31, 32, 33, 31, 32, 33, 34, 35, 36, 49, 50, 51, 52, 53, 36, 49, 50, 51, 52, 53, 36, 10, 11, 12, 13, 35, 36, 10, 11, 12, 52, 53, 54, 28, 29, 30, 52, 53, 54, 28, 29, 12, 13, 14, 15, 46, 29, 12, 13, 14, 15, 46, 29, 30, 31, 32, 33},
  mpi_c_idx = {shape = {2,3,4,5}, 2, 4, 5, 7, 18, 20, 21, 23, 35, 36, 38, 39, 41, 53, 54, 55, 57, 59, 61, 63, 10, 12, 6, 8, 9, 28, 22, 24, 26, 27, 46, 40, 42, 43, 45, 56, 58, 60, 61, 63, 11, 13, 14, 16, 18, 29, 31, 32, 34, 27, 47, 48, 50, 44, 45, 55, 58, 60, 62, 63, 2, 3, 5, 17, 18, 19, 21, 33, 35, 36, 37, 39, 51, 53, 54, 55, 57, 59, 62, 63, 10, 4, 6, 7, 9, 20, 22, 24, 25, 27, 38, 40, 41, 43, 54, 56, 58, 59, 61, 63, 11, 12, 14, 8, 9, 29, 30, 32, 26, 27, 46, 48, 42, 44, 45, 56, 58, 60, 62, 63},
  mpi_d_idx = {shape = {2,3,6,5}, 20, 21, 22, 24, 26, 2, 4, 4, 6, 36, 38, 38, 40, 17, 18, 20, 21, 22, 53, 54, 55, 56, 58, 35, 36, 38, 38, 40, 42, 44, 20, 22, 24, 26, 26, 28, 29, 6, 8, 9, 10, 11, 42, 43, 44, 46, 22, 24, 26, 26, 28, 58, 60, 60, 62, 38, 40, 42, 43, 44, 19, 20, 24, 26, 27, 29, 31, 31, 33, 35, 11, 13, 14, 15, 45, 47, 48, 49, 51, 27, 29, 31, 31, 33, 63, 37, 38, 42, 44, 45, 19, 20, 22, 24, 26, 2, 2, 4, 35, 36, 37, 38, 15, 17, 18, 19, 20, 51, 53, 53, 55, 56, 33, 35, 36, 37, 38, 40, 42, 45, 20, 22, 24, 24, 26, 28, 4, 6, 7, 8, 38, 40, 41, 42, 44, 20, 22, 24, 24, 26, 56, 58, 58, 60, 62, 38, 40, 41, 42, 44, 19, 22, 24, 26, 27, 29, 29, 31, 8, 9, 11, 12, 13, 44, 45, 46, 47, 49, 26, 27, 29, 29, 31, 62, 63, 38, 40, 42, 44, 45},
  mpi_e_idx = {shape = {2,3,3,3}, 31, 34, 35, 38, 21, 24, 49, 52, 53, 11, 12, 15, 58, 43, 26, 47, 48, 53, 31, 14, 15, 20, 61, 62, 47, 48, 51, 31, 34, 35, 20, 21, 24, 49, 52, 53, 11, 12, 35, 58, 41, 24, 47, 52, 53, 29, 12, 15, 58, 61, 62, 47, 48, 51},
  mpi_2x2_idx = {shape = {2,3,4,5}, 2, 3, 15, 17, 19, 31, 24, 26, 27, 39, 51, 53, 46, 48, 50, 62, 74, 75, 77, 70, 2, 4, 6, 18, 19, 31, 33, 26, 28, 30, 42, 53, 55, 57, 50, 62, 64, 65, 77, 79, 11, 13, 6, 8, 9, 21, 33, 35, 37, 30, 42, 44, 56, 57, 59, 71, 64, 66, 68, 80, 12, 13, 15, 8, 10, 22, 24, 36, 37, 39, 51, 44, 46, 47, 59, 71, 73, 75, 68, 70, 2, 3, 15, 17, 19, 31, 24, 26, 27, 39, 51, 53, 46, 48, 50, 62, 74, 75, 77, 70, 2, 4, 6, 18, 19, 31, 33, 26, 28, 30, 42, 53, 55, 57, 50, 62, 64, 65, 77, 79},
  mpi_ties_idx = {shape = {1,2,6,6}, 1, 1, 2, 9, 10, 11, 1, 1, 2, 9, 16, 17, 8, 8, 8, 9, 16, 23, 14, 15, 15, 15, 16, 23, 31, 21, 22, 22, 22, 23, 31, 31, 28, 29, 29, 29, 1, 1, 8, 9, 6, 6, 1, 1, 8, 15, 6, 6, 7, 7, 8, 15, 22, 23, 14, 14, 14, 15, 22, 29, 20, 21, 21, 21, 22, 29, 25, 27, 28, 28, 28, 29},
  mpi_ties2_idx = {shape = {1,2,3,3}, 1, 9, 11, 14, 15, 23, 31, 28, 29, 1, 9, 6, 14, 15, 23, 25, 28, 29},
  mpi_nan_idx = {shape = {1,1,2,3}, 8, 3, 11, 20, 21, 17},
  mpi_nan3_idx = {shape = {1,1,4,6}, 8, 8, 8, 11, 11, 11, 8, 8, 8, 17, 17, 17, 8, 8, 8, 17, 17, 17, 20, 20, 20, 17, 17, 17},
  mp1_idx = {shape = {2,3,4}, 2, 2, 4, 8, 2, 2, 8, 8, 2, 2, 8, 8, 2, 2, 8, 8, 2, 2, 8, 8, 2, 2, 8, 8},
  mp1_ceil_idx = {shape = {2,3,5}, 2, 3, 5, 8, 9, 1, 3, 5, 8, 9, 1, 3, 6, 8, 9, 1, 3, 6, 8, 9, 1, 3, 6, 8, 9, 1, 3, 6, 8, 9},
  mp1_default_idx = {shape = {2,3,3}, 2, 4, 9, 1, 4, 9, 1, 4, 9, 1, 4, 9, 1, 6, 9, 1, 6, 9},
  mp1_unb_idx = {shape = {3,4}, 2, 2, 8, 9, 1, 2, 8, 9, 1, 2, 8, 9},
  unp_a = {shape = {1,2,5,7}, 0, 0.744643119971, 0, 0.999957646499, 0, 0.73223144403, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.937999976775, 0.999871708718, 0.926415495497, 0.727573290971, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.113385019884, 0.464995373734, 0, 0.94034039141, 0.999739337037, 0.923828253385, 0, 0.424095846172, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.758132221587, 0, 0.999560537602, 0, 0.718155837545, 0.417914542679, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.477018085815, 0.76255845048},
  unp_a_big = {shape = {1,2,6,8}, 0, 0.744643119971, 0, 0.999957646499, 0, 0.73223144403, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.937999976775, 0.999871708718, 0.926415495497, 0.727573290971, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.113385019884, 0.464995373734, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.94034039141, 0.999739337037, 0.923828253385, 0, 0.424095846172, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.758132221587, 0, 0.999560537602, 0, 0.718155837545, 0.417914542679, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.477018085815, 0.76255845048, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
  unp_2_os = {shape = {1,2,5,7}, 0, 0.744643119971, 0, 0.999957646499, 0.928959715004, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.458951486378, 0, 0.937999976775, 0, 0.926415495497, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.94034039141, 0.999739337037, 0, 0.722881349512, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.758132221587, 0, 0.999560537602, 0, 0.718155837545, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
  unp_2 = {shape = {1,2,4,6}, 0, 0.872355482345, 0.999815615134, 0, 0.47203054129, 0, 0, 0, 0, 0, 0, 0, 0, 0.907298722017, 0.995393777258, 0, 0.402986728725, 0, 0, 0, 0, 0, 0, 0, 0, 0.93689108012, 0.985101508741, 0, 0.331566263127, 0, 0, 0, 0, 0, 0, 0, 0, 0.960958032873, 0.96899950923, 0, 0, 0, 0, 0, 0, 0, 0, 0.302446929426},
  unp1 = {shape = {2,3,9}, 0, 0.996023989917, 0, 0.0215909757261, 0, 0, 0, -0.240795425134, 0.467813004209, 0.937999976775, 0.930134139977, 0, -0.262123550088, 0, 0, 0, 0.0436155453662, 0.698736222688, 0.99774514891, 0.788252067375, 0, -0.524422507623, 0, 0, 0, 0.324463113458, 0.872572493883, 0.975974259806, 0.581969577627, 0, -0.743875997763, 0, 0, 0, 0.578801953288, 0.975119345205, 0.874465997268, 0.328140008565, 0, 0, 0, -0.527730537176, 0, 0.78585250961, 0.997998669857, 0.701513615093, 0.0475013078707, 0, 0, 0, -0.265875351806, 0, 0.928698693335, 0.939341220537},
  unp1_os = {shape = {2,3,10}, 0, 0.996023989917, 0, 0.0215909757261, 0, 0, 0, -0.240795425134, 0.467813004209, 0, 0.937999976775, 0.930134139977, 0, -0.262123550088, 0, 0, 0, 0.0436155453662, 0.698736222688, 0, 0.99774514891, 0.788252067375, 0, -0.524422507623, 0, 0, 0, 0.324463113458, 0.872572493883, 0, 0.975974259806, 0.581969577627, 0, -0.743875997763, 0, 0, 0, 0.578801953288, 0.975119345205, 0, 0.874465997268, 0.328140008565, 0, 0, 0, -0.527730537176, 0, 0.78585250961, 0.997998669857, 0, 0.701513615093, 0.0475013078707, 0, 0, 0, -0.265875351806, 0, 0.928698693335, 0.939341220537, 0},
  unp_dup = {shape = {1,1,4,6}, 3, 0, 6, 0, 0, 5, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
  unp_dup_grad = {shape = {1,1,2,3}, 0.389418342309, 0.675463180551, 0.389418342309, -0.0583741434276, 0.675463180551, 0.932039085967},
  ap2_ceil_incl = {shape = {1,2,3,4}, 0.0469035785728, 0.282764513037, 0.224589132146, -0.0264210860007, -0.00988350761168, -0.0399549496497, -0.0263971894865, 0.00720478989692, 0.0990199237658, 0.307144092058, 0.165148043471, -0.0799529075934, 0.0950668933617, -0.145456856419, -0.310926031259, -0.113491633571, -0.00932533622448, 0.0239527043368, 0.0408248906751, 0.0119404876504, 0.0426155748293, -0.208189100525, -0.291826682046, -0.0628018288352},
  ap2_ceil_excl = {shape = {1,2,3,4}, 0.105533051789, 0.424146769555, 0.336883698219, -0.0594474435017, -0.0148252614175, -0.0399549496497, -0.0263971894865, 0.0108071848454, 0.222794828473, 0.460716138088, 0.247722065206, -0.179894042085, 0.213900510064, -0.218185284629, -0.466389046889, -0.255356175536, -0.0139880043367, 0.0239527043368, 0.0408248906751, 0.0179107314757, 0.095885043366, -0.312283650788, -0.437740023068, -0.141304114879},
  ap2_rect = {shape = {1,2,3,3}, -0.017190656623, 0.336600745073, -0.0396316290011, -0.000604426795228, -0.0457115898523, 0.0108071848454, 0.026114621508, 0.338300873947, -0.11992936139, 0.119892635258, -0.240892989413, -0.170237450357, -0.0138459652287, 0.0360710956132, 0.0179107314757, 0.0845339528331, -0.291673060199, -0.0942027432527},
  ap2_ceil_nopad = {shape = {1,2,3,4}, 0.105533051789, 0.50490111761, 0.241481190965, -0.218932776572, 0.319282527001, -0.26382784763, -0.500609162197, -0.238817005887, -0.502263208245, 0.588913239744, 0.907018267819, 0.334569696492, 0.213900510064, -0.36133948412, -0.462246063452, -0.116349137994, -0.493790229675, -0.0496621338863, 0.459657867549, 0.477560293049, 0.887529773258, -0.0231719120382, -0.90345563127, -0.831774742629},
  ap2_div3 = {shape = {1,2,3,4}, 0.140710735718, 0.848293539111, 0.673767396438, -0.0792632580022, -0.029650522835, -0.119864848949, -0.0791915684594, 0.0216143696907, 0.297059771297, 0.921432276175, 0.495444130412, -0.23985872278, 0.285200680085, -0.436370569258, -0.932778093777, -0.340474900714, -0.0279760086734, 0.0718581130103, 0.122474672025, 0.0358214629513, 0.127846724488, -0.624567301576, -0.875480046137, -0.188405486505},
  ap2_divneg = {shape = {1,2,6,8}, -0.394751869845, -0.894106941833, -0.923193992055, -0.619281309516, -0.0919914036125, 0.468480166256, 0.859969082956, 0.494939902537, 0.0515719698691, -0.211066103578, -0.744751595939, -1.00980223522, -0.910613205088, -0.482962381929, 0.118894887003, 0.218932776572, 0.458933522286, 0.992328649443, 0.948854122277, 0.563124151654, -0.0257269328684, -0.605298210716, -0.966536024368, -0.534629903056, -0.444510559328, -0.638565054003, -0.0676566991729, 0.52765569526, 0.932640588623, 1.00121832439, 0.708652641417, 0.238817005887, -0.078343864524, -0.445589656946, -0.890926499539, -1.01490262184, -0.772799345057, -0.251944280895, 0.35978808417, 0.330154934732, 0.378776377376, 0.502263208245, -0.0528580742055, -0.588913239744, -0.912545065072, -0.907018267819, -0.574326385662, -0.167284848246, 0.132812148856, 0.517815426213, 0.8833254748, 0.930216522852, 0.641574783445, 0.121514476249, -0.442376584251, -0.354210602463, -0.359677905775, -0.427801020128, 0.179880840124, 0.72267896824, 1.00480392759, 0.924492126903, 0.510712351071, 0.116349137994, -0.203632532408, -0.653795673516, -0.984481261332, -0.960060555398, -0.589342201155, -0.00604577862119, 0.579431380229, 0.421877392869, 0.534027950317, 0.987580459351, 0.663031388754, 0.0993242677725, -0.500209510347, -0.919315735099, -1.00682112975, -0.477560293049, -0.253601858499, -0.191770086732, 0.416794208605, 0.875019180597, 1.0176212653, 0.793163325446, 0.282608229758, -0.0129905741462, -0.498772286593, -0.887529773258, -0.527273806805, 0.0231719120382, 0.565259430349, 0.90345563127, 0.915771804414, 0.415887371314},
  ap1_ceil_incl = {shape = {2,2,5}, 0.59459141934, 0.410457996167, -0.701000868336, -0.28556008691, 0.220545828576, 0.604848794758, 0.151597116658, -0.77888953183, -0.0128217192771, 0.363392427139, 0.538912370152, -0.126360701608, -0.758660196671, 0.261531821475, 0.460461882451, 0.405088265654, -0.388400653934, -0.642861185566, 0.502939767431, 0.499526195164},
  ap1_ceil_nopad = {shape = {2,2,4}, 0.76927286657, -0.215256562288, -0.73092042537, 0.0382541578634, 0.669365027798, -0.464746589139, -0.586560740471, 0.355207485561, 0.485136172743, -0.655691721826, -0.368311031902, 0.627414740593, 0.239793914057, -0.764038287129, -0.103664575329, 0.820585526195},
  lp2_2 = {shape = {1,2,2,3}, 2.15040482789, 2.12751598838, 2.08219722997, 2.07155795191, 2.17118478083, 2.09324354024, 2.08693477209, 2.17299127169, 2.07502667861, 2.08792416505, 2.11986425456, 2.15638740189},
  lp2_2_ceil = {shape = {1,2,3,4}, 1.62533003905, 1.15173036146, 1.54505261322, 1.60286104377, 1.4669074125, 1.52521092959, 1.16179393455, 1.5857668896, 1.12683820118, 1.26904737916, 1.82353402848, 0.669139392983, 1.56682682034, 1.41328996436, 1.24460559462, 1.66587303295, 1.17743223605, 1.63965742915, 1.24976626555, 1.22083991766, 1.78864457579, 0.602195020707, 1.81714976476, 1.66354948526},
  lp2_15 = {shape = {1,2,2,2}, 5.03470566166, 5.2925859644, 4.87896690803, 2.6008556616, 4.57363268391, 2.60635836111, 2.92637490263, 5.30732291601},
  lp2_3_ceil = {shape = {1,2,3,4}, 0.875404357258, 0.987791326388, 1.09895156692, 0/0, 1.14488079423, 0/0, 0/0, 0/0, 0/0, 1.06599302237, 1.45476157528, 0.531096288168, 1.06987906852, 0/0, 0/0, 0/0, 0/0, 0/0, 1.07532739603, 1.08123131079, 1.43018875577, 0/0, 0/0, 0/0},
  lp1_2 = {shape = {2,2,3}, 1.37180323092, 1.07291985852, 1.34341649663, 1.29973056811, 1.17406480478, 1.24498387119, 1.1850626383, 1.29035984149, 1.12730133826, 1.07986796101, 1.36787866045, 1.05046722306},
  lp1_3_ceil = {shape = {2,2,4}, 1.1711750959, 0/0, 0/0, 0.382673284142, 1.14876704657, 0/0, 0/0, 0.831957805109, 1.07013069715, 0/0, 0/0, 1.07068468959, 0.869834021522, 0/0, 0/0, 1.23701193816},
  lp1_1 = {shape = {2,2,4}, 1.78377425802, 0.249219671364, -1.82817793469, 0.0765083157269, 1.81454638427, -0.399807558114, -1.74331233826, 0.710414971122, 1.61673711046, -0.998470370246, -1.43883881199, 1.25482948119, 1.21526479696, -1.47135422344, -0.953112388048, 1.64117105239},
  lp1_25 = {shape = {2,2,5}, 3.63739455297, 3.14072282288, 2.29928889254, 1.66213357415, 2.19642422231, 3.4751800926, 2.80727389716, 1.93164710673, 1.76428669233, 2.5857267674, 3.23523623355, 2.42697499799, 1.69002495946, 2.07392690736, 2.95067348381, 2.92257315683, 2.04411585691, 1.70165282303, 2.45910275197, 3.25780894302},
  lp_zero_grad = {shape = {1,1,2,4}, 0, 0, 0.4, 0.8, 0, 0, -0.4, 0.2},
}

-- element k (1-based, row-major) of seq(shape, a, b) is sin(k*a + b), float64
local function seq(shape, a, b)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local t = pt.zeros(shape, {dtype = "float64"})
  for k = 1, n do t:_set_flat(k, math.sin(k * a + (b or 0))) end
  return t
end

local function matches(name, y, tol)
  local e = EXPECTED[name]
  assert(e, "no expected values for " .. name)
  assert.are.same(e.shape, y:size(), name)
  tol = tol or 1e-9
  for i = 1, #e do
    local v = y:_get_flat(i)
    local nan = e[i] ~= e[i] and v ~= v -- NaN where PyTorch has NaN
    if not nan and not (math.abs(v - e[i]) <= tol * (1 + math.abs(e[i]))) then
      error(string.format("%s: element %d is %.12g, PyTorch has %.12g", name, i, v, e[i]), 2)
    end
  end
end

-- indices: int64 and exactly PyTorch's (plus one)
local function same_indices(name, i)
  assert.are.equal("int64", i:dtype(), name)
  matches(name, i, 0)
end

local function msg(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local has = support.assert_error_contains

local function f64(...) return pt.randn({...}, {dtype = "float64"}) end

-- the indices pick the pooled values out of x's flattened planes (spatial: 2, or 1 for 1-D pooling)
local function picks(x, y, i, spatial)
  local nd = x:dim()
  if spatial ~= 1 then x, y, i = x:flatten(nd - 1), y:flatten(nd - 1), i:flatten(nd - 1) end
  local d = x:dim()
  assert.is_true((x:gather(d, i) - y):abs():max():item() == 0)
end

describe("max pooling with return_indices", function()
  local x = seq({2, 3, 7, 9}, 0.37, 0.1)
  local cases = {
    {"mpi_a", 3, {stride = 2, padding = 1}},
    {"mpi_b", {3, 2}, {stride = {2, 1}, padding = {1, 0}, dilation = {2, 3}, ceil_mode = true}},
    {"mpi_c", 2, {ceil_mode = true}},
    {"mpi_d", {2, 3}, {stride = {1, 2}, padding = {1, 1}, dilation = {3, 1}}},
    {"mpi_e", 3, {stride = 3, padding = 1, dilation = 2, ceil_mode = true}},
  }

  it("give PyTorch's positions for every option (stride, padding, dilation, ceil_mode)", function()
    for _, c in ipairs(cases) do
      local name, k, o = c[1], c[2], c[3]
      local opts = {return_indices = true}
      for key, v in pairs(o) do opts[key] = v end
      local y, i = F.max_pool2d(x, k, opts)
      same_indices(name .. "_idx", i)
      picks(x, y, i)
      assert.is_true(y:equal(F.max_pool2d(x, k, o)), name) -- the same values as without indices
      local yf, i_f = F.max_pool2d(x:float(), k, opts)      -- float32 takes the same positions
      same_indices(name .. "_idx", i_f)
      assert.are.equal("float32", yf:dtype())
      local m = nn.MaxPool2d(k, opts)
      local ym, im = m(x)
      assert.is_true(ym:equal(y) and im:equal(i), name)
      local yu, iu = m(x[2]) -- {C,H,W}
      assert.is_true(yu:equal(y[2]) and iu:equal(i[2]), name)
    end
  end)

  it("take the 2x2 fast paths' positions, the first of equal maxima and the last NaN, as PyTorch", function()
    local _, i = F.max_pool2d(seq({2, 3, 8, 10}, 0.53), 2, {return_indices = true})
    same_indices("mpi_2x2_idx", i)
    local xt = (seq({1, 2, 6, 6}, 0.9) * 2):floor()
    same_indices("mpi_ties_idx", select(2, F.max_pool2d(xt, 3, {stride = 1, padding = 1, return_indices = true})))
    same_indices("mpi_ties2_idx", select(2, F.max_pool2d(xt, 2, {return_indices = true})))
    same_indices("mpi_ties2_idx", select(2, F.max_pool2d(xt:float(), 2, {return_indices = true})))
    local xn = seq({1, 1, 4, 6}, 0.7)
    xn[{1, 1, 2, 2}] = 0 / 0
    xn[{1, 1, 1, 2}] = 0 / 0
    xn[{1, 1, 3, 5}] = 0 / 0
    same_indices("mpi_nan_idx", select(2, F.max_pool2d(xn, 2, {return_indices = true})))
    same_indices("mpi_nan_idx", select(2, F.max_pool2d(xn:float(), 2, {return_indices = true})))
    same_indices("mpi_nan3_idx", select(2, F.max_pool2d(xn, 3, {stride = 1, padding = 1, return_indices = true})))
  end)

  it("in 1-D count along L", function()
    local x1 = seq({2, 3, 9}, 0.73, 0.2)
    local y, i = F.max_pool1d(x1, 3, {stride = 2, padding = 1, dilation = 2, return_indices = true})
    same_indices("mp1_idx", i)
    picks(x1, y, i, 1)
    same_indices("mp1_ceil_idx", select(2, F.max_pool1d(x1, 2, {stride = 2, ceil_mode = true, return_indices = true})))
    same_indices("mp1_default_idx", select(2, F.max_pool1d(x1, 3, {return_indices = true})))
    same_indices("mp1_default_idx", select(2, nn.MaxPool1d(3, {return_indices = true})(x1)))
    same_indices("mp1_unb_idx", select(2, F.max_pool1d(x1[1], 4, {stride = 3, padding = 2, ceil_mode = true, return_indices = true})))
    same_indices("mp1_unb_idx", select(2, nn.MaxPool1d(4, {stride = 3, padding = 2, ceil_mode = true, return_indices = true})(x1[1])))
    assert.are.equal(1, select("#", nn.MaxPool1d(3)(x1)))
    assert.are.equal(1, select("#", F.max_pool2d(x1:unsqueeze(1), 2)))
  end)

  it("leave the gradients as they were", function()
    local function first(y) return y end
    gradcheck(function(v) return first(F.max_pool2d(v, 3, {stride = 2, padding = 1, return_indices = true})) end, {f64(1, 2, 5, 6)})
    gradcheck(function(v) return first(F.max_pool2d(v, {3, 2}, {dilation = {2, 3}, ceil_mode = true, return_indices = true})) end, {f64(2, 1, 7, 8)})
    gradcheck(function(v) return first(F.max_pool1d(v, 2, {ceil_mode = true, return_indices = true})) end, {f64(2, 7)})
    gradcheck(function(v) return first(nn.MaxPool2d(2, {return_indices = true})(v)) end, {f64(1, 2, 4, 4)})
    local a = pt.randn(2, 3, 6, 6, {dtype = "float64"})
    local b = a:clone()
    a.requires_grad, b.requires_grad = true, true
    local ya = F.max_pool2d(a, 3, {stride = 2, padding = 1, return_indices = true})
    local yb = F.max_pool2d(b, 3, {stride = 2, padding = 1})
    local g = pt.randn(ya:size(), {dtype = "float64"})
    ya:backward(g)
    yb:backward(g)
    assert.is_true(a.grad:equal(b.grad))
  end)

  it("explain their errors", function()
    local x4 = pt.randn(1, 2, 4, 4)
    has("max_pool2d: return_indices=true cannot be combined with relu=true", F.max_pool2d, x4, 2, {relu = true, return_indices = true})
    has("max_pool2d: unknown option 'return_index'", F.max_pool2d, x4, 2, {return_index = true})
    has("max_pool1d: unknown option 'return_index'", F.max_pool1d, pt.randn(2, 4), 2, {return_index = true})
    has("MaxPool2d: unknown option 'return_indice'", nn.MaxPool2d, 2, {return_indice = true})
    has("max_pool2d: kernel 3x3 is larger than the padded input 2x2", F.max_pool2d, pt.randn(1, 1, 2, 2), 3, {return_indices = true})
  end)

  it("Sequential's fused ReLU, MaxPool2d gives the values, as the unfused pair does", function()
    local x4 = pt.randn(2, 3, 6, 6)
    local s = nn.Sequential(nn.ReLU(), nn.MaxPool2d(2, {return_indices = true}))
    assert.is_true(s(x4):equal(F.max_pool2d(pt.relu(x4), 2)))
  end)
end)

describe("max unpooling", function()
  it("matches PyTorch, default and given output sizes", function()
    local x = seq({1, 2, 5, 7}, 0.37, 0.1)
    local y, i = F.max_pool2d(x, 3, {stride = 2, padding = 1, return_indices = true})
    matches("unp_a", F.max_unpool2d(y, i, 3, {stride = 2, padding = 1}))
    matches("unp_a", nn.MaxUnpool2d(3, {stride = 2, padding = 1})(y, i))
    matches("unp_a_big", F.max_unpool2d(y, i, 3, {stride = 2, padding = 1, output_size = {6, 8}}))
    matches("unp_a_big", nn.MaxUnpool2d(3, {stride = 2, padding = 1})(y, i, {1, 2, 6, 8}))
    matches("unp_a", F.max_unpool2d(y:float(), i, 3, {stride = 2, padding = 1}), 1e-6)
    y, i = F.max_pool2d(x, 2, {return_indices = true})
    matches("unp_2_os", F.max_unpool2d(y, i, 2, {output_size = x:size()}))
    matches("unp_2_os", nn.MaxUnpool2d(2)(y[1], i[1], {5, 7}):unsqueeze(1)) -- {C,H,W}
    local x2 = seq({1, 2, 4, 6}, 0.53)
    y, i = F.max_pool2d(x2, 2, {return_indices = true})
    matches("unp_2", F.max_unpool2d(y, i, 2))
    matches("unp_2", nn.MaxUnpool2d({2, 2}, {stride = {2, 2}})(y, i))
    local x1 = seq({2, 3, 9}, 0.73, 0.2)
    y, i = F.max_pool1d(x1, 3, {stride = 2, padding = 1, return_indices = true})
    matches("unp1", F.max_unpool1d(y, i, 3, {stride = 2, padding = 1}))
    matches("unp1", nn.MaxUnpool1d(3, {stride = 2, padding = 1})(y, i))
    matches("unp1_os", F.max_unpool1d(y, i, 3, {stride = 2, padding = 1, output_size = {10}}))
    matches("unp1_os", nn.MaxUnpool1d(3, {stride = 2, padding = 1})(y, i, {2, 3, 10}))
    local u = nn.MaxUnpool1d(3, {stride = 2, padding = 1})(y[2], i[2]) -- {C,L}
    assert.is_true(u:equal(F.max_unpool1d(y, i, 3, {stride = 2, padding = 1})[2]))
    assert.are.same({0, 2, 4, 4}, F.max_unpool2d(pt.zeros(0, 2, 2, 2), pt.zeros(0, 2, 2, 2, {dtype = "int64"}), 2):size())
  end)

  it("writes repeated positions' last value and gathers their gradients, as PyTorch's", function()
    local x = pt.tensor({{{{1, 2, 3}, {4, 5, 6}}}}, {dtype = "float64"})
    x.requires_grad = true
    local idx = pt.tensor({{{{1, 6, 1}, {8, 6, 3}}}}, {dtype = "int64"})
    local y = F.max_unpool2d(x, idx, 2)
    matches("unp_dup", y)
    y:backward(seq({1, 1, 4, 6}, 0.4))
    matches("unp_dup_grad", x.grad)
  end)

  it("has correct gradients", function()
    -- windows that do not overlap: no position twice (a repeated one has the gather's gradient, not the
    -- derivative of "the last one wins", in PyTorch too)
    local _, i = F.max_pool2d(f64(2, 3, 6, 9), 3, {stride = 3, padding = 1, return_indices = true})
    gradcheck(function(v) return F.max_unpool2d(v, i, 3, {stride = 3, padding = 1, output_size = {6, 9}}) end, {f64(2, 3, 2, 3)})
    gradcheck(function(v) return nn.MaxUnpool2d(3, {stride = 3, padding = 1})(v, i[1], {6, 9}) end, {f64(3, 2, 3)})
    local _, i2 = F.max_pool2d(f64(1, 2, 4, 6), 2, {return_indices = true})
    gradcheck(function(v) return F.max_unpool2d(v, i2, 2, {output_size = {5, 7}}) end, {f64(1, 2, 2, 3)})
    local _, i1 = F.max_pool1d(f64(2, 3, 9), 2, {return_indices = true})
    gradcheck(function(v) return F.max_unpool1d(v, i1, 2, {output_size = {9}}) end, {f64(2, 3, 4)})
    -- pooling and unpooling: the maxima in place, zeros elsewhere; the gradient reaches the maxima only
    local x = f64(2, 2, 6, 6)
    gradcheck(function(v)
      local y, idx = F.max_pool2d(v, 2, {return_indices = true})
      return F.max_unpool2d(y, idx, 2)
    end, {x})
  end)

  it("round-trips max pooling: the maxima where they were", function()
    local x = pt.randn(2, 3, 6, 8)
    local y, i = nn.MaxPool2d(2, {return_indices = true})(x)
    local u = nn.MaxUnpool2d(2)(y, i)
    assert.is_true((u:eq(0) + u:eq(x)):all():item())
    assert.are.equal(y:numel(), u:ne(0):sum():item())
    picks(u, y, i)
  end)

  it("prints as PyTorch", function()
    assert.are.equal("MaxUnpool2d(kernel_size=2, stride=2, padding=0)", tostring(nn.MaxUnpool2d(2)))
    assert.are.equal("MaxUnpool2d(kernel_size={3, 2}, stride=1, padding={1, 0})", tostring(nn.MaxUnpool2d({3, 2}, {stride = 1, padding = {1, 0}})))
    assert.are.equal("MaxUnpool1d(kernel_size=3, stride=2, padding=1)", tostring(nn.MaxUnpool1d(3, {stride = 2, padding = 1})))
  end)

  it("explains its errors", function()
    local x = seq({1, 2, 5, 7}, 0.37, 0.1)
    local y, i = F.max_pool2d(x, 2, {return_indices = true})
    -- a position in a 5x7 plane (row 4, column 6) outside the default 4x6 output
    local bad = i:clone()
    bad[{1, 2, 2, 3}] = 27
    has("max_unpool2d: index 27 is out of range: an output plane has 24 positions (1 to 24; output size 4x6)", F.max_unpool2d, y, bad, 2)
    has("MaxUnpool2d:forward: index 27 is out of range", nn.MaxUnpool2d(2), y, bad)
    assert.are.same({1, 2, 5, 7}, F.max_unpool2d(y, bad, 2, {output_size = {5, 7}}):size())
    has("max_unpool2d: index 0 is out of range: an output plane has 35 positions (1 to 35; output size 5x7)", F.max_unpool2d, y, i:clone():fill_(0), 2, {output_size = {5, 7}})
    has("max_unpool2d: indices must be int64, got int32", F.max_unpool2d, y, i:int(), 2)
    has("max_unpool2d: indices have shape {2,2,3}, expected the input's shape {1,2,2,3}", F.max_unpool2d, y, i[1], 2)
    has("max_unpool2d: indices must be a Tensor, got table", F.max_unpool2d, y, {1, 2}, 2)
    has("max_unpool2d: input must be float32 or float64, got int64", F.max_unpool2d, i, i, 2)
    has("max_unpool2d: expected a 3-D {C,H,W} or 4-D {N,C,H,W} input, got shape {2,3}", F.max_unpool2d, y[1][1], i[1][1], 2)
    has("max_unpool2d: channels, height and width must be non-zero (only the batch may be empty), got input shape {1,0,2,2}",
      F.max_unpool2d, pt.zeros(1, 0, 2, 2), pt.zeros(1, 0, 2, 2, {dtype = "int64"}), 2)
    has("max_unpool2d: output_size {5, 9}: the width must be from 5 to 7, got 9 (input shape {1,2,2,3})", F.max_unpool2d, y, i, 2, {output_size = {5, 9}})
    has("max_unpool2d: output_size {1, 2, 2, 7}: the height must be from 3 to 5, got 2 (input shape {1,2,2,3})", F.max_unpool2d, y, i, 2, {output_size = {1, 2, 2, 7}})
    has("max_unpool2d: output_size must have 2 or 4 elements, got 3", F.max_unpool2d, y, i, 2, {output_size = {2, 5, 7}})
    has("max_unpool2d: output_size must be a list of integers, got number", F.max_unpool2d, y, i, 2, {output_size = 5})
    has("max_unpool2d: unknown option 'output_szie' (options: stride, padding, output_size)", F.max_unpool2d, y, i, 2, {output_szie = {5, 7}})
    has("max_unpool2d: kernel_size must be >= 1, got 0", F.max_unpool2d, y, i, 0)
    has("max_unpool2d: padding must be >= 0, got -1", F.max_unpool2d, y, i, 2, {padding = -1})
    has("max_unpool2d: output size must be positive, got 0x2 (input shape {1,2,2,3})", F.max_unpool2d, y, i, 2, {padding = {2, 2}})
    local x1 = seq({2, 3, 9}, 0.73, 0.2)
    local y1, i1 = F.max_pool1d(x1, 2, {return_indices = true})
    has("max_unpool1d: index 9 is out of range: an output plane has 8 positions (1 to 8; output size 1x8)", F.max_unpool1d, y1, i1 + 1, 2)
    has("max_unpool1d: indices have shape {2,3,3}, expected the input's shape {2,3,4}", F.max_unpool1d, y1, i1[{{}, {}, {1, 3}}], 2)
    has("max_unpool1d: expected a 2-D {C,L} or 3-D {N,C,L} input, got shape {1,2,3,4}", F.max_unpool1d, y1:unsqueeze(1), i1:unsqueeze(1), 2)
    has("max_unpool1d: output_size {12}: the length must be from 7 to 9, got 12 (input shape {2,3,4})", F.max_unpool1d, y1, i1, 2, {output_size = {12}})
    has("max_unpool1d: output_size must have 1 or 3 elements, got 2", F.max_unpool1d, y1, i1, 2, {output_size = {3, 9}})
    has("MaxUnpool1d:forward: indices must be int64, got float64", nn.MaxUnpool1d(2), y1, y1)
    has("MaxUnpool1d: unknown option 'output_size' (options: stride, padding)", nn.MaxUnpool1d, 2, {output_size = {9}})
    has("MaxUnpool2d: stride must be >= 1, got 0", nn.MaxUnpool2d, 2, {stride = 0})
  end)
end)

describe("average pooling options", function()
  it("match PyTorch: ceil_mode windows, count_include_pad, divisor_override", function()
    local x = seq({1, 2, 5, 7}, 0.61, 0.3)
    matches("ap2_ceil_incl", F.avg_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true}))
    matches("ap2_ceil_incl", nn.AvgPool2d(3, {stride = 2, padding = 1, ceil_mode = true})(x))
    matches("ap2_ceil_excl", F.avg_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true, count_include_pad = false}))
    matches("ap2_rect", F.avg_pool2d(x, {3, 2}, {stride = {2, 3}, padding = {1, 1}, ceil_mode = true}))
    matches("ap2_ceil_nopad", F.avg_pool2d(x, 2, {ceil_mode = true}))
    matches("ap2_ceil_nopad", F.avg_pool2d(x:float(), 2, {ceil_mode = true}), 1e-6)
    matches("ap2_div3", F.avg_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true, divisor_override = 3}))
    matches("ap2_div3", nn.AvgPool2d(3, {stride = 2, padding = 1, ceil_mode = true, divisor_override = 3})(x))
    matches("ap2_divneg", F.avg_pool2d(x, 2, {stride = 1, padding = 1, count_include_pad = false, divisor_override = -2}))
    local x1 = seq({2, 2, 8}, 0.83, 0.1)
    matches("ap1_ceil_incl", F.avg_pool1d(x1, 3, {stride = 2, padding = 1, ceil_mode = true}))
    matches("ap1_ceil_incl", nn.AvgPool1d(3, {stride = 2, padding = 1, ceil_mode = true})(x1))
    matches("ap1_ceil_nopad", F.avg_pool1d(x1, 3, {stride = 2, ceil_mode = true}))
  end)

  it("have correct gradients", function()
    gradcheck(function(v) return F.avg_pool2d(v, 3, {stride = 2, padding = 1, ceil_mode = true, divisor_override = 3}) end, {f64(1, 2, 5, 7)})
    gradcheck(function(v) return F.avg_pool2d(v, 2, {stride = 1, padding = 1, count_include_pad = false, divisor_override = -2}) end, {f64(1, 1, 3, 4)})
    gradcheck(function(v) return nn.AvgPool2d(2, {ceil_mode = true, divisor_override = 5})(v) end, {f64(2, 5, 5)})
    gradcheck(function(v) return F.avg_pool2d(v, 3, {stride = 2, padding = 1, ceil_mode = true}) end, {f64(1, 2, 5, 7)})
  end)

  it("explain their errors", function()
    local x = pt.randn(1, 2, 5, 5)
    has("avg_pool2d: divisor_override must be a non-zero integer, got 0", F.avg_pool2d, x, 2, {divisor_override = 0})
    has("avg_pool2d: divisor_override must be a non-zero integer, got 1.5", F.avg_pool2d, x, 2, {divisor_override = 1.5})
    has("AvgPool2d: divisor_override must be a non-zero integer, got 0", nn.AvgPool2d, 2, {divisor_override = 0})
    has("max_pool2d: unknown option 'divisor_override'", F.max_pool2d, x, 2, {divisor_override = 2})
    has("avg_pool1d: unknown option 'divisor_override'", F.avg_pool1d, pt.randn(2, 6), 2, {divisor_override = 2}) -- as torch
  end)
end)

describe("power-average pooling", function()
  it("matches PyTorch", function()
    local x = seq({1, 2, 5, 7}, 0.61, 0.3)
    local xp = x + 1.2
    matches("lp2_2", F.lp_pool2d(x, 2, 3, {stride = 2}))
    matches("lp2_2", nn.LPPool2d(2, 3, {stride = 2})(x))
    matches("lp2_2", nn.LPPool2d(2, 3, {stride = 2})(x:float()), 1e-6)
    matches("lp2_2_ceil", F.lp_pool2d(x, 2, 2, {ceil_mode = true}))
    matches("lp2_15", F.lp_pool2d(xp, 1.5, {2, 3}))
    matches("lp2_15", nn.LPPool2d(1.5, {2, 3})(xp[1]):unsqueeze(1)) -- {C,H,W}
    matches("lp2_3_ceil", F.lp_pool2d(x, 3, 2, {ceil_mode = true}))
    local x1 = seq({2, 2, 8}, 0.83, 0.1)
    matches("lp1_2", F.lp_pool1d(x1, 2, 3, {stride = 2}))
    matches("lp1_2", nn.LPPool1d(2, 3, {stride = 2})(x1))
    matches("lp1_3_ceil", F.lp_pool1d(x1, 3, 3, {stride = 2, ceil_mode = true}))
    matches("lp1_1", F.lp_pool1d(x1, 1, 2))
    matches("lp1_25", F.lp_pool1d(x1 + 1.5, 2.5, 4, {stride = 1}))
  end)

  it("has correct gradients, zero where a window's sum is 0 (as PyTorch)", function()
    local function positive(...) return f64(...):abs() + 0.5 end
    gradcheck(function(v) return F.lp_pool2d(v, 2, 3, {stride = 2}) end, {f64(1, 2, 5, 7)})
    gradcheck(function(v) return F.lp_pool2d(v, 1.5, {2, 3}, {ceil_mode = true}) end, {positive(2, 1, 5, 7)})
    gradcheck(function(v) return nn.LPPool1d(3, 2)(v) end, {positive(2, 2, 7)})
    gradcheck(function(v) return F.lp_pool1d(v, 2, 3, {stride = 2, ceil_mode = true}) end, {f64(2, 8)})
    local xz = pt.tensor({{{{0, 0, 1, 2}, {0, 0, -1, 0.5}}}}, {dtype = "float64"})
    xz.requires_grad = true
    F.lp_pool2d(xz, 2, 2):sum():backward()
    matches("lp_zero_grad", xz.grad)
  end)

  it("prints as PyTorch", function()
    assert.are.equal("LPPool2d(norm_type=2, kernel_size=3, stride=2, ceil_mode=false)", tostring(nn.LPPool2d(2, 3, {stride = 2})))
    assert.are.equal("LPPool1d(norm_type=1.5, kernel_size=4, stride=4, ceil_mode=true)", tostring(nn.LPPool1d(1.5, 4, {ceil_mode = true})))
  end)

  it("explains its errors", function()
    has("lp_pool2d: kernel 3x3 is larger than the input 2x5 (input shape {1,2,2,5})", F.lp_pool2d, pt.randn(1, 2, 2, 5), 2, 3)
    has("lp_pool2d: expected a 3-D {C,H,W} or 4-D {N,C,H,W} input, got shape {2,5}", F.lp_pool2d, pt.randn(2, 5), 2, 2)
    has("lp_pool2d: input must be float32 or float64, got int64", F.lp_pool2d, pt.zeros(1, 2, 4, 4, {dtype = "int64"}), 2, 2)
    has("lp_pool2d: channels, height and width must be non-zero (only the batch may be empty), got input shape {1,0,4,4}", F.lp_pool2d, pt.zeros(1, 0, 4, 4), 2, 2)
    has("lp_pool2d: unknown option 'padding' (options: stride, ceil_mode)", F.lp_pool2d, pt.randn(1, 2, 4, 4), 2, 2, {padding = 1})
    has("lp_pool2d: norm_type must be a number, got string", F.lp_pool2d, pt.randn(1, 2, 4, 4), "2", 2)
    has("lp_pool1d: kernel 5 is larger than the padded input 4 (input shape {2,4})", F.lp_pool1d, pt.randn(2, 4), 2, 5)
    has("lp_pool1d: stride must be >= 1, got 0", F.lp_pool1d, pt.randn(2, 4), 2, 2, {stride = 0})
    has("LPPool2d:forward: kernel 3x3 is larger than the input 2x5", nn.LPPool2d(2, 3), pt.randn(1, 2, 2, 5))
    has("LPPool1d: kernel_size must be >= 1, got 0", nn.LPPool1d, 2, 0)
    has("LPPool1d: unknown option 'strid'", nn.LPPool1d, 2, 2, {strid = 1})
  end)
end)

describe("help texts", function()
  it("exist for the new functions and classes", function()
    for _, k in ipairs {"max_unpool1d", "max_unpool2d", "max_pool1d", "max_pool2d"} do
      assert.is_function(F[k], k)
      assert.is_string(pt._docs[F[k]], k)
      assert.is_truthy(pt._docs[F[k]]:find("1-based", 1, true), k)
    end
    for _, k in ipairs {"MaxUnpool1d", "MaxUnpool2d", "MaxPool1d", "MaxPool2d"} do
      assert.is_string(pt._docs[nn[k]], k)
      assert.is_truthy(pt._docs[nn[k]]:find("1-based", 1, true), k)
    end
    for _, k in ipairs {"lp_pool1d", "lp_pool2d", "avg_pool2d"} do
      assert.is_function(F[k], k)
      assert.is_string(pt._docs[F[k]], k)
    end
    assert.is_truthy(pt._docs[F.avg_pool2d]:find("divisor_override", 1, true))
    assert.is_truthy(pt._docs[nn.AvgPool2d]:find("divisor_override", 1, true))
    assert.is_string(pt._docs[nn.LPPool1d])
    assert.is_string(pt._docs[nn.LPPool2d])
  end)
end)
