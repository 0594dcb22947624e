// Package vllmtest is a fake vLLM server for the tests of what drives one
// (decoding/vllm's Client, the rollouts of rollout.engine vllm): the routes
// decoding/vllm uses, answered in vLLM's shapes, its completions sampled
// by a Go function of the request.
package vllmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// Request is what the fake reads of a completion request.
type Request struct {
	Model        string  `json:"model"`
	Prompt       []int64 `json:"prompt"`
	MaxTokens    int     `json:"max_tokens"`
	Temperature  float64 `json:"temperature"`
	TopP         float64 `json:"top_p"`
	TopK         int     `json:"top_k"`
	StopTokenIDs []int64 `json:"stop_token_ids"`
	Seed         *int64  `json:"seed"`
}

// Model samples a completion: its ids and their logprobs. It may return
// fewer ids than asked; the fake stops at the first stop id itself.
type Model func(r Request) (ids []int64, logprobs []float64)

// Server is a fake vLLM server on a local port.
type Server struct {
	*httptest.Server
	model Model

	mu          sync.Mutex
	completions int
	reloads     []string // the weights_path of each reload_weights
	adapters    []string // the lora_name=lora_path of each load_lora_adapter
	versions    []string // each update_weight_version
	breakAfter  int      // > 0: completions after this many answer like a server that died
	mode        string   // its --logprobs-mode, as /server_info reports it
}

// New starts a fake server sampling with m; t's Cleanup should Close it.
func New(m Model) *Server {
	s := &Server{model: m, mode: "raw_logprobs"}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BreakAfter makes every completion after the n-th hang up without an
// answer, as a server that was killed mid-rollout.
func (s *Server) BreakAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakAfter = n
}

// SetLogprobsMode sets the --logprobs-mode /server_info reports
// (raw_logprobs, vLLM's default, unless set).
func (s *Server) SetLogprobsMode(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = mode
}

// Completions is the number of completion requests served.
func (s *Server) Completions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completions
}

// Reloads are the folders reload_weights was asked to load, in order.
func (s *Server) Reloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reloads)
}

// Adapters are the adapters load_lora_adapter was asked to load, in
// order, each as name=folder.
func (s *Server) Adapters() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.adapters)
}

// Versions are the weight versions set, in order.
func (s *Server) Versions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.versions)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	switch route {
	case "GET /health", "POST /pause", "POST /resume":
	case "GET /v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake","object":"model"}]}`)
	case "POST /v1/completions":
		s.complete(w, r)
	case "GET /server_info":
		s.mu.Lock()
		mode := s.mode
		s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"vllm_config": map[string]any{"model_config": map[string]any{"logprobs_mode": mode}}})
	case "POST /collective_rpc":
		var body struct {
			Method string            `json:"method"`
			Kwargs map[string]string `json:"kwargs"`
		}
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Method != "reload_weights" {
			http.Error(w, `{"error":{"message":"bad collective_rpc"}}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reloads = append(s.reloads, body.Kwargs["weights_path"])
		s.mu.Unlock()
		fmt.Fprint(w, `{"results":[null]}`)
	case "POST /v1/load_lora_adapter":
		var body struct {
			Name        string `json:"lora_name"`
			Path        string `json:"lora_path"`
			LoadInplace bool   `json:"load_inplace"`
		}
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Name == "" || !body.LoadInplace {
			http.Error(w, `{"error":{"message":"bad load_lora_adapter"}}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.adapters = append(s.adapters, body.Name+"="+body.Path)
		s.mu.Unlock()
		fmt.Fprint(w, "Success: LoRA adapter loaded")
	case "POST /reset_prefix_cache":
		fmt.Fprint(w, `{"success":true}`)
	case "POST /update_weight_version":
		var body struct {
			NewVersion string `json:"new_version"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.versions = append(s.versions, body.NewVersion)
		s.mu.Unlock()
		fmt.Fprint(w, `{}`)
	default:
		http.NotFound(w, r)
	}
}

// complete answers a completion the way vLLM does with
// return_token_ids and return_tokens_as_token_ids.
func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.completions++
	broken := s.breakAfter > 0 && s.completions > s.breakAfter
	s.mu.Unlock()
	if broken {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	ids, lps := s.model(req)
	ids, lps = ids[:min(len(ids), req.MaxTokens)], lps[:min(len(lps), req.MaxTokens)]
	finish, stop := "length", "null"
	for i, id := range ids {
		if slices.Contains(req.StopTokenIDs, id) {
			ids, lps = ids[:i+1], lps[:i+1]
			finish, stop = "stop", fmt.Sprint(id)
			break
		}
	}
	toks := make([]string, len(ids))
	for i, id := range ids {
		toks[i] = fmt.Sprintf("token_id:%d", id)
	}
	b, _ := json.Marshal(map[string]any{
		"id": "cmpl-fake", "object": "text_completion", "model": "fake",
		"choices": []map[string]any{{
			"index": 0, "text": strings.Repeat("x", len(ids)), "token_ids": ids,
			"logprobs":      map[string]any{"token_logprobs": lps, "tokens": toks, "text_offset": make([]int, len(ids))},
			"finish_reason": finish, "stop_reason": json.RawMessage(stop),
		}},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
