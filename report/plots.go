package report

import (
	"math"
	"strings"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
)

// plots are the charts of a report, in page order (metric.Charts). A plot
// is drawn when at least one of its keys has a finite value in some
// iteration; absent keys are left out of its legend.
var plots = metric.Charts

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

// references are the baselines a chart of one run draws as dashed lines,
// by chart file: the value a metric had at iteration 0, where the trainer
// stores its evaluations before RL (the naive-RAG baseline, and the policy
// itself with its tools, "base tool call").
var references = map[string][]metric.Series{
	"eval": {
		{Key: metric.NaiveRAG + metric.EM, Label: "naive RAG EM"},
		{Key: metric.Eval + metric.EM, Label: "base tool call EM"},
	},
}

// referenceLines returns the reference lines of the chart saved as file,
// coloured after its n series; a baseline not stored is left out.
func referenceLines(iters []store.IterationMetrics, file string, n int) []refLine {
	var out []refLine
	for _, k := range references[file] {
		for _, it := range iters {
			if v, ok := it.Metrics[k.Key]; ok && it.Iteration == 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
				out = append(out, refLine{label: k.Label, color: seriesColor(n + len(out)), y: v})
			}
		}
	}
	return out
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
		c := chart{title: p.Title}
		for _, k := range p.Keys {
			if x, y, ok := metricSeries(iters, k.Key); ok {
				c.series = append(c.series, series{label: k.Label, color: seriesColor(len(c.series)), x: x, y: y})
			}
		}
		if len(c.series) > 0 {
			c.refs = referenceLines(iters, p.File, len(c.series))
			out = append(out, namedChart{file: p.File + ".png", c: c})
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
		for _, k := range p.Keys {
			c := chart{title: p.Title + ": " + k.Label}
			if len(p.Keys) == 1 {
				c.title = p.Title
			}
			for i, r := range runs {
				if x, y, ok := metricSeries(r.iters, k.Key); ok {
					c.series = append(c.series, series{label: r.label, color: seriesColor(i), x: x, y: y})
				}
			}
			if len(c.series) > 0 {
				out = append(out, namedChart{file: CompareFile(k.Key), c: c})
			}
		}
	}
	return out
}

// CompareFile is the PNG file of a comparison's chart of metric key.
func CompareFile(key string) string { return "compare_" + slug(key) + ".png" }

// slug turns a metric key into a file name part: letters, digits and '_'.
func slug(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, key)
}
