// Package report turns a run's trajectory store into one self-contained
// HTML page: line plots of the training metrics (PNG, drawn here on
// image/png and embedded as data URIs), the final evaluation results, the
// effective configuration and a few sample trajectories rendered as
// conversations. Compare overlays several runs on one page.
package report

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
)

// Write writes the report of the run stored at storePath into outDir
// (created if needed): one PNG per chart and report.html, which embeds
// them and stands alone. It returns the path of report.html.
func Write(storePath, outDir string) (string, error) {
	r, err := loadRun(storePath)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("report on %s: %w", storePath, err)
	}
	figs, err := writeCharts(outDir, runCharts(r.iters))
	if err != nil {
		return "", fmt.Errorf("report on %s: %w", storePath, err)
	}
	p := page{
		Kind: "Training report", Title: r.info.name, Meta: runMeta(r), Figures: figs,
		Tables:  runTables(r),
		Configs: []configView{{Label: r.label, JSON: prettyJSON(r.info.config)}},
		Samples: sampleViews(r.samples), Sources: []string{storePath},
	}
	path, err := writePage(outDir, "report.html", p)
	if err != nil {
		return "", fmt.Errorf("report on %s: %w", storePath, err)
	}
	return path, nil
}

// runMeta lists the run's headline facts: iterations, trajectories,
// revision, start and resumes.
func runMeta(r *runData) []metaItem {
	var m []metaItem
	if n := len(r.iters); n > 0 {
		trajs := 0
		for _, it := range r.iters {
			trajs += it.NTrain + it.NEval
		}
		m = append(m,
			metaItem{"iterations", fmt.Sprintf("%d (%d to %d)", n, r.iters[0].Iteration, r.iters[n-1].Iteration)},
			metaItem{"trajectories", strconv.Itoa(trajs)})
	} else {
		m = append(m, metaItem{"iterations", "none yet"})
	}
	if r.info.gitRev != "" {
		m = append(m, metaItem{"revision", r.info.gitRev})
	}
	m = append(m, metaItem{"started", r.info.startedAt})
	if r.info.resumes > 0 {
		m = append(m, metaItem{"resumed", fmt.Sprintf("%d× (last %s)", r.info.resumes, r.info.resumedAt)})
	}
	return m
}

// runTables builds the final results of one run: the evaluation metrics
// last logged, exact match by hops from the eval trajectories, and the
// last value of every plotted metric.
func runTables(r *runData) []table {
	var ts []table
	if it, keys, vals, ok := lastEval(r.iters); ok {
		t := table{Caption: fmt.Sprintf("Evaluation at iteration %d", it), Head: []string{"metric", "value"}}
		for i, k := range keys {
			t.Rows = append(t.Rows, row{Cells: []string{k, num(vals[i])}})
		}
		ts = append(ts, t)
	}
	if h := r.hops; h.all.n > 0 {
		t := table{
			Caption: fmt.Sprintf("Exact match by hops, eval trajectories of iteration %d", h.iteration),
			Head:    []string{"hops", "episodes", "EM"},
			Note:    "EM is the episode's \"em\" reward component, or the store's normalised match against the gold answers when it has none.",
		}
		if h.hasF1 {
			t.Head = append(t.Head, "F1")
		}
		add := func(label string, x hopRow, total bool) {
			cells := []string{label, strconv.Itoa(x.n), num(x.em)}
			if h.hasF1 {
				cells = append(cells, num(x.f1))
			}
			t.Rows = append(t.Rows, row{Cells: cells, Total: total})
		}
		for _, x := range h.rows {
			add(strconv.Itoa(x.hops), x, false)
		}
		add("all", h.all, true)
		ts = append(ts, t)
	}
	if keys := lastValues(r.iters); len(keys) > 0 {
		t := table{Caption: "Last logged values", Head: []string{"metric", "iteration", "value"}}
		for _, l := range keys {
			t.Rows = append(t.Rows, row{Cells: []string{l.key, strconv.Itoa(l.iteration), num(l.value)}})
		}
		ts = append(ts, t)
	}
	return ts
}

// lastValue is the last finite value of a metric and when it was logged.
type lastValue struct {
	key       string
	iteration int
	value     float64
}

// lastValues returns, for every key of the plot table but the evaluation
// ones (which have a table of their own), its last finite value, in table
// order; keys never logged are left out.
func lastValues(iters []store.IterationMetrics) []lastValue {
	var out []lastValue
	for _, p := range plots {
		for _, k := range p.Keys {
			x, y, ok := metricSeries(iters, k.Key)
			if !ok || strings.HasPrefix(k.Key, metric.Eval) {
				continue
			}
			for i := len(y) - 1; i >= 0; i-- {
				if !math.IsNaN(y[i]) && !math.IsInf(y[i], 0) {
					out = append(out, lastValue{key: k.Key, iteration: int(x[i]), value: y[i]})
					break
				}
			}
		}
	}
	return out
}
