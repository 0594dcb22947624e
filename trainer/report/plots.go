package report

import (
	"math"
	"strings"

	"github.com/agentrl/agentrl/trainer/store"
)

// plotSpec is one chart of the report: the metric keys (as the training
// loop logs them) it draws, each with its legend label.
type plotSpec struct {
	file  string // PNG name without extension
	title string
	keys  []metricKey
}

// metricKey is one metric of a plot and its legend label.
type metricKey struct{ key, label string }

// plots is the list of charts of a report, in page order. A plot is drawn
// when at least one of its keys has a finite value in some iteration;
// absent keys are left out of its legend.
var plots = []plotSpec{
	{"reward", "Train reward", []metricKey{{"reward_mean", "mean reward (train)"}}},
	{"eval", "Evaluation EM / F1", []metricKey{{"eval/em", "EM"}, {"eval/f1", "F1"}}},
	{"kl", "KL divergence", []metricKey{{"kl_ref", "KL to reference"}, {"approx_kl", "approx KL (old to new policy)"}}},
	{"entropy", "Policy entropy", []metricKey{{"entropy", "entropy (nats per token)"}}},
	{"clip", "Clip fraction", []metricKey{{"clip_frac_low", "low (ratio < 1-ε)"}, {"clip_frac_high", "high (ratio > 1+ε)"}}},
	{"response_len", "Response length (tokens)", []metricKey{{"response_len_mean", "mean response length"}}},
	{"turns", "Turns and tool calls per episode", []metricKey{{"turns_mean", "turns"}, {"tool_calls_mean", "tool calls"}}},
	{"throughput", "Throughput (tokens/s)", []metricKey{{"tokens_per_s_rollout", "rollout"}, {"tokens_per_s_update", "update"}}},
}

// metricSeries returns the iterations at which key was logged and its
// values there (NaN where a non-finite value was logged), and whether any
// of them is finite.
func metricSeries(iters []store.IterationMetrics, key string) (x, y []float64, ok bool) {
	for _, it := range iters {
		v, logged := it.Metrics[key]
		if !logged {
			continue
		}
		x, y = append(x, float64(it.Iteration)), append(y, v)
		ok = ok || !(math.IsNaN(v) || math.IsInf(v, 0))
	}
	return x, y, ok
}

// namedChart is a chart and the file it is saved to.
type namedChart struct {
	file string
	c    chart
}

// runCharts builds the charts of one run from the plot table: one chart
// per plot with at least one metric present, a series per present key.
func runCharts(iters []store.IterationMetrics) []namedChart {
	var out []namedChart
	for _, p := range plots {
		c := chart{title: p.title}
		for _, k := range p.keys {
			if x, y, ok := metricSeries(iters, k.key); ok {
				c.series = append(c.series, series{label: k.label, color: seriesColor(len(c.series)), x: x, y: y})
			}
		}
		if len(c.series) > 0 {
			out = append(out, namedChart{file: p.file + ".png", c: c})
		}
	}
	return out
}

// compareCharts builds the charts of a comparison: one chart per metric
// key of the plot table that some run logged, a series per run that has it
// (coloured by the run's position, so a run keeps its colour throughout).
func compareCharts(runs []*runData) []namedChart {
	var out []namedChart
	for _, p := range plots {
		for _, k := range p.keys {
			c := chart{title: p.title + ": " + k.label}
			if len(p.keys) == 1 {
				c.title = p.title
			}
			for i, r := range runs {
				if x, y, ok := metricSeries(r.iters, k.key); ok {
					c.series = append(c.series, series{label: r.label, color: seriesColor(i), x: x, y: y})
				}
			}
			if len(c.series) > 0 {
				out = append(out, namedChart{file: "compare_" + slug(k.key) + ".png", c: c})
			}
		}
	}
	return out
}

// slug turns a metric key into a file name part: letters, digits and '_'.
func slug(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, key)
}
