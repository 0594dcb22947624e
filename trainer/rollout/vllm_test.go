package rollout

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/vllm"
	"github.com/agentrl/agentrl/decoding/vllm/vllmtest"
	"github.com/agentrl/agentrl/trajectory"
)

// fakeVLLM is a fake vLLM server sampling the scripted model (decoderGen)
// and a client of it.
func fakeVLLM(t *testing.T) (*vllmtest.Server, VLLM) {
	t.Helper()
	gen := &decoderGen{dec: newScripted(t, 1)}
	srv := vllmtest.New(func(r vllmtest.Request) ([]int64, []float64) {
		ctx := make([]int32, len(r.Prompt))
		for i, v := range r.Prompt {
			ctx[i] = int32(v)
		}
		stops := make([]int32, len(r.StopTokenIDs))
		for i, v := range r.StopTokenIDs {
			stops[i] = int32(v)
		}
		g, err := gen.Generate(context.Background(), GenRequest{Context: ctx, MaxTokens: r.MaxTokens, StopIDs: stops})
		if err != nil {
			t.Errorf("fake vLLM: %v", err)
		}
		ids, lps := make([]int64, len(g.Tokens)), make([]float64, len(g.Tokens))
		for i := range g.Tokens {
			ids[i], lps[i] = int64(g.Tokens[i]), float64(g.Logprobs[i])
		}
		return ids, lps
	})
	t.Cleanup(srv.Close)
	s, err := vllm.Start(context.Background(), vllm.ServerConfig{Address: srv.URL, StartupTimeout: 10 * time.Second, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return srv, VLLM{Client: s.Client}
}

// Through a vLLM server's HTTP API (a fake one sampling the scripted
// model), the turns are the built-in engine's, token for token.
func TestVLLMRolloutKeepsTheBuiltinTrajectories(t *testing.T) {
	srv, gen := fakeVLLM(t)
	var reqs []Request
	for k := 0; k < 5; k++ {
		reqs = append(reqs, Request{Task: task(k), Group: k, Samples: 2})
	}
	sameAsBuiltin(t, gen, factory(10, 1000, 0), reqs, opts())
	if srv.Completions() != 2*(1+2+3+4+5) {
		t.Fatalf("%d completions, want 30 (one per turn)", srv.Completions())
	}
}

// A server killed mid-rollout (it hangs up on every completion after the
// second, before any episode could end) or gone ends the rollout with an
// error naming the server and the trajectory whose turn failed; the
// episodes come back cancelled.
func TestVLLMServerKilledMidRollout(t *testing.T) {
	for _, c := range []struct {
		name string
		kill func(*vllmtest.Server)
		want string
	}{
		{"hangs up", func(s *vllmtest.Server) { s.BreakAfter(2) }, "the server closed the connection"},
		{"gone", func(s *vllmtest.Server) { s.Close() }, "is the server running?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, gen := fakeVLLM(t)
			c.kill(srv)
			reqs := []Request{{Task: task(3), Samples: 2}, {Task: task(4), Group: 1, Samples: 2}}
			trs, _, err := Remote{Gen: gen, Episodes: 2}.Run(context.Background(), &fakeChat{}, factory(10, 1000, 0), reqs, opts())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "rollout 3-train-") {
				t.Fatalf("error %v, want one naming the server %s, the trajectory and %q", err, srv.URL, c.want)
			}
			if len(trs) != 4 {
				t.Fatalf("%d trajectories, want 4", len(trs))
			}
			for _, tr := range trs {
				if tr.Stop != trajectory.StopCancelled {
					t.Fatalf("%s: stop %s, want cancelled", tr.ID, tr.Stop)
				}
			}
		})
	}
}

// StartVLLM reads the server's --logprobs-mode and refuses a server whose
// logprobs are not the built-in engine's for a sampling the rollouts send:
// vLLM's default raw_logprobs with a temperature other than 1, saying
// which mode it needs; processed_logprobs serves it. Samplings that take
// either mode do not ask.
func TestStartVLLMChecksTheLogprobsMode(t *testing.T) {
	srv, _ := fakeVLLM(t)
	uses := []decoding.Sampling{{Temperature: 0.7}, {}}
	sc := vllm.ServerConfig{Address: srv.URL, StartupTimeout: 10 * time.Second, RequestTimeout: 10 * time.Second}
	_, err := StartVLLM(sc, VLLMWeights{}, 1, uses, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "--logprobs-mode is raw_logprobs, but temperature 0.7, top-k 0, top-p 0 needs --logprobs-mode processed_logprobs") {
		t.Fatalf("raw_logprobs with temperature 0.7: %v, want the mode it needs", err)
	}
	srv.SetLogprobsMode(vllm.ProcessedLogprobs)
	v, err := StartVLLM(sc, VLLMWeights{}, 1, uses, zerolog.Nop())
	if err != nil {
		t.Fatalf("processed_logprobs with temperature 0.7: %v", err)
	}
	v.Close()
	_, err = StartVLLM(sc, VLLMWeights{}, 1, []decoding.Sampling{{Temperature: 1, TopK: 20}}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "needs --logprobs-mode raw_logprobs") {
		t.Fatalf("processed_logprobs with top-k: %v, want the mode it needs", err)
	}
	// Greedy and temperature 1 alone take either mode: the server is not
	// asked, so a mode it could not have is no error.
	srv.SetLogprobsMode("raw_logits")
	v, err = StartVLLM(sc, VLLMWeights{}, 1, []decoding.Sampling{{Temperature: 1}, {}}, zerolog.Nop())
	if err != nil {
		t.Fatalf("temperature 1 and greedy: %v", err)
	}
	v.Close()
}

// With LoRA adapters, the first sync reloads the base's weights and loads
// the adapters, each later one loads only the adapters (in place of the
// previous), and the completions name them.
func TestVLLMSyncsAdapters(t *testing.T) {
	srv, _ := fakeVLLM(t)
	dir := t.TempDir()
	var written []string
	writer := func(what string) func(string) error {
		return func(d string) error {
			written = append(written, what)
			return os.MkdirAll(d, 0o755)
		}
	}
	w := VLLMWeights{Dir: filepath.Join(dir, "vllm-weights"), Export: writer("base"),
		Adapters: writer("adapters"), AdapterDir: filepath.Join(dir, "vllm-adapter"), AdapterName: "policy"}
	sc := vllm.ServerConfig{Address: srv.URL, StartupTimeout: 10 * time.Second, RequestTimeout: 10 * time.Second}
	v, err := StartVLLM(sc, w, 2, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, version := range []int{0, 0, 2, 4} {
		if err := v.Sync(context.Background(), version); err != nil {
			t.Fatal(err)
		}
	}
	want := "policy=" + w.AdapterDir
	if got := srv.Reloads(); !slices.Equal(got, []string{w.Dir}) {
		t.Errorf("reloads %v, want the base's folder once", got)
	}
	if got := srv.Adapters(); !slices.Equal(got, []string{want, want, want}) {
		t.Errorf("adapters loaded %v, want %s at each of 3 versions", got, want)
	}
	if got := srv.Versions(); !slices.Equal(got, []string{"0", "0", "2", "4"}) {
		t.Errorf("versions %v, want 0 (base), 0, 2, 4", got)
	}
	if !slices.Equal(written, []string{"base", "adapters", "adapters", "adapters"}) {
		t.Errorf("written %v", written)
	}
	if v.Model() != "policy" {
		t.Errorf("completions name %q, want policy", v.Model())
	}
}
