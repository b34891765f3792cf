-- pt.metrics' tensor metrics against sklearn's formulas. sklearn is not installed on this machine,
-- so every expected number below comes from the numpy re-implementation of sklearn 1.3's code
-- pasted here (run with /usr/bin/python3, numpy 1.24), with the calls quoted beside each value.
-- Its AUC tie rule was also checked against the Mann-Whitney count (ties count 1/2): 0.7857142857142857.
--
-- # numpy re-implementation of sklearn 1.3's formulas (sklearn is not installed here)
-- import numpy as np
-- def prfs(yt, yp, labels, average, beta=1.0, zd=0.0):
--     yt, yp = np.asarray(yt), np.asarray(yp)
--     tp = np.array([np.sum((yt == l) & (yp == l)) for l in labels], float)
--     ts = np.array([np.sum(yt == l) for l in labels], float)
--     ps = np.array([np.sum(yp == l) for l in labels], float)
--     if average == "micro": tp, ts, ps = tp.sum(keepdims=True), ts.sum(keepdims=True), ps.sum(keepdims=True)
--     div = lambda a, b: np.where(b == 0, zd, a / np.where(b == 0, 1, b))
--     p, r = div(tp, ps), div(tp, ts)
--     f = r if beta == np.inf else p if beta == 0 else div((1 + beta**2) * tp, beta**2 * ts + ps)
--     if average in ("none", "binary", "micro"): return p, r, f, ts
--     w = ts if average == "weighted" else None
--     def nanavg(a):
--         m = ~np.isnan(a)
--         if not m.any(): return np.nan
--         try: return np.average(a[m], weights=None if w is None else w[m])
--         except ZeroDivisionError: return np.average(a[m])
--     return nanavg(p), nanavg(r), nanavg(f), None
-- def clf_curve(y, s):
--     o = np.argsort(s, kind="mergesort")[::-1]; s, y = s[o], y[o]
--     idx = np.r_[np.where(np.diff(s))[0], y.size - 1]
--     tps = np.cumsum(y)[idx]; return 1 + idx - tps, tps, s[idx]
-- def roc_curve(y, s, drop=True):
--     fps, tps, th = clf_curve(y, s)
--     if drop and len(fps) > 2:
--         k = np.where(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])[0]
--         fps, tps, th = fps[k], tps[k], th[k]
--     fps, tps, th = np.r_[0, fps], np.r_[0, tps], np.r_[np.inf, th]
--     return fps / fps[-1], tps / tps[-1], th
-- def pr_curve(y, s, drop=False):
--     fps, tps, th = clf_curve(y, s)
--     if drop and len(fps) > 2:
--         k = np.where(np.r_[True, np.logical_or(np.diff(tps[:-1]), np.diff(tps[1:])), True])[0]
--         fps, tps, th = fps[k], tps[k], th[k]
--     ps = tps + fps; p = np.zeros_like(tps, dtype=float); np.divide(tps, ps, out=p, where=ps != 0)
--     r = np.ones_like(tps, dtype=float) if tps[-1] == 0 else tps / tps[-1]
--     return np.r_[p[::-1], 1], np.r_[r[::-1], 0], th[::-1]
-- def roc_auc(y, s): f, t, _ = roc_curve(y, s); return np.trapz(t, f)
-- def ap(y, s): p, r, _ = pr_curve(y, s); return max(0.0, -np.sum(np.diff(r) * p[:-1]))
-- def kappa(yt, yp, weights=None):
--     labels = np.unique(np.r_[yt, yp]); K = len(labels)
--     cm = np.array([[np.sum((np.asarray(yt) == a) & (np.asarray(yp) == b)) for b in labels] for a in labels])
--     s0, s1 = cm.sum(0), cm.sum(1); exp = np.outer(s0, s1) / s0.sum()
--     if weights is None: w = np.ones((K, K)); w.flat[::K + 1] = 0
--     else:
--         w = np.zeros((K, K)) + np.arange(K); w = np.abs(w - w.T) if weights == "linear" else (w - w.T) ** 2
--     return 1 - np.sum(w * cm) / np.sum(w * exp)
-- def mcc(yt, yp):
--     labels = np.unique(np.r_[yt, yp])
--     C = np.array([[np.sum((np.asarray(yt) == a) & (np.asarray(yp) == b)) for b in labels] for a in labels], float)
--     t, p, n, c = C.sum(1), C.sum(0), C.sum(), np.trace(C)
--     cyp, cyt = n * n - p @ p, n * n - t @ t
--     return 0.0 if cyp * cyt == 0 else (c * n - t @ p) / np.sqrt(cyt * cyp)
-- def r2(yt, yp):  # raw values, force_finite
--     num = ((yt - yp) ** 2).sum(0); den = ((yt - yt.mean(0)) ** 2).sum(0)
--     out = np.ones(num.shape); v = (num != 0) & (den != 0); out[v] = 1 - num[v] / den[v]; out[(num != 0) & (den == 0)] = 0; return out, den
-- def ev(yt, yp):
--     d = yt - yp; num = ((d - d.mean(0)) ** 2).mean(0); den = ((yt - yt.mean(0)) ** 2).mean(0)
--     out = np.ones(num.shape); v = (num != 0) & (den != 0); out[v] = 1 - num[v] / den[v]; out[(num != 0) & (den == 0)] = 0; return out, den

local pt = require "partrain"
local support = require "spec.support"
local m = pt.metrics
local close = support.assert_close_with(1e-12)
local nan = 0 / 0

local function i64(t) return pt.tensor(t, {dtype = "int64"}) end

-- the message of fn(...)'s error, without its position
local function err_of(fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok)
  return (tostring(e):gsub("^[^:]*:%d+: ", ""))
end

local function is_nan(v) return v ~= v end

-- 4 classes; class 4 occurs in the target only (never predicted), class 5 nowhere
local pred = i64({1, 2, 3, 3, 2, 1, 1, 3, 2, 2, 1, 3})
local tgt = i64({1, 2, 2, 3, 3, 1, 2, 3, 1, 2, 4, 4})
-- the same predictions as scores {N,C}: argmax of a one-hot plus noise below 1
local function scores_of(p, C)
  local s = pt.rand(p:numel(), C, {dtype = "float64"}) * 0.5
  for i, c in ipairs(p:tolist()) do s[i][c] = 1 end
  return s
end

