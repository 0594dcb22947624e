package pyinterop

import (
	"os"
	"path/filepath"
	"testing"
)

// Run hands the script its input as JSON and decodes the answer it
// writes: a script that doubles each number.
func TestInteropRun(t *testing.T) {
	Python(t)
	script := filepath.Join(t.TempDir(), "double.py")
	body := "import json, sys\nxs = json.load(open(sys.argv[1]))['xs']\njson.dump({'ys': [2 * x for x in xs]}, open(sys.argv[2], 'w'))\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out struct{ Ys []float64 }
	Run(t, script, map[string]any{"xs": []float64{1, 2.5, -3}}, &out)
	if len(out.Ys) != 3 || out.Ys[0] != 2 || out.Ys[1] != 5 || out.Ys[2] != -6 {
		t.Fatalf("answer %v, want [2 5 -6]", out.Ys)
	}
}
