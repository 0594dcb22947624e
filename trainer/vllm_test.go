package trainer

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/decoding/vllm/vllmtest"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// fakePolicy is a fake vLLM server's model: a pure function of the
// request (so a resumed run is answered as the uninterrupted one), a few
// ids taken from the context, then one of the turn-ending ids, each with
// a logprob in [-1.1, -0.5].
func fakePolicy(r vllmtest.Request) ([]int64, []float64) {
	s := uint64(*r.Seed)
	n := 1 + int(s%4)
	var ids []int64
	var lps []float64
	for i := range n {
		ids = append(ids, r.Prompt[(int(s>>8)+7*i)%len(r.Prompt)])
		lps = append(lps, -0.5-float64((s>>uint(i))%7)/10)
	}
	ids = append(ids, r.StopTokenIDs[int(s>>16)%len(r.StopTokenIDs)])
	lps = append(lps, -0.7)
	return ids, lps
}

// vllmResumeConfig is resumeConfig sampling on the fake vLLM server at
// address.
func vllmResumeConfig(dir, address string, resume bool) config.Config {
	c := resumeConfig(dir)
	c.Run.Name = "resume-vllm"
	c.Rollout.Engine, c.Rollout.VLLM.Address = "vllm", address
	c.Run.Resume = resume
	return c
}

// trainVLLM runs cfg to its end or its first error; bar, when set, makes
// each progress bar from its label.
func trainVLLM(t *testing.T, cfg config.Config, bar func(label string) Bar) error {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop(), Progress: func(label string, _ int) Bar {
		if bar != nil {
			return bar(label)
		}
		return noBar{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background(), nil)
	if cerr := tr.Close(); err == nil && cerr != nil {
		t.Fatal(cerr)
	}
	return err
}

// With rollout.engine vllm, every rollout samples on the server, whose
// weights are synced to the policy's version before it (the policy
// written to the run folder's vllm-weights and reloaded); a server killed
// in the rollout of iteration 3 ends the run with an error naming it, and
// --resume, once the server is back, continues from iteration 2's
// checkpoint to the same weights, optimizer state and store as an
// uninterrupted run.
func TestVLLMEngineSyncsAndResumes(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	ref := vllmtest.New(fakePolicy)
	defer ref.Close()
	refDir := t.TempDir()
	if err := trainVLLM(t, vllmResumeConfig(refDir, ref.URL, false), nil); err != nil {
		t.Fatal(err)
	}
	refRun := RunDir(vllmResumeConfig(refDir, ref.URL, false))
	// The policy version counts optimizer steps, two per iteration here:
	// iterations 1..4 sample with versions 0, 2, 4, 6, the final
	// evaluation with 8.
	if got := fmt.Sprint(ref.Versions()); got != "[0 2 4 6 8]" {
		t.Fatalf("weight versions synced %s, want [0 2 4 6 8]", got)
	}
	for _, p := range ref.Reloads() {
		if p != filepath.Join(refRun, "vllm-weights") {
			t.Fatalf("the server reloaded %s, want the run's vllm-weights", p)
		}
	}

	srv := vllmtest.New(fakePolicy)
	defer srv.Close()
	dir := t.TempDir()
	err := trainVLLM(t, vllmResumeConfig(dir, srv.URL, false), func(label string) Bar {
		if label == "iter 3 rollout" {
			srv.BreakAfter(srv.Completions() + 3)
		}
		return noBar{}
	})
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "the server closed the connection") {
		t.Fatalf("run with the server killed in iteration 3: %v, want an error naming the server", err)
	}
	t.Logf("the killed server's error: %v", err)
	run := RunDir(vllmResumeConfig(dir, srv.URL, false))
	if !latestIs(run, 2) {
		t.Fatalf("the failed run's latest checkpoint is not iteration 2")
	}
	srv.BreakAfter(0)
	if err := trainVLLM(t, vllmResumeConfig(dir, srv.URL, true), nil); err != nil {
		t.Fatal(err)
	}
	// The resumed run synced again (the server's weights are not trusted
	// across runs): versions 4, 6 and 8 after the first run's 0, 2, 4.
	if got := fmt.Sprint(srv.Versions()); got != "[0 2 4 4 6 8]" {
		t.Errorf("weight versions synced %s, want [0 2 4 4 6 8]", got)
	}
	sameRun(t, refRun, run)
}
