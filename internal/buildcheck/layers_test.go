package buildcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path, the prefix of every package of the project.
const module = "github.com/agentrl/agentrl/"

// listed is what `go list -json` says of a package, and where it sits:
// its top-level folder and whether it is a fixture.
type listed struct {
	ImportPath                string
	Imports, Deps             []string
	TestImports, XTestImports []string
	Error                     *struct{ Err string }
	folder                    string
	fixture                   bool
}

// goList lists every package of the module.
func goList(t *testing.T) map[string]*listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GOFLAGS=-tags=sqlite_fts5")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		rel := strings.TrimPrefix(p.ImportPath, module)
		p.folder, _, _ = strings.Cut(rel, "/")
		p.fixture = strings.HasSuffix(rel[strings.LastIndex(rel, "/")+1:], "test")
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

// project keeps the paths of the module's packages.
func project(paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, module) {
			out = append(out, p)
		}
	}
	return out
}

// Nothing imports back up the layers, test packages and test fixtures
// included. The layers are the module's top-level folders (cmd, trainer,
// gateway, decoding, toolcall, envs, tokenizer, torch, ...), ordered by
// what the packages that are not fixtures (a fixture is a package whose
// name ends in "test", as gatewaytest) import. A package, its tests or
// what they import reach back up when they reach a folder that imports
// the package's folder, or within a folder a package that imports the
// package (its own fixtures, P/...test, excepted): gateway's tests once
// reached trainer/learner through gatewaytest while trainer/program
// imports the gateway.
func TestNoImportBackUpTheLayers(t *testing.T) {
	pkgs := goList(t)
	above := map[string]map[string]bool{} // folder -> folders it imports
	for _, p := range pkgs {
		if p.fixture {
			continue
		}
		for _, q := range project(p.Imports) {
			if f := pkgs[q].folder; f != p.folder {
				if above[p.folder] == nil {
					above[p.folder] = map[string]bool{}
				}
				above[p.folder][f] = true
			}
		}
	}
	// importsFolder reports whether folder a imports folder b, directly
	// or not.
	importsFolder := func(a, b string) bool {
		seen, todo := map[string]bool{a: true}, []string{a}
		for len(todo) > 0 {
			x := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for y := range above[x] {
				if y == b {
					return true
				}
				if !seen[y] {
					seen[y] = true
					todo = append(todo, y)
				}
			}
		}
		return false
	}
	paths := make([]string, 0, len(pkgs))
	for path := range pkgs {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		p := pkgs[path]
		reach := map[string]bool{}
		for _, q := range project(p.Deps) {
			reach[q] = true
		}
		for _, q := range project(append(slices.Clone(p.TestImports), p.XTestImports...)) {
			reach[q] = true
			for _, r := range project(pkgs[q].Deps) {
				reach[r] = true
			}
		}
		for q := range reach {
			o := pkgs[q]
			switch {
			case q == path || o == nil:
			case o.folder != p.folder:
				if importsFolder(o.folder, p.folder) {
					t.Errorf("%s (or its tests) reaches %s, and %s imports %s", strings.TrimPrefix(path, module),
						strings.TrimPrefix(q, module), o.folder, p.folder)
				}
			case slices.Contains(o.Deps, path) && !(o.fixture && strings.HasPrefix(q, path+"/")):
				t.Errorf("%s (or its tests) reaches %s, which imports it", strings.TrimPrefix(path, module), strings.TrimPrefix(q, module))
			}
		}
	}
}
