package logging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readJSONLines parses every line of path as a JSON object.
func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestFileGetsJSONLinesWithRunAndIteration(t *testing.T) {
	file := filepath.Join(t.TempDir(), "runs", "exp", "log.jsonl") // folders created by New
	var console bytes.Buffer
	l, closer, err := New("info", FormatConsole, &console, file)
	if err != nil {
		t.Fatal(err)
	}
	l = WithRun(l, "exp")
	l.Info().Msg("start")
	it := WithIteration(l, 3)
	it.Info().Float64("reward", 0.5).Msg("iteration done")
	it.Debug().Msg("below the level")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readJSONLines(t, file)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (debug is below info)", len(lines))
	}
	for _, m := range lines {
		if m[FieldRun] != "exp" || m["level"] != "info" || m["time"] == nil {
			t.Errorf("line %v lacks run, level or time", m)
		}
	}
	if _, ok := lines[0][FieldIteration]; ok {
		t.Errorf("first line has an iteration: %v", lines[0])
	}
	// JSON numbers decode as float64
	if lines[1][FieldIteration] != 3.0 || lines[1]["reward"] != 0.5 || lines[1]["message"] != "iteration done" {
		t.Errorf("second line %v", lines[1])
	}
	// the console got the same events as text, not JSON
	text := console.String()
	if strings.HasPrefix(text, "{") || !strings.Contains(text, "iteration done") || !strings.Contains(text, "iteration=3") {
		t.Errorf("console output %q", text)
	}
}

func TestFileAppends(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log.jsonl")
	for i := range 2 {
		l, closer, err := New("info", FormatJSON, &bytes.Buffer{}, file)
		if err != nil {
			t.Fatal(err)
		}
		l.Info().Int("n", i).Msg("x")
		closer.Close()
	}
	if n := len(readJSONLines(t, file)); n != 2 {
		t.Fatalf("%d lines after two runs, want 2 (a resumed run appends)", n)
	}
}

// TestAutoFormat: a buffer is not a terminal, so auto (and "") write JSON.
func TestAutoFormat(t *testing.T) {
	for _, format := range []string{FormatAuto, "", FormatJSON} {
		var buf bytes.Buffer
		l, closer, err := New("debug", format, &buf, "")
		if err != nil {
			t.Fatal(err)
		}
		l.Debug().Str("k", "v").Msg("hello")
		closer.Close()
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["k"] != "v" || m["level"] != "debug" {
			t.Errorf("format %q: %q is not the JSON event (%v)", format, buf.String(), err)
		}
	}
}

func TestLevels(t *testing.T) {
	var buf bytes.Buffer
	l, _, err := New("warn", FormatJSON, &buf, "")
	if err != nil {
		t.Fatal(err)
	}
	l.Info().Msg("no")
	l.Warn().Msg("yes")
	l.Error().Msg("yes")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines at level warn, want 2: %q", n, buf.String())
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		level, format, file, want string
	}{
		{"loud", "json", "", `log level "loud"`},
		{"info", "xml", "", `log format "xml"`},
		{"info", "json", "/proc/agentrl-test/log.jsonl", "/proc/agentrl-test/log.jsonl"},
	}
	for _, c := range cases {
		_, _, err := New(c.level, c.format, &bytes.Buffer{}, c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q, %q, %q) error %v, want one containing %q", c.level, c.format, c.file, err, c.want)
		}
	}
}
