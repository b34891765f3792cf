-- data.transforms' torchvision-style image transforms (lua/partrain/transforms_more.lua):
-- the functional forms against torchvision's formulas, the random transforms' ranges,
-- reproducibility and workers = n, and the argument errors.
local pt = require "partrain"
local support = require "spec.support"
local data = pt.data
local T = data.transforms
local Fn = T.functional

-- the reference image of the Python snippet at the end: {3, 4, 5}, values (k * 37 % 101) / 100
local function img(C, H, W)
  C, H, W = C or 3, H or 4, W or 5
  return (pt.arange(C * H * W, {dtype = "float64"}) * 37):remainder(101):div(100):float():reshape(C, H, W)
end
local x = img()
local u = (img() * 255):round():to("uint8")

local function near(expect, got, tol, what)
  assert.are.same(expect[2], got:size(), what .. ": shape")
  local list = got:double():flatten():tolist()
  assert.are.equal(#expect[3], #list, what)
  for i, v in ipairs(expect[3]) do
    if math.abs(v - list[i]) > tol then
      error(("%s: element %d is %.9g, torch gives %.9g"):format(what, i, list[i], v), 0)
    end
  end
end

-- each case of the reference list as a partrain call
local calls = {
  ["center_crop(x, 3)"] = function() return Fn.center_crop(x, 3) end,
  ["center_crop(x, {6, 3})"] = function() return Fn.center_crop(x, {6, 3}) end,
  ["resize(x, {3, 7})"] = function() return Fn.resize(x, {3, 7}) end,
  ["resize(x, 2)"] = function() return Fn.resize(x, 2) end,
  ["resize(x, 2, bilinear no antialias)"] = function() return Fn.resize(x, 2, {antialias = false}) end,
  ["resize(x, {7, 3}, nearest)"] = function() return Fn.resize(x, {7, 3}, {interpolation = "nearest"}) end,
  ["resize(x, {3, 8}, bicubic)"] = function() return Fn.resize(x, {3, 8}, {interpolation = "bicubic"}) end,
  ["resize(u, {3, 7})"] = function() return Fn.resize(u, {3, 7}) end,
  ["resize(u, {6, 6}, bicubic)"] = function() return Fn.resize(u, {6, 6}, {interpolation = "bicubic"}) end,
  ["pad(x, {1, 2}, reflect)"] = function() return Fn.pad(x, {1, 2}, {padding_mode = "reflect"}) end,
  ["pad(x, {2, 1, 0, 3}, symmetric)"] = function() return Fn.pad(x, {2, 1, 0, 3}, {padding_mode = "symmetric"}) end,
  ["pad(x, 1, edge)"] = function() return Fn.pad(x, 1, {padding_mode = "edge"}) end,
  ["pad(x, {1, 0, 2, 1}, fill 0.5)"] = function() return Fn.pad(x, {1, 0, 2, 1}, {fill = 0.5}) end,
  ["rgb_to_grayscale(x)"] = function() return Fn.rgb_to_grayscale(x) end,
  ["rgb_to_grayscale(u)"] = function() return Fn.rgb_to_grayscale(u) end,
  ["adjust_brightness(x, 1.3)"] = function() return Fn.adjust_brightness(x, 1.3) end,
  ["adjust_contrast(x, 0.6)"] = function() return Fn.adjust_contrast(x, 0.6) end,
  ["adjust_contrast(u, 1.4)"] = function() return Fn.adjust_contrast(u, 1.4) end,
  ["adjust_saturation(x, 1.7)"] = function() return Fn.adjust_saturation(x, 1.7) end,
  ["adjust_hue(x, 0.23)"] = function() return Fn.adjust_hue(x, 0.23) end,
  ["adjust_hue(x, -0.4)"] = function() return Fn.adjust_hue(x, -0.4) end,
  ["adjust_hue(u, 0.1)"] = function() return Fn.adjust_hue(u, 0.1) end,
  ["rotate(x, 30)"] = function() return Fn.rotate(x, 30) end,
  ["rotate(x, 37, bilinear, fill {0.1,0.2,0.3})"] = function()
    return Fn.rotate(x, 37, {interpolation = "bilinear", fill = {0.1, 0.2, 0.3}}) end,
  ["rotate(x, 30, expand, fill 0)"] = function() return Fn.rotate(x, 30, {expand = true, fill = 0}) end,
  ["rotate(u, -20, bilinear)"] = function() return Fn.rotate(u, -20, {interpolation = "bilinear"}) end,
  ["affine(x, 15, {1, -1}, 1.1, {10, 5}, bilinear)"] = function()
    return Fn.affine(x, 15, {1, -1}, 1.1, {10, 5}, {interpolation = "bilinear"}) end,
  ["affine(x, -10, {0, 1}, 0.9, 20 (x only), nearest, fill 1)"] = function()
    return Fn.affine(x, -10, {0, 1}, 0.9, 20, {fill = 1}) end,
  ["gaussian_blur(x, {3, 5}, {0.8, 1.2})"] = function() return Fn.gaussian_blur(x, {3, 5}, {0.8, 1.2}) end,
  ["gaussian_blur(u, 3, 1.5)"] = function() return Fn.gaussian_blur(u, 3, 1.5) end,
}

-- computed with torch 1.13 by the snippet at the end of this file (torchvision's formulas; torchvision
-- itself is not installed here): name, shape, values (row-major)
local REF = {
  {"center_crop(x, 3)", {3,3,3}, {0.37, 0.74, 0.1, 0.2, 0.57, 0.94, 0.03, 0.4, 0.77, 0.7, 0.06, 0.43, 0.53, 0.9, 0.26, 0.36, 0.73, 0.09, 0.02, 0.39, 0.76, 0.86, 0.22, 0.59, 0.69, 0.05, 0.42}},
  {"center_crop(x, {6, 3})", {3,6,3}, {0, 0, 0, 0.37, 0.74, 0.1, 0.2, 0.57, 0.94, 0.03, 0.4, 0.77, 0.87, 0.23, 0.6, 0, 0, 0, 0, 0, 0, 0.7, 0.06, 0.43, 0.53, 0.9, 0.26, 0.36, 0.73, 0.09, 0.19, 0.56, 0.93, 0, 0, 0, 0, 0, 0, 0.02, 0.39, 0.76, 0.86, 0.22, 0.59, 0.69, 0.05, 0.42, 0.52, 0.89, 0.25, 0, 0, 0}},
  {"resize(x, {3, 7})", {3,3,7}, {0.252, 0.2902857, 0.4247143, 0.689, 0.4482857, 0.3807143, 0.419, 0.755, 0.3892857, 0.2207143, 0.485, 0.7492858, 0.5807142, 0.215, 0.551, 0.5892858, 0.5217143, 0.281, 0.5452858, 0.6797143, 0.7180001, 0.279, 0.4904285, 0.5527142, 0.312, 0.3598571, 0.5375714, 0.749, 0.58, 0.5028571, 0.5507143, 0.815, 0.357857, 0.3335714, 0.545, 0.881, 0.5152857, 0.3467143, 0.611, 0.6588572, 0.5335714, 0.341, 0.609, 0.4164286, 0.2911429, 0.339, 0.6032857, 0.5645714, 0.372, 0.405, 0.6164286, 0.5921428, 0.135, 0.3992857, 0.6635714, 0.875, 0.201, 0.4124286, 0.5901428, 0.6380001, 0.3972857, 0.4595714, 0.671}},
  {"resize(x, 2)", {3,2,2}, {0.4125325, 0.4901299, 0.4798702, 0.5574675, 0.4801948, 0.4856493, 0.5606494, 0.493961, 0.456039, 0.5270779, 0.4643507, 0.5157143}},
  {"resize(x, 2, bilinear no antialias)", {3,2,2}, {0.31875, 0.48625, 0.48375, 0.65125, 0.5225, 0.4375, 0.435, 0.47625, 0.47375, 0.64125, 0.5125, 0.4275}},
  {"resize(x, {7, 3}, nearest)", {3,7,3}, {0, 0.37, 0.1, 0, 0.37, 0.1, 0.84, 0.2, 0.94, 0.84, 0.2, 0.94, 0.67, 0.03, 0.77, 0.67, 0.03, 0.77, 0.5, 0.87, 0.6, 0.33, 0.7, 0.43, 0.33, 0.7, 0.43, 0.16, 0.53, 0.26, 0.16, 0.53, 0.26, 1, 0.36, 0.09, 1, 0.36, 0.09, 0.83, 0.19, 0.93, 0.66, 0.02, 0.76, 0.66, 0.02, 0.76, 0.49, 0.86, 0.59, 0.49, 0.86, 0.59, 0.32, 0.69, 0.42, 0.32, 0.69, 0.42, 0.15, 0.52, 0.25}},
  {"resize(x, {3, 8}, bicubic)", {3,3,8}, {0.2086599, 0.2462226, 0.3553732, 0.639864, 0.6247253, 0.3290854, 0.3705274, 0.4463744, 0.8417213, 0.4893938, 0.07412393, 0.3207791, 0.6492209, 0.895876, 0.4806061, 0.1282787, 0.5236257, 0.5994727, 0.6409147, 0.3452748, 0.330136, 0.6146269, 0.7237774, 0.7613401, 0.2091501, 0.4284718, 0.6648487, 0.3890624, 0.2688427, 0.3823963, 0.6276993, 0.7943353, 0.589714, 0.506284, 0.457545, 0.7881399, 0.6733151, 0.1552657, 0.3490871, 0.5741819, 0.9702778, 0.6259604, 0.216543, 0.4592531, 0.6654909, 0.7196391, 0.482473, 0.2941976, 0.6558024, 0.4675271, 0.230361, 0.2845092, 0.480428, 0.7250143, 0.5100747, 0.3092319, 0.3758181, 0.6009129, 0.7947344, 0.2766849, 0.1437141, 0.4776082, 0.7708621, 0.939735, 0.1556647, 0.3223008, 0.5676037, 0.6811574, 0.5628774, 0.2867382, 0.4865593, 0.678912}},
  {"resize(u, {3, 7})", {3,3,7}, {64, 74, 108, 176, 115, 97, 107, 192, 99, 56, 124, 191, 148, 54, 141, 151, 133, 72, 139, 173, 183, 71, 125, 141, 80, 92, 137, 191, 148, 128, 141, 208, 91, 85, 139, 225, 131, 88, 156, 168, 136, 87, 155, 106, 74, 86, 154, 144, 95, 104, 157, 151, 34, 102, 169, 223, 51, 105, 151, 163, 101, 117, 171}},
  {"resize(u, {6, 6}, bicubic)", {3,6,6}, {0, 66, 173, 122, 24, 127, 104, 76, 135, 162, 120, 101, 228, 74, 82, 197, 215, 59, 188, 33, 50, 165, 173, 19, 147, 128, 85, 112, 171, 143, 121, 224, 126, 75, 181, 255, 83, 172, 69, 28, 141, 210, 47, 139, 143, 100, 111, 190, 62, 106, 210, 168, 65, 157, 236, 122, 164, 126, 27, 128, 251, 99, 116, 159, 123, 90, 215, 75, 86, 200, 219, 65, 177, 23, 42, 156, 164, 10, 152, 119, 83, 119, 173, 133, 114, 215, 116, 66, 174, 255, 86, 177, 74, 31, 143, 215, 53, 132, 142, 100, 100, 179, 32, 102, 215, 173, 70, 159}},
  {"pad(x, {1, 2}, reflect)", {3,8,7}, {0.03, 0.67, 0.03, 0.4, 0.77, 0.13, 0.77, 0.2, 0.84, 0.2, 0.57, 0.94, 0.3, 0.94, 0.37, 0, 0.37, 0.74, 0.1, 0.47, 0.1, 0.2, 0.84, 0.2, 0.57, 0.94, 0.3, 0.94, 0.03, 0.67, 0.03, 0.4, 0.77, 0.13, 0.77, 0.87, 0.5, 0.87, 0.23, 0.6, 0.97, 0.6, 0.03, 0.67, 0.03, 0.4, 0.77, 0.13, 0.77, 0.2, 0.84, 0.2, 0.57, 0.94, 0.3, 0.94, 0.36, 1, 0.36, 0.73, 0.09, 0.46, 0.09, 0.53, 0.16, 0.53, 0.9, 0.26, 0.63, 0.26, 0.7, 0.33, 0.7, 0.06, 0.43, 0.8, 0.43, 0.53, 0.16, 0.53, 0.9, 0.26, 0.63, 0.26, 0.36, 1, 0.36, 0.73, 0.09, 0.46, 0.09, 0.19, 0.83, 0.19, 0.56, 0.93, 0.29, 0.93, 0.36, 1, 0.36, 0.73, 0.09, 0.46, 0.09, 0.53, 0.16, 0.53, 0.9, 0.26, 0.63, 0.26, 0.69, 0.32, 0.69, 0.05, 0.42, 0.79, 0.42, 0.86, 0.49, 0.86, 0.22, 0.59, 0.96, 0.59, 0.02, 0.66, 0.02, 0.39, 0.76, 0.12, 0.76, 0.86, 0.49, 0.86, 0.22, 0.59, 0.96, 0.59, 0.69, 0.32, 0.69, 0.05, 0.42, 0.79, 0.42, 0.52, 0.15, 0.52, 0.89, 0.25, 0.62, 0.25, 0.69, 0.32, 0.69, 0.05, 0.42, 0.79, 0.42, 0.86, 0.49, 0.86, 0.22, 0.59, 0.96, 0.59}},
  {"pad(x, {2, 1, 0, 3}, symmetric)", {3,8,7}, {0.37, 0, 0, 0.37, 0.74, 0.1, 0.47, 0.37, 0, 0, 0.37, 0.74, 0.1, 0.47, 0.2, 0.84, 0.84, 0.2, 0.57, 0.94, 0.3, 0.03, 0.67, 0.67, 0.03, 0.4, 0.77, 0.13, 0.87, 0.5, 0.5, 0.87, 0.23, 0.6, 0.97, 0.87, 0.5, 0.5, 0.87, 0.23, 0.6, 0.97, 0.03, 0.67, 0.67, 0.03, 0.4, 0.77, 0.13, 0.2, 0.84, 0.84, 0.2, 0.57, 0.94, 0.3, 0.7, 0.33, 0.33, 0.7, 0.06, 0.43, 0.8, 0.7, 0.33, 0.33, 0.7, 0.06, 0.43, 0.8, 0.53, 0.16, 0.16, 0.53, 0.9, 0.26, 0.63, 0.36, 1, 1, 0.36, 0.73, 0.09, 0.46, 0.19, 0.83, 0.83, 0.19, 0.56, 0.93, 0.29, 0.19, 0.83, 0.83, 0.19, 0.56, 0.93, 0.29, 0.36, 1, 1, 0.36, 0.73, 0.09, 0.46, 0.53, 0.16, 0.16, 0.53, 0.9, 0.26, 0.63, 0.02, 0.66, 0.66, 0.02, 0.39, 0.76, 0.12, 0.02, 0.66, 0.66, 0.02, 0.39, 0.76, 0.12, 0.86, 0.49, 0.49, 0.86, 0.22, 0.59, 0.96, 0.69, 0.32, 0.32, 0.69, 0.05, 0.42, 0.79, 0.52, 0.15, 0.15, 0.52, 0.89, 0.25, 0.62, 0.52, 0.15, 0.15, 0.52, 0.89, 0.25, 0.62, 0.69, 0.32, 0.32, 0.69, 0.05, 0.42, 0.79, 0.86, 0.49, 0.49, 0.86, 0.22, 0.59, 0.96}},
  {"pad(x, 1, edge)", {3,6,7}, {0, 0, 0.37, 0.74, 0.1, 0.47, 0.47, 0, 0, 0.37, 0.74, 0.1, 0.47, 0.47, 0.84, 0.84, 0.2, 0.57, 0.94, 0.3, 0.3, 0.67, 0.67, 0.03, 0.4, 0.77, 0.13, 0.13, 0.5, 0.5, 0.87, 0.23, 0.6, 0.97, 0.97, 0.5, 0.5, 0.87, 0.23, 0.6, 0.97, 0.97, 0.33, 0.33, 0.7, 0.06, 0.43, 0.8, 0.8, 0.33, 0.33, 0.7, 0.06, 0.43, 0.8, 0.8, 0.16, 0.16, 0.53, 0.9, 0.26, 0.63, 0.63, 1, 1, 0.36, 0.73, 0.09, 0.46, 0.46, 0.83, 0.83, 0.19, 0.56, 0.93, 0.29, 0.29, 0.83, 0.83, 0.19, 0.56, 0.93, 0.29, 0.29, 0.66, 0.66, 0.02, 0.39, 0.76, 0.12, 0.12, 0.66, 0.66, 0.02, 0.39, 0.76, 0.12, 0.12, 0.49, 0.49, 0.86, 0.22, 0.59, 0.96, 0.96, 0.32, 0.32, 0.69, 0.05, 0.42, 0.79, 0.79, 0.15, 0.15, 0.52, 0.89, 0.25, 0.62, 0.62, 0.15, 0.15, 0.52, 0.89, 0.25, 0.62, 0.62}},
  {"pad(x, {1, 0, 2, 1}, fill 0.5)", {3,5,8}, {0.5, 0, 0.37, 0.74, 0.1, 0.47, 0.5, 0.5, 0.5, 0.84, 0.2, 0.57, 0.94, 0.3, 0.5, 0.5, 0.5, 0.67, 0.03, 0.4, 0.77, 0.13, 0.5, 0.5, 0.5, 0.5, 0.87, 0.23, 0.6, 0.97, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.33, 0.7, 0.06, 0.43, 0.8, 0.5, 0.5, 0.5, 0.16, 0.53, 0.9, 0.26, 0.63, 0.5, 0.5, 0.5, 1, 0.36, 0.73, 0.09, 0.46, 0.5, 0.5, 0.5, 0.83, 0.19, 0.56, 0.93, 0.29, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.66, 0.02, 0.39, 0.76, 0.12, 0.5, 0.5, 0.5, 0.49, 0.86, 0.22, 0.59, 0.96, 0.5, 0.5, 0.5, 0.32, 0.69, 0.05, 0.42, 0.79, 0.5, 0.5, 0.5, 0.15, 0.52, 0.89, 0.25, 0.62, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}},
  {"rgb_to_grayscale(x)", {1,4,5}, {0.26895, 0.523773, 0.300866, 0.36894, 0.623763, 0.400856, 0.46893, 0.723753, 0.500846, 0.56892, 0.823743, 0.298947, 0.55377, 0.330863, 0.398937, 0.65376, 0.430853, 0.498927, 0.75375, 0.530843}},
  {"rgb_to_grayscale(u)", {1,4,5}, {68, 133, 76, 94, 159, 102, 119, 184, 127, 145, 210, 76, 141, 84, 101, 167, 109, 127, 192, 135}},
  {"adjust_brightness(x, 1.3)", {3,4,5}, {0, 0.481, 0.962, 0.13, 0.611, 1, 0.26, 0.7409999, 1, 0.39, 0.871, 0.039, 0.52, 1, 0.169, 0.65, 1, 0.299, 0.78, 1, 0.429, 0.91, 0.07799999, 0.559, 1, 0.208, 0.689, 1, 0.338, 0.8189999, 1, 0.468, 0.949, 0.117, 0.598, 1, 0.247, 0.728, 1, 0.377, 0.858, 0.026, 0.507, 0.988, 0.156, 0.637, 1, 0.286, 0.767, 1, 0.416, 0.897, 0.065, 0.5459999, 1, 0.195, 0.6759999, 1, 0.325, 0.806}},
  {"adjust_contrast(x, 0.6)", {3,4,5}, {0.2004798, 0.4224798, 0.6444799, 0.2604798, 0.4824798, 0.7044798, 0.3204798, 0.5424798, 0.7644798, 0.3804798, 0.6024799, 0.2184798, 0.4404798, 0.6624798, 0.2784798, 0.5004798, 0.7224798, 0.3384798, 0.5604798, 0.7824798, 0.3984798, 0.6204798, 0.2364798, 0.4584798, 0.6804798, 0.2964798, 0.5184798, 0.7404798, 0.3564798, 0.5784798, 0.8004798, 0.4164798, 0.6384798, 0.2544798, 0.4764798, 0.6984798, 0.3144798, 0.5364798, 0.7584798, 0.3744798, 0.5964798, 0.2124798, 0.4344798, 0.6564798, 0.2724798, 0.4944798, 0.7164798, 0.3324798, 0.5544798, 0.7764798, 0.3924798, 0.6144798, 0.2304798, 0.4524798, 0.6744798, 0.2904798, 0.5124798, 0.7344798, 0.3504798, 0.5724798}},
  {"adjust_contrast(u, 1.4)", {3,4,5}, {0, 80, 213, 0, 117, 248, 20, 152, 255, 55, 188, 0, 91, 223, 0, 128, 255, 31, 163, 255, 66, 198, 0, 103, 234, 6, 138, 255, 41, 174, 255, 77, 209, 0, 112, 245, 16, 149, 255, 52, 184, 0, 87, 220, 0, 124, 255, 27, 159, 255, 63, 195, 0, 98, 230, 2, 135, 255, 38, 170}},
  {"adjust_saturation(x, 1.7)", {3,4,5}, {0, 0.2623589, 1, 0, 0.3623659, 1, 0.011749, 0.4623729, 1, 0.1117561, 0.56238, 0, 0.292361, 1, 0, 0.392368, 1, 0.04175115, 0.4923751, 1, 0.372735, 0.823359, 0, 0.472742, 0.9233659, 0, 0.572749, 1, 0.09140778, 0.672756, 1, 0.4027371, 0.8533611, 0, 0.5027442, 0.9533681, 0.02140293, 0.6027511, 1, 0.1214099, 0.9337351, 0, 0.4523938, 1, 0, 0.5524008, 1, 0, 0.6524078, 1, 0, 0.9637371, 0, 0.4823959, 1, 0, 0.5824029, 1, 0, 0.6824099}},
  {"adjust_hue(x, 0.23)", {3,4,5}, {0.5807998, 0.02, 0.74, 0.6807997, 0.12, 0.84, 0.7807998, 0.22, 0.94, 0.8807998, 0.32, 0.6107997, 0.05000003, 0.77, 0.7107998, 0.1500001, 0.87, 0.8107998, 0.25, 0.97, 0, 0.7, 0.6683998, 0.1, 0.8, 0.7683997, 0.2, 0.9, 0.8683998, 0.3, 1, 0.02999995, 0.73, 0.6983998, 0.13, 0.83, 0.7983997, 0.23, 0.93, 0.8983998, 0.66, 0.6084002, 0.06000001, 0.76, 0.7084002, 0.16, 0.86, 0.8084002, 0.26, 0.96, 0.9084002, 0.69, 0.6384003, 0.09000003, 0.79, 0.7384002, 0.19, 0.89, 0.8384002, 0.29}},
  {"adjust_hue(x, -0.4)", {3,4,5}, {0.5940004, 0.7, 0.06000001, 0.6940004, 0.8, 0.16, 0.7940004, 0.9, 0.26, 0.8940004, 1, 0.6240004, 0.73, 0.09000003, 0.7240004, 0.83, 0.19, 0.8240004, 0.93, 0.29, 0.66, 0.02, 0.6620002, 0.76, 0.12, 0.7620002, 0.86, 0.22, 0.8620002, 0.96, 0.32, 0.69, 0.05000003, 0.6920002, 0.79, 0.1500001, 0.7920002, 0.89, 0.25, 0.8920003, 0, 0.6419996, 0.74, 0.1, 0.7419996, 0.84, 0.2, 0.8419996, 0.94, 0.3, 0.9419996, 0.02999995, 0.6719996, 0.77, 0.13, 0.7719996, 0.87, 0.23, 0.8719996, 0.97}},
  {"adjust_hue(u, 0.1)", {3,4,5}, {16, 4, 189, 42, 31, 214, 67, 55, 240, 92, 81, 24, 12, 196, 49, 38, 222, 75, 63, 247, 0, 178, 35, 26, 204, 60, 51, 230, 86, 76, 255, 8, 186, 42, 32, 212, 67, 59, 237, 93, 168, 19, 14, 194, 45, 40, 219, 71, 66, 245, 96, 176, 27, 23, 201, 52, 47, 227, 78, 73}},
  {"rotate(x, 30)", {3,4,5}, {0, 0.74, 0.1, 0.3, 0.3, 0.37, 0.2, 0.57, 0.77, 0.13, 0.84, 0.2, 0.4, 0.77, 0.6, 0.67, 0.67, 0.87, 0.23, 0, 0, 0.06, 0.43, 0.63, 0.63, 0.7, 0.53, 0.9, 0.09, 0.46, 0.16, 0.53, 0.73, 0.09, 0.93, 1, 1, 0.19, 0.56, 0, 0, 0.39, 0.76, 0.96, 0.96, 0.02, 0.86, 0.22, 0.42, 0.79, 0.49, 0.86, 0.05, 0.42, 0.25, 0.32, 0.32, 0.52, 0.89, 0}},
  {"rotate(x, 37, bilinear, fill {0.1,0.2,0.3})", {3,4,5}, {0.09483676, 0.3601537, 0.3863008, 0.4784765, 0.1035095, 0.2197955, 0.4710332, 0.6642198, 0.7568678, 0.4194926, 0.5505072, 0.213132, 0.3057802, 0.4989667, 0.5813558, 0.2389955, 0.4915237, 0.5836993, 0.1754148, 0.09487517, 0.1852033, 0.1082566, 0.3723356, 0.5358459, 0.236011, 0.4956421, 0.5468112, 0.6903032, 0.1774064, 0.4018884, 0.2494071, 0.472504, 0.6357802, 0.5781837, 0.6163331, 0.2438103, 0.7925257, 0.2773406, 0.3156519, 0.1882298, 0.2717634, 0.3000405, 0.6726593, 0.7977443, 0.3685126, 0.1996085, 0.3718164, 0.3142198, 0.5074064, 0.700593, 0.5481116, 0.7725937, 0.2596968, 0.4031888, 0.3202993, 0.251492, 0.414154, 0.5776644, 0.5074358, 0.2747899}},
  {"rotate(x, 30, expand, fill 0)", {3,6,7}, {0, 0, 0, 0, 0.47, 0, 0, 0, 0, 0.74, 0.1, 0.3, 0.3, 0, 0, 0.37, 0.2, 0.57, 0.77, 0.13, 0, 0, 0.84, 0.2, 0.4, 0.77, 0.6, 0.97, 0, 0.67, 0.67, 0.87, 0.23, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0.8, 0, 0, 0, 0, 0.06, 0.43, 0.63, 0.63, 0, 0.33, 0.7, 0.53, 0.9, 0.09, 0.46, 0, 0, 0.16, 0.53, 0.73, 0.09, 0.93, 0.29, 0, 1, 1, 0.19, 0.56, 0, 0, 0, 0, 0.83, 0, 0, 0, 0, 0, 0, 0, 0, 0.12, 0, 0, 0, 0, 0.39, 0.76, 0.96, 0.96, 0, 0.66, 0.02, 0.86, 0.22, 0.42, 0.79, 0, 0, 0.49, 0.86, 0.05, 0.42, 0.25, 0.62, 0, 0.32, 0.32, 0.52, 0.89, 0, 0, 0, 0, 0.15, 0, 0, 0, 0}},
  {"rotate(u, -20, bilinear)", {3,4,5}, {101, 83, 136, 89, 25, 174, 53, 128, 170, 103, 144, 78, 119, 194, 60, 76, 96, 111, 164, 49, 31, 117, 106, 42, 59, 184, 119, 212, 99, 162, 179, 100, 159, 49, 141, 44, 77, 183, 121, 65, 82, 121, 59, 104, 55, 90, 193, 83, 142, 127, 81, 143, 30, 133, 221, 40, 140, 136, 125, 116}},
  {"affine(x, 15, {1, -1}, 1.1, {10, 5}, bilinear)", {3,4,5}, {0.1895976, 0.7117341, 0.1945627, 0.4885448, 0.7589086, 0.3863893, 0.4404906, 0.2110915, 0.4814553, 0.7754374, 0.3483194, 0.6925712, 0.3935254, 0.4743656, 0.6776674, 0, 0, 0.02650785, 0.1504877, 0.3741623, 0.1520368, 0.4686383, 0.4869791, 0.8185448, 0.4624659, 0.5996878, 0.636952, 0.4699523, 0.6126087, 0.1429583, 0.5441718, 0.217286, 0.4609477, 0.7137212, 0.5253366, 0, 0, 0.05778729, 0.2340606, 0.1629907, 0.1011862, 0.4655389, 0.8070418, 0.337391, 0.4800478, 0.1601636, 0.4584493, 0.4875341, 0.1314553, 0.4729583, 0.111525, 0.400314, 0.788798, 0.4750012, 0.4658687, 0, 0, 0.07621779, 0.06584323, 0.2300617}},
  {"affine(x, -10, {0, 1}, 0.9, 20 (x only), nearest, fill 1)", {3,4,5}, {1, 1, 1, 1, 1, 1, 0.37, 0.74, 0.1, 0.47, 0.84, 0.2, 0.57, 0.94, 0.3, 0.67, 0.03, 0.4, 0.77, 0.13, 1, 1, 1, 1, 1, 1, 0.7, 0.06, 0.43, 0.8, 0.16, 0.53, 0.9, 0.26, 0.63, 1, 0.36, 0.73, 0.09, 0.46, 1, 1, 1, 1, 1, 1, 0.02, 0.39, 0.76, 0.12, 0.49, 0.86, 0.22, 0.59, 0.96, 0.32, 0.69, 0.05, 0.42, 0.79}},
  {"gaussian_blur(x, {3, 5}, {0.8, 1.2})", {3,4,5}, {0.3822978, 0.3877565, 0.5163724, 0.5468262, 0.4693921, 0.4183705, 0.3988406, 0.5029795, 0.5622294, 0.5047929, 0.4652072, 0.4077707, 0.4670205, 0.5711594, 0.5516296, 0.500608, 0.4231738, 0.4536277, 0.5822436, 0.5877022, 0.4564137, 0.5177113, 0.5068262, 0.4477565, 0.4824094, 0.4808303, 0.5215556, 0.5222294, 0.4588406, 0.4653694, 0.5501128, 0.5305829, 0.5311595, 0.4677707, 0.4294104, 0.5745293, 0.53078, 0.5422435, 0.4831738, 0.4196649, 0.5303351, 0.4668263, 0.4077565, 0.5363723, 0.6313547, 0.5205896, 0.4822294, 0.4188406, 0.5229795, 0.6260883, 0.4846306, 0.4911594, 0.4277706, 0.4870205, 0.5971118, 0.4675905, 0.5022436, 0.4431738, 0.4736277, 0.5838791}},
  {"gaussian_blur(u, 3, 1.5)", {3,4,5}, {92, 116, 132, 139, 133, 83, 106, 121, 130, 128, 119, 118, 126, 141, 164, 115, 109, 116, 131, 155, 115, 121, 129, 132, 119, 129, 135, 120, 121, 103, 124, 147, 131, 133, 108, 138, 154, 121, 124, 103, 139, 118, 121, 137, 165, 134, 109, 111, 126, 156, 140, 121, 123, 131, 143, 123, 111, 114, 121, 127}},
}

describe("data.transforms.functional", function()
  it("match torchvision's formulas (torch 1.13 reference values)", function()
    for _, case in ipairs(REF) do
      local f = calls[case[1]]
      assert.is_not_nil(f, case[1])
      local got = f()
      local is_u8 = case[1]:match("%(u") ~= nil
      assert.are.equal(is_u8 and "uint8" or "float32", got:dtype(), case[1])
      -- uint8 results of interpolations may round a value that is k + 0.5 up to float32 error
      -- the other way than torch (interpolate sums in another order): 1 off at most
      local tol = is_u8 and ((case[1]:match("^resize") or case[1]:match("^rotate") or case[1]:match("^gaussian"))
                             and 1 or 0) or 2e-6
      near(case, got, tol, case[1])
    end
  end)
end)

-- a batch {N, 3, H, W} of distinct images (values in [0, 1])
local function batch(N, H, W)
  H, W = H or 6, W or 7
  return (pt.arange(N * 3 * H * W, {dtype = "float64"}) * 37):remainder(101):div(100):float():reshape(N, 3, H, W)
end

local function same(a, b) return a:dim() == b:dim() and pt.equal(a, b) end
local function close(a, b, tol)
  return table.concat(a:size(), ",") == table.concat(b:size(), ",") and (a - b):abs():max():item() <= (tol or 1e-6)
end

-- the draws the transforms make, in their order (pt.rand float64 uniforms)
local function uniform(lo, hi) return lo + (hi - lo) * pt.rand(1, {dtype = "float64"}):item() end

describe("data.transforms.functional on batches", function()
  it("give each image of a batch what the image alone gives, and keep the dtype", function()
    local xb = batch(3)
    local fns = {
      function(t) return Fn.center_crop(t, {4, 3}) end,
      function(t) return Fn.resize(t, 4) end,
      function(t) return Fn.resize(t, 3, {max_size = 4}) end,
      function(t) return Fn.pad(t, {1, 2}, {padding_mode = "edge"}) end,
      function(t) return Fn.pad(t, {-1, 1, 2, -2}) end,
      function(t) return Fn.rotate(t, 45, {interpolation = "bilinear", center = {1, 2}}) end,
      function(t) return Fn.affine(t, 5, {1, 0}, 0.8, {3, -4}, {fill = {0.1, 0.2, 0.3}}) end,
      function(t) return Fn.rgb_to_grayscale(t, 3) end,
      function(t) return Fn.adjust_contrast(t, 1.8) end,
      function(t) return Fn.adjust_hue(t, -0.15) end,
      function(t) return Fn.gaussian_blur(t, 3) end,
      function(t) return Fn.erase(t, 2, 3, 2, 2, {1, 2, 3}) end,
      function(t) return Fn.crop(t, 0, 5, 3, 4) end,
      function(t) return Fn.resized_crop(t, 2, 2, 3, 3, {5, 4}, {interpolation = "bicubic"}) end,
      Fn.hflip, Fn.vflip,
    }
    for k, f in ipairs(fns) do
      local yb = f(xb)
      assert.are.equal(4, yb:dim(), "case " .. k)
      for i = 1, 3 do assert.is_true(close(yb[i], f(xb[i]), 0), "case " .. k .. " image " .. i) end
    end
    -- size 4 makes the long edge 10, over max_size 6: torchvision caps it and scales the short one
    assert.are.same({1, 3, 2, 6}, Fn.resize(pt.zeros(1, 3, 4, 10), 4, {max_size = 6}):size())
    assert.are.same({1, 3, 4, 10}, Fn.resize(pt.zeros(1, 3, 2, 5), 4, {max_size = 11}):size())
  end)

  it("leave images alone where torchvision does (identity parameters, 1-channel colour)", function()
    local xb = batch(2)
    assert.is_true(same(xb, Fn.resize(xb, {6, 7})))
    assert.is_true(same(xb, Fn.center_crop(xb, {6, 7})))
    assert.is_true(close(xb, Fn.rotate(xb, 0), 0))
    assert.is_true(close(xb, Fn.adjust_brightness(xb, 1), 0))
    assert.is_true(close(xb, Fn.adjust_saturation(xb, 1), 1e-6))
    assert.is_true(close(xb, Fn.adjust_hue(xb, 0), 1e-6))
    local g = xb:narrow(2, 1, 1)
    assert.is_true(same(g, Fn.adjust_saturation(g, 0.2)))
    assert.is_true(same(g, Fn.adjust_hue(g, 0.3)))
    assert.is_true(same(g, Fn.rgb_to_grayscale(g)))
    assert.are.same({2, 3, 6, 7}, Fn.rgb_to_grayscale(g, 3):size())
    assert.is_true(close(Fn.adjust_brightness(g, 0.5), g * 0.5, 1e-7))
  end)
end)

describe("data.transforms (random)", function()
  it("take their parameters from pt's generator in torchvision's order, per image, within the ranges", function()
    local xb = batch(3)
    -- rotation: one angle per image in [-30, 30]
    pt.manual_seed(5)
    local got = T.random_rotation(30, {interpolation = "bilinear", fill = 0.5})(xb)
    pt.manual_seed(5)
    for i = 1, 3 do
      local a = uniform(-30, 30)
      assert.is_true(a >= -30 and a <= 30)
      assert.is_true(close(got[i], Fn.rotate(xb[i], a, {interpolation = "bilinear", fill = 0.5}), 1e-6), "image " .. i)
    end
    -- affine: angle, translation (rounded pixels), scale, shear x and y
    local opts = {translate = {0.2, 0.3}, scale = {0.8, 1.2}, shear = {-5, 5, 2, 8}, fill = {0, 0.5, 1}}
    pt.manual_seed(6)
    got = T.random_affine({10, 20}, opts)(xb)
    pt.manual_seed(6)
    local function round(v) local f = math.floor(v) return (v - f > 0.5 or (v - f == 0.5 and f % 2 == 1)) and f + 1 or f end
    for i = 1, 3 do
      local a = uniform(10, 20)
      local tx, ty = round(uniform(-0.2 * 7, 0.2 * 7)), round(uniform(-0.3 * 6, 0.3 * 6))
      local s, shx, shy = uniform(0.8, 1.2), uniform(-5, 5), uniform(2, 8)
      assert.is_true(math.abs(tx) <= 1 and math.abs(ty) <= 2)
      assert.is_true(close(got[i], Fn.affine(xb[i], a, {tx, ty}, s, {shx, shy}, {fill = {0, 0.5, 1}}), 1e-6), "image " .. i)
    end
    -- colour jitter: a random order of the four, then the factors
    pt.manual_seed(7)
    local cj = {brightness = 0.4, contrast = {0.5, 1.5}, saturation = 0.3, hue = 0.1}
    got = T.color_jitter(cj)(xb)
    pt.manual_seed(7)
    local fns = {Fn.adjust_brightness, Fn.adjust_contrast, Fn.adjust_saturation, Fn.adjust_hue}
    for i = 1, 3 do
      local order = pt.randperm(4):tolist()
      local f = {uniform(0.6, 1.4), uniform(0.5, 1.5), uniform(0.7, 1.3), uniform(-0.1, 0.1)}
      local y = xb[i]
      for _, k in ipairs(order) do y = fns[k](y, f[k]) end
      assert.is_true(close(got[i], y, 1e-6), "image " .. i)
    end
    -- rotation with expand, on one image: the output holds the whole rotated image
    pt.manual_seed(9)
    got = T.random_rotation({40, 50}, {expand = true})(xb[1])
    pt.manual_seed(9)
    local want = Fn.rotate(xb[1], uniform(40, 50), {expand = true, fill = 0})
    assert.is_true(want:size(2) > 6 and want:size(3) > 7) -- the size itself: against torch in the first spec
    assert.is_true(same(got, want))
    -- resized crop: no try fits a 1:1 crop of the whole area into 4x20, so torchvision's central fallback
    local wide = batch(2, 4, 20)
    assert.is_true(close(T.random_resized_crop(3, {scale = {1, 1}, ratio = {1, 1}})(wide),
      Fn.resize(Fn.center_crop(wide, 4), {3, 3}), 1e-6))
    -- blur: one sigma per image
    pt.manual_seed(8)
    got = T.gaussian_blur(3, {0.5, 1.5})(xb)
    pt.manual_seed(8)
    for i = 1, 3 do assert.is_true(close(got[i], Fn.gaussian_blur(xb[i], 3, uniform(0.5, 1.5)), 1e-6)) end
  end)

  it("give images their own parameters within a batch and keep the ranges", function()
    local xb = batch(16, 8, 8)
    pt.manual_seed(1)
    -- brightness of a flat gray image: one factor per image, within [0.7, 1.3]
    local flat = pt.full({16, 3, 4, 4}, 0.5)
    local b = T.color_jitter({brightness = 0.3})(flat)
    local levels = {}
    for i = 1, 16 do
      local v = b[i]
      assert.are.equal(v:min():item(), v:max():item())
      local f = v:max():item() / 0.5
      assert.is_true(f >= 0.7 - 1e-6 and f <= 1.3 + 1e-6, tostring(f))
      levels[("%.6f"):format(f)] = true
    end
    local n = 0
    for _ in pairs(levels) do n = n + 1 end
    assert.is_true(n > 8)
    -- flips: each image itself or mirrored, both happen
    for _, c in ipairs({{T.random_horizontal_flip(), Fn.hflip}, {T.random_vertical_flip(0.5), Fn.vflip}}) do
      local y, seen = c[1](xb), {}
      for i = 1, 16 do
        local k = same(y[i], xb[i]) and "kept" or (same(y[i], c[2](xb[i])) and "flipped")
        assert.is_truthy(k)
        seen[k] = true
      end
      assert.is_true(seen.kept and seen.flipped)
    end
    assert.is_true(same(xb, T.random_horizontal_flip(0)(xb)))
    assert.is_true(same(Fn.vflip(xb), T.random_vertical_flip(1)(xb)))
    -- grayscale: gray (3 channels) or kept
    local y, seen = T.random_grayscale(0.5)(xb), {}
    for i = 1, 16 do
      local k = same(y[i], xb[i]) and "kept" or (same(y[i], Fn.rgb_to_grayscale(xb[i], 3)) and "gray")
      assert.is_truthy(k)
      seen[k] = true
    end
    assert.is_true(seen.kept and seen.gray)
    -- resized crop: with a fixed scale and ratio, a 4x4 window of each image, at different places
    y = T.random_resized_crop(4, {scale = {0.25, 0.25}, ratio = {1, 1}})(xb)
    assert.are.same({16, 3, 4, 4}, y:size())
    local places = {}
    for i = 1, 16 do
      local at
      for top = 1, 5 do
        for left = 1, 5 do
          if same(y[i], Fn.crop(xb[i], top, left, 4, 4)) then at = top * 10 + left end
        end
      end
      assert.is_truthy(at, "image " .. i)
      places[at] = true
    end
    n = 0
    for _ in pairs(places) do n = n + 1 end
    assert.is_true(n > 4)
    -- the whole image (scale 1, the image's own ratio) is a plain resize
    assert.is_true(close(T.random_resized_crop({5, 5}, {scale = {1, 1}, ratio = {1, 1}})(xb), Fn.resize(xb, {5, 5}), 1e-6))
    -- erasing: a rectangle of value, its area fraction within scale, with probability p
    local ones = pt.ones(16, 3, 10, 10)
    y = T.random_erasing({p = 1, scale = {0.1, 0.3}, ratio = {0.5, 2}, value = 0})(ones)
    for i = 1, 16 do
      local zeros = y[i][1]:eq(0)
      local area = zeros:sum():item()
      local rows, cols = zeros:any(2):sum():item(), zeros:any(1):sum():item()
      assert.are.equal(rows * cols, area) -- a rectangle
      assert.is_true(area >= 0.1 * 100 - 4 and area <= 0.3 * 100 + 4, tostring(area))
      assert.is_true(same(y[i][1], y[i][3]))
    end
    assert.is_true(same(ones, T.random_erasing({p = 0})(ones)))
    local noisy = T.random_erasing({p = 1, value = "random"})(ones)
    assert.is_true(noisy:ne(1):sum():item() > 0)
    local colour = T.random_erasing({p = 1, value = {0.25, 0.5, 0.75}})(ones)
    for c, v in ipairs({0.25, 0.5, 0.75}) do assert.is_true(colour:select(2, c):eq(v):sum():item() > 0) end
  end)

  it("random_apply and random_choice: each image through its own pick", function()
    local xb = batch(16)
    pt.manual_seed(2)
    local y, seen = T.random_apply({T.pad(1), T.center_crop({6, 7}), Fn.hflip}, 0.5)(xb), {}
    for i = 1, 16 do
      local k = same(y[i], xb[i]) and "kept" or (same(y[i], Fn.hflip(xb[i])) and "applied")
      assert.is_truthy(k)
      seen[k] = true
    end
    assert.is_true(seen.kept and seen.applied)
    assert.is_true(same(Fn.vflip(xb), T.random_apply(Fn.vflip, 1)(xb)))
    assert.is_true(same(xb, T.random_apply({Fn.vflip}, 0)(xb)))
    local choices = {T.center_crop(4), T.resize({4, 4}), function(t) return Fn.crop(t, 1, 1, 4, 4) end}
    y, seen = T.random_choice(choices)(xb), {}
    assert.are.same({16, 3, 4, 4}, y:size())
    for i = 1, 16 do
      for k, c in ipairs(choices) do if same(y[i], c(xb[i]:unsqueeze(1))[1]) then seen[k] = true end end
    end
    assert.is_true(seen[1] and seen[2] and seen[3])
    y = T.random_choice(choices, {0, 1, 0})(xb)
    assert.is_true(same(y, Fn.resize(xb, {4, 4})))
    -- a single image goes through as a batch of one
    assert.are.same({3, 4, 4}, T.random_choice(choices)(xb[1]):size())
  end)

  it("are reproducible for a seed, pass y and the rest through, and work in compose", function()
    local xb = batch(4, 8, 8)
    local y = pt.arange(4)
    local tf = T.compose(T.random_resized_crop(6), T.random_horizontal_flip(), T.color_jitter({brightness = 0.2, hue = 0.05}),
      T.random_apply({T.random_rotation(20), T.gaussian_blur(3)}, 0.5), T.random_affine(10, {translate = {0.1, 0.1}}),
      T.random_grayscale(0.3), T.random_erasing(), T.random_choice({T.resize(5), T.center_crop(5)}), T.pad(1),
      T.random_vertical_flip(), T.grayscale(3))
    pt.manual_seed(3)
    local a, ya, extra = tf(xb, y, "extra")
    pt.manual_seed(3)
    local b = tf(xb, y, "extra")
    assert.are.equal(y, ya)
    assert.are.equal("extra", extra)
    assert.are.same({4, 3, 7, 7}, a:size())
    assert.is_true(same(a, b))
    local c = tf(xb, y)
    assert.is_false(same(a, c))
    -- uint8 batches stay uint8
    local u8 = (xb * 255):round():to("uint8")
    assert.are.equal("uint8", tf(u8, y):dtype())
  end)

  it("give the same batches with workers = 2 as with workers = 0", function()
    local n = 10
    local ds = data.TensorDataset(batch(n, 8, 8), pt.arange(n))
    local tf = T.compose(T.random_resized_crop({6, 6}, {scale = {0.5, 1}}), T.random_horizontal_flip(),
      T.color_jitter({brightness = 0.3, contrast = 0.3, saturation = 0.3, hue = 0.1}), T.random_rotation(15),
      T.random_affine(5, {scale = {0.9, 1.1}, shear = 3}), T.gaussian_blur(3), T.random_grayscale(0.2),
      T.random_erasing({value = "random"}), T.random_apply({T.random_vertical_flip(1)}, 0.5),
      T.random_choice({T.center_crop(4), T.resize(4)}))
    local function run(workers)
      local h = data.DataHandler(ds, {batch = 3, shuffle = true, transform = tf, workers = workers, progress = false})
      local out = {}
      for _ = 1, 2 do
        for x, yb in h:batches() do out[#out + 1] = {x:tolist(), yb:tolist()} end
      end
      h:close()
      return out
    end
    local expect = run(0)
    assert.are.equal(8, #expect)
    assert.are.same(expect, run(2))
  end)
end)

describe("data.transforms errors", function()
  local E = support.assert_error
  it("name the function and the problem", function()
    pt.manual_seed(1)
    E("center_crop: size must be a positive integer or a list {h, w} of them", T.center_crop, 0)
    E("center_crop: size must be a positive integer or a list {h, w} of them", Fn.center_crop, x, {2, 2, 2})
    E("center_crop: expected an image {C,H,W} or a batch {N,C,H,W}, got 2-D (shape {4,5})", Fn.center_crop, x[1], 2)
    E("hflip: expected an image {C,H,W} or a batch {N,C,H,W}, got 1-D (shape {3})", Fn.hflip, pt.ones(3))
    E("resize: expected an image tensor {C,H,W} or a batch {N,C,H,W}, got table", Fn.resize, {}, 2)
    E("resize: interpolation must be nearest, bilinear or bicubic, got area", T.resize, 4, {interpolation = "area"})
    E("resize: antialias must be a boolean, got string", T.resize, 4, {antialias = "yes"})
    E("resize: unknown option 'mode'", T.resize, 4, {mode = "nearest"})
    E("resize: max_size (3) must be an integer larger than size (4)", T.resize, 4, {max_size = 3})
    E("resize: max_size is only allowed when size is a single integer", T.resize, {4, 5}, {max_size = 9})
    E("pad: padding must be an integer or a list of 1, 2 or 4 integers ({left, top, right, bottom})", T.pad, {1, 2, 3})
    E("pad: padding_mode must be constant, edge, reflect or symmetric, got wrap", T.pad, 1, {padding_mode = "wrap"})
    E("pad: reflect padding {5,0,0,0} (left, top, right, bottom) must be smaller than the image's 4x5", Fn.pad, x,
      {5, 0, 0, 0}, {padding_mode = "reflect"})
    E("pad: symmetric padding {0,5,0,0} (left, top, right, bottom) must be at most the image's 4x5", Fn.pad, x,
      {0, 5, 0, 0}, {padding_mode = "symmetric"})
    E("pad: fill must be a number, got string", T.pad, 1, {fill = "x"})
    E("pad: negative padding leaves nothing of the 4x5 image", Fn.pad, x, {-3, 0, -2, 0})
    E("grayscale: num_output_channels must be 1 or 3, got 2", T.grayscale, 2)
    E("rgb_to_grayscale: expects 1- or 3-channel images, got 2 channels (shape {1,2,4,5})", Fn.rgb_to_grayscale,
      x:narrow(1, 1, 2))
    E("color_jitter: expects 1- or 3-channel images, got 4 channels (shape {1,4,2,2})", T.color_jitter({hue = 0.1}),
      pt.rand(1, 4, 2, 2))
    E("color_jitter: brightness must be non-negative when a single number, got -0.5", T.color_jitter, {brightness = -0.5})
    E("color_jitter: hue values must be within [-0.5, 0.5] with min <= max, got {-0.6, 0.6}", T.color_jitter, {hue = 0.6})
    E("color_jitter: contrast values must be within [0, inf] with min <= max, got {2, 1}", T.color_jitter, {contrast = {2, 1}})
    E("color_jitter: unknown option 'gamma'", T.color_jitter, {gamma = 1})
    E("adjust_hue: hue_factor must be in [-0.5, 0.5], got 0.7", Fn.adjust_hue, x, 0.7)
    E("adjust_brightness: factor must be a non-negative number, got -1", Fn.adjust_brightness, x, -1)
    E("random_horizontal_flip: p must be a number in [0, 1], got 2", T.random_horizontal_flip, 2)
    E("random_grayscale: p must be a number in [0, 1], got -0.1", T.random_grayscale, -0.1)
    E("random_resized_crop: scale must be a list {min, max} with min <= max", T.random_resized_crop, 4, {scale = {1, 0.5}})
    E("random_resized_crop: scale must be >= 0 and ratio > 0", T.random_resized_crop, 4, {ratio = {0, 1}})
    E("random_rotation: degrees must be non-negative when a single number, got -5", T.random_rotation, -5)
    E("random_rotation: degrees must be a number or a list {min, max} with min <= max", T.random_rotation, {5})
    E("random_rotation: interpolation must be nearest or bilinear, got bicubic", T.random_rotation, 5,
      {interpolation = "bicubic"})
    E("random_rotation: expand=true gives each image its own size; apply it to single images {C,H,W}",
      T.random_rotation(10, {expand = true}), batch(2))
    E("random_rotation: fill has 2 values for an image of 3 channels", T.random_rotation(10, {fill = {1, 2}}), x)
    E("random_affine: translate must be a list {fx, fy} of fractions in [0, 1]", T.random_affine, 0, {translate = {2, 0}})
    E("random_affine: shear must be a number, a list {min, max} or {xmin, xmax, ymin, ymax}", T.random_affine, 0,
      {shear = {1, 2, 3}})
    E("random_affine: scale values must be positive", T.random_affine, 0, {scale = {0, 1}})
    E("rotate: angle must be a number, got string", Fn.rotate, x, "30")
    E("affine: scale must be a positive number, got 0", Fn.affine, x, 0, {0, 0}, 0, 0)
    E("affine: translate must be a list {tx, ty} of numbers", Fn.affine, x, 0, 1, 1, 0)
    E("gaussian_blur: kernel_size must be an odd positive integer or a list {kx, ky} of them", T.gaussian_blur, 4)
    E("gaussian_blur: sigma must be positive, got 0", T.gaussian_blur, 3, {0, 1})
    E("gaussian_blur: kernel 9x9 too large for a 4x5 image (reflect padding needs kernel_size // 2 < the side)",
      Fn.gaussian_blur, x, 9)
    E("random_erasing: p must be a number in [0, 1], got 1.5", T.random_erasing, {p = 1.5})
    E("random_erasing: value must be a number, a list of numbers (one per channel) or \"random\"", T.random_erasing,
      {value = "noise"})
    E("random_erasing: value has 2 entries for images of 3 channels", T.random_erasing({p = 1, value = {1, 2}}), x)
    E("erase: the window must be integers inside the 4x5 image", Fn.erase, x, 3, 1, 3, 2, 0)
    E("random_apply: expected a non-empty list of transforms", T.random_apply, {})
    E("random_apply: transform 2 is not a function", T.random_apply, {Fn.hflip, 3})
    E("random_choice: weights must be a list of 2 numbers (one per transform)", T.random_choice, {Fn.hflip, Fn.vflip}, {1})
    E("random_choice: the weights sum to 0", T.random_choice, {Fn.hflip, Fn.vflip}, {0, 0})
    E("random_choice: the transforms gave images of different shapes ({3,4,5} and {3,2,2}); a batch needs one shape",
      T.random_choice({Fn.hflip, T.center_crop(2)}), pt.stack({x, x, x, x, x, x, x, x}))
  end)
end)

describe("data.transforms help", function()
  it("documents every transform and functional form once loaded", function()
    local help = require "partrain.help"
    T._load_more()
    local n = 0
    for _, t in ipairs({T, Fn}) do
      for k, v in pairs(t) do
        if type(v) == "function" and not k:match("^_") then
          n = n + 1
          assert.is_truthy(rawget(pt, "_docs")[v], k)
          assert.is_falsy(help.text(v):match("^no help"), k)
        end
      end
    end
    assert.is_true(n >= 5 + 15 + 16)
    assert.matches("data%.transforms%.random_rotation%(degrees", help.text(T.random_rotation))
  end)
end)

--[==[ The reference values above: /usr/bin/python3 (torch 1.13) with torchvision 0.14's formulas
(transforms/functional_tensor.py) rewritten with torch ops, torchvision not being installed:

# torchvision (0.14, transforms/functional_tensor.py) formulas with torch 1.13 ops: torchvision is not installed
import torch, math
import torch.nn.functional as F
torch.set_printoptions(precision=8)
def img(C=3, H=4, W=5):
    return (torch.arange(C * H * W, dtype=torch.float64) * 37 % 101 / 100).reshape(C, H, W).float()
def crop(x, top, left, h, w):
    H, W = x.shape[-2:]
    right, bottom = left + w, top + h
    if left < 0 or top < 0 or right > W or bottom > H:
        pad = [max(-left, 0), max(right - W, 0), max(-top, 0), max(bottom - H, 0)]
        return F.pad(x[..., max(top, 0):bottom, max(left, 0):right], pad, value=0)
    return x[..., top:bottom, left:right]
def center_crop(x, ch, cw):
    H, W = x.shape[-2:]
    if cw > W or ch > H:
        pl = [(cw - W) // 2 if cw > W else 0, (ch - H) // 2 if ch > H else 0, (cw - W + 1) // 2 if cw > W else 0, (ch - H + 1) // 2 if ch > H else 0]
        x = F.pad(x, [pl[0], pl[2], pl[1], pl[3]], value=0)
        H, W = x.shape[-2:]
    return crop(x, int(round((H - ch) / 2.0)), int(round((W - cw) / 2.0)), ch, cw)
def resize(x, size, mode, aa):
    dt = x.dtype
    y = x.float().unsqueeze(0) if not x.is_floating_point() else x.unsqueeze(0)
    y = F.interpolate(y, size=size, mode=mode, align_corners=False if mode != "nearest" else None, antialias=aa)[0]
    if mode == "bicubic" and dt == torch.uint8: y = y.clamp(0, 255)
    return y.round().to(dt) if dt == torch.uint8 else y
def pad_sym(x, l, t, r, b):  # torchvision's _pad_symmetric
    H, W = x.shape[-2:]
    xi = list(range(l - 1, -1, -1)) + list(range(W)) + [-(i + 1) for i in range(r)]
    yi = list(range(t - 1, -1, -1)) + list(range(H)) + [-(i + 1) for i in range(b)]
    return x[:, yi][:, :, xi]
def gray(x):
    r, g, b = x.unbind(-3)
    return (0.2989 * r + 0.587 * g + 0.114 * b).to(x.dtype).unsqueeze(-3)
def blend(a, b, ratio):
    bound = 1.0 if a.is_floating_point() else 255.0
    return (ratio * a + (1.0 - ratio) * b).clamp(0, bound).to(a.dtype)
def brightness(x, f): return blend(x, torch.zeros_like(x), f)
def contrast(x, f):
    dt = x.dtype if x.is_floating_point() else torch.float32
    return blend(x, torch.mean(gray(x).to(dt), dim=(-3, -2, -1), keepdim=True), f)
def saturation(x, f): return blend(x, gray(x), f)
def rgb2hsv(img):
    r, g, b = img.unbind(dim=-3)
    maxc = torch.max(img, dim=-3).values; minc = torch.min(img, dim=-3).values
    eqc = maxc == minc; cr = maxc - minc; ones = torch.ones_like(maxc)
    s = cr / torch.where(eqc, ones, maxc); crd = torch.where(eqc, ones, cr)
    rc = (maxc - r) / crd; gc = (maxc - g) / crd; bc = (maxc - b) / crd
    hr = (maxc == r) * (bc - gc); hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc); hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = torch.fmod(((hr + hg + hb) / 6.0 + 1.0), 1.0)
    return torch.stack((h, s, maxc), dim=-3)
def hsv2rgb(img):
    h, s, v = img.unbind(dim=-3)
    i = torch.floor(h * 6.0); f = (h * 6.0) - i; i = i.to(dtype=torch.int32)
    p = torch.clamp((v * (1.0 - s)), 0.0, 1.0); q = torch.clamp((v * (1.0 - s * f)), 0.0, 1.0); t = torch.clamp((v * (1.0 - s * (1.0 - f))), 0.0, 1.0)
    i = i % 6
    mask = i.unsqueeze(dim=-3) == torch.arange(6).view(-1, 1, 1)
    a1 = torch.stack((v, q, p, p, t, v), dim=-3); a2 = torch.stack((t, v, v, q, p, p), dim=-3); a3 = torch.stack((p, p, t, v, v, q), dim=-3)
    return torch.einsum("...ijk, ...xijk -> ...xjk", mask.to(dtype=img.dtype), torch.stack((a1, a2, a3), dim=-4))
def hue(x, hf):
    dt = x.dtype
    if dt == torch.uint8: x = x.to(torch.float32) / 255.0
    h, s, v = rgb2hsv(x).unbind(dim=-3)
    y = hsv2rgb(torch.stack(((h + hf) % 1.0, s, v), dim=-3))
    return (y * 255.0).to(dt) if dt == torch.uint8 else y
def inv_affine(center, angle, translate, scale, shear):
    rot = math.radians(angle); sx = math.radians(shear[0]); sy = math.radians(shear[1]); cx, cy = center; tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy); b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy); d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x / scale for x in [d, -b, 0.0, -c, a, 0.0]]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty); m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx; m[5] += cy
    return m
def out_size(matrix, w, h):
    pts = torch.tensor([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]])
    new = torch.matmul(pts, torch.tensor(matrix, dtype=torch.float).view(2, 3).T)
    mn = new.min(dim=0)[0] + torch.tensor((w * 0.5, h * 0.5)); mx = new.max(dim=0)[0] + torch.tensor((w * 0.5, h * 0.5))
    size = torch.ceil((mx / 1e-4).trunc_() * 1e-4) - torch.floor((mn / 1e-4).trunc_() * 1e-4)
    return int(size[0]), int(size[1])
def warp(x, matrix, mode, fill, ow=None, oh=None):
    dt = x.dtype; w, h = x.shape[-1], x.shape[-2]; ow = ow or w; oh = oh or h
    wdt = dt if dt.is_floating_point else torch.float32
    theta = torch.tensor(matrix, dtype=wdt).reshape(1, 2, 3)
    base = torch.empty(1, oh, ow, 3, dtype=wdt)
    base[..., 0].copy_(torch.linspace(-ow * 0.5 + 0.5, ow * 0.5 + 0.5 - 1, steps=ow))
    base[..., 1].copy_(torch.linspace(-oh * 0.5 + 0.5, oh * 0.5 + 0.5 - 1, steps=oh).unsqueeze_(-1))
    base[..., 2].fill_(1)
    grid = base.view(1, oh * ow, 3).bmm(theta.transpose(1, 2) / torch.tensor([0.5 * w, 0.5 * h], dtype=wdt)).view(1, oh, ow, 2)
    y = x.unsqueeze(0).to(wdt)
    if fill is not None: y = torch.cat((y, torch.ones((1, 1, h, w), dtype=wdt)), dim=1)
    y = F.grid_sample(y, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        mask = y[:, -1:]; y = y[:, :-1]; mask = mask.expand_as(y)
        fimg = torch.tensor(fill, dtype=wdt).view(1, len(fill), 1, 1).expand_as(y)
        if mode == "nearest": y[mask < 0.5] = fimg[mask < 0.5]
        else: y = y * mask + (1.0 - mask) * fimg
    y = y[0]
    return y.round().to(dt) if dt == torch.uint8 else y
def rotate(x, angle, mode="nearest", expand=False, fill=None):
    m = inv_affine([0.0, 0.0], -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    ow, oh = out_size(m, x.shape[-1], x.shape[-2]) if expand else (None, None)
    return warp(x, m, mode, fill, ow, oh)
def affine(x, angle, tr, scale, shear, mode="nearest", fill=None):
    return warp(x, inv_affine([0.0, 0.0], angle, [float(t) for t in tr], scale, shear), mode, fill)
def blur(x, k, sigma):
    def k1(n, s):
        xs = torch.linspace(-(n - 1) * 0.5, (n - 1) * 0.5, steps=n); pdf = torch.exp(-0.5 * (xs / s).pow(2)); return pdf / pdf.sum()
    dt = x.dtype; wdt = dt if dt.is_floating_point else torch.float32
    ker = torch.mm(k1(k[1], sigma[1]).to(wdt)[:, None], k1(k[0], sigma[0]).to(wdt)[None, :]).expand(x.shape[-3], 1, k[1], k[0])
    y = F.conv2d(F.pad(x.unsqueeze(0).to(wdt), [k[0] // 2, k[0] // 2, k[1] // 2, k[1] // 2], mode="reflect"), ker, groups=x.shape[-3])[0]
    return y.round().to(dt) if dt == torch.uint8 else y
x = img(); u = (img() * 255).round().to(torch.uint8)
cases = [
  ("center_crop(x, 3)", center_crop(x, 3, 3)),
  ("center_crop(x, {6, 3})", center_crop(x, 6, 3)),
  ("resize(x, {3, 7})", resize(x, [3, 7], "bilinear", True)),
  ("resize(x, 2)", resize(x, [2, 2], "bilinear", True)),
  ("resize(x, 2, bilinear no antialias)", resize(x, [2, 2], "bilinear", False)),
  ("resize(x, {7, 3}, nearest)", resize(x, [7, 3], "nearest", False)),
  ("resize(x, {3, 8}, bicubic)", resize(x, [3, 8], "bicubic", True)),
  ("resize(u, {3, 7})", resize(u, [3, 7], "bilinear", True)),
  ("resize(u, {6, 6}, bicubic)", resize(u, [6, 6], "bicubic", True)),
  ("pad(x, {1, 2}, reflect)", F.pad(x, [1, 1, 2, 2], mode="reflect")),
  ("pad(x, {2, 1, 0, 3}, symmetric)", pad_sym(x, 2, 1, 0, 3)),
  ("pad(x, 1, edge)", F.pad(x.unsqueeze(0), [1, 1, 1, 1], mode="replicate")[0]),
  ("pad(x, {1, 0, 2, 1}, fill 0.5)", F.pad(x, [1, 2, 0, 1], value=0.5)),
  ("rgb_to_grayscale(x)", gray(x)),
  ("rgb_to_grayscale(u)", gray(u)),
  ("adjust_brightness(x, 1.3)", brightness(x, 1.3)),
  ("adjust_contrast(x, 0.6)", contrast(x, 0.6)),
  ("adjust_contrast(u, 1.4)", contrast(u, 1.4)),
  ("adjust_saturation(x, 1.7)", saturation(x, 1.7)),
  ("adjust_hue(x, 0.23)", hue(x, 0.23)),
  ("adjust_hue(x, -0.4)", hue(x, -0.4)),
  ("adjust_hue(u, 0.1)", hue(u, 0.1)),
  ("rotate(x, 30)", rotate(x, 30.0)),
  ("rotate(x, 37, bilinear, fill {0.1,0.2,0.3})", rotate(x, 37.0, "bilinear", fill=[0.1, 0.2, 0.3])),
  ("rotate(x, 30, expand, fill 0)", rotate(x, 30.0, expand=True, fill=[0.0, 0.0, 0.0])),
  ("rotate(u, -20, bilinear)", rotate(u, -20.0, "bilinear")),
  ("affine(x, 15, {1, -1}, 1.1, {10, 5}, bilinear)", affine(x, 15.0, [1, -1], 1.1, [10.0, 5.0], "bilinear")),
  ("affine(x, -10, {0, 1}, 0.9, 20 (x only), nearest, fill 1)", affine(x, -10.0, [0, 1], 0.9, [20.0, 0.0], "nearest", [1.0, 1.0, 1.0])),
  ("gaussian_blur(x, {3, 5}, {0.8, 1.2})", blur(x, [3, 5], [0.8, 1.2])),
  ("gaussian_blur(u, 3, 1.5)", blur(u, [3, 3], [1.5, 1.5])),
]
for name, t in cases:
    v = t.double().flatten().tolist()
    fmt = (lambda a: "%d" % a) if t.dtype == torch.uint8 else (lambda a: "%.7g" % a)
    print('  {"%s", {%s}, {%s}},' % (name, ",".join(str(s) for s in t.shape), ", ".join(fmt(a) for a in v)))
]==]

describe("data.transforms.convert_image_dtype and compose of a list", function()
  local pt = require "partrain"
  local T = pt.data.transforms
  local support = require "spec.support"
  it("scales as torchvision's convert_image_dtype, and compose takes torchvision's list form", function()
    local u = pt.tensor({{{0, 1, 128, 255}}}, {dtype = "uint8"})
    local f = T.functional.convert_image_dtype(u)
    assert.are.equal("float32", f:dtype())
    -- torchvision 0.14: convert_image_dtype(uint8 -> float) divides by 255
    local expected = {0, 1 / 255, 128 / 255, 1}
    local got = f:reshape(-1):tolist()
    for i = 1, 4 do assert.is_true(math.abs(got[i] - expected[i]) < 1e-7) end
    -- float -> uint8: x * (255 + 1 - 1e-3) truncated, so 0.5 -> 127 and 1 -> 255 (torchvision's)
    local back = T.functional.convert_image_dtype(pt.tensor({{{0, 0.5, 0.999, 1}}}), "uint8")
    assert.are.same({0, 127, 255, 255}, back:reshape(-1):tolist())
    assert.are.equal("float64", T.functional.convert_image_dtype(u, "float64"):dtype())
    local pipeline = T.compose({T.convert_image_dtype(), T.normalize({0.5}, {0.5})})
    local x, y = pipeline(u:reshape(1, 1, 1, 4), "label")
    assert.are.equal("label", y)
    assert.is_true(math.abs(x:reshape(-1):tolist()[4] - 1) < 1e-6)
    support.assert_error("convert_image_dtype: dtype must be uint8, float32 or float64, got int64",
      function() T.convert_image_dtype("int64") end)
    support.assert_error("convert_image_dtype: expected a uint8, float32 or float64 image, got int64",
      function() T.functional.convert_image_dtype(pt.zeros(1, 1, 1, {dtype = "int64"})) end)
  end)
end)
