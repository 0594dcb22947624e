package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
)

// Size of every chart image, in pixels.
const (
	chartW = 580
	chartH = 330
)

// Colours of the chart furniture.
var (
	white     = color.RGBA{255, 255, 255, 255}
	gridGray  = color.RGBA{229, 231, 235, 255}
	axisGray  = color.RGBA{156, 163, 175, 255}
	labelGray = color.RGBA{75, 85, 99, 255}
	titleInk  = color.RGBA{17, 24, 39, 255}
)

// palette holds the series colours, in order of use (Tableau 10 without its
// grey, which would read as a grid line).
var palette = []color.RGBA{
	{31, 119, 180, 255},  // blue
	{255, 127, 14, 255},  // orange
	{44, 160, 44, 255},   // green
	{214, 39, 40, 255},   // red
	{148, 103, 189, 255}, // purple
	{140, 86, 75, 255},   // brown
	{227, 119, 194, 255}, // pink
	{188, 189, 34, 255},  // olive
	{23, 190, 207, 255},  // cyan
}

// seriesColor is the colour of the i-th series of a chart.
func seriesColor(i int) color.RGBA { return palette[i%len(palette)] }

// Line drawing sizes, in pixels.
const (
	lineHalfWidth = 1.1 // lines are 2.2 px wide
	markerRadius  = 2.6 // dots on sparse series and on isolated points
	markerMax     = 40  // series with at most this many points get dots
)

// chart is a line plot: several series over the iterations of a run, and
// reference lines (baselines) across it.
type chart struct {
	title  string
	series []series
	refs   []refLine
}

// refLine is a constant drawn as a dashed horizontal line across the plot.
type refLine struct {
	label string
	color color.RGBA
	y     float64
}

// legendItem is one legend entry: a solid or a dashed line swatch.
type legendItem struct {
	label  string
	color  color.RGBA
	dashed bool
}

// legend lists the chart's series, then its reference lines.
func (c chart) legend() []legendItem {
	var items []legendItem
	for _, s := range c.series {
		items = append(items, legendItem{label: s.label, color: s.color})
	}
	for _, r := range c.refs {
		items = append(items, legendItem{label: r.label, color: r.color, dashed: true})
	}
	return items
}

// series is one curve: y[i] at iteration x[i], x ascending. A NaN y is a
// gap: the line stops before it and resumes after it.
type series struct {
	label string
	color color.RGBA
	x, y  []float64
}

// frame records where a rendered chart put its data: the plot area (data
// points map to the centres of its edge pixels at the axis ends) and its
// two axes.
type frame struct {
	plot image.Rectangle
	x, y axis
}

// px is the horizontal pixel coordinate (continuous) of iteration v.
func (f frame) px(v float64) float64 {
	return float64(f.plot.Min.X) + 0.5 + (v-f.x.lo)/(f.x.hi-f.x.lo)*float64(f.plot.Dx()-1)
}

// py is the vertical pixel coordinate (continuous) of value v.
func (f frame) py(v float64) float64 {
	return float64(f.plot.Max.Y) - 0.5 - (v-f.y.lo)/(f.y.hi-f.y.lo)*float64(f.plot.Dy()-1)
}

// extent returns the range of the finite points of the chart's series
// (the reference lines widen the value range), and false when there are
// none.
func (c chart) extent() (xmin, xmax, ymin, ymax float64, ok bool) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, s := range c.series {
		for i, y := range s.y {
			if math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			xmin, xmax = math.Min(xmin, s.x[i]), math.Max(xmax, s.x[i])
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
			ok = true
		}
	}
	for _, r := range c.refs {
		if ok && !math.IsNaN(r.y) && !math.IsInf(r.y, 0) {
			ymin, ymax = math.Min(ymin, r.y), math.Max(ymax, r.y)
		}
	}
	return xmin, xmax, ymin, ymax, ok
}