describe("pt.metrics precision, recall, F-beta", function()
  -- ref: prfs(tgt, pred, [1,2,3,4], average)
  it("averages micro, macro, weighted and none as sklearn", function()
    local p, r, f, s = m.precision_recall_fscore_support(pred, tgt, {average = "micro"})
    close({p, r, f}, {0.5, 0.5, 0.5})
    assert.is_nil(s)
    p, r, f, s = m.precision_recall_fscore_support(pred, tgt) -- macro by default
    close({p, r, f}, {0.375, 0.45833333333333326, 0.4107142857142857})
    assert.is_nil(s)
    p, r, f = m.precision_recall_fscore_support(pred, tgt, {average = "weighted"})
    close({p, r, f}, {0.4166666666666667, 0.5, 0.4523809523809524})
    p, r, f, s = m.precision_recall_fscore_support(pred, tgt, {average = "none"})
    assert.are.equal("float64", p:dtype())
    close(p, {0.5, 0.5, 0.5, 0})
    close(r, {0.6666666666666666, 0.5, 0.6666666666666666, 0})
    close(f, {0.5714285714285714, 0.5, 0.5714285714285714, 0})
    assert.are.equal("int64", s:dtype())
    assert.are.same({3, 4, 3, 2}, s:tolist())
    close(m.precision(pred, tgt), 0.375)
    close(m.recall(pred, tgt, {average = "weighted"}), 0.5)
    close(m.f1_score(pred, tgt, {average = "micro"}), 0.5)
    close(m.f1_score(pred, tgt, {average = "none"}), {0.5714285714285714, 0.5, 0.5714285714285714, 0})
    assert.are.equal(m.precision, m.precision_score)
    assert.are.equal(m.recall, m.recall_score)
  end)

  it("takes scores {N,C} (argmax), float class indices and Lua lists alike", function()
    local s = scores_of(pred, 4)
    close(m.f1_score(s, tgt), 0.4107142857142857)
    close(m.precision(pred:double(), tgt:float(), {average = "weighted"}), 0.4166666666666667)
    close(m.recall(pred:tolist(), tgt:tolist()), 0.45833333333333326)
  end)

  it("leaves classes that occur nowhere out of averages; num_classes pads per-class results", function()
    -- class 5 is in neither tensor: sklearn's default labels ignore it
    close(m.f1_score(pred, tgt, {num_classes = 5}), 0.4107142857142857)
    local p, r, f, s = m.precision_recall_fscore_support(pred, tgt, {average = "none", num_classes = 5})
    close(p, {0.5, 0.5, 0.5, 0, 0})
    close(r, {0.6666666666666666, 0.5, 0.6666666666666666, 0, 0})
    close(f, {0.5714285714285714, 0.5, 0.5714285714285714, 0, 0})
    assert.are.same({3, 4, 3, 2, 0}, s:tolist())
    p = m.precision(pred, tgt, {average = "none", num_classes = 5, zero_division = 1})
    close(p, {0.5, 0.5, 0.5, 1, 1})
  end)

  it("follows sklearn's zero_division (class 4 is never predicted)", function()
    -- ref: prfs(..., "macro", zd=1.0) and zd=np.nan
    close({m.precision_recall_fscore_support(pred, tgt, {zero_division = 1})}, {0.625, 0.45833333333333326, 0.4107142857142857})
    close({m.precision_recall_fscore_support(pred, tgt, {zero_division = "warn"})}, {0.375, 0.45833333333333326, 0.4107142857142857})
    close({m.precision_recall_fscore_support(pred, tgt, {zero_division = nan})}, {0.5, 0.45833333333333326, 0.4107142857142857})
    local p = m.precision(pred, tgt, {average = "none", zero_division = nan}):tolist()
    close({p[1], p[2], p[3]}, {0.5, 0.5, 0.5})
    assert.is_true(is_nan(p[4]))
    -- F is zero_division only where tp + fp + fn = 0 (sklearn >= 1.3): here tp = 0 with fn = 2
    close(m.f1_score(pred, tgt, {average = "none", zero_division = 1}), {0.5714285714285714, 0.5, 0.5714285714285714, 0})
  end)

  it("weights F by beta", function()
    -- ref: prfs(..., "macro", beta=2)[2]; prfs(..., "weighted", beta=0.5)[2]
    close(m.fbeta_score(pred, tgt, 2), 0.4375)
    close(m.fbeta_score(pred, tgt, 0.5, {average = "weighted"}), 0.4298245614035088)
    -- beta = 0 is precision, beta = inf recall
    close(m.fbeta_score(pred, tgt, 0, {average = "none"}), m.precision(pred, tgt, {average = "none"}))
    close(m.fbeta_score(pred, tgt, math.huge, {average = "none"}), m.recall(pred, tgt, {average = "none"}))
    local _, _, f = m.precision_recall_fscore_support(pred, tgt, {beta = 2})
    close(f, 0.4375)
  end)

  it("restricts to labels, in their order", function()
    -- ref: prfs(tgt, pred, [3,1], "none" / "micro"); prfs(tgt, pred, [1,3], "macro")
    local p, r, f, s = m.precision_recall_fscore_support(pred, tgt, {average = "none", labels = {3, 1}})
    close(p, {0.5, 0.5})
    close(r, {0.6666666666666666, 0.6666666666666666})
    close(f, {0.5714285714285714, 0.5714285714285714})
    assert.are.same({3, 3}, s:tolist())
    close({m.precision_recall_fscore_support(pred, tgt, {average = "micro", labels = {3, 1}})}, {0.5, 0.6666666666666666, 0.5714285714285714})
    close({m.precision_recall_fscore_support(pred, tgt, {labels = {1, 3}})}, {0.5, 0.6666666666666666, 0.5714285714285714})
    -- a label that occurs nowhere is listed with zero counts (sklearn: zero_division)
    local p5 = m.precision(pred, tgt, {average = "none", labels = {6, 1}, zero_division = 1})
    close(p5, {1, 0.5})
    close(m.recall(pred, tgt, {labels = {1, 6}}), 0.3333333333333333)
  end)

  it("scores the positive class with average = binary", function()
    -- ref: prfs(tb, pb, [2], "binary"), prfs(tb, pb, [1], "binary")
    local pb, tb = i64({2, 2, 1, 2, 1, 1, 2, 2}), i64({2, 1, 1, 2, 2, 1, 1, 2})
    close({m.precision_recall_fscore_support(pb, tb, {average = "binary"})}, {0.6, 0.75, 0.6666666666666666})
    close({m.precision_recall_fscore_support(pb, tb, {average = "binary", pos_label = 1})}, {0.6666666666666666, 0.5, 0.5714285714285714})
    close(m.f1_score(scores_of(pb, 2), tb, {average = "binary"}), 0.6666666666666666)
    -- no positive anywhere: zero_division (sklearn warns)
    assert.are.equal(0, m.f1_score(i64({1, 1}), i64({1, 1}), {average = "binary"}))
    assert.are.equal(1, m.precision(i64({1, 1}), i64({1, 1}), {average = "binary", zero_division = 1}))
  end)

  it("handles one class only", function()
    local ones = i64({1, 1, 1})
    assert.are.equal(1, m.f1_score(ones, ones))
    assert.are.equal(1, m.precision(ones, ones, {average = "micro"}))
    -- all predicted 2, all true 1: every score is 0, nothing to divide by for precision of class 1
    local twos = i64({2, 2, 2})
    close({m.precision_recall_fscore_support(twos, ones)}, {0, 0, 0})
    -- ref: prfs([1,1,1], [2,2,2], [1,2], "macro", zd=1.0): class 1 never predicted, class 2 never true
    close({m.precision_recall_fscore_support(twos, ones, {zero_division = 1})}, {0.5, 0.5, 0})
  end)

  it("names bad arguments", function()
    assert.are.equal('precision: average must be one of "binary", "macro", "micro", "none", "weighted", got "samples"',
                     err_of(m.precision, pred, tgt, {average = "samples"}))
    assert.are.equal("precision: 12 predictions but 2 target labels", err_of(m.precision, pred, i64({1, 2})))
    assert.are.equal("recall: 11 score rows but 12 target labels", err_of(m.recall, pt.zeros(11, 4), tgt))
    assert.are.equal("f1_score: target holds 4, out of range 1..3", err_of(m.f1_score, pt.zeros(12, 3), tgt))
    assert.are.equal("f1_score: scores have 4 classes but num_classes is 5", err_of(m.f1_score, pt.zeros(12, 4), tgt, {num_classes = 5}))
    assert.are.equal("precision: target must hold integer class indices, got 1.5", err_of(m.precision, pred, tgt:double() + 0.5))
    assert.are.equal("precision: target holds 0; class indices start at 1", err_of(m.precision, pred, tgt - 1))
    assert.are.equal("precision: pred holds -1; class indices start at 1", err_of(m.precision, pred - 2, tgt))
    assert.are.equal("precision: target holds 4, out of range 1..3", err_of(m.precision, pred, tgt, {num_classes = 3}))
    assert.are.equal("precision: target must hold class indices (integers from 1), got a bool tensor",
                     err_of(m.precision, pred, tgt:gt(1)))
    assert.are.equal("precision: target must be class indices {N}, got shape {12,1}", err_of(m.precision, pred, tgt:view(12, 1)))
    assert.are.equal("precision: pred must be scores {N,C} or class indices {N}, got shape {12,1,1}",
                     err_of(m.precision, pred:view(12, 1, 1), tgt))
    assert.are.equal("precision: pred must be a tensor, got a string", err_of(m.precision, "x", tgt))
    assert.are.equal("precision: num_classes must be a positive integer, got 0", err_of(m.precision, pred, tgt, {num_classes = 0}))
    assert.are.equal('precision: average = "binary" needs classes 1 and 2 only, got class 3; use "micro", "macro", "weighted" or "none"',
                     err_of(m.precision, pred, tgt, {average = "binary"}))
    assert.are.equal('precision: average = "binary" needs classes 1 and 2 only, got class 3; use "micro", "macro", "weighted" or "none"',
                     err_of(m.precision, pt.zeros(2, 3), i64({1, 2}), {average = "binary"}))
    assert.are.equal('precision: pos_label must be 1 or 2 for average = "binary", got 3',
                     err_of(m.precision, i64({1, 2}), i64({1, 2}), {average = "binary", pos_label = 3}))
    assert.are.equal('precision: pos_label is only used with average = "binary"', err_of(m.precision, pred, tgt, {pos_label = 2}))
    assert.are.equal('precision: zero_division must be "warn", 0, 1 or nan, got 2', err_of(m.precision, pred, tgt, {zero_division = 2}))
    assert.are.equal("precision: unknown option 'bogus' (expected average, zero_division, labels, num_classes, pos_label)",
                     err_of(m.precision, pred, tgt, {bogus = 1}))
    assert.are.equal("precision: labels holds 5, out of range 1..4", err_of(m.precision, scores_of(pred, 4), tgt, {labels = {5}}))
    assert.are.equal("precision: labels holds 5, out of range 1..4", err_of(m.precision, pred, tgt, {labels = {5}, num_classes = 4}))
    assert.are.equal("precision: labels holds 0, out of range 1..4", err_of(m.precision, pred, tgt, {labels = {0}}))
    assert.are.equal("precision: labels holds 1 twice", err_of(m.precision, pred, tgt, {labels = {1, 1}}))
    assert.are.equal("precision: labels must be a non-empty list of class indices", err_of(m.precision, pred, tgt, {labels = {}}))
    assert.are.equal("fbeta_score: beta must be a number >= 0, got -1", err_of(m.fbeta_score, pred, tgt, -1))
    assert.are.equal("fbeta_score: beta must be a number >= 0, got nil", err_of(m.fbeta_score, pred, tgt))
    assert.are.equal("precision_recall_fscore_support: beta must be a number >= 0, got x",
                     err_of(m.precision_recall_fscore_support, pred, tgt, {beta = "x"}))
    -- raised at the caller's line
    local ok, e = pcall(function()
      local v = m.precision(pred, tgt, {average = "samples"})
      return v
    end)
    assert.is_false(ok)
    assert.matches("^spec/metrics_more_spec%.lua:%d+: precision: average must be", e)
  end)
end)

