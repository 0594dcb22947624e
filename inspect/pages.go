package inspect

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"math"
	"net/http"
	"strconv"

	"github.com/agentrl/agentrl/report"
)

//go:embed assets
var assets embed.FS

// staticFS holds the style sheet and the script, served under /static/.
var staticFS = func() fs.FS {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(err)
	}
	return sub
}()

// pages are the page templates, each parsed with the shared layout;
// html/template escapes every value from the store for its context.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{"num": num, "css": report.CSS,
		"add": func(a, b int) int { return a + b }, "list": func(xs ...string) []string { return xs }}
	out := map[string]*template.Template{}
	for _, name := range []string{"runs", "list", "trajectory", "sql", "error"} {
		out[name] = template.Must(template.New("layout.tmpl").Funcs(funcs).ParseFS(assets, "assets/layout.tmpl", "assets/"+name+".tmpl"))
	}
	return out
}()

// layout is what every page shows around its content.
type layout struct {
	Title string
	Run   *runSource // the run the page is about, nil for the runs page
	Nav   string     // the active tab: runs, trajectories or sql
}

// render writes page name with data and status; a template error (a bug)
// becomes a 500.
func render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := pages[name].Execute(&buf, data); err != nil {
		log.Printf("inspect: render %s: %v", name, err)
		http.Error(w, "internal error rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorPage is the page of a failed request.
type errorPage struct {
	layout
	Status  int
	Text    string // the status's name
	Message string
}

// fail answers with an error page saying what was wrong.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	render(w, status, "error", errorPage{layout: layout{Title: strconv.Itoa(status) + " " + http.StatusText(status)},
		Status: status, Text: http.StatusText(status), Message: msg})
}

// num formats a number for a table: NaN as "n/a", four significant
// digits.
func num(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
