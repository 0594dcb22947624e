package report

import (
	"image"
	"image/color"
	"math"
	"testing"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
)

// pixelAt returns the pixel that holds the continuous point (x, y).
func pixelAt(x, y float64) image.Point { return image.Pt(int(math.Floor(x)), int(math.Floor(y))) }

// dark reports whether p is ink (text), not background, grid or frame.
func dark(p color.Color) bool {
	r, g, b, _ := p.RGBA()
	return r>>8 < 140 && g>>8 < 140 && b>>8 < 140
}

// countDark counts the ink pixels of img in r.
func countDark(img image.Image, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if dark(img.At(x, y)) {
				n++
			}
		}
	}
	return n
}

func TestRenderGeometry(t *testing.T) {
	nan := math.NaN()
	a, b := seriesColor(0), seriesColor(1)
	c := chart{title: "Geometry", series: []series{
		{label: "peaks", color: a, x: []float64{0, 1, 2, 3, 4}, y: []float64{0, 1, nan, 1, 0}},
		{label: "flat", color: b, x: []float64{0, 1, 2, 3, 4}, y: []float64{0.25, 0.25, 0.25, 0.25, 0.25}},
	}}
	img, f, err := render(c, chartW, chartH)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != image.Rect(0, 0, chartW, chartH) {
		t.Fatalf("image %v, want %dx%d", img.Bounds(), chartW, chartH)
	}
	// Data y in [0, 1]: axis [-0.05, 1.05] (5% padding); x in [0, 4]:
	// axis [-0.08, 4.08] (2% padding). The axis ends map to the centres of
	// the plot's edge pixels, so value v sits at
	//   column Min.X + 0.5 + (v + 0.08) / 4.16 * (Dx - 1)
	//   row    Max.Y - 0.5 - (v + 0.05) / 1.10 * (Dy - 1).
	if !approx(f.x.lo, -0.08) || !approx(f.x.hi, 4.08) || !approx(f.y.lo, -0.05) || !approx(f.y.hi, 1.05) {
		t.Fatalf("axes x [%g, %g] y [%g, %g], want x [-0.08, 4.08] y [-0.05, 1.05]", f.x.lo, f.x.hi, f.y.lo, f.y.hi)
	}
	p := f.plot
	at := func(x, y float64) image.Point {
		return pixelAt(float64(p.Min.X)+0.5+(x+0.08)/4.16*float64(p.Dx()-1),
			float64(p.Max.Y)-0.5-(y+0.05)/1.1*float64(p.Dy()-1))
	}
	for _, pt := range []struct {
		name string
		x, y float64
		col  color.RGBA
	}{
		{"middle of the rising segment", 0.5, 0.5, a},
		{"middle of the falling segment", 3.5, 0.5, a},
		{"the flat series", 2, 0.25, b},
		{"the flat series' first point", 0, 0.25, b},
	} {
		q := at(pt.x, pt.y)
		if got := img.RGBAAt(q.X, q.Y); got != pt.col {
			t.Errorf("%s: pixel %v at (%g, %g) is %v, want the series colour %v", pt.name, q, pt.x, pt.y, got, pt.col)
		}
	}
	// The NaN at x = 2 is a gap: nothing of the first series where a line
	// from (1, 1) to (3, 1) would pass.
	q := at(2, 1)
	if n := countColor(img, image.Rect(q.X-3, q.Y-3, q.X+4, q.Y+4), a, 40); n != 0 {
		t.Errorf("%d pixels of the first series at the NaN gap around %v", n, q)
	}
	// Tick labels: ink left of the plot at every y tick (0, 0.5, 1), below
	// it at every x tick (0 .. 4); the title above the legend.
	for _, v := range []float64{0, 0.5, 1} {
		q := at(0, v)
		if countDark(img, image.Rect(0, q.Y-7, p.Min.X-3, q.Y+7)) == 0 {
			t.Errorf("no tick label left of the plot at y = %g (row %d)", v, q.Y)
		}
	}
	for v := 0.0; v <= 4; v++ {
		q := at(v, 0)
		if countDark(img, image.Rect(q.X-8, p.Max.Y+3, q.X+9, p.Max.Y+19)) == 0 {
			t.Errorf("no tick label below the plot at x = %g (column %d)", v, q.X)
		}
	}
	if countDark(img, image.Rect(0, 0, chartW, 30)) == 0 {
		t.Error("no title")
	}
	// Legend: both colours appear above the plot area.
	for i, col := range []color.RGBA{a, b} {
		if countColor(img, image.Rect(0, 0, chartW, p.Min.Y-2), col, 0) == 0 {
			t.Errorf("legend entry %d: no pixel of %v above the plot", i, col)
		}
	}
}