describe("pt.metrics.classification_report", function()
  it("formats sklearn's report and returns its output_dict", function()
    -- sklearn's layout: width = max(len("weighted avg"), longest name, digits), " {:>9.2f}" columns
    local text, d = m.classification_report(pred, tgt)
    assert.are.equal(table.concat({
      "              precision    recall  f1-score   support",
      "",
      "           1       0.50      0.67      0.57         3",
      "           2       0.50      0.50      0.50         4",
      "           3       0.50      0.67      0.57         3",
      "           4       0.00      0.00      0.00         2",
      "",
      "    accuracy                           0.50        12",
      "   macro avg       0.38      0.46      0.41        12",
      "weighted avg       0.42      0.50      0.45        12",
      ""}, "\n"), text)
    close({d["2"].precision, d["2"].recall, d["2"]["f1-score"]}, {0.5, 0.5, 0.5})
    assert.are.equal(4, d["2"].support)
    close(d.accuracy, 0.5)
    close({d["macro avg"].precision, d["macro avg"].recall, d["macro avg"]["f1-score"]}, {0.375, 0.45833333333333326, 0.4107142857142857})
    close({d["weighted avg"].precision, d["weighted avg"].recall, d["weighted avg"]["f1-score"]}, {0.4166666666666667, 0.5, 0.4523809523809524})
    assert.are.equal(12, d["weighted avg"].support)
  end)

  it("takes digits, labels, target_names and zero_division", function()
    local text = m.classification_report(pred, tgt, {digits = 3, num_classes = 5})
    assert.matches("\n           4      0%.000     0%.000     0%.000         2\n", text)
    assert.matches("\n   macro avg      0%.375     0%.458     0%.411        12\n", text)
    -- a subset of the classes: micro avg instead of accuracy; the name column widens
    local sub, d = m.classification_report(pred, tgt, {labels = {3, 1}, target_names = {"cat", "a much longer name"}})
    assert.are.equal(table.concat({
      "                    precision    recall  f1-score   support",
      "",
      "               cat       0.50      0.67      0.57         3",
      "a much longer name       0.50      0.67      0.57         3",
      "",
      "         micro avg       0.50      0.67      0.57         6",
      "         macro avg       0.50      0.67      0.57         6",
      "      weighted avg       0.50      0.67      0.57         6",
      ""}, "\n"), sub)
    assert.is_nil(d.accuracy)
    close(d["micro avg"].recall, 0.6666666666666666)
    assert.are.equal(3, d.cat.support)
    -- nan (zero_division = nan) is written as Python writes it
    local t = m.classification_report(pred, tgt, {zero_division = nan})
    assert.matches("\n           4        nan      0%.00      0%.00         2\n", t)
    assert.matches("\n   macro avg       0%.50      0%.46      0%.41        12\n", t)
  end)

  it("reports one class", function()
    local ones = i64({1, 1, 1})
    local text, d = m.classification_report(ones, ones)
    assert.are.equal(table.concat({
      "              precision    recall  f1-score   support",
      "",
      "           1       1.00      1.00      1.00         3",
      "",
      "    accuracy                           1.00         3",
      "   macro avg       1.00      1.00      1.00         3",
      "weighted avg       1.00      1.00      1.00         3",
      ""}, "\n"), text)
    assert.are.equal(1, d.accuracy)
  end)

  it("names bad arguments", function()
    assert.are.equal("classification_report: target_names must list 4 names (one per reported class), got 2",
                     err_of(m.classification_report, pred, tgt, {target_names = {"a", "b"}}))
    assert.are.equal("classification_report: digits must be a non-negative integer, got -1",
                     err_of(m.classification_report, pred, tgt, {digits = -1}))
    assert.are.equal("classification_report: no samples", err_of(m.classification_report, i64({}), i64({}), {num_classes = 2}))
  end)
end)

