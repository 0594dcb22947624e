package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/memtest"
	"github.com/agentrl/agentrl/torch"
)

// estimateModelEnv names the config.json TestEstimateChild runs.
const estimateModelEnv = "AGENTRL_ESTIMATE_MODEL"

// The dry run's estimate of an update (weights, gradients, AdamW's state,
// one micro-batch's activations: Result.EstimateMB) holds within 15% of
// the memory the update takes, for the tiny models of the default job at
// its micro-batch (algorithm.micro_batch 8 trajectories of env.max_tokens
// 768): the tiny Gemma 4 (model.tiny.model_type gemma4_text: a sliding
// and a full layer, per-layer inputs, capped logits) and the tiny
// Nemotron-H with one block of each kind (nemotron_pattern M*-E: Mamba-2,
// attention, MLP, MoE), their configs as the default job exports them
// (bench/configs/tiny-*.json). Each runs in a process of its own
// (TestEstimateChild), which measures how far its peak resident memory
// rises from after a warm-up update of a negligible model (libtorch,
// OpenBLAS and Go ready) to the end of the update: memory, not time, so
// load does not move it.
func TestTrainEstimateHoldsTinyModels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three updates of 8 x 768 tokens")
	}
	// The activation terms count what libtorch 1.13's autograd keeps, and
	// its measure repeats within 2% (the tiny Gemma 4: 535-547 MB); under
	// libtorch 2.15 the same update's rise measured 485 and 535 MB on two
	// fresh clones of nearly the same code, a spread the 15% cannot judge.
	if _, loaded := torch.Version(); loaded != "1.13" {
		t.Skipf("the estimate is held to libtorch 1.13's measured updates; this is %s", loaded)
	}
	for _, model := range []string{"configs/tiny-gemma4.json", "configs/tiny-nemotron-h.json"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEstimateChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), estimateModelEnv+"="+model)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", model, err, out)
		}
		var m struct{ RiseMB, EstimateMB float64 }
		line, ok := "", false
		for _, l := range strings.Split(string(out), "\n") {
			if s, found := strings.CutPrefix(l, "estimate: "); found {
				line, ok = s, true
			}
		}
		if !ok {
			t.Skipf("%s: the child measured nothing:\n%s", model, out)
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: estimate %.0f MB, measured %.0f MB (%+.1f%%)", model, m.EstimateMB, m.RiseMB, 100*(m.EstimateMB/m.RiseMB-1))
		if m.EstimateMB < 0.85*m.RiseMB || m.EstimateMB > 1.15*m.RiseMB {
			t.Errorf("%s: the estimate %.0f MB is not within 15%% of the measured %.0f MB", model, m.EstimateMB, m.RiseMB)
		}
	}
}

// TestEstimateChild is TestTrainEstimateHoldsTinyModels's measuring
// process: it does nothing unless estimateModelEnv names a config.
func TestEstimateChild(t *testing.T) {
	model := os.Getenv(estimateModelEnv)
	if model == "" {
		t.Skip("run by TestTrainEstimateHoldsTinyModels")
	}
	warm := tiny()
	warm.Repeats = 1
	if _, err := Train(warm); err != nil {
		t.Fatal(err)
	}
	grew := memtest.PeakRSS(t)
	r, err := Train(Config{Model: model, Batch: 8, SeqLen: 768, LogitsChunk: 256, Threads: 1, Repeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct{ RiseMB, EstimateMB float64 }{float64(grew()) / 1e6, r.EstimateMB})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("estimate: %s\n", b)
}
