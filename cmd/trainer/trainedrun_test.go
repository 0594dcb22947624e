package main

import (
	"path/filepath"
	"sync"
	"testing"
)

// tinyRun is the flags of a training job small enough for a test: a world
// of 24 entities and 40 questions of at most 2 hops, held out at the
// default 25% (round(40*0.25) = 10 evaluation, 30 training questions), and
// no out-of-domain questions (the default 60 do not fit in it); a
// 2-layer model of hidden size 32; one iteration of 2 prompts x 2 samples;
// 4 evaluation questions per pass.
var tinyRun = []string{
	"--iterations", "1", "--threads", "1",
	"--set", "data.synthetic.entities=24", "--set", "data.synthetic.questions=40", "--set", "data.synthetic.max_hops=2",
	"--set", "data.synthetic.ood_questions=0",
	"--set", "model.tiny.hidden=32", "--set", "model.tiny.intermediate=64", "--set", "model.tiny.heads=2", "--set", "model.tiny.kv_heads=1",
	"--set", "rollout.batch_size=2", "--set", "rollout.group_size=2", "--set", "rollout.slots=4",
	"--set", "algorithm.mini_batch=4", "--set", "algorithm.micro_batch=4",
	"--set", "sft.demos=8", "--set", "sft.epochs=1", "--set", "eval.max_eval=4",
}

// trained is the one tiny run the tests share: trained on first use.
type trained struct {
	name, runs string // run name and the folder of runs
	out        result // what train printed
}

// dir is the run's folder.
func (r *trained) dir() string { return filepath.Join(r.runs, r.name) }

var (
	shared     trained
	sharedErr  string
	sharedOnce sync.Once
)

// trainedRun trains the shared tiny run the first time it is called and
// returns it; a failed training fails every test that needs it.
func trainedRun(t *testing.T) *trained {
	t.Helper()
	sharedOnce.Do(func() {
		shared = trained{name: "tiny", runs: filepath.Join(workDir, "runs")}
		sharedErr = "training did not finish (see the first test that needed it)"
		args := append([]string{"train", "--run-dir", shared.runs, "--run", shared.name}, tinyRun...)
		shared.out = runCLI(t, "", args...)
		sharedErr = ""
		if shared.out.code != 0 {
			sharedErr = shared.out.String()
		}
	})
	if sharedErr != "" {
		t.Fatalf("the shared tiny training run failed:\n%s", sharedErr)
	}
	return &shared
}
