// Package httptool makes a plain JSON-over-HTTP service an agentrl tool:
// each call is a POST of {"name": ..., "arguments": {...}} to the
// service's URL, answered with {"content": "..."} (or {"error": "..."}).
package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/sameorigin"
)

// Config describes one HTTP tool.
type Config struct {
	Name        string          // the tool's name, as the agent calls it
	URL         string          // where calls are POSTed
	Description string          // shown to the model
	Parameters  json.RawMessage // JSON schema of the arguments ("" = any object)
	Headers     []string        // "Name: value" lines sent with every call
	Retries     int             // extra attempts after a failure of the service (0 = none)
	// CrossOriginRedirects follows redirects to another origin (scheme,
	// host and port) than URL's, without the configured headers; off, such
	// a redirect fails the call.
	CrossOriginRedirects bool
}

// maxBody bounds a response read.
const maxBody = 16 << 20

// Tool is a tool served over HTTP.
type Tool struct {
	cfg     Config
	headers http.Header
	client  *http.Client
}

// New checks the configuration: a name, an http(s) URL, a parameters
// schema envs accepts, well-formed headers, retries >= 0.
func New(cfg Config) (*Tool, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("http tool: needs a name")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("http tool %s: url %q: want http:// or https://", cfg.Name, cfg.URL)
	}
	if len(bytes.TrimSpace(cfg.Parameters)) == 0 {
		cfg.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	if _, err := envs.CompileSchema(cfg.Parameters); err != nil {
		return nil, fmt.Errorf("http tool %s: parameters: %w", cfg.Name, err)
	}
	if cfg.Retries < 0 {
		return nil, fmt.Errorf("http tool %s: retries is %d, want >= 0", cfg.Name, cfg.Retries)
	}
	h := http.Header{}
	for _, l := range cfg.Headers {
		name, value, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("http tool %s: header %q: want \"Name: value\"", cfg.Name, l)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	t := &Tool{cfg: cfg, headers: h}
	t.client = &http.Client{CheckRedirect: sameorigin.CheckRedirect(cfg.CrossOriginRedirects, h)}
	return t, nil
}

// Name is the configured name.
func (t *Tool) Name() string { return t.cfg.Name }

// Description is the configured description.
func (t *Tool) Description() string { return t.cfg.Description }

// Parameters is the configured schema.
func (t *Tool) Parameters() json.RawMessage { return t.cfg.Parameters }

// response is the service's answer.
type response struct {
	Content *string  `json:"content"`
	Error   string   `json:"error"`
	Refs    []string `json:"refs"`
}

// Call POSTs the call. A 2xx answer with "content" is the result (with
// "refs", passage titles, if given); one with "error" is an error the
// model sees, as a built-in tool's. A service that cannot be reached,
// answers with another status or with something else than that JSON has
// failed (envs.Failure) and is tried again up to Retries times while ctx
// allows.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (envs.Result, error) {
	body, err := json.Marshal(map[string]any{"name": t.cfg.Name, "arguments": args})
	if err != nil {
		return envs.Result{}, err
	}
	var lastErr error
	for attempt := 0; attempt <= t.cfg.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return envs.Result{}, ctx.Err()
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		res, err := t.post(ctx, body)
		var failed serviceError
		if !errors.As(err, &failed) {
			return res, err
		}
		lastErr = err
	}
	return envs.Result{}, envs.Failure(lastErr)
}

// serviceError is a failure of the service, worth a retry.
type serviceError struct{ msg string }

func (e serviceError) Error() string { return e.msg }

// post makes one attempt.
func (t *Tool) post(ctx context.Context, body []byte) (envs.Result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return envs.Result{}, err
	}
	for k, v := range t.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return envs.Result{}, ctx.Err()
		}
		return envs.Result{}, serviceError{fmt.Sprintf("%s: %v", t.cfg.Name, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if ctx.Err() != nil {
			return envs.Result{}, ctx.Err()
		}
		return envs.Result{}, serviceError{fmt.Sprintf("%s: reading the answer: %v", t.cfg.Name, err)}
	}
	if resp.StatusCode/100 != 2 {
		return envs.Result{}, serviceError{fmt.Sprintf("%s: %s: %s", t.cfg.Name, resp.Status, envs.Excerpt(strings.TrimSpace(string(b)), 200))}
	}
	var r response
	if err := json.Unmarshal(b, &r); err != nil || (r.Content == nil && r.Error == "") {
		return envs.Result{}, serviceError{fmt.Sprintf(`%s: the answer is not {"content": ...} or {"error": ...}: %s`, t.cfg.Name, envs.Excerpt(string(b), 200))}
	}
	if r.Error != "" {
		return envs.Result{}, errors.New(r.Error)
	}
	return envs.Result{Content: *r.Content, OK: true, Refs: r.Refs}, nil
}
