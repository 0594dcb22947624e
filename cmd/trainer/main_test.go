package main

// The CLI tests build the trainer binary once and run it as a user would,
// asserting exit codes, output and the files each subcommand writes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	binPath string // the trainer binary built by TestMain
	workDir string // a scratch folder every command runs in
)

// cmdTimeout bounds one command: the slowest (the tiny training run) takes
// seconds, so hitting it means something hangs.
const cmdTimeout = 3 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "trainer-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli tests:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binPath = filepath.Join(tmp, "trainer")
	workDir = filepath.Join(tmp, "work")
	if err := os.Mkdir(workDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "cli tests:", err)
		return 1
	}
	build := exec.Command("go", "build", "-tags", "sqlite_fts5", "-o", binPath, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "cli tests: go build of the trainer failed (is build/cpu/libagentrl.so built? run make build): %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// result is what one run of the binary produced.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("trainer %s\nexit %d\n--- stdout\n%s\n--- stderr\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runCLI runs the binary in workDir with stdin (may be empty) and returns
// what it did; it fails the test only if the binary could not run at all.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("timed out after %s:\n%s", cmdTimeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("trainer %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// command is the binary with args, run in workDir. OMP_WAIT_POLICY is set
// as the binary would set it itself (by re-executing, which loads libtorch
// twice): the tests run it often enough for that to matter.
func command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = workDir
	cmd.Env = os.Environ()
	if os.Getenv("OMP_WAIT_POLICY") == "" {
		cmd.Env = append(cmd.Env, "OMP_WAIT_POLICY=PASSIVE")
	}
	return cmd
}

// ok runs the binary and fails the test unless it exits 0.
func ok(t *testing.T, args ...string) result {
	t.Helper()
	r := runCLI(t, "", args...)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	return r
}

// fails runs the binary, wants a non-zero exit and every one of want in
// its stderr (where the CLI reports errors).
func fails(t *testing.T, want []string, args ...string) result {
	t.Helper()
	r := runCLI(t, "", args...)
	if r.code == 0 {
		t.Fatalf("want a failure:\n%s", r)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r)
		}
	}
	return r
}

// writeFile writes content to name under a fresh temp folder and returns
// its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
