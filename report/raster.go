package report

import (
	"image"
	"image/color"
	"math"
)

// coverage is an anti-aliased stencil: for every pixel, the fraction of it
// covered by the shapes drawn so far. Shapes of one series are combined by
// taking the maximum, so overlapping segments do not darken at the joints;
// the stencil is then painted in one colour.
type coverage struct {
	rect image.Rectangle
	a    []float32
}

// newCoverage returns an empty stencil over r.
func newCoverage(r image.Rectangle) *coverage {
	return &coverage{rect: r, a: make([]float32, r.Dx()*r.Dy())}
}

// cover raises the coverage of the pixels near the shape whose distance
// function is dist, within the box [x0, x1] x [y0, y1] (continuous
// coordinates; pixel (i, j) spans [i, i+1) x [j, j+1)). A pixel whose
// centre lies within halfWidth of the shape is fully covered; coverage
// falls to zero over the next pixel.
func (c *coverage) cover(x0, y0, x1, y1, halfWidth float64, dist func(px, py float64) float64) {
	r := image.Rect(int(math.Floor(x0-halfWidth-1)), int(math.Floor(y0-halfWidth-1)),
		int(math.Ceil(x1+halfWidth+1)), int(math.Ceil(y1+halfWidth+1))).Intersect(c.rect)
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			v := float32(math.Min(1, halfWidth+0.5-dist(float64(px)+0.5, float64(py)+0.5)))
			i := (py-c.rect.Min.Y)*c.rect.Dx() + px - c.rect.Min.X
			if v > c.a[i] {
				c.a[i] = v
			}
		}
	}
}

// segment covers a line from (x0, y0) to (x1, y1) of width 2*halfWidth.
func (c *coverage) segment(x0, y0, x1, y1, halfWidth float64) {
	dx, dy := x1-x0, y1-y0
	l2 := dx*dx + dy*dy
	c.cover(math.Min(x0, x1), math.Min(y0, y1), math.Max(x0, x1), math.Max(y0, y1), halfWidth,
		func(px, py float64) float64 {
			t := 0.0
			if l2 > 0 {
				t = math.Max(0, math.Min(1, ((px-x0)*dx+(py-y0)*dy)/l2))
			}
			return math.Hypot(px-x0-t*dx, py-y0-t*dy)
		})
}

// disc covers a filled circle of radius r centred on (x, y).
func (c *coverage) disc(x, y, r float64) {
	c.cover(x, y, x, y, r, func(px, py float64) float64 { return math.Hypot(px-x, py-y) })
}

// paint blends col into img wherever the stencil covers it.
func (c *coverage) paint(img *image.RGBA, col color.RGBA) {
	r := c.rect.Intersect(img.Bounds())
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			a := c.a[(py-c.rect.Min.Y)*c.rect.Dx()+px-c.rect.Min.X]
			if a <= 0 {
				continue
			}
			o := img.PixOffset(px, py)
			p := img.Pix[o : o+3 : o+3]
			p[0] = blend(p[0], col.R, a)
			p[1] = blend(p[1], col.G, a)
			p[2] = blend(p[2], col.B, a)
		}
	}
}

// blend mixes channel value src into dst with weight a in [0, 1].
func blend(dst, src uint8, a float32) uint8 {
	return uint8(math.Round(float64(float32(dst)*(1-a) + float32(src)*a)))
}

// fillRect paints r (clipped to img) in col.
func fillRect(img *image.RGBA, r image.Rectangle, col color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, col)
		}
	}
}
