// Package pyinterop runs the Python side of the interop tests: scripts that
// put agentrl's files through the real libraries (transformers, PEFT,
// TensorBoard, tokenizers) or make files with them for agentrl to read.
// Python is for tests only; the trainer never runs it.
//
// The interpreter is the one $AGENTRL_PYTHON names (`make interop` sets it
// to the cached virtual environment of scripts/venv.sh). Where it is unset,
// the tests that need it skip, saying why, so a plain `go test` stays fast
// and needs no Python; set to one that cannot import the libraries, they
// fail.
package pyinterop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Env is the environment variable naming the interpreter.
const Env = "AGENTRL_PYTHON"

// modules are what the interop scripts import; an interpreter lacking one
// is not the interop environment.
var modules = []string{"torch", "transformers", "peft", "tensorboard", "tokenizers", "safetensors"}

var (
	checkOnce sync.Once
	checkErr  error
)

// check asks the interpreter py for the modules, once per test binary.
func check(py string) error {
	checkOnce.Do(func() {
		probe := "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
		out, err := exec.Command(py, append([]string{"-c", probe}, modules...)...).CombinedOutput()
		if err != nil {
			checkErr = fmt.Errorf("$%s=%s cannot import %s: %v\n%s", Env, py, strings.Join(modules, ", "), err, tail(out))
		}
	})
	return checkErr
}

// Python returns the interpreter $AGENTRL_PYTHON names. Unset, it skips t,
// saying so; set to one that cannot import the libraries, it fails t (the
// interop suite was asked for and cannot run).
func Python(t testing.TB) string {
	t.Helper()
	py := os.Getenv(Env)
	if py == "" {
		t.Skipf("interop test: $%s is not set (make interop sets it to the Python environment of scripts/venv.sh torch-2.15, with %s)",
			Env, strings.Join(modules, ", "))
	}
	if err := check(py); err != nil {
		t.Fatalf("interop test: %v", err)
	}
	return py
}

// Run runs the Python script at path (relative to the test's package, e.g.
// testdata/interop/x.py) with two arguments: a file holding in as JSON and
// a file for its answer. It decodes the answer into out (when not nil).
// The script's stderr is logged; a failure fails t with its output.
func Run(t testing.TB, script string, in, out any) {
	t.Helper()
	py := Python(t)
	dir := t.TempDir()
	inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("pyinterop: input of %s: %v", script, err)
	}
	if err := os.WriteFile(inPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, abs, inPath, outPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// One thread per core is the default; the transformers' warnings about
	// random weights and generation flags are noise here.
	cmd.Env = append(os.Environ(), "TRANSFORMERS_VERBOSITY=error", "TOKENIZERS_PARALLELISM=false", "PYTHONUNBUFFERED=1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyinterop: %s %s: %v\nstdout:\n%s\nstderr:\n%s", py, script, err, tail(stdout.Bytes()), tail(stderr.Bytes()))
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Logf("%s stderr:\n%s", filepath.Base(script), tail([]byte(s)))
	}
	if out == nil {
		return
	}
	ans, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatalf("pyinterop: %s wrote no answer: %v\nstdout:\n%s", script, err, tail(stdout.Bytes()))
	}
	if err := json.Unmarshal(ans, out); err != nil {
		t.Fatalf("pyinterop: answer of %s: %v", script, err)
	}
}

// tail is the last 4000 bytes of b, enough to see an exception.
func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
