package report

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
)

// Compare writes a comparison of the runs stored at storePaths into outDir
// (created if needed): for every metric of the plot table a chart with one
// curve per run, the final metrics side by side, the configuration keys
// that differ and each run's configuration, as compare.html (standalone,
// charts embedded) plus the chart PNGs. labels name the runs in legends
// and tables; nil or empty uses the run names. It returns the page's path.
func Compare(storePaths []string, labels []string, outDir string) (string, error) {
	if len(storePaths) == 0 {
		return "", errors.New("compare: no stores given")
	}
	if len(labels) > 0 && len(labels) != len(storePaths) {
		return "", fmt.Errorf("compare: %d labels for %d stores", len(labels), len(storePaths))
	}
	runs := make([]*runData, len(storePaths))
	for i, path := range storePaths {
		r, err := loadRun(path)
		if err != nil {
			return "", fmt.Errorf("compare: %w", err)
		}
		if len(labels) > 0 {
			r.label = labels[i]
		}
		runs[i] = r
	}
	uniqueLabels(runs)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("compare: %w", err)
	}
	figs, err := writeCharts(outDir, compareCharts(runs))
	if err != nil {
		return "", fmt.Errorf("compare: %w", err)
	}
	p := page{Kind: "Run comparison", Compare: true, Figures: figs, Tables: compareTables(runs)}
	for i, r := range runs {
		if i > 0 {
			p.Title += " vs "
		}
		p.Title += r.label
		p.Meta = append(p.Meta, metaItem{r.label, fmt.Sprintf("%d iterations", len(r.iters))})
		p.Configs = append(p.Configs, configView{Label: r.label, JSON: prettyJSON(r.info.config)})
		p.Sources = append(p.Sources, r.path)
	}
	path, err := writePage(outDir, "compare.html", p)
	if err != nil {
		return "", fmt.Errorf("compare: %w", err)
	}
	return path, nil
}

// uniqueLabels appends " (2)", " (3)" ... to labels already taken, so that
// every run has its own legend entry and table column.
func uniqueLabels(runs []*runData) {
	taken := map[string]bool{}
	for _, r := range runs {
		base := r.label
		for n := 2; taken[r.label]; n++ {
			r.label = base + " (" + strconv.Itoa(n) + ")"
		}
		taken[r.label] = true
	}
}

// compareTables builds the side-by-side final metrics (last evaluation
// metrics, exact match by hops, last value of every plotted metric) and
// the configuration keys whose values differ.
func compareTables(runs []*runData) []table {
	head := []string{"metric"}
	for _, r := range runs {
		head = append(head, r.label)
	}
	cells := map[string][]string{} // metric -> one cell per run
	var order []string
	set := func(key string, run int, v string) {
		if cells[key] == nil {
			cells[key] = make([]string, len(runs))
			for i := range cells[key] {
				cells[key][i] = "n/a"
			}
			order = append(order, key)
		}
		cells[key][run] = v
	}
	for i, r := range runs {
		if it, keys, vals, ok := lastEval(r.iters); ok {
			for j, k := range keys {
				set(k, i, num(vals[j]))
			}
			set("eval iteration", i, strconv.Itoa(it))
		}
	}
	evalKeys := len(order)
	sort.Strings(order[:evalKeys])
	for i, r := range runs {
		if r.hops.all.n > 0 {
			set("EM, all hops (eval trajectories)", i, num(r.hops.all.em))
		}
	}
	hopKeys := map[int]bool{}
	for _, r := range runs {
		for _, h := range r.hops.rows {
			hopKeys[h.hops] = true
		}
	}
	hops := make([]int, 0, len(hopKeys))
	for h := range hopKeys {
		hops = append(hops, h)
	}
	sort.Ints(hops)
	for _, h := range hops {
		for i, r := range runs {
			for _, x := range r.hops.rows {
				if x.hops == h {
					set("EM, "+plural(h, "hop"), i, num(x.em))
				}
			}
		}
	}
	for i, r := range runs {
		for _, l := range lastValues(r.iters) {
			set(l.key+" (last)", i, num(l.value))
		}
	}
	var ts []table
	if len(order) > 0 {
		t := table{Caption: "Final metrics", Head: head}
		for _, k := range order {
			t.Rows = append(t.Rows, row{Cells: append([]string{k}, cells[k]...)})
		}
		ts = append(ts, t)
	}
	if d := configDiff(runs); len(d.Rows) > 0 {
		d.Head = append([]string{"config key"}, head[1:]...)
		ts = append(ts, d)
	}
	return ts
}