describe("pt.metrics agreement scores", function()
  it("balanced_accuracy is the mean recall over the classes in target", function()
    -- ref: rec = prfs(tgt, pred, L, "none")[1]; rec.mean(); (rec.mean() - 0.25) / 0.75
    close(m.balanced_accuracy(pred, tgt), 0.45833333333333326)
    close(m.balanced_accuracy(pred, tgt, {adjusted = true}), 0.2777777777777777)
    -- a predicted class absent from target is left out (sklearn drops its nan recall)
    close(m.balanced_accuracy(i64({1, 3, 2}), i64({1, 1, 2})), 0.75)
    assert.are.equal(1, m.balanced_accuracy(i64({2, 2}), i64({2, 2})))
  end)

  it("cohen_kappa, with linear and quadratic weights over the classes that occur", function()
    -- ref: kappa(tgt, pred[, "linear" | "quadratic"]); kappa(tb, pb)
    close(m.cohen_kappa(pred, tgt), 0.3076923076923076)
    close(m.cohen_kappa(pred, tgt, {weights = "linear"}), 0.36842105263157887)
    close(m.cohen_kappa(pred, tgt, {weights = "quadratic"}), 0.36363636363636365)
    close(m.cohen_kappa(i64({2, 2, 1, 2, 1, 1, 2, 2}), i64({2, 1, 1, 2, 2, 1, 1, 2})), 0.25)
    -- symmetric in its arguments
    close(m.cohen_kappa(tgt, pred, {weights = "linear"}), 0.36842105263157887)
    -- weights use positions among the classes that occur: classes {1,5} weigh like {1,2}
    close(m.cohen_kappa(i64({1, 5, 5, 1}), i64({1, 5, 1, 1}), {weights = "linear"}),
          m.cohen_kappa(i64({1, 2, 2, 1}), i64({1, 2, 1, 1}), {weights = "linear"}))
    -- one class everywhere: 0/0, nan as sklearn
    assert.is_true(is_nan(m.cohen_kappa(i64({1, 1}), i64({1, 1}))))
    assert.are.equal('cohen_kappa: weights must be nil, "linear" or "quadratic", got cubic',
                     err_of(m.cohen_kappa, pred, tgt, {weights = "cubic"}))
  end)

  it("matthews_corrcoef, 0 when a marginal is constant", function()
    -- ref: mcc(tgt, pred); mcc(tb, pb)
    close(m.matthews_corrcoef(pred, tgt), 0.31722063428725766)
    close(m.matthews_corrcoef(i64({2, 2, 1, 2, 1, 1, 2, 2}), i64({2, 1, 1, 2, 2, 1, 1, 2})), 0.2581988897471611)
    close(m.matthews_corrcoef(scores_of(pred, 4), tgt), 0.31722063428725766)
    assert.are.equal(0, m.matthews_corrcoef(i64({1, 1, 1}), i64({1, 2, 1})))
    assert.are.equal(0, m.matthews_corrcoef(i64({1, 1}), i64({1, 1})))
    assert.are.equal(1, m.matthews_corrcoef(i64({1, 2, 3}), i64({1, 2, 3})))
    assert.are.equal("matthews_corrcoef: 2 predictions but 3 target labels", err_of(m.matthews_corrcoef, i64({1, 2}), i64({1, 2, 3})))
  end)
end)

