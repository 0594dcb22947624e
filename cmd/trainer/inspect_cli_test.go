package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trainer inspect on the shared run: it prints the address of a loopback
// port, serves the run (its 16 trajectories, token text from the run's
// final tokenizer), and stops cleanly on SIGINT. The run's TensorBoard
// files are beside its store.
func TestInspect(t *testing.T) {
	run := trainedRun(t)
	if files, _ := filepath.Glob(filepath.Join(run.dir(), "tb", "events.out.tfevents.*")); len(files) != 1 {
		t.Errorf("TensorBoard event files %v, want one in %s/tb", files, run.dir())
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, "inspect", "--run-dir", run.runs, "--run", run.name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("inspect printed no address: %v", err)
	}
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:[0-9]+/)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("inspect printed %q, want the address of a loopback port", line)
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, resp.StatusCode)
		}
		return string(b)
	}
	if body := get(""); !strings.Contains(body, run.name) || !strings.Contains(body, "/chart/0.png") {
		t.Error("the runs page lacks the run or its charts")
	}
	list := get("r/0/trajectories")
	if n := strings.Count(list, `class="tid"`); n != 16 {
		t.Errorf("%d trajectories listed, want the run's 16", n)
	}
	tid := regexp.MustCompile(`href="/r/0/t/([0-9]+)"`).FindStringSubmatch(list)
	if tid == nil {
		t.Fatal("no trajectory link")
	}
	// With the run's final tokenizer the tokens are text, not ⟨ids⟩.
	if page := get("r/0/t/" + tid[1]); !strings.Contains(page, `"text":[`) || strings.Contains(page, "⟨") {
		t.Error("the token view shows ids, not the final tokenizer's text")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("inspect after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("inspect did not stop on SIGINT")
	}
}

func TestInspectErrors(t *testing.T) {
	fails(t, []string{"name at least one --run NAME"}, "inspect")
	fails(t, []string{"run nosuch", "no store at"}, "inspect", "--run-dir", t.TempDir(), "--run", "nosuch")
	// A name given as a store is refused, naming --run.
	fails(t, []string{"no file or folder nosuch", "--run nosuch"}, "inspect", "--run-dir", t.TempDir(), "--store", "nosuch")
	empty := t.TempDir()
	fails(t, []string{empty, "holds no store.db"}, "inspect", "--store", empty)
	// A store given as an argument is refused, naming --store.
	fails(t, []string{`unexpected argument "` + empty + `"`, "--store " + empty}, "inspect", empty)
}