func TestRenderIsolatedPoint(t *testing.T) {
	// 100 iterations at 0.5, a hole from 40 to 60 except iteration 50 at
	// 0.9. 80 finite points are too many for dots everywhere, but the
	// isolated one gets a dot (no line would show it) and no line reaches it.
	x, y := make([]float64, 100), make([]float64, 100)
	for i := range x {
		x[i], y[i] = float64(i), 0.5
		if i >= 40 && i <= 60 && i != 50 {
			y[i] = math.NaN()
		}
	}
	y[50] = 0.9
	col := seriesColor(0)
	img, f, err := render(chart{title: "Isolated", series: []series{{label: "s", color: col, x: x, y: y}}}, chartW, chartH)
	if err != nil {
		t.Fatal(err)
	}
	// y in [0.5, 0.9]: axis [0.48, 0.92]; x in [0, 99]: axis [-1.98, 100.98].
	p := f.plot
	at := func(xv, yv float64) image.Point {
		return pixelAt(float64(p.Min.X)+0.5+(xv+1.98)/102.96*float64(p.Dx()-1),
			float64(p.Max.Y)-0.5-(yv-0.48)/0.44*float64(p.Dy()-1))
	}
	if q := at(50, 0.9); img.RGBAAt(q.X, q.Y) != col {
		t.Errorf("isolated point: pixel %v is %v, want %v", q, img.RGBAAt(q.X, q.Y), col)
	}
	if q := at(45, 0.7); countColor(img, image.Rect(q.X-2, q.Y-2, q.X+3, q.Y+3), col, 40) != 0 {
		t.Errorf("a line bridges the hole near %v", q)
	}
	if q := at(20, 0.5); img.RGBAAt(q.X, q.Y) != col {
		t.Errorf("line at iteration 20: pixel %v is %v, want %v", q, img.RGBAAt(q.X, q.Y), col)
	}
}

func TestRenderEmpty(t *testing.T) {
	img, _, err := render(chart{title: "Nothing yet"}, chartW, chartH)
	if err != nil {
		t.Fatal(err)
	}
	for i := range palette {
		if n := countColor(img, img.Bounds(), seriesColor(i), 0); n != 0 {
			t.Errorf("empty chart has %d pixels of series colour %d", n, i)
		}
	}
	if countDark(img, img.Bounds()) == 0 {
		t.Error("empty chart has no text")
	}
}

func TestRenderTooSmall(t *testing.T) {
	if _, _, err := render(chart{title: "tiny"}, 40, 30); err == nil {
		t.Error("a 40x30 chart rendered without error")
	}
}

func TestRenderReferenceLine(t *testing.T) {
	// One series from 0 to 1 over iterations 0..4 and a baseline at 2,
	// above it: the value axis must reach it. Data y in [0, 2] pads 5% of
	// the range each side: axis [-0.1, 2.1].
	series0, base := seriesColor(0), seriesColor(1)
	c := chart{title: "With a baseline",
		series: []series{{label: "em", color: series0, x: []float64{0, 1, 2, 3, 4}, y: []float64{0, 0.25, 0.5, 0.75, 1}}},
		refs:   []refLine{{label: "naive RAG EM", color: base, y: 2}}}
	img, f, err := render(c, chartW, chartH)
	if err != nil {
		t.Fatal(err)
	}
	if !approx(f.y.lo, -0.1) || !approx(f.y.hi, 2.1) {
		t.Fatalf("value axis [%g, %g], want [-0.1, 2.1]", f.y.lo, f.y.hi)
	}
	p := f.plot
	row := int(math.Floor(float64(p.Max.Y) - 0.5 - (2+0.1)/2.2*float64(p.Dy()-1)))
	// Dashes of 6 px every 10 px from the plot's left edge: the pixel 3 px
	// in lies on the first dash, the one 8 px in in the first gap (2.5 px
	// from the dash's end, beyond the 1.1 px half width).
	if got := img.RGBAAt(p.Min.X+3, row); got != base {
		t.Errorf("pixel (%d, %d) on the first dash is %v, want %v", p.Min.X+3, row, got, base)
	}
	if near(img.RGBAAt(p.Min.X+8, row), base, 40) {
		t.Errorf("pixel (%d, %d) in the first gap has the baseline's colour", p.Min.X+8, row)
	}
	// The line runs across the plot: the last dash starts at Min.X + 10k.
	if n := countColor(img, image.Rect(p.Max.X-12, row, p.Max.X, row+1), base, 0); n == 0 {
		t.Errorf("no baseline pixel in the last 12 columns of row %d", row)
	}
	// The legend shows it above the plot.
	if countColor(img, image.Rect(0, 0, chartW, p.Min.Y-2), base, 0) == 0 {
		t.Error("no legend entry of the baseline's colour above the plot")
	}
}

func TestReferenceLinesFromIterationZero(t *testing.T) {
	// Iteration 0 holds the baselines: naive RAG EM 0.25 and the policy's
	// own EM before RL 0.5; later evaluations (0.75) are the curve, not a
	// baseline.
	iters := []store.IterationMetrics{
		{Iteration: 0, Metrics: map[string]float64{metric.NaiveRAG + metric.EM: 0.25, metric.Eval + metric.EM: 0.5}},
		{Iteration: 1, Metrics: map[string]float64{metric.Eval + metric.EM: 0.75}},
	}
	var eval *chart
	for _, nc := range runCharts(iters) {
		if nc.file == "eval.png" {
			eval = &nc.c
		}
	}
	if eval == nil {
		t.Fatal("no eval chart")
	}
	want := []refLine{{"naive RAG EM", seriesColor(1), 0.25}, {"base tool call EM", seriesColor(2), 0.5}}
	if len(eval.refs) != len(want) {
		t.Fatalf("reference lines %+v, want %+v", eval.refs, want)
	}
	for i := range want {
		if eval.refs[i] != want[i] {
			t.Errorf("reference line %d is %+v, want %+v", i, eval.refs[i], want[i])
		}
	}
	// Without iteration 0 there is no baseline to draw.
	for _, nc := range runCharts(iters[1:]) {
		if len(nc.c.refs) != 0 {
			t.Errorf("chart %s has reference lines %+v without iteration 0", nc.file, nc.c.refs)
		}
	}
}