describe("pt.metrics.topk_accuracy and tensor accuracy / confusion_matrix", function()
  local S = pt.tensor({{0.1, 0.5, 0.5, 0.2}, {0.3, 0.3, 0.3, 0.3}, {0.9, 0.05, 0.03, 0.02}, {0.2, 0.2, 0.1, 0.5}})
  local tk = i64({3, 2, 4, 2})

  it("counts targets among the k highest scores; ties rank the lower class first", function()
    -- ref: rank(r, c) = #(r > r[c]) + #(r == r[c] and index < c); mean(rank < k) for k = 1..4
    assert.are.equal(0, m.topk_accuracy(S, tk, 1))
    assert.are.equal(0.5, m.topk_accuracy(S, tk, 2))
    assert.are.equal(0.75, m.topk_accuracy(S, tk, 3))
    assert.are.equal(1, m.topk_accuracy(S, tk, 4))
    assert.are.equal(0, m.topk_accuracy(S, tk)) -- k = 1 by default
    -- k = 1 is argmax accuracy (first maximum wins), ties included
    local t2 = i64({2, 1, 1, 4})
    assert.are.equal(1, m.topk_accuracy(S, t2, 1))
    assert.are.equal(1, m.accuracy(S, t2))
    assert.are.equal(m.topk_accuracy(S:double(), tk, 2), m.topk_accuracy(S, tk:double(), 2))
  end)

  it("names bad arguments", function()
    assert.are.equal("topk_accuracy: k = 5 is larger than the number of classes (4)", err_of(m.topk_accuracy, S, tk, 5))
    assert.are.equal("topk_accuracy: k must be a positive integer, got 0", err_of(m.topk_accuracy, S, tk, 0))
    assert.are.equal("topk_accuracy: expected scores {N,C}, got shape {4}", err_of(m.topk_accuracy, tk, tk, 1))
    assert.are.equal("topk_accuracy: scores {4,4} need target {4}, got shape {3}", err_of(m.topk_accuracy, S, i64({1, 2, 3}), 1))
    assert.are.equal("topk_accuracy: target holds 5, out of range 1..4", err_of(m.topk_accuracy, S, i64({1, 2, 3, 5}), 1))
    assert.are.equal("topk_accuracy: scores must be numbers, got a bool tensor", err_of(m.topk_accuracy, S:gt(0.2), tk, 1))
    assert.are.equal("topk_accuracy: scores hold NaN", err_of(m.topk_accuracy, S * nan, tk, 1))
  end)

  it("accuracy and confusion_matrix take tensors as well as a model and data", function()
    close(m.accuracy(pred, tgt), 0.5)
    close(m.accuracy(scores_of(pred, 4), tgt), 0.5)
    local cm = m.confusion_matrix(pred, tgt)
    assert.are.equal("int64", cm:dtype())
    assert.are.same({{2, 1, 0, 0}, {1, 2, 1, 0}, {0, 1, 2, 0}, {1, 0, 1, 0}}, cm:tolist())
    assert.are.same({5, 5}, m.confusion_matrix(pred, tgt, 5):size())
    assert.are.same(cm:tolist(), m.confusion_matrix(scores_of(pred, 4), tgt, {num_classes = 4}):tolist())
    assert.are.equal("confusion_matrix: target holds 4, out of range 1..3", err_of(m.confusion_matrix, pred, tgt, 3))
    assert.are.equal("accuracy: 12 score rows but 3 target labels", err_of(m.accuracy, pt.zeros(12, 2), i64({1, 2, 1})))
    assert.is_true(is_nan(m.accuracy(i64({}), i64({}))))
  end)
end)

-- binary scores with ties: ref s, y (positives y = 1 are target class 2)
local s = pt.tensor({0.9, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.5, 0.4, 0.3, 0.3, 0.1}, {dtype = "float64"})
local y01 = {1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0}
local yb = i64(y01) + 1

describe("pt.metrics curves", function()
  it("roc_curve: one point per distinct score, thresholds from inf", function()
    -- ref: roc_curve(y, s)
    local fpr, tpr, th = m.roc_curve(s, yb)
    close(fpr, {0, 0, 0.14285714285714285, 0.14285714285714285, 0.42857142857142855, 0.5714285714285714, 0.5714285714285714, 0.8571428571428571, 1})
    close(tpr, {0, 0.2, 0.4, 0.6, 0.8, 0.8, 1, 1, 1})
    local t = th:tolist()
    assert.are.equal(math.huge, t[1])
    close({table.unpack(t, 2)}, {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.1})
    -- a bool target and pos_label = 1 (with 1 - y as classes)
    local f2 = m.roc_curve(s, yb:eq(2))
    assert.are.same(fpr:tolist(), f2:tolist())
    local f3, t3 = m.roc_curve(s, 3 - yb, {pos_label = 1})
    assert.are.same(fpr:tolist(), f3:tolist())
    assert.are.same(tpr:tolist(), t3:tolist())
  end)

  it("roc_curve drops collinear points unless drop_intermediate = false", function()
    -- ref: roc_curve(y, s) and roc_curve(y, s, False) for s = .9 .. .3, y = 1,1,1,0,1,0,0
    local s2 = pt.tensor({0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3})
    local y2 = i64({2, 2, 2, 1, 2, 1, 1})
    local fpr, tpr, th = m.roc_curve(s2, y2)
    close(fpr, {0, 0, 0, 0.3333333333333333, 0.3333333333333333, 1})
    close(tpr, {0, 0.25, 0.75, 0.75, 1, 1})
    close({table.unpack(th:tolist(), 2)}, {0.9, 0.7, 0.6, 0.5, 0.3}, 1e-7)
    fpr, tpr, th = m.roc_curve(s2, y2, {drop_intermediate = false})
    close(fpr, {0, 0, 0, 0, 0.3333333333333333, 0.3333333333333333, 0.6666666666666666, 1})
    close(tpr, {0, 0.25, 0.5, 0.75, 0.75, 1, 1, 1})
    assert.are.equal(8, th:numel())
    -- no negatives: fpr is nan (sklearn warns)
    local f = m.roc_curve(pt.tensor({0.2, 0.4}), i64({2, 2}))
    assert.is_true(is_nan(f:tolist()[2]))
  end)

  it("precision_recall_curve: thresholds increasing, ends at precision 1, recall 0", function()
    -- ref: pr_curve(y, s), pr_curve(y, s, True)
    local p, r, th = m.precision_recall_curve(s, yb)
    close(p, {0.4166666666666667, 0.45454545454545453, 0.5555555555555556, 0.5, 0.5714285714285714, 0.75, 0.6666666666666666, 1, 1})
    close(r, {1, 1, 1, 0.8, 0.8, 0.6, 0.4, 0.2, 0})
    close(th, {0.1, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9})
    p, r, th = m.precision_recall_curve(s, yb, {drop_intermediate = true})
    close(p, {0.4166666666666667, 0.5555555555555556, 0.5, 0.5714285714285714, 0.75, 0.6666666666666666, 1, 1})
    close(r, {1, 1, 0.8, 0.8, 0.6, 0.4, 0.2, 0})
    close(th, {0.1, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9})
    -- no positives: recall 1 everywhere (sklearn warns)
    p, r = m.precision_recall_curve(pt.tensor({0.1, 0.2, 0.3, 0.4}), i64({1, 1, 1, 1}))
    close(p, {0, 0, 0, 0, 1})
    close(r, {1, 1, 1, 1, 0})
  end)

  it("auc integrates by trapezoids in either direction", function()
    close(m.auc(pt.tensor({0, 0.5, 1}), pt.tensor({0, 1, 1})), 0.75)
    close(m.auc(pt.tensor({1, 0.5, 0}), pt.tensor({1, 1, 0})), 0.75)
    assert.are.equal("auc: x is neither increasing nor decreasing", err_of(m.auc, pt.tensor({0, 1, 0.5}), pt.tensor({0, 1, 1})))
    assert.are.equal("auc: at least 2 points are needed to compute the area under a curve, got 1",
                     err_of(m.auc, pt.tensor({0}), pt.tensor({1})))
    assert.are.equal("auc: x and y must be 1-D of one length, got shapes {3} and {2}",
                     err_of(m.auc, pt.tensor({0, 1, 2}), pt.tensor({0, 1})))
  end)

  it("names bad arguments", function()
    assert.are.equal("roc_curve: expected scores {N} for the positive class, got shape {12,1}", err_of(m.roc_curve, s:view(12, 1), yb))
    assert.are.equal("roc_curve: 12 scores need target {12}, got shape {3}", err_of(m.roc_curve, s, i64({1, 2, 1})))
    assert.are.equal("roc_curve: target holds 3, out of range 1..2", err_of(m.roc_curve, s, yb + 1))
    assert.are.equal("roc_curve: target holds 0, out of range 1..2", err_of(m.roc_curve, s, yb - 1))
    assert.are.equal("roc_curve: pos_label must be 1 or 2, got 0", err_of(m.roc_curve, s, yb, {pos_label = 0}))
    assert.are.equal("roc_curve: pos_label does not apply to a bool target", err_of(m.roc_curve, s, yb:eq(2), {pos_label = 2}))
    assert.are.equal("precision_recall_curve: scores hold NaN", err_of(m.precision_recall_curve, pt.tensor({0.1, nan}), i64({1, 2})))
    assert.are.equal("precision_recall_curve: no samples", err_of(m.precision_recall_curve, pt.tensor({}), i64({})))
    assert.are.equal("roc_curve: unknown option 'drop' (expected pos_label, drop_intermediate)", err_of(m.roc_curve, s, yb, {drop = true}))
  end)
end)

