package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/torch"
)

// nodeModules is the folder `make deps` installs the published clients
// into; the test skips, saying why, when node or a package is missing.
func nodeModules(t *testing.T, pkgs ...string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the published OpenAI clients cannot run (install nodejs and run make deps)")
	}
	dir, err := filepath.Abs(filepath.Join("..", "third_party", "npm", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, p, "package.json")); err != nil {
			t.Skipf("%s is not installed in %s (run make deps)", p, dir)
		}
	}
	return dir
}

// liveServer is what `trainer serve` runs: gateway.Serve over a real TCP
// listener on loopback, the scheduler on its own locked thread.
func liveServer(t *testing.T) (string, *gatewaytest.Model) {
	t.Helper()
	m := gatewaytest.Build(t)
	te, err := torch.NewEngine(m.Policy, 4, 256)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sched := gateway.NewScheduler(torchdecoder.Decoder{Engine: te}, m.Format.StopIDs())
	h := &gateway.Handler{Scheduler: sched, Format: m.Format, Model: "tiny", APIKey: "sk-test"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- gateway.Serve(ctx, sched, h, ln)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		te.Free()
	})
	return "http://" + ln.Addr().String() + "/v1", m
}

// runNode runs a script of testdata/node against the server and decodes
// the JSON it prints.
func runNode(t *testing.T, modules, script, baseURL string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "node", script))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "OPENAI_BASE_URL="+baseURL, "OPENAI_API_KEY=sk-test", "MODEL=tiny",
		"TOOL_JSON="+gatewaytest.ToolJSON, "SYSTEM="+gatewaytest.System, "QUESTION="+gatewaytest.Question,
		"RESPONSE="+gatewaytest.Response)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node %s printed %q: %v", script, stdout, err)
	}
}

// The official openai SDK: the model list, a tool call, the answer after
// the tool's response with logprobs, the tool call streamed, and an
// unknown model turned into the SDK's BadRequestError naming "model".
func TestOpenAISDK(t *testing.T) {
	modules := nodeModules(t, "openai")
	url, _ := liveServer(t)
	var out struct {
		Models  []string
		Finish1 string
		Call    struct {
			ID       string
			Type     string
			Function struct{ Name, Arguments string }
		}
		Finish2       string
		Content2      string
		LogprobTokens string
		TopCounts     []int
		Stream        struct {
			Name, Args, Finish string
			Usage              struct{ Total_tokens int }
		}
		BadModel struct {
			Status      int
			Param, Type string
		}
	}
	runNode(t, modules, "chat.cjs", url, &out)
	if len(out.Models) != 1 || out.Models[0] != "tiny" {
		t.Fatalf("models %v", out.Models)
	}
	if out.Finish1 != "tool_calls" || !strings.HasPrefix(out.Call.ID, "call_") || out.Call.Type != "function" ||
		out.Call.Function.Name != "search" || out.Call.Function.Arguments != gatewaytest.QueryArgs {
		t.Fatalf("first turn %+v", out)
	}
	if out.Finish2 != "stop" || out.Content2 != gatewaytest.Reply || out.LogprobTokens != gatewaytest.Reply {
		t.Fatalf("second turn %q %q %q", out.Finish2, out.Content2, out.LogprobTokens)
	}
	for _, n := range out.TopCounts {
		if n != 2 {
			t.Fatalf("top_logprobs counts %v", out.TopCounts)
		}
	}
	if s := out.Stream; s.Name != "search" || s.Args != gatewaytest.QueryArgs || s.Finish != "tool_calls" || s.Usage.Total_tokens == 0 {
		t.Fatalf("stream %+v", s)
	}
	if b := out.BadModel; b.Status != 400 || b.Param != "model" || b.Type != "invalid_request_error" {
		t.Fatalf("unknown model %+v", b)
	}
}

// An @openai/agents agent with a function tool, end to end: the model
// calls the tool, the SDK runs it and sends its output back, and the
// model's answer is the run's final output.
func TestOpenAIAgentsSDK(t *testing.T) {
	modules := nodeModules(t, "openai", "@openai/agents", "zod")
	url, _ := liveServer(t)
	var out struct {
		FinalOutput string
		Queries     []string
	}
	runNode(t, modules, "agent.cjs", url, &out)
	if len(out.Queries) != 1 || out.Queries[0] != "Kamo composer" || !strings.Contains(out.FinalOutput, gatewaytest.Answer) {
		t.Fatalf("agent run %+v", out)
	}
}
