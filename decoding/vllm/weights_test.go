package vllm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// call is one request a fake server saw.
type call struct{ Method, URI, Body string }

// recorder is a fake server that records every request and answers from
// answers (by path; absent: 200 with {}).
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (rec *recorder) serve(t *testing.T, answers map[string]func(http.ResponseWriter)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 && r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: Content-Type %q", r.Method, r.URL, r.Header.Get("Content-Type"))
		}
		rec.mu.Lock()
		rec.calls = append(rec.calls, call{r.Method, r.URL.RequestURI(), string(b)})
		rec.mu.Unlock()
		if a, ok := answers[r.URL.Path]; ok {
			a(w)
			return
		}
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func reply(status int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// The CPU sync: pause (finishing what is in flight), reload the weights
// from the folder through every worker's reload_weights, drop the prefix
// cache, name the version, resume; in that order, with these bodies.
func TestSyncFromCheckpointRequests(t *testing.T) {
	var rec recorder
	c := rec.serve(t, map[string]func(http.ResponseWriter){
		"/reset_prefix_cache": reply(200, `{"success":true}`),
	})
	if err := c.SyncFromCheckpoint(context.Background(), "/runs/x/policy-3", "3"); err != nil {
		t.Fatal(err)
	}
	want := []call{
		{"POST", "/pause?mode=wait", ""},
		{"POST", "/collective_rpc", `{"method":"reload_weights","kwargs":{"weights_path":"/runs/x/policy-3"}}`},
		{"POST", "/reset_prefix_cache", ""},
		{"POST", "/update_weight_version", `{"new_version":"3"}`},
		{"POST", "/resume", ""},
	}
	if !reflect.DeepEqual(rec.calls, want) {
		t.Errorf("requests\n%q\nwant\n%q", rec.calls, want)
	}
}

// The adapters' sync: as the checkpoint's, the adapters loaded in place of
// those of their name (load_inplace) instead of the reload; a failed load
// still resumes, the error vLLM's message.
func TestSyncAdapterRequests(t *testing.T) {
	var rec recorder
	c := rec.serve(t, map[string]func(http.ResponseWriter){
		"/reset_prefix_cache": reply(200, `{"success":true}`),
	})
	if err := c.SyncAdapter(context.Background(), "policy", "/runs/x/vllm-adapter", "4"); err != nil {
		t.Fatal(err)
	}
	want := []call{
		{"POST", "/pause?mode=wait", ""},
		{"POST", "/v1/load_lora_adapter", `{"lora_name":"policy","lora_path":"/runs/x/vllm-adapter","load_inplace":true}`},
		{"POST", "/reset_prefix_cache", ""},
		{"POST", "/update_weight_version", `{"new_version":"4"}`},
		{"POST", "/resume", ""},
	}
	if !reflect.DeepEqual(rec.calls, want) {
		t.Errorf("requests\n%q\nwant\n%q", rec.calls, want)
	}

	var failed recorder
	c = failed.serve(t, map[string]func(http.ResponseWriter){
		"/v1/load_lora_adapter": reply(400, `{"error":{"message":"LoRA rank 64 is greater than max_lora_rank 16"}}`),
	})
	err := c.SyncAdapter(context.Background(), "policy", "/a", "5")
	if err == nil || !strings.Contains(err.Error(), "/v1/load_lora_adapter") || !strings.Contains(err.Error(), "max_lora_rank 16") {
		t.Errorf("error %v, want the load's with vLLM's message", err)
	}
	if last := failed.calls[len(failed.calls)-1]; last.URI != "/resume" || len(failed.calls) != 3 {
		t.Errorf("requests %q, want pause, load, resume", failed.calls)
	}
}

// A failed reload still resumes generation, and the error is the
// reload's, with vLLM's message.
func TestSyncFromCheckpointFailureResumes(t *testing.T) {
	var rec recorder
	c := rec.serve(t, map[string]func(http.ResponseWriter){
		"/collective_rpc": reply(500, `{"error":{"message":"FileNotFoundError: no safetensors in /runs/x/policy-3","type":"InternalServerError","code":500}}`),
	})
	err := c.SyncFromCheckpoint(context.Background(), "/runs/x/policy-3", "3")
	if err == nil || !strings.Contains(err.Error(), "POST "+c.base+"/collective_rpc: 500 Internal Server Error: FileNotFoundError: no safetensors") {
		t.Errorf("error %v, want the reload's", err)
	}
	if last := rec.calls[len(rec.calls)-1]; last.URI != "/resume" || len(rec.calls) != 3 {
		t.Errorf("requests %q, want pause, reload, resume", rec.calls)
	}
}

// A prefix cache that could not be reset (blocks still held) is an error,
// and so is an answer that does not say.
func TestResetPrefixCacheAnswers(t *testing.T) {
	for _, tc := range []struct{ answer, want string }{
		{`{"success":false}`, "could not reset its prefix cache"},
		{`{}`, "malformed response"},
		{`[`, "malformed response"},
	} {
		var rec recorder
		c := rec.serve(t, map[string]func(http.ResponseWriter){"/reset_prefix_cache": reply(200, tc.answer)})
		if err := c.ResetPrefixCache(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("answer %s: error %v, want %q", tc.answer, err, tc.want)
		}
	}
}

// The weight-transfer API's calls, as vLLM's RL router reads them: every
// argument embedded in the JSON body under its parameter's name.
func TestWeightTransferRequests(t *testing.T) {
	var rec recorder
	c := rec.serve(t, map[string]func(http.ResponseWriter){
		"/weight_info": reply(200, `{"weight_version":"7"}`),
	})
	ctx := context.Background()
	steps := []error{
		c.InitWeightTransfer(ctx, NCCLInit{MasterAddress: "10.0.0.1", MasterPort: 29500, RankOffset: 1, WorldSize: 3, Packed: true}),
		c.Pause(ctx, PauseKeep),
		c.StartWeightUpdate(ctx),
		c.UpdateWeights(ctx, NCCLUpdate{Names: []string{"model.embed_tokens.weight", "lm_head.weight"}, DTypeNames: []string{"bfloat16", "bfloat16"}, Shapes: [][]int64{{151936, 896}, {151936, 896}}}),
		c.FinishWeightUpdate(ctx, "7"),
		c.Resume(ctx),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	v, err := c.WeightVersion(ctx)
	if err != nil || v != "7" {
		t.Errorf("weight version %q, %v, want 7", v, err)
	}
	want := []call{
		{"POST", "/init_weight_transfer_engine", `{"init_info":{"master_address":"10.0.0.1","master_port":29500,"rank_offset":1,"world_size":3,"packed":true}}`},
		{"POST", "/pause?mode=keep", ""},
		{"POST", "/start_weight_update", ""},
		{"POST", "/update_weights", `{"update_info":{"names":["model.embed_tokens.weight","lm_head.weight"],"dtype_names":["bfloat16","bfloat16"],"shapes":[[151936,896],[151936,896]]}}`},
		{"POST", "/finish_weight_update", `{"weight_version":"7"}`},
		{"POST", "/resume", ""},
		{"GET", "/weight_info", ""},
	}
	if !reflect.DeepEqual(rec.calls, want) {
		t.Errorf("requests\n%q\nwant\n%q", rec.calls, want)
	}
}

// An update whose lists disagree is refused before it is sent; a server
// without the RL routes (no VLLM_SERVER_DEV_MODE) answers 404, named.
func TestWeightTransferFailures(t *testing.T) {
	var rec recorder
	c := rec.serve(t, map[string]func(http.ResponseWriter){
		"/start_weight_update": reply(404, `{"detail":"Not Found"}`),
		"/weight_info":         reply(200, `{"weight_version":`),
	})
	ctx := context.Background()
	err := c.UpdateWeights(ctx, NCCLUpdate{Names: []string{"a", "b"}, DTypeNames: []string{"float32"}, Shapes: [][]int64{{1}, {2}}})
	if err == nil || !strings.Contains(err.Error(), "2 names, 1 dtypes and 2 shapes") {
		t.Errorf("error %v", err)
	}
	if len(rec.calls) != 0 {
		t.Errorf("requests %q sent", rec.calls)
	}
	if err := c.StartWeightUpdate(ctx); err == nil || !strings.Contains(err.Error(), "POST "+c.base+"/start_weight_update: 404 Not Found") {
		t.Errorf("error %v", err)
	}
	if _, err := c.WeightVersion(ctx); err == nil || !strings.Contains(err.Error(), "malformed response") {
		t.Errorf("error %v", err)
	}
}
