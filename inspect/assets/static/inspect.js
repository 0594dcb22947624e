// trainer inspect: the live refresh of the runs page and the token view.
// Plain JavaScript, no build step.
(function () {
  "use strict";

  // The runs page reloads when a run writes an iteration.
  var live = document.getElementById("live");
  if (live) {
    setInterval(function () {
      fetch("/api/state", { cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(function (j) { if (j.state !== live.dataset.state) location.reload(); })
        .catch(function () {});
    }, 5000);
  }

  var data = document.getElementById("tokdata");
  if (data) tokenView(JSON.parse(data.textContent));

  // tokenView draws every token as a span and colours them by the mode
  // the select names, the values shown on hover.
  function tokenView(d) {
    var box = document.getElementById("tokens");
    var select = document.getElementById("color");
    var legend = document.getElementById("legend");
    var labels = {};
    for (var o = 0; o < select.options.length; o++) labels[select.options[o].value] = select.options[o].textContent;
    var spans = [];
    d.text.forEach(function (t, i) {
      var s = document.createElement("span");
      s.textContent = t;
      s.dataset.i = i;
      s.dataset.mask = d.mask[i];
      box.appendChild(s);
      spans.push(s);
    });
    // scale: what a full colour stands for in each mode.
    function scale(mode) {
      var v = d.values[mode] || [], m = 0;
      v.forEach(function (x) {
        if (x === null) return;
        var a = mode === "ratio" ? Math.abs(Math.log(x)) : Math.abs(x);
        if (a > m) m = a;
      });
      return m > 0 ? m : 1;
    }
    function fmt(x) { return x === null || x === undefined ? "n/a" : Number(x.toPrecision(4)).toString(); }
    function rgba(c, a) { return "rgba(" + c + "," + Math.min(1, a).toFixed(3) + ")"; }
    var green = "34,197,94", red = "239,68,68", blue = "59,130,246", orange = "249,115,22", purple = "168,85,247";
    function background(mode, x, mask, sc) {
      if (mode === "mask") return mask === 1 ? rgba(green, 0.35) : rgba("156,163,175", 0.2);
      if (x === null || x === undefined) return "";
      switch (mode) {
        case "advantage": return rgba(x >= 0 ? green : red, 0.85 * Math.abs(x) / sc);
        case "logprob": return rgba(orange, 0.85 * (1 - Math.exp(x)));
        case "ratio": var l = Math.log(x); return rgba(l >= 0 ? blue : red, 0.85 * Math.abs(l) / sc);
        case "entropy": return rgba(purple, 0.85 * x / sc);
      }
      return "";
    }
    var legends = {
      mask: "green: sampled by the policy (mask 1), grey: prompt, template or tool output (mask 0)",
      advantage: "green: positive, red: negative advantage; full colour at |A| = ",
      logprob: "orange: improbable under the rollout policy (1 − p); full colour at p = 0",
      ratio: "blue: training forward more likely than the rollout, red: less; full colour at |log ratio| = ",
      entropy: "purple: high entropy; full colour at "
    };
    function paint() {
      var mode = select.value, sc = scale(mode), vals = d.values[mode];
      spans.forEach(function (s, i) {
        var x = vals ? vals[i] : null;
        s.style.background = background(mode, x, d.mask[i], sc);
        s.dataset.v = mode === "mask" ? d.mask[i] : (x === null || x === undefined ? "" : x);
        var tip = "token " + i + " · turn " + (d.turn && d.turn[i] !== undefined ? d.turn[i] : "?") + " · mask " + d.mask[i];
        Object.keys(d.values).forEach(function (k) { tip += " · " + labels[k] + " " + fmt(d.values[k][i]); });
        s.title = tip;
      });
      legend.textContent = legends[mode] + (mode === "mask" || mode === "logprob" ? "" : fmt(sc) + (mode === "entropy" ? " nats" : ""));
      legend.dataset.mode = mode;
    }
    select.addEventListener("change", paint);
    var want = new URLSearchParams(location.search).get("color");
    if (want && d.values[want]) select.value = want;
    paint();
  }
})();