// encodePNG renders c at the chart size and encodes it as PNG.
func encodePNG(c chart) ([]byte, error) {
	img, _, err := render(c, chartW, chartH)
	if err != nil {
		return nil, fmt.Errorf("plot %q: %w", c.title, err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("plot %q: encode png: %w", c.title, err)
	}
	return buf.Bytes(), nil
}

// render draws c on a w x h image: title, legend, grid, tick labels and
// the series. A chart without a finite point shows "no data".
func render(c chart, w, h int) (*image.RGBA, frame, error) {
	fc, err := newFaces()
	if err != nil {
		return nil, frame{}, err
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fillRect(img, img.Bounds(), white)

	var f frame
	xmin, xmax, ymin, ymax, ok := c.extent()
	if ok {
		f.x, f.y = iterationAxis(xmin, xmax), valueAxis(ymin, ymax)
	} else {
		f.x, f.y = iterationAxis(0, 1), valueAxis(0, 1)
	}

	const pad = 12
	drawText(img, fc.title, pad, pad+titleSize, c.title, titleInk)
	legendBottom := drawLegend(img, fc, c.legend(), pad, pad+titleSize+8, w-pad)

	labelW := 0
	for _, t := range f.y.ticks {
		labelW = max(labelW, textWidth(fc.label, tickLabel(t, f.y.step)))
	}
	x0, y0, x1, y1 := pad+labelW+8, legendBottom+10, w-pad-8, h-40
	if x1-x0 < 2 || y1-y0 < 2 {
		return nil, frame{}, fmt.Errorf("image %dx%d too small for the plot", w, h)
	}
	f.plot = image.Rect(x0, y0, x1, y1)
	drawGrid(img, fc, f)
	if !ok {
		msg := "no data"
		drawText(img, fc.label, (f.plot.Min.X+f.plot.Max.X-textWidth(fc.label, msg))/2,
			(f.plot.Min.Y+f.plot.Max.Y)/2, msg, labelGray)
	}
	if ok {
		for _, r := range c.refs {
			drawRef(img, f, r)
		}
	}
	for _, s := range c.series {
		drawSeries(img, f, s)
	}
	name := "iteration"
	drawText(img, fc.label, (f.plot.Min.X+f.plot.Max.X-textWidth(fc.label, name))/2, h-10, name, labelGray)
	return img, f, nil
}

// drawLegend writes one entry per item (a line swatch and the label) in
// rows from (x0, top), wrapping at right, and returns the bottom of the
// last row.
func drawLegend(img *image.RGBA, fc faces, ss []legendItem, x0, top, right int) int {
	const rowH, swatch = 18, 18
	x, y := x0, top
	for _, s := range ss {
		wItem := swatch + 6 + textWidth(fc.label, s.label)
		if x > x0 && x+wItem > right {
			x, y = x0, y+rowH
		}
		cy := float64(y) + rowH/2
		cov := newCoverage(img.Bounds())
		if s.dashed {
			dashes(cov, float64(x), float64(x+swatch), cy)
		} else {
			cov.segment(float64(x), cy, float64(x+swatch), cy, lineHalfWidth)
			cov.disc(float64(x)+swatch/2, cy, markerRadius)
		}
		cov.paint(img, s.color)
		drawText(img, fc.label, x+swatch+6, y+13, s.label, labelGray)
		x += wItem + 16
	}
	if len(ss) == 0 {
		return top
	}
	return y + rowH
}

// drawGrid draws the grid lines at the ticks, the plot's frame and the
// tick labels.
func drawGrid(img *image.RGBA, fc faces, f frame) {
	p := f.plot
	for _, t := range f.y.ticks {
		y := int(math.Floor(f.py(t)))
		fillRect(img, image.Rect(p.Min.X, y, p.Max.X, y+1), gridGray)
		s := tickLabel(t, f.y.step)
		drawText(img, fc.label, p.Min.X-6-textWidth(fc.label, s), y+4, s, labelGray)
	}
	for _, t := range f.x.ticks {
		x := int(math.Floor(f.px(t)))
		fillRect(img, image.Rect(x, p.Min.Y, x+1, p.Max.Y), gridGray)
		s := tickLabel(t, f.x.step)
		drawText(img, fc.label, x-textWidth(fc.label, s)/2, p.Max.Y+16, s, labelGray)
	}
	fillRect(img, image.Rect(p.Min.X-1, p.Min.Y-1, p.Max.X+1, p.Min.Y), gridGray) // top
	fillRect(img, image.Rect(p.Max.X, p.Min.Y-1, p.Max.X+1, p.Max.Y+1), gridGray) // right
	fillRect(img, image.Rect(p.Min.X-1, p.Min.Y-1, p.Min.X, p.Max.Y+1), axisGray) // left
	fillRect(img, image.Rect(p.Min.X-1, p.Max.Y, p.Max.X+1, p.Max.Y+1), axisGray) // bottom
}

// drawSeries draws the lines between consecutive finite points of s, and a
// dot on every point when s is sparse, or on points with no finite
// neighbour (which no line would show).
func drawSeries(img *image.RGBA, f frame, s series) {
	finite := func(i int) bool {
		return i >= 0 && i < len(s.y) && !math.IsNaN(s.y[i]) && !math.IsInf(s.y[i], 0)
	}
	n := 0
	for i := range s.y {
		if finite(i) {
			n++
		}
	}
	cov := newCoverage(img.Bounds())
	for i := range s.y {
		if !finite(i) {
			continue
		}
		x, y := f.px(s.x[i]), f.py(s.y[i])
		if finite(i + 1) {
			cov.segment(x, y, f.px(s.x[i+1]), f.py(s.y[i+1]), lineHalfWidth)
		}
		if n <= markerMax || (!finite(i-1) && !finite(i+1)) {
			cov.disc(x, y, markerRadius)
		}
	}
	cov.paint(img, s.color)
}

// Dash pattern of reference lines, in pixels.
const dashOn, dashOff = 6, 4

// dashes covers a dashed horizontal line from x0 to x1 at height y.
func dashes(cov *coverage, x0, x1, y float64) {
	for x := x0; x < x1; x += dashOn + dashOff {
		cov.segment(x, y, math.Min(x+dashOn, x1), y, lineHalfWidth)
	}
}

// drawRef draws a reference line across the plot at its value.
func drawRef(img *image.RGBA, f frame, r refLine) {
	if math.IsNaN(r.y) || math.IsInf(r.y, 0) {
		return
	}
	cov := newCoverage(img.Bounds())
	dashes(cov, float64(f.plot.Min.X), float64(f.plot.Max.X), f.py(r.y))
	cov.paint(img, r.color)
}
