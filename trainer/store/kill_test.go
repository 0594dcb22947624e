package store

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The kill test's child writes iterations of killBatch trajectories, each of
// killTokens tokens and killTurns turns.
const (
	killEnv    = "AGENTRL_STORE_KILL_CHILD_DB"
	killBatch  = 16
	killTokens = 1000
	killTurns  = 3
)

// TestKillChild is the child process of TestKilledWriterLeavesWholeIterations:
// it resumes the run in the store named by $AGENTRL_STORE_KILL_CHILD_DB and
// writes iterations until it is killed, printing "writing <n>" before and
// "committed <n>" after each.
// Run directly, it skips.
func TestKillChild(t *testing.T) {
	path := os.Getenv(killEnv)
	if path == "" {
		t.Skip("child process of TestKilledWriterLeavesWholeIterations")
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(RunInfo{Name: "killed", Resume: true}); err != nil {
		t.Fatal(err)
	}
	next := 0
	if last, ok, err := s.LastIteration(); err != nil {
		t.Fatal(err)
	} else if ok {
		next = last + 1
	}
	deadline := time.Now().Add(20 * time.Second)                // a safety net; the parent kills long before
	batch := synthBatch(next, killBatch, killTokens, killTurns) // built once, so the child spends its time writing
	for it := next; time.Now().Before(deadline); it++ {
		for i, tr := range batch {
			tr.Iteration, tr.ID = it, fmt.Sprintf("%d-train-%d-%d", it, i/4, i%4)
		}
		fmt.Printf("writing %d\n", it)
		if err := s.WriteIteration(it, map[string]float64{"it": float64(it)}, batch); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("committed %d\n", it)
	}
}

func TestKilledWriterLeavesWholeIterations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "killed", "store.db")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	const rounds = 5
	reported := -1 // the last iteration any child said it committed
	midWrite := 0  // kills that landed between "writing" and "committed"
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan childEvent, 1024)
		go readChildEvents(out, lines)
		// Wait for the child's first commit, then kill it at a random moment
		// while it keeps writing.
	first:
		for {
			select {
			case ev, ok := <-lines:
				if !ok {
					cmd.Wait()
					t.Fatalf("round %d: the child exited before committing", round)
				}
				if ev.committed {
					reported = max(reported, ev.iter)
					break first
				}
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: no commit from the child within 15s", round)
			}
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var lastEv childEvent
		for ev := range lines {
			if ev.committed {
				reported = max(reported, ev.iter)
			}
			lastEv = ev
		}
		if !lastEv.committed {
			midWrite++
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v, want killed by SIGKILL", round, err)
		}
		t.Logf("round %d: killed after committing iteration %d (inside WriteIteration: %v)", round, reported, !lastEv.committed)
	}
	t.Logf("%d of %d kills landed inside WriteIteration", midWrite, rounds)
	if midWrite == 0 {
		// The child spends nearly all its time in WriteIteration, so this
		// is very unlikely; without it the test shows less than it should.
		t.Errorf("no kill landed inside WriteIteration (seed %d): rerun", seed)
	}
	checkWholeIterations(t, path, reported, rounds)
}

// childEvent is one line of the child's output: it started writing or
// committed an iteration.
type childEvent struct {
	iter      int
	committed bool
}

// readChildEvents parses the child's output into events until it closes.
func readChildEvents(r io.Reader, events chan<- childEvent) {
	defer close(events)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		verb, n, ok := strings.Cut(sc.Text(), " ")
		it, err := strconv.Atoi(n)
		if !ok || err != nil || (verb != "writing" && verb != "committed") {
			continue
		}
		events <- childEvent{iter: it, committed: verb == "committed"}
	}
}

// checkWholeIterations reopens a store whose writers were killed and checks
// it is intact and holds only whole iterations, numbered without gaps, and
// at least every iteration a child reported committed.
func checkWholeIterations(t *testing.T, path string, reported, rounds int) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	var check string
	if err := s.db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	var fk int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM pragma_foreign_key_check").Scan(&fk); err != nil || fk != 0 {
		t.Errorf("foreign_key_check: %d violations, %v", fk, err)
	}
	last, ok, err := s.LastIteration()
	if err != nil || !ok || last < reported {
		t.Fatalf("last stored iteration %d (ok %v, %v), but the children reported %d committed", last, ok, err, reported)
	}
	var resumes, iters int
	if err := s.db.QueryRow("SELECT resumes FROM runs WHERE name = 'killed'").Scan(&resumes); err != nil || resumes != rounds-1 {
		t.Errorf("resumes = %d, %v; want %d", resumes, err, rounds-1)
	}
	if err := s.db.QueryRow("SELECT COUNT(*) FROM iterations").Scan(&iters); err != nil || iters != last+1 {
		t.Errorf("%d iteration rows for iterations 0..%d, %v: the numbering has a gap", iters, last, err)
	}
	// Per iteration: every trajectory present, each with all its turns and
	// a token row of the full length.
	rows, err := s.db.Query(`SELECT i.iteration,
		(SELECT COUNT(*) FROM trajectories t WHERE t.run = i.run AND t.iteration = i.iteration),
		(SELECT COUNT(*) FROM turns JOIN trajectories t USING (tid) WHERE t.run = i.run AND t.iteration = i.iteration),
		(SELECT COUNT(*) FROM trajectory_tokens k JOIN trajectories t USING (tid)
			WHERE t.run = i.run AND t.iteration = i.iteration AND length(k.ids) = 4 * ? AND length(k.mask) = ?)
		FROM iterations i ORDER BY i.iteration`, killTokens, killTokens)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var it, nt, nu, nk int
		if err := rows.Scan(&it, &nt, &nu, &nk); err != nil {
			t.Fatal(err)
		}
		if nt != killBatch || nu != killBatch*killTurns || nk != killBatch {
			t.Errorf("iteration %d: %d trajectories, %d turns, %d full token rows; want %d, %d, %d",
				it, nt, nu, nk, killBatch, killBatch*killTurns, killBatch)
		}
	}
	var orphans int
	if err := s.db.QueryRow(`SELECT (SELECT COUNT(*) FROM trajectories t WHERE NOT EXISTS
		(SELECT 1 FROM iterations i WHERE i.run = t.run AND i.iteration = t.iteration))
		+ (SELECT COUNT(*) FROM turns WHERE tid NOT IN (SELECT tid FROM trajectories))
		+ (SELECT COUNT(*) FROM trajectory_tokens WHERE tid NOT IN (SELECT tid FROM trajectories))`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("%d rows outside a stored iteration, %v", orphans, err)
	}
	// The reopened store takes the next iteration.
	if err := s.BeginRun(RunInfo{Name: "killed", Resume: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(last+1, nil, synthBatch(last+1, 2, 200, 1)); err != nil {
		t.Errorf("writing after the kills: %v", err)
	}
}