describe("pt.metrics.roc_auc and average_precision", function()
  it("binary: tied scores count one half, as sklearn", function()
    -- ref: roc_auc(y, s) = 0.7857142857142858 (Mann-Whitney with ties: 0.7857142857142857); ap(y, s)
    close(m.roc_auc(s, yb), 0.7857142857142858)
    close(m.average_precision(s, yb), 0.7087301587301588)
    close(m.roc_auc(s:float(), yb:eq(2)), 0.7857142857142858, 1e-7)
    -- ref: ap(1 - y, s), roc_auc(1 - y, s)
    close(m.average_precision(s, yb, {pos_label = 1}), 0.48067408781694493)
    close(m.roc_auc(s, yb, {pos_label = 1}), 0.21428571428571427)
    assert.are.equal(m.roc_auc, m.roc_auc_score)
    assert.are.equal(m.average_precision, m.average_precision_score)
    -- a constant score: every pair tied
    assert.are.equal(0.5, m.roc_auc(pt.ones(4), i64({1, 2, 1, 2})))
    assert.are.equal(0.5, m.average_precision(pt.ones(4), i64({1, 2, 1, 2})))
    -- no positives: AP 0 (ref: ap(zeros(4), [.1,.2,.3,.4])); ROC AUC undefined
    assert.are.equal(0, m.average_precision(pt.tensor({0.1, 0.2, 0.3, 0.4}), i64({1, 1, 1, 1})))
    assert.are.equal("roc_auc: only one class present in target; ROC AUC is not defined then",
                     err_of(m.roc_auc, pt.tensor({0.1, 0.2}), i64({2, 2})))
    -- many ties: the Mann-Whitney count (a tie counts 1/2), computed here by broadcasting
    pt.manual_seed(7)
    local sc = pt.randint(0, 6, {300}):double()
    local yy = pt.randint(1, 3, {300})
    local pos, neg = sc:masked_select(yy:eq(2)):view(-1, 1), sc:masked_select(yy:eq(1)):view(1, -1)
    local mw = (pos:gt(neg):double():sum() + 0.5 * pos:eq(neg):double():sum()):item() / (pos:numel() * neg:numel())
    close(m.roc_auc(sc, yy), mw)
    -- perfect ranking
    assert.are.equal(1, m.roc_auc(pt.tensor({0.1, 0.2, 0.3}), i64({1, 2, 2})))
    assert.are.equal(1, m.average_precision(pt.tensor({0.1, 0.2, 0.3}), i64({1, 2, 2})))
  end)

  -- ref P (rows sum to 1) and t; per class roc_auc((t == c), P[:, c-1]), ap(...), macro, weighted by support, micro on the raveled one-hot
  local P = pt.tensor({{0.7, 0.2, 0.1}, {0.2, 0.5, 0.3}, {0.1, 0.1, 0.8}, {0.4, 0.4, 0.2}, {0.3, 0.3, 0.4},
                       {0.5, 0.25, 0.25}, {0.1, 0.6, 0.3}, {0.2, 0.2, 0.6}}, {dtype = "float64"})
  local t = i64({1, 2, 3, 2, 3, 1, 1, 2})

  it("multiclass one-vs-rest", function()
    close(m.roc_auc(P, t, {average = "none"}), {0.7, 0.6333333333333333, 0.9166666666666667})
    close(m.roc_auc(P, t), 0.75)
    close(m.roc_auc(P, t, {average = "weighted"}), 0.7291666666666666)
    close(m.roc_auc(P, t, {average = "micro"}), 0.73046875)
    close(m.average_precision(P, t, {average = "none"}), {0.7916666666666666, 0.5317460317460317, 0.8333333333333333})
    close(m.average_precision(P, t), 0.7189153439153438)
    close(m.average_precision(P, t, {average = "weighted"}), 0.7046130952380952)
    close(m.average_precision(P, t, {average = "micro"}), 0.66875)
    close(m.roc_auc(P:float(), t:double()), 0.75, 1e-6)
  end)

  it("average_precision gives a class without positives 0", function()
    -- ref: t = [1,2,1,2,2,1,1,2] (class 3 never true): aps, macro, weighted by support, micro
    local t2 = i64({1, 2, 1, 2, 2, 1, 1, 2})
    close(m.average_precision(P, t2, {average = "none"}), {0.75, 0.6220238095238095, 0})
    close(m.average_precision(P, t2), 0.4573412698412698)
    close(m.average_precision(P, t2, {average = "weighted"}), 0.6860119047619048)
    close(m.average_precision(P, t2, {average = "micro"}), 0.41196581196581195)
  end)

  it("names bad arguments", function()
    assert.are.equal("roc_auc: multiclass scores must be probabilities summing to 1 over classes (as sklearn's one-vs-rest), row 1 sums to 2",
                     err_of(m.roc_auc, P * 2, t))
    assert.are.equal("roc_auc: class 3 does not occur in target; one-vs-rest ROC AUC needs every class of the scores",
                     err_of(m.roc_auc, P, i64({1, 2, 1, 2, 1, 2, 1, 2})))
    assert.are.equal('roc_auc: average must be one of "macro", "micro", "none", "weighted", got "binary"',
                     err_of(m.roc_auc, P, t, {average = "binary"}))
    assert.are.equal("roc_auc: pos_label applies to binary scores {N} only", err_of(m.roc_auc, P, t, {pos_label = 1}))
    assert.are.equal("average_precision: scores {8,3} need target {8}, got shape {2}", err_of(m.average_precision, P, i64({1, 2})))
    assert.are.equal("average_precision: target holds 4, out of range 1..3", err_of(m.average_precision, P, t + 1))
    assert.are.equal("average_precision: scores {N,C} need at least 2 classes, got 1", err_of(m.average_precision, pt.ones(2, 1), i64({1, 1})))
    assert.are.equal("average_precision: scores hold NaN", err_of(m.average_precision, P * nan, t))
  end)
end)

