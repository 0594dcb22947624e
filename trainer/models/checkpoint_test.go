package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCheckpoints makes <run>/checkpoints with the given iter-* folders,
// complete (with state.json) or not, and latest holding latest ("" for no
// file).
func fakeCheckpoints(t *testing.T, latest string, folders map[string]bool) string {
	t.Helper()
	run := t.TempDir()
	root := checkpointsDir(run)
	for name, whole := range folders {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if whole {
			if err := os.WriteFile(filepath.Join(root, name, "state.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if latest != "" {
		if err := os.WriteFile(filepath.Join(root, "latest"), []byte(latest+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

// FindCheckpoint takes the checkpoint latest names when it is complete and
// otherwise falls back, with a warning naming the problem, to the newest
// complete iter-* folder (an incomplete newer one is skipped).
func TestFindCheckpointFallsBack(t *testing.T) {
	two := map[string]bool{"iter-000002": true, "iter-000003": true, "iter-000004": false}
	for _, tc := range []struct {
		name, latest string
		folders      map[string]bool
		want, warn   string
	}{
		{"latest good", "iter-000002", two, "iter-000002", ""},
		{"latest names a missing folder", "iter-000009", two, "iter-000003", `names "iter-000009"`},
		{"latest names an incomplete folder", "iter-000004", two, "iter-000003", `names "iter-000004"`},
		{"latest is garbage", "../../etc", two, "iter-000003", `names "../../etc"`},
		{"latest is missing", "", two, "iter-000003", "it is missing"},
		{"nothing complete", "iter-000004", map[string]bool{"iter-000004": false}, "", ""},
		{"no checkpoints", "", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := fakeCheckpoints(t, tc.latest, tc.folders)
			dir, warning, err := FindCheckpoint(run)
			if err != nil {
				t.Fatal(err)
			}
			if got := filepath.Base(dir); (tc.want == "" && dir != "") || (tc.want != "" && got != tc.want) {
				t.Errorf("checkpoint %q, want %q", dir, tc.want)
			}
			if (tc.warn == "") != (warning == "") || !strings.Contains(warning, tc.warn) {
				t.Errorf("warning %q, want one containing %q", warning, tc.warn)
			}
		})
	}
}
