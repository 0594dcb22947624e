package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/torch"
)

// qwen35 is the default job with a Qwen3.5-shaped tiny model
// (model.tiny.model_type qwen3_5: a Gated DeltaNet layer and a gated
// attention layer) in tinyRun's world, for two GRPO iterations. The tools'
// schemas are listed in the prompt, so that a client of `trainer serve`
// sending the search tool gets the prompt the model was trained on; the
// warm start is long enough (32 demonstrations, 20 epochs: 80 steps) for
// the model to write Qwen3.5's XML calls.
var qwen35 = &sharedRun{name: "qwen35", flags: slices.Clip(append(append([]string{"--iterations", "2", "--threads", "1"}, tinyWorld...),
	"--set", "model.tiny.model_type=qwen3_5",
	"--set", "model.tiny.hidden=32", "--set", "model.tiny.intermediate=64", "--set", "model.tiny.heads=2", "--set", "model.tiny.kv_heads=1",
	"--set", "tools.schemas=show",
	"--set", "rollout.batch_size=2", "--set", "rollout.group_size=2", "--set", "rollout.slots=4",
	"--set", "algorithm.mini_batch=4", "--set", "algorithm.micro_batch=4",
	"--set", "sft.demos=32", "--set", "sft.epochs=20", "--set", "sft.batch=8", "--set", "sft.lr=1e-2", "--set", "eval.max_eval=4",
))}

// sqlRows runs a query on a store through `trainer rollouts sql` and
// returns its rows, each a line of values; the queries here select one
// value, or values joined by '|', so that a row is one field.
func sqlRows(t *testing.T, store, query string) []string {
	t.Helper()
	r := ok(t, "rollouts", "sql", "--store", store, query)
	ls := lines(r.stdout)
	if len(ls) == 0 {
		t.Fatalf("query %q printed no header:\n%s", query, r)
	}
	rows := make([]string, len(ls)-1)
	for i, l := range ls[1:] {
		rows[i] = strings.TrimSpace(l)
	}
	return rows
}

// The default job runs to the end with a Qwen3.5-shaped tiny model: its
// tokenizer carries Qwen3.5's chat template, the episodes' tool calls are
// read from Qwen3.5's XML syntax (each call parsed from a turn that wrote
// it as <function=search><parameter=query> and that query, none from a Hermes JSON
// block), and the exported policy loads back as a qwen3_5_text model with
// the hybrid layers asked for.
func TestTrainTinyQwen35(t *testing.T) {
	run := qwen35.get(t)
	checkResults(t, run.out.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	final := filepath.Join(run.dir(), "final")
	store := filepath.Join(run.dir(), "store.db")

	// The policy: transformers' text model of Qwen3.5, one layer of each
	// kind (the default interval 2 over 2 layers), the sizes of model.tiny.
	cfg, err := torch.ReadConfig(final)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelType != "qwen3_5_text" || !slices.Equal(cfg.LayerTypes, []string{torch.LinearAttention, torch.FullAttention}) ||
		cfg.Hidden != 32 || cfg.HeadDim != 16 || cfg.RotaryDim() != 4 || cfg.LinearKeyHeads != 2 || cfg.LinearValueHeads != 4 ||
		cfg.LinearKeyDim != 32 || cfg.LinearValueDim != 32 || cfg.LinearConvKernel != 4 {
		t.Errorf("final/config.json read back as %+v", cfg)
	}
	m, err := torch.LoadModel(final, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatalf("the exported policy does not load: %v", err)
	}
	if m.Config.ModelType != "qwen3_5_text" || !m.Config.Hybrid() {
		t.Errorf("loaded model %s, hybrid %v", m.Config.ModelType, m.Config.Hybrid())
	}
	m.Free()
	tok, err := tokenizer.Load(final)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	if f.Family() != tokenizer.Qwen35 || f.CallSyntax() != toolcall.QwenXML {
		t.Errorf("the exported tokenizer's format is %s writing %v calls, want qwen3.5 writing XML", f.Family(), f.CallSyntax())
	}

	// The calls of the training episodes: parsed, and each from its turn's
	// XML text of the same query (the parser takes the value up to
	// "</parameter>", one newline around it or none).
	xml := `instr(u.text, '<function=search>' || char(10) || '<parameter=query>' || char(10) || json_extract(c.args, '$.query')) > 0`
	from := ` FROM tool_calls c JOIN turns u USING (tid, turn) JOIN trajectories t USING (tid) WHERE c.parse_error = '' AND c.tool = 'search'`
	if n := sqlRows(t, store, "SELECT COUNT(*)"+from+" AND t.split = 'train' AND "+xml); len(n) != 1 || atoi(t, n[0]) == 0 {
		t.Errorf("training episodes with search calls parsed from XML: %v, want some", n)
	}
	if n := sqlRows(t, store, "SELECT COUNT(*)"+from+" AND NOT ("+xml+")"); len(n) != 1 || n[0] != "0" {
		t.Errorf("calls parsed from another text than their XML: %v, want 0", n)
	}
	if n := sqlRows(t, store, `SELECT COUNT(*)`+from+` AND instr(u.text, '{"name"') > 0`); len(n) != 1 || n[0] != "0" {
		t.Errorf("calls parsed from a Hermes block: %v, want 0", n)
	}
}

// trainer serve answers a chat completion with the Qwen3.5-shaped policy
// the job exported: asked, with the search tool, a question the job's last
// evaluation (greedy, the same weights) answered with a search call in its
// first turn, it returns that call, parsed from the model's XML, with the
// same arguments.
func TestServeTinyQwen35(t *testing.T) {
	run := qwen35.get(t)
	final := filepath.Join(run.dir(), "final")
	store := filepath.Join(run.dir(), "store.db")
	rows := sqlRows(t, store, `SELECT t.question || '|' || c.args FROM tool_calls c JOIN trajectories t USING (tid)
		WHERE t.split = 'eval' AND c.turn = 0 AND c.call = 0 AND c.parse_error = '' AND c.tool = 'search'
		AND t.iteration = (SELECT MAX(iteration) FROM trajectories) ORDER BY t.tid LIMIT 1`)
	if len(rows) != 1 {
		t.Fatalf("the last evaluation made no search call in a first turn: %v", rows)
	}
	question, args, _ := strings.Cut(rows[0], "|")
	idx, err := search.Open(filepath.Join(run.dir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := envs.Schemas([]envs.Tool{search.NewSearchTool(idx, 0)})
	idx.Close()
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := json.Marshal([]map[string]string{{"role": "system", "content": toolcall.SystemPrompt}, {"role": "user", "content": question}})
	body := `{"model": "tiny", "temperature": 0, "tools": [` + string(schemas[0]) + `], "messages": ` + string(msgs) + `}`

	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd, _, base := startServe(t, ctx, "--model", final, "--served-model-name", "tiny", "--port", "0", "--slots", "2",
		"--context", "768", "--threads", "1")
	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, body: %v", resp.StatusCode, err)
	}
	var got, want map[string]any
	if len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" || len(c.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("answer %+v, want one search call", c)
	}
	call := c.Choices[0].Message.ToolCalls[0].Function
	if call.Name != search.SearchName || json.Unmarshal([]byte(call.Arguments), &got) != nil ||
		json.Unmarshal([]byte(args), &want) != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("call %s(%s), want search(%s) as the job's evaluation of %q", call.Name, call.Arguments, args, question)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after Ctrl-C: %v", err)
	}
}