describe("pt.metrics regression", function()
  -- ref: yt = [3, -0.5, 2, 7, 4.25], yp = [2.5, 0, 2, 8, 3]; YT, YP {4,3} below
  local yt, yp = pt.tensor({3, -0.5, 2, 7, 4.25}), pt.tensor({2.5, 0.0, 2, 8, 3.0})
  local YT = pt.tensor({{0.5, 1, 2}, {-1, 1, 2}, {7, 1, 2}, {2.5, 1, 3}}, {dtype = "float64"})
  local YP = pt.tensor({{0, 2, 2}, {-1, 2, 2}, {8, 1, 2}, {3, 1, 2}}, {dtype = "float64"})

  it("mean absolute and squared errors, RMSE", function()
    close(m.mean_absolute_error(yp, yt), 0.65)
    close(m.mean_squared_error(yp, yt), 0.6125)
    close(m.mean_squared_error(yp, yt, {squared = false}), 0.7826237921249264)
    close(m.root_mean_squared_error(yp, yt), 0.7826237921249264)
    close(m.mean_absolute_error(YP, YT, {multioutput = "raw_values"}), {0.5, 0.5, 0.25})
    close(m.mean_absolute_error(YP, YT), 0.4166666666666667)
    close(m.mean_absolute_error(YP, YT, {multioutput = {0.3, 0.7, 1.0}}), 0.375)
    close(m.mean_squared_error(YP, YT, {multioutput = "raw_values"}), {0.375, 0.5, 0.25})
    close(m.mean_squared_error(YP, YT), 0.375)
    -- RMSE per output, then averaged
    close(m.mean_squared_error(YP, YT, {squared = false, multioutput = "raw_values"}), {0.6123724356957945, 0.7071067811865476, 0.5})
    close(m.root_mean_squared_error(YP, YT), 0.6064930722941141)
    assert.are.equal(0, m.mean_squared_error(yt, yt))
    close(m.mean_absolute_error(i64({1, 2}), i64({2, 4})), 1.5)
  end)

  it("r2_score and explained_variance, sklearn's force_finite", function()
    -- ref: r2(yt, yp), ev(yt, yp) (raw values); uniform means; variance_weighted: np.average(raw, weights=den)
    close(m.r2_score(yp, yt), 0.9002442996742671)
    close(m.explained_variance(yp, yt), 0.9006514657980456)
    -- output 2 has a constant target predicted wrongly (0), output 3 ... (ref r2 raw)
    close(m.r2_score(YP, YT, {multioutput = "raw_values"}), {0.9586206896551724, 0, -0.33333333333333326})
    close(m.r2_score(YP, YT), 0.2084291187739464)
    close(m.r2_score(YP, YT, {multioutput = "variance_weighted"}), 0.9324324324324325)
    close(m.explained_variance(YP, YT, {multioutput = "raw_values"}), {0.9655172413793104, 0, 0})
    close(m.explained_variance(YP, YT), 0.3218390804597701)
    close(m.explained_variance(YP, YT, {multioutput = "variance_weighted"}), 0.9459459459459459)
    assert.are.equal(m.explained_variance, m.explained_variance_score)
    -- force_finite = false: -inf for the constant target (ref "r2 unforced")
    local raw = m.r2_score(YP, YT, {multioutput = "raw_values", force_finite = false}):tolist()
    close({raw[1], raw[3]}, {0.9586206896551724, -0.33333333333333326})
    assert.are.equal(-math.huge, raw[2])
    -- a constant target predicted exactly: 1; wrongly: 0
    assert.are.equal(1, m.r2_score(pt.tensor({2, 2}), pt.tensor({2, 2})))
    assert.are.equal(0, m.r2_score(pt.tensor({1, 3}), pt.tensor({2, 2})))
    assert.are.equal(1, m.explained_variance(pt.tensor({2, 2}), pt.tensor({2, 2})))
    -- not symmetric: pred first
    assert.is_true(math.abs(m.r2_score(yt, yp) - 0.9002442996742671) > 1e-3)
    -- one sample: nan, as sklearn
    assert.is_true(is_nan(m.r2_score(pt.tensor({1}), pt.tensor({2}))))
    -- all outputs constant: variance_weighted falls back to uniform
    assert.are.equal(0.5, m.r2_score(pt.tensor({{1, 2}, {3, 2}}), pt.tensor({{2, 2}, {2, 2}}), {multioutput = "variance_weighted"}))
  end)

  it("names bad arguments", function()
    assert.are.equal("mean_squared_error: pred shape {3} and target shape {4} differ", err_of(m.mean_squared_error, pt.zeros(3), pt.zeros(4)))
    assert.are.equal("mean_absolute_error: expected pred {N} or {N,K}, got shape {2,2,2}",
                     err_of(m.mean_absolute_error, pt.zeros(2, 2, 2), pt.zeros(2, 2, 2)))
    assert.are.equal('r2_score: multioutput must be "raw_values", "uniform_average", "variance_weighted" or a list of 1 weights, got bad',
                     err_of(m.r2_score, pt.zeros(3), pt.zeros(3), {multioutput = "bad"}))
    assert.are.equal('mean_absolute_error: multioutput must be "raw_values", "uniform_average" or a list of 3 weights, got variance_weighted',
                     err_of(m.mean_absolute_error, YP, YT, {multioutput = "variance_weighted"}))
    assert.are.equal("mean_absolute_error: multioutput weights must have 3 entries (one per output), got 2",
                     err_of(m.mean_absolute_error, YP, YT, {multioutput = {1, 2}}))
    assert.are.equal("mean_squared_error: squared must be a boolean, got 1", err_of(m.mean_squared_error, yp, yt, {squared = 1}))
    assert.are.equal("r2_score: force_finite must be a boolean, got 0", err_of(m.r2_score, yp, yt, {force_finite = 0}))
    assert.are.equal("explained_variance: expected numbers, got a bool tensor", err_of(m.explained_variance, yp:gt(1), yt:gt(1)))
    assert.are.equal("mean_absolute_error: no samples", err_of(m.mean_absolute_error, pt.zeros(0), pt.zeros(0)))
    assert.are.equal("root_mean_squared_error: unknown option 'squared' (expected multioutput)",
                     err_of(m.root_mean_squared_error, yp, yt, {squared = true}))
  end)
end)

