package archdoc

import (
	"fmt"
	"slices"
	"strings"
)

// Layer is one layer of the module: the packages in it, each named by its
// path or, ending in "/...", by a folder and everything under it.
type Layer struct {
	Name     string
	Packages []string
}

// Layers are the module's layers, bottom first. A package imports only
// packages of its own layer or the layers below it, its tests and test
// fixtures included; every package is in exactly one layer (the first that
// names it).
var Layers = []Layer{
	{"foundations: internal helpers, the trajectory, the tokenizer, libtorch, the environments and tools", []string{
		"internal/...", "trajectory/...", "tokenizer/...", "torch/...", "toolcall", "envs/...", "tensorboard",
	}},
	{"the trainer's plain data: store, metrics, results, packing, memory, ranks", []string{
		"trainer/store", "trainer/metric", "trainer/results", "trainer/packing", "trainer/memory", "trainer/dist",
	}},
	{"decoding and serving: the decoder contract, the continuous-batching core, the gateway", []string{
		"decoding/...", "gateway/...",
	}},
	{"rollouts and the update", []string{"trainer/rollout", "trainer/algo", "trainer/loss", "trainer/learner"}},
	{"beside the loop: the run's configuration, episodes, models, tasks and warm start; the agent; agent programs", []string{
		"trainer/config", "trainer/episodes", "trainer/models", "trainer/datasets", "trainer/warmstart",
		"trainer/agent", "trainer/program", "trainer/records",
	}},
	{"the loop, the dry run and the run tooling", []string{"trainer", "trainer/dryrun", "bench", "report", "inspect"}},
	{"jobs and experiments", []string{"job", "experiment"}},
	{"the command", []string{"cmd/..."}},
}

// LayerOf is the index in Layers of the layer holding the package, or -1.
func LayerOf(path string) int {
	for i, l := range Layers {
		for _, pat := range l.Packages {
			if dir, ok := strings.CutSuffix(pat, "/..."); ok {
				if path == dir || strings.HasPrefix(path, dir+"/") {
					return i
				}
			} else if path == pat {
				return i
			}
		}
	}
	return -1
}

// Check lists every package in no layer, every import, test imports
// included, of a package above the importer's layer, and every test
// import of a package that imports the package under test (its own
// fixtures, P/...test, excepted): a test that reaches back up within a
// layer.
func Check(pkgs map[string]*Package) []string {
	var bad []string
	for _, path := range sortedPaths(pkgs) {
		p := pkgs[path]
		lp := LayerOf(path)
		if lp < 0 {
			bad = append(bad, fmt.Sprintf("%s is in no layer of archdoc.Layers", show(path)))
			continue
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports) {
			what := "imports"
			if !slices.Contains(p.Imports, imp) {
				what = "'s tests import"
			}
			if li := LayerOf(imp); li > lp {
				bad = append(bad, fmt.Sprintf("%s%s %s, a layer above it (%q over %q)", show(path), spaced(what), imp, Layers[li].Name, Layers[lp].Name))
			}
		}
		for _, imp := range p.TestImports {
			if !(Fixture(imp) && strings.HasPrefix(imp, path+"/")) && reaches(pkgs, imp, path) {
				bad = append(bad, fmt.Sprintf("%s's tests import %s, which imports %s", show(path), imp, show(path)))
			}
		}
	}
	return bad
}

// reaches says whether package from imports package to, directly or not,
// through non-test imports.
func reaches(pkgs map[string]*Package, from, to string) bool {
	seen, todo := map[string]bool{from: true}, []string{from}
	for len(todo) > 0 {
		p := pkgs[todo[len(todo)-1]]
		todo = todo[:len(todo)-1]
		if p == nil {
			continue
		}
		for _, q := range p.Imports {
			if q == to {
				return true
			}
			if !seen[q] {
				seen[q] = true
				todo = append(todo, q)
			}
		}
	}
	return false
}

// spaced puts a space before a verb, none before a possessive.
func spaced(what string) string {
	if strings.HasPrefix(what, "'") {
		return what
	}
	return " " + what
}

// show names the module's root package as "(root)".
func show(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// sortedPaths are the packages' paths in order.
func sortedPaths(pkgs map[string]*Package) []string {
	var out []string
	for p := range pkgs {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
