package archdoc

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/architecture.md's generated part")

const (
	root   = "../.."
	module = "github.com/agentrl/agentrl"
	doc    = "../../docs/architecture.md"
)

// The module's packages as archdoc reads them.
func modulePackages(t *testing.T) map[string]*Package {
	t.Helper()
	pkgs, err := Module(root, module)
	if err != nil {
		t.Fatal(err)
	}
	if pkgs["trainer"] == nil || pkgs["cmd/trainer"] == nil {
		t.Fatalf("read %d packages without trainer and cmd/trainer: not the module's root", len(pkgs))
	}
	return pkgs
}

// docs/architecture.md's generated part (layers, graph, counts) is what
// the sources give today; -update rewrites it.
func TestArchitectureDocIsCurrent(t *testing.T) {
	pkgs := modulePackages(t)
	methods, files, fields, err := Methods(filepath.Join(root, "trainer"), "Trainer")
	if err != nil {
		t.Fatal(err)
	}
	want := Markdown(pkgs, methods, files, fields)
	b, err := os.ReadFile(doc)
	if os.IsNotExist(err) {
		t.Skipf("docs/architecture.md not found beside the module (%v): nothing to compare", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, Begin), strings.Index(text, End)
	if i < 0 || j < i {
		t.Fatalf("docs/architecture.md has no generated part between %q and %q", Begin, End)
	}
	got := text[i : j+len(End)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(doc, []byte(text[:i]+want+text[j+len(End):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/architecture.md's generated part is stale: run `go test ./internal/archdoc -update` (first differing line: %s)", firstDiff(got, want))
}

// The root trainer package stays the loop: at most 1,500 lines of Go and
// at most 25 methods on Trainer. A part that grows past them belongs in a
// package of its own beside the loop, as the records, the models and the
// warm start went.
func TestTrainerStaysTheLoop(t *testing.T) {
	pkgs := modulePackages(t)
	if n := pkgs["trainer"].Lines; n > 1500 {
		t.Errorf("the trainer package has %d lines of Go, more than 1,500: move a part that is not the loop into a package of its own", n)
	}
	methods, _, _, err := Methods(filepath.Join(root, "trainer"), "Trainer")
	if err != nil {
		t.Fatal(err)
	}
	if methods > 25 {
		t.Errorf("Trainer has %d methods, more than 25: move a part that is not the loop into a package of its own", methods)
	}
}

// firstDiff quotes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := range max(len(g), len(w)) {
		var a, b string
		if k < len(g) {
			a = g[k]
		}
		if k < len(w) {
			b = w[k]
		}
		if a != b {
			return "doc " + quoteLine(a) + ", sources " + quoteLine(b)
		}
	}
	return "none"
}

func quoteLine(s string) string {
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return "`" + s + "`"
}

// No package imports one above its layer, its tests and test fixtures
// included.
func TestNoImportUpTheLayers(t *testing.T) {
	for _, bad := range Check(modulePackages(t)) {
		t.Error(bad)
	}
}

// The check sees an import up the layers, in a package's tests as in its
// code, and a package in no layer.
func TestCheckFindsAnImportUp(t *testing.T) {
	pkgs := map[string]*Package{
		"decoding":         {Path: "decoding", Imports: []string{"tokenizer"}},
		"tokenizer":        {Path: "tokenizer", TestImports: []string{"decoding"}},
		"gateway/gatewayx": {Path: "gateway/gatewayx", Imports: []string{"trainer/learner"}},
		"trainer/learner":  {Path: "trainer/learner"},
		"nowhere":          {Path: "nowhere"},
		"envs":             {Path: "envs", TestImports: []string{"envs/tools/calc", "envs/envstest"}},
		"envs/tools/calc":  {Path: "envs/tools/calc", Imports: []string{"envs/tools"}},
		"envs/tools":       {Path: "envs/tools", Imports: []string{"envs"}},
		"envs/envstest":    {Path: "envs/envstest", Imports: []string{"envs"}},
	}
	bad := Check(pkgs)
	want := []string{"envs's tests import envs/tools/calc, which imports envs", "gateway/gatewayx imports trainer/learner",
		"nowhere is in no layer", "tokenizer's tests import decoding, a layer above", "tokenizer's tests import decoding, which imports tokenizer"}
	if len(bad) != len(want) {
		t.Fatalf("Check = %q, want %d findings", bad, len(want))
	}
	for k, w := range want {
		if !strings.HasPrefix(bad[k], w) {
			t.Errorf("finding %d = %q, want it to start %q", k, bad[k], w)
		}
	}
}

// Module reads imports, test imports, lines, functions and the package
// comment's first sentence of a package,
// and Methods a type's methods and fields, from sources written here.
func TestModuleAndMethodsReadSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "// Package a holds\n// things. More of them.\npackage a\n\nimport (\n\t\"fmt\"\n\t\"m/b\"\n)\n\ntype T struct{ x, y int; z string }\n\nfunc (t *T) M() { fmt.Println(b.V) }\nfunc (T) N()    {}\nfunc F()        {}\n")
	write("a/b.go", "package a\n\nfunc (t T) O() {}\n")
	write("a/a_test.go", "package a\n\nimport (\n\t\"m/b\"\n\t\"m/c\"\n)\n\nfunc G() { _ = b.V; _ = c.V }\n")
	write("b/b.go", "package b\n\nvar V = 1\n")
	write("c/c.go", "package c\n\nvar V = 2\n")
	write("a/testdata/x.go", "package broken(\n")
	pkgs, err := Module(dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	a := pkgs["a"]
	if a == nil || a.Files != 2 || a.Lines != 17 || a.Funcs != 4 || strings.Join(a.Imports, ",") != "b" || strings.Join(a.TestImports, ",") != "c" || a.Doc != "holds things." {
		t.Fatalf("package a read as %+v, want 2 files, 17 lines, 4 functions, imports b, tests c, doc \"holds things.\"", a)
	}
	methods, files, fields, err := Methods(filepath.Join(dir, "a"), "T")
	if err != nil || methods != 3 || files != 2 || fields != 3 {
		t.Fatalf("Methods = %d in %d files, %d fields, %v; want 3 in 2, 3", methods, files, fields, err)
	}
}
