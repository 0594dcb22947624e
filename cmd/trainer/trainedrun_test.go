package main

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// tinyRun is the flags of a training job small enough for a test: a world
// of 24 entities and 40 questions of at most 2 hops, a quarter held out
// (round(40*0.25) = 10 evaluation, 30 training questions), and no
// out-of-domain questions (the default 100 do not fit in it), shared by
// training and test (fresh worlds off, the general warm start); a
// 2-layer model of hidden size 32; one iteration of 2 prompts x 2 samples;
// 4 evaluation questions per pass.
var tinyRun = slices.Clip(append([]string{"--iterations", "1", "--threads", "1"}, append(tinyWorld,
	"--set", "model.tiny.hidden=32", "--set", "model.tiny.intermediate=64", "--set", "model.tiny.heads=2", "--set", "model.tiny.kv_heads=1",
	"--set", "rollout.batch_size=2", "--set", "rollout.group_size=2", "--set", "rollout.slots=4",
	"--set", "algorithm.mini_batch=4", "--set", "algorithm.micro_batch=4",
	"--set", "sft.demos=8", "--set", "sft.epochs=1", "--set", "eval.max_eval=4")...))

// tinyWorld is tinyRun's world, which other test runs share. (tinyRun is
// clipped: an append to it copies, so tests running at once never share
// its backing array.)
var tinyWorld = []string{
	"--set", "data.synthetic.entities=24", "--set", "data.synthetic.questions=40", "--set", "data.synthetic.max_hops=2",
	"--set", "data.synthetic.ood_questions=0", "--set", "data.synthetic.test_fraction=0.25",
	"--set", "data.synthetic.fresh_worlds=false", "--set", "sft.warm_start=general",
}

// trained is a tiny run the tests share: trained on first use.
type trained struct {
	name, runs string // run name and the folder of runs
	out        result // what train printed
}

// dir is the run's folder.
func (r *trained) dir() string { return filepath.Join(r.runs, r.name) }

// sharedRun trains the run called name with flags the first time a test
// needs it; a failed training fails every test that needs it.
type sharedRun struct {
	name  string
	flags []string
	once  sync.Once
	run   trained
	err   string
}

// get trains the run the first time it is called and returns it.
func (s *sharedRun) get(t *testing.T) *trained {
	t.Helper()
	s.once.Do(func() {
		s.run = trained{name: s.name, runs: filepath.Join(workDir, "runs")}
		s.err = "training did not finish (see the first test that needed it)"
		args := append([]string{"train", "--run-dir", s.run.runs, "--run", s.run.name}, s.flags...)
		s.run.out = runCLI(t, "", args...)
		s.err = ""
		if s.run.out.code != 0 {
			s.err = s.run.out.String()
		}
	})
	if s.err != "" {
		t.Fatalf("the shared %s training run failed:\n%s", s.name, s.err)
	}
	return &s.run
}

// shared is the one tiny run (tinyRun) most tests share.
var shared = &sharedRun{name: "tiny", flags: tinyRun}

// trainedRun trains the shared tiny run the first time it is called and
// returns it.
func trainedRun(t *testing.T) *trained { return shared.get(t) }
