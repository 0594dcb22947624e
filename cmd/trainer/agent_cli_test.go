package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// agentArgs is tinyRun training the test agent program
// (testdata/world_agent.py) instead of the built-in loop; it skips
// without python3.
func agentArgs(t *testing.T, runs, name string, extra ...string) []string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the test agent program cannot run")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "world_agent.py"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"train", "--run-dir", runs, "--run", name}, tinyRun...)
	args = append(args, "--no-report", "--set", "agent.command=["+py+", "+script+"]")
	return append(args, extra...)
}

// A run trains an agent program: its episodes are stored with their
// gateway requests, the iteration records the prefix-match rate, and a
// stored episode shows with its mask.
func TestTrainAgentProgram(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	ok(t, agentArgs(t, runs, "prog")...)
	store := filepath.Join(runs, "prog", "store.db")
	r := ok(t, "rollouts", "sql", "--store", store,
		"SELECT COUNT(*), SUM(link = 'start'), SUM(status = 200) FROM gateway_requests JOIN trajectories USING (tid) WHERE split = 'train' AND iteration = 1")
	f := strings.Fields(lines(r.stdout)[1])
	// 2 prompts x 2 samples: 4 episodes, each starting with one request,
	// of one or two requests each, all answered.
	if n := atoi(t, f[0]); n < 4 || n > 8 || atoi(t, f[1]) != 4 || atoi(t, f[2]) != n {
		t.Fatalf("gateway requests of iteration 1: %v", f)
	}
	r = ok(t, "rollouts", "sql", "--store", store,
		"SELECT json_extract(metrics, '$.prefix_match_rate') IS NOT NULL OR NOT EXISTS (SELECT 1 FROM gateway_requests WHERE link != 'start') FROM iterations WHERE iteration = 1")
	if strings.TrimSpace(lines(r.stdout)[1]) != "1" {
		t.Fatalf("no prefix_match_rate in iteration 1's metrics:\n%s", r)
	}
	show := ok(t, "rollouts", "show", "--store", store, "--mask", "1-train-0-0")
	if !strings.Contains(show.stdout, "1-train-0-0") {
		t.Fatalf("rollouts show:\n%s", show)
	}
}

// An agent program trained asynchronously (rollout.max_staleness 1): each
// stored turn records the policy version that sampled its first token
// through the gateway, within one version of the update that learnt from
// it (versions rebuilt from the metrics: V_0 is iteration 1's, V_i =
// V_{i-1} + optimizer_steps of iteration i), each trajectory its first
// turn's, and the metrics report staleness_max within 1.
func TestTrainAgentProgramAsync(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	// Many epochs make the update slow enough for the next batch's
	// programs to call the gateway while it runs (turns one version
	// behind; the log shows how many).
	ok(t, agentArgs(t, runs, "progasync", "--iterations", "3", "--set", "rollout.max_staleness=1", "--set", "algorithm.epochs=16")...)
	store := filepath.Join(runs, "progasync", "store.db")
	rows := func(q string) [][]string {
		var out [][]string
		for _, l := range lines(ok(t, "rollouts", "sql", "--store", store, q).stdout)[1:] {
			out = append(out, strings.Fields(strings.ReplaceAll(l, "|", " ")))
		}
		return out
	}
	its := rows("SELECT iteration, json_extract(metrics, '$.optimizer_steps'), json_extract(metrics, '$.staleness_max') FROM iterations WHERE iteration >= 1 ORDER BY 1")
	turns := rows(`SELECT t.iteration, MIN(u.policy_version), MAX(u.policy_version), COUNT(*),
	  SUM(t.policy_version != (SELECT f.policy_version FROM turns f WHERE f.tid = t.tid AND f.turn = 0))
	  FROM trajectories t JOIN turns u USING (tid) WHERE t.split = 'train' GROUP BY 1 ORDER BY 1`)
	if len(its) != 3 || len(turns) != 3 {
		t.Fatalf("iterations %v, training turns by iteration %v: want 3 of each", its, turns)
	}
	v := []int{atoi(t, turns[0][1])}
	for i, it := range its {
		v = append(v, v[i]+atoi(t, it[1]))
		if it[2] != "0" && it[2] != "1" && it[2] != "0.0" && it[2] != "1.0" {
			t.Errorf("iteration %s: staleness_max %s, want 0 or 1", it[0], it[2])
		}
	}
	for i, r := range turns {
		iter := i + 1
		lo, hi := v[max(iter-2, 0)], v[iter-1]
		if atoi(t, r[1]) < lo || atoi(t, r[2]) > hi || r[4] != "0" {
			t.Errorf("iteration %d: turn versions %s to %s (%s turns, %s trajectories of another version than their first turn's), want within [%d, %d] and 0",
				iter, r[1], r[2], r[3], r[4], lo, hi)
		}
	}
	t.Logf("versions V_i %v; training turns by iteration (iteration, min, max, count, mismatched) %v", v, turns)
}

// When every episode of an iteration fails (a program that exits 1), the
// run stops with the first failure.
func TestTrainAgentProgramAllFail(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	args := agentArgs(t, runs, "fail")
	args[len(args)-1] = "agent.command=[false]"
	fails(t, []string{"episodes failed, the first with: exit status 1"}, args...)
}

