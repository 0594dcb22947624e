package report

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

//go:embed page.tmpl
var pageTmpl string

//go:embed style.css
var pageCSS string

// pageTemplate renders a report or a comparison; html/template escapes
// every value from the store for its context.
var pageTemplate = template.Must(template.New("page").Parse(pageTmpl))

// page is what the template shows.
type page struct {
	Kind    string // "Training report" or "Run comparison"
	Title   string
	Compare bool
	Meta    []metaItem
	Figures []figure
	Tables  []table
	Configs []configView
	Samples []sampleView
	Sources []string // the store paths read
	CSS     template.CSS
}

// metaItem is one "label value" pair under the title.
type metaItem struct{ Label, Value string }

// figure is a chart embedded in the page as a data URI.
type figure struct {
	Title, File string
	// Src is the attribute src="data:image/png;base64,...", built here
	// from the PNG (base64 needs no escaping; escaping its '+' as "&#43;"
	// would grow the page by a tenth).
	Src template.HTMLAttr
}

// table is a results table; numbers are preformatted.
type table struct {
	Caption, Note string
	Head          []string
	Rows          []row
}

// row is one table row; Total marks an overall row.
type row struct {
	Cells []string
	Total bool
}

// configView is one run's configuration, pretty-printed.
type configView struct{ Label, JSON string }

// writeCharts renders the charts as PNG files in dir and returns them as
// figures with the PNG embedded.
func writeCharts(dir string, charts []namedChart) ([]figure, error) {
	var figs []figure
	for _, nc := range charts {
		b, err := encodePNG(nc.c)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, nc.file)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		figs = append(figs, figure{Title: nc.c.title, File: nc.file,
			Src: template.HTMLAttr(`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(b) + `"`)})
	}
	return figs, nil
}

// writePage renders p to dir/name and returns the file's path.
func writePage(dir, name string, p page) (string, error) {
	p.CSS = template.CSS(pageCSS)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// prettyJSON indents a JSON document for display, keeping its key order;
// text that is not JSON is shown as it is.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

// num formats a number for a table: NaN as "n/a", at most four
// significant digits below 10000, whole numbers above.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 0) || math.Abs(v) >= 1e4:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Clip shortens s for a person to read: at most n characters (runes), the
// last of them "…" when s was cut, invalid UTF-8 replaced so that a page
// or a terminal shows it whole. The report, trainer inspect and the CLI's
// tables all clip with it.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
