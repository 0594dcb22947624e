package buildcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make cuda` with LIBTORCH pointing at a folder without a CUDA libtorch
// stops before building anything, says where it looked and how to get one.
func TestMakeCudaWithoutLibtorch(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	root := repoRoot(t)
	empty := t.TempDir()
	cmd := exec.Command(makeBin, "-C", root, "cuda", "LIBTORCH="+empty)
	cmd.Env = withoutMakeVars(os.Environ()) // standalone even under `make test`
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make cuda succeeded without a CUDA libtorch:\n%s", out)
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("make cuda: %v", err)
	}
	looked := filepath.Join(empty, "lib", "libtorch_cuda.so")
	for _, want := range []string{"no CUDA libtorch found", "looked for " + looked, "LIBTORCH=", "Nothing was built"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make cuda output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "c++ ") || strings.Contains(string(out), "go build") {
		t.Errorf("make cuda started building:\n%s", out)
	}
}

// The Go files behind the cuda build tag (torch/cgo_cuda.go) type-check:
// the CUDA build must not be the first to find they are broken.
func TestVetCudaTag(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the torch package with cgo")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	cmd := exec.Command(goBin, "vet", "-tags", "sqlite_fts5,cuda", "./torch/")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet -tags sqlite_fts5,cuda ./torch/: %v\n%s", err, out)
	}
}

// withoutMakeVars drops the variables an enclosing make passes to its
// children (flags, jobserver, recursion depth).
func withoutMakeVars(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		out = append(out, kv)
	}
	return out
}