// Killed mid-iteration (SIGKILL, no checkpoint of the iteration), a run
// leaves no agent program running, and resumes: the killed iteration is
// rolled out again, whole.
func TestTrainAgentProgramKilledThenResumed(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	pids := t.TempDir()
	args := agentArgs(t, runs, "killed", "--iterations", "3", "--set", "run.save_every=1",
		"--set", "agent.env=[PIDDIR="+pids+", SLEEP=0.5]")
	// Kill in iteration 2, once its programs run: the evaluation before RL
	// and iteration 1 start 4 programs each, so a 9th pid file is one of
	// iteration 2's (each program sleeps half a second before its first
	// request, so some are still running).
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 9; {
		if ctx.Err() != nil {
			t.Fatal("no program of iteration 2 started")
		}
		time.Sleep(20 * time.Millisecond)
		entries, _ := os.ReadDir(pids)
		n = len(entries)
	}
	if len(livePids(t, pids)) == 0 {
		t.Fatal("no agent program running at the kill")
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		running := livePids(t, pids)
		if len(running) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent programs outlived the killed trainer: %v", running)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The run resumes after its last checkpoint (checkpoints/latest), which
	// the kill may have found a whole iteration behind the stored episodes
	// (stored, not yet checkpointed): the resumed run plays every iteration
	// after the checkpoint.
	store := filepath.Join(runs, "killed", "store.db")
	before := trajectoryCounts(t, store)["train"]
	done := 0
	if b, err := os.ReadFile(filepath.Join(runs, "killed", "checkpoints", "latest")); err == nil {
		done = atoi(t, strings.TrimPrefix(strings.TrimSpace(string(b)), "iter-"))
	}
	if before < 4*done {
		t.Fatalf("checkpoint %d with only %d stored training episodes", done, before)
	}
	r := ok(t, "train", "--run-dir", runs, "--run", "killed", "--resume", "--iterations", "3", "--no-report")
	if strings.Count(r.stderr, `"message":"iteration"`) != 3-done {
		t.Errorf("resumed from checkpoint %d (%d stored training episodes); the resumed run's iterations:\n%s", done, before, r.stderr)
	}
	got2 := ok(t, "rollouts", "sql", "--store", store,
		"SELECT iteration, COUNT(DISTINCT group_idx || '-' || sample_idx) FROM trajectories WHERE split = 'train' GROUP BY iteration ORDER BY iteration")
	if rows := lines(got2.stdout)[1:]; len(rows) != 3 || strings.Join(strings.Fields(rows[2]), " ") != "3 4" {
		t.Fatalf("episodes per iteration after the resume:\n%s", got2.stdout)
	}
}

// livePids are the agent programs (pid files in dir) still running.
func livePids(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err == nil && len(strings.Fields(string(b))) > 2 && strings.Fields(string(b))[2] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// Ctrl-C during an agent program run finishes the iteration (the programs,
// in their own process group, do not see the terminal's signal: none of
// the stored episodes failed or was cancelled) and stops cleanly.
func TestTrainAgentProgramInterrupt(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	args := agentArgs(t, runs, "int", "--iterations", "100000", "--set", "agent.env=[SLEEP=0.3]")
	got := signalled(t, []signalAt{{`"message":"iteration"`, os.Interrupt}}, args...)
	if got.code != 0 || !strings.Contains(got.stderr, "checkpoint written") {
		t.Fatalf("want a clean stop after the interrupt:\n%s", got)
	}
	r := ok(t, "rollouts", "sql", "--store", filepath.Join(runs, "int", "store.db"),
		"SELECT COUNT(*), SUM(stop IN ('cancelled', 'error', 'program_exit', 'program_timeout', 'no_answer', 'output_flood', 'bad_request')) FROM trajectories WHERE split = 'train'")
	f := strings.Fields(lines(r.stdout)[1])
	if atoi(t, f[0]) < 4 || f[1] != "0" {
		t.Fatalf("stored training episodes after the interrupt (count, failed): %v", f)
	}
}

// An agent program that rewrites its history has every episode split into
// segments; their IDs stay unique in every split (training, evaluation and
// the out-of-domain evaluation, whose IDs carry its tag), so the run stores
// them all (the naive-RAG baseline, not the program's, is left out).
func TestTrainAgentProgramSegmentsInEverySplit(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	ok(t, agentArgs(t, runs, "seg", "--set", "data.synthetic.ood_questions=4", "--set", "agent.env=[REWRITE=1]")...)
	store := filepath.Join(runs, "seg", "store.db")
	r := ok(t, "rollouts", "sql", "--store", store,
		"SELECT split || CASE WHEN id LIKE '%-eval-ood-%' THEN '-ood' ELSE '' END AS s, SUM(id LIKE '%.1'), SUM(id NOT LIKE '%.%') FROM trajectories WHERE id NOT LIKE '%-rag-%' GROUP BY s ORDER BY s")
	got := map[string][2]int{}
	for _, l := range lines(r.stdout)[1:] {
		if f := strings.Fields(l); len(f) == 3 {
			got[f[0]] = [2]int{atoi(t, f[1]), atoi(t, f[2])}
		}
	}
	for _, s := range []string{"eval", "eval-ood", "train"} {
		if c := got[s]; c[0] == 0 || c[0] != c[1] {
			t.Errorf("split %s: %d second segments of %d episodes:\n%s", s, c[0], c[1], r.stdout)
		}
	}
}
