package records

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/trainer/config"
)

// The store counts a start from a checkpoint as a resume and a fresh start
// (here: the run was stopped before its first checkpoint and started again)
// as none.
func TestOpenStoreCountsOnlyResumes(t *testing.T) {
	cfg := config.Default()
	cfg.Run.Dir, cfg.Run.Name = t.TempDir(), "r"
	dir := t.TempDir()
	resumes := func() int {
		t.Helper()
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "store.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow("SELECT resumes FROM runs WHERE name = 'r'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, resumed := range []bool{false, false, true, true} {
		r, err := Open(cfg, dir, "rev", resumed, 0, func() bool { return false }, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		want := max(0, i-1)
		if got := resumes(); got != want {
			t.Errorf("start %d (resumed %v): runs.resumes = %d, want %d", i+1, resumed, got, want)
		}
	}
}
