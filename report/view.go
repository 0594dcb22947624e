package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"

	"github.com/agentrl/agentrl/trajectory"
)

// View is what a live viewer (trainer inspect) shows of one run or of
// several: the report's charts (for several runs one chart per metric,
// a curve per run, as Compare draws them) and its results tables, read
// afresh from the stores on every call.
type View struct {
	Labels []string // the runs, in legend order
	Charts []Chart
	Tables []Table
}

// Chart is one chart of a View, rendered on demand.
type Chart struct {
	Title string
	c     chart
}

// PNG renders the chart as a PNG image of the report's chart size.
func (c Chart) PNG() ([]byte, error) { return encodePNG(c.c) }

// Table is a results table of a View, its numbers formatted.
type Table = table

// LoadView reads the charts and results tables of the runs stored at
// storePaths (each holding one run), read-only; labels name the runs in
// legends and table headers (nil: the run names).
func LoadView(storePaths, labels []string) (*View, error) {
	if len(storePaths) == 0 {
		return nil, errors.New("view: no stores given")
	}
	if len(labels) > 0 && len(labels) != len(storePaths) {
		return nil, fmt.Errorf("view: %d labels for %d stores", len(labels), len(storePaths))
	}
	runs := make([]*runData, len(storePaths))
	for i, p := range storePaths {
		r, err := readRun(p, false)
		if err != nil {
			return nil, err
		}
		if len(labels) > 0 {
			r.label = labels[i]
		}
		runs[i] = r
	}
	uniqueLabels(runs)
	v := &View{}
	for _, r := range runs {
		v.Labels = append(v.Labels, r.label)
	}
	var charts []namedChart
	if len(runs) == 1 {
		charts, v.Tables = runCharts(runs[0].iters), runTables(runs[0])
	} else {
		charts, v.Tables = compareCharts(runs), compareTables(runs)
	}
	for _, nc := range charts {
		v.Charts = append(v.Charts, Chart{Title: nc.c.title, c: nc.c})
	}
	return v, nil
}

// CSS is the report's style sheet, for pages that share its look.
func CSS() template.CSS { return template.CSS(pageCSS) }

// Conversation renders a trajectory as the report shows its samples: the
// question, each turn with its tool calls (arguments, success, latency)
// and results, the answer, the reward and its components. correct is the
// store's match of the answer against the gold answers; why is the card's
// heading.
func Conversation(t *trajectory.Trajectory, why string, correct bool) (template.HTML, error) {
	var buf bytes.Buffer
	vs := sampleViews([]sample{{why: why, t: t, correct: correct}})
	if err := pageTemplate.ExecuteTemplate(&buf, "sample", vs[0]); err != nil {
		return "", fmt.Errorf("render trajectory %s: %w", t.ID, err)
	}
	return template.HTML(buf.String()), nil
}