describe("pt.metrics.Accumulator", function()
  it("streams batches into the same numbers as the whole-epoch functions", function()
    local acc = m.Accumulator{num_classes = 5}
    -- batches of scores and of class indices mixed
    acc:update(scores_of(pred[{{1, 5}}], 5), tgt[{{1, 5}}])
    acc:update(pred[{{6, 9}}], tgt[{{6, 9}}])
    acc:update(pred[{{10, 12}}]:double(), tgt[{{10, 12}}]:double())
    local r = acc:compute()
    assert.are.equal(12, r.n)
    close(r.accuracy, 0.5)
    close(r.precision, m.precision(pred, tgt, {average = "none", num_classes = 5}))
    close(r.recall, m.recall(pred, tgt, {average = "none", num_classes = 5}))
    close(r.f1, m.f1_score(pred, tgt, {average = "none", num_classes = 5}))
    assert.are.same({3, 4, 3, 2, 0}, r.support:tolist())
    close({r.macro_precision, r.macro_recall, r.macro_f1}, {0.375, 0.45833333333333326, 0.4107142857142857})
    assert.are.same(m.confusion_matrix(pred, tgt, 5):tolist(), r.confusion_matrix:tolist())
    -- compute copies the matrix; reset starts over
    r.confusion_matrix:zero_()
    assert.are.equal(12, acc:compute().confusion_matrix:sum():item())
    acc:reset()
    local z = acc:compute()
    assert.are.equal(0, z.n)
    assert.is_true(is_nan(z.accuracy))
    assert.are.equal(0, z.confusion_matrix:sum():item())
    acc:update(i64({1, 2}), i64({1, 2}))
    assert.are.equal(1, acc:compute().accuracy)
  end)

  it("merges shards into the whole", function()
    local a, b = m.Accumulator{num_classes = 4}, m.Accumulator{num_classes = 4}
    a:update(pred[{{1, 7}}], tgt[{{1, 7}}])
    b:update(scores_of(pred[{{8, 12}}], 4), tgt[{{8, 12}}])
    local r = a:merge(b):compute()
    assert.are.equal(12, r.n)
    assert.are.same(m.confusion_matrix(pred, tgt):tolist(), r.confusion_matrix:tolist())
    close(r.macro_f1, 0.4107142857142857)
    assert.are.equal("Accumulator:merge: num_classes 4 and 3 differ", err_of(a.merge, a, m.Accumulator{num_classes = 3}))
    assert.are.equal("Accumulator:merge: expected an Accumulator, got a table", err_of(a.merge, a, {}))
  end)

  it("uses zero_division for classes never predicted", function()
    local acc = m.Accumulator{num_classes = 3, zero_division = 1}
    acc:update(i64({1, 1}), i64({1, 2}))
    local r = acc:compute()
    close(r.precision, {0.5, 1, 1})
    close(r.recall, {1, 0, 1})
    close(r.macro_precision, 0.75) -- classes 1 and 2 occur
  end)

  it("is documented and names bad arguments", function()
    assert.matches("Accumulator", require("partrain.help").text(m.Accumulator))
    assert.are.equal("Accumulator: num_classes is required", err_of(m.Accumulator, {}))
    assert.are.equal("Accumulator: num_classes must be a positive integer, got 2.5", err_of(m.Accumulator, {num_classes = 2.5}))
    assert.are.equal("Accumulator: unknown option 'classes' (expected num_classes, zero_division)", err_of(m.Accumulator, {classes = 2}))
    local acc = m.Accumulator{num_classes = 3}
    assert.are.equal("Accumulator:update: scores have 4 classes but num_classes is 3", err_of(acc.update, acc, pt.zeros(2, 4), i64({1, 2})))
    assert.are.equal("Accumulator:update: target holds 4, out of range 1..3", err_of(acc.update, acc, pt.zeros(2, 3), i64({1, 4})))
    assert.are.equal("Accumulator:update: pred holds 4, out of range 1..3", err_of(acc.update, acc, i64({1, 4}), i64({1, 2})))
    assert.are.equal("Accumulator:update: 2 score rows but 3 target labels", err_of(acc.update, acc, pt.zeros(2, 3), i64({1, 2, 3})))
    assert.are.equal("Accumulator:update: target must be class indices {N}, got shape {2,1}",
                     err_of(acc.update, acc, pt.zeros(2, 3), i64({{1}, {2}})))
    -- failed updates leave the counts alone
    assert.are.equal(0, acc:compute().n)
    assert.are.equal(0, acc:compute().confusion_matrix:sum():item())
  end)
end)
