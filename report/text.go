package report

import (
	"fmt"
	"image"
	"image/color"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Text sizes of the plots, in pixels.
const (
	labelSize = 12 // tick labels, legend, axis name
	titleSize = 14 // the chart title
)

// goFonts parses the Go fonts (bundled with golang.org/x/image) once.
var goFonts = sync.OnceValues(func() ([2]*opentype.Font, error) {
	var fs [2]*opentype.Font
	for i, ttf := range [][]byte{goregular.TTF, gobold.TTF} {
		f, err := opentype.Parse(ttf)
		if err != nil {
			return fs, fmt.Errorf("parse Go font %d: %w", i, err)
		}
		fs[i] = f
	}
	return fs, nil
})

// faces are the type faces one chart is drawn with. A face keeps buffers,
// so each render makes its own.
type faces struct {
	label, title font.Face
}

// newFaces makes the label (Go Regular) and title (Go Bold) faces.
func newFaces() (faces, error) {
	fs, err := goFonts()
	if err != nil {
		return faces{}, err
	}
	label, err := opentype.NewFace(fs[0], &opentype.FaceOptions{Size: labelSize, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return faces{}, fmt.Errorf("label face: %w", err)
	}
	title, err := opentype.NewFace(fs[1], &opentype.FaceOptions{Size: titleSize, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return faces{}, fmt.Errorf("title face: %w", err)
	}
	return faces{label: label, title: title}, nil
}

// textWidth is the advance of s in face, in whole pixels.
func textWidth(face font.Face, s string) int { return font.MeasureString(face, s).Ceil() }

// drawText writes s with its left end at x and its baseline at y.
func drawText(img *image.RGBA, face font.Face, x, y int, s string, col color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(col), Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
