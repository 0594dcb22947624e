package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/sameorigin"
)

// httpTransport speaks MCP's streamable HTTP transport: every message is
// POSTed to one endpoint; a request's response comes back either as a
// JSON body or as a server-sent event stream that ends with it. The
// session id the server assigns at initialize (Mcp-Session-Id) and the
// agreed protocol version (MCP-Protocol-Version) go with every later
// message.
type httpTransport struct {
	url        string
	headers    http.Header
	client     *http.Client
	maxMessage int // bytes of one response body or event stream

	mu      sync.Mutex
	session string
	version string
}

// newHTTPTransport connects to url; headers are "Name: value" lines sent
// with every request (e.g. an Authorization header), so a redirect to
// another origin is refused. A response body or event stream over
// maxMessage bytes fails its call.
func newHTTPTransport(url string, headers []string, maxMessage int) (*httpTransport, error) {
	h, err := parseHeaders(headers)
	if err != nil {
		return nil, err
	}
	return &httpTransport{url: url, headers: h, client: sameorigin.Client(), maxMessage: maxMessage}, nil
}

// parseHeaders reads "Name: value" lines.
func parseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, l := range lines {
		name, value, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("header %q: want \"Name: value\"", l)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return h, nil
}

// post sends one message; the caller closes the response body.
func (t *httpTransport) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range t.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	t.mu.Lock()
	if t.session != "" {
		req.Header.Set("Mcp-Session-Id", t.session)
	}
	if t.version != "" {
		req.Header.Set("MCP-Protocol-Version", t.version)
	}
	t.mu.Unlock()
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: POST %s: %v", errBroken, t.url, err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.mu.Lock()
		if t.session == "" {
			t.session = id
		}
		t.mu.Unlock()
	}
	return resp, nil
}

// statusErr describes a response with an error status. Errors of the
// model's making come back inside a JSON-RPC response, so an HTTP error
// is the server's: the session is broken, and the next call starts a new
// one (a 404 means the server forgot the session, after a restart, say).
func (t *httpTransport) statusErr(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	msg := fmt.Sprintf("POST %s: %s", t.url, resp.Status)
	if s := strings.TrimSpace(string(b)); s != "" {
		msg += ": " + envs.Printable(s)
	}
	return fmt.Errorf("%w: %s", errBroken, msg)
}

func (t *httpTransport) call(ctx context.Context, id int64, method string, params any) (json.RawMessage, error) {
	b, err := encodeRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	resp, err := t.post(ctx, b)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, t.statusErr(resp)
	}
	var bad malformedNote
	m, err := t.response(ctx, resp, id, &bad)
	if err != nil {
		if ctx.Err() != nil {
			go cancelRequest(t, id, ctx.Err())
			return nil, bad.wrap(ctx.Err())
		}
		return nil, bad.wrap(err)
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// response finds the response to request id in a JSON body (one message
// or a batch) or an event stream; messages of the stream that are not it
// and not a server's request or notification are noted in bad.
func (t *httpTransport) response(ctx context.Context, resp *http.Response, id int64, bad *malformedNote) (*message, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		return readEvents(resp.Body, t.maxMessage, func(data []byte) (*message, bool) {
			var m message
			if err := json.Unmarshal(data, &m); err != nil {
				bad.note(err.Error(), data)
				return nil, false
			}
			switch got, ok := m.intID(); {
			case m.Method != "" && len(m.ID) > 0:
				go t.answer(ctx, answerServerRequest(&m))
			case m.Method != "":
			case !m.isResponse():
				bad.note("neither a request, a response nor a notification", data)
			case !ok || got != id:
				bad.note(fmt.Sprintf("a response to request %s, not to %d", m.ID, id), data)
			default:
				return &m, true
			}
			return nil, false
		})
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.maxMessage)+1))
		if err != nil {
			return nil, fmt.Errorf("%w: reading the response: %v", errBroken, err)
		}
		if len(b) > t.maxMessage {
			return nil, fmt.Errorf("the response is over %d bytes (tools.mcp[].max_message_mb)", t.maxMessage)
		}
		var batch []message
		if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
			err = json.Unmarshal(b, &batch)
		} else {
			batch = make([]message, 1)
			err = json.Unmarshal(b, &batch[0])
		}
		if err != nil {
			return nil, fmt.Errorf("response is not JSON-RPC: %v: %s", err, envs.Excerpt(string(b), 200))
		}
		for i := range batch {
			if got, ok := batch[i].intID(); ok && batch[i].isResponse() && got == id {
				return &batch[i], nil
			}
		}
		return nil, fmt.Errorf("the server's response holds no answer to request %d: %s", id, envs.Excerpt(string(b), 200))
	}
	return nil, fmt.Errorf("response of type %q: want application/json or text/event-stream", envs.Printable(resp.Header.Get("Content-Type")))
}

// answer POSTs the client's reply to a server's request.
func (t *httpTransport) answer(ctx context.Context, b []byte) {
	if resp, err := t.post(context.WithoutCancel(ctx), b); err == nil {
		resp.Body.Close()
	}
}

func (t *httpTransport) notify(ctx context.Context, method string, params any) error {
	b, err := encodeRequest(-1, method, params)
	if err != nil {
		return err
	}
	resp, err := t.post(ctx, b)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return t.statusErr(resp)
	}
	return nil
}

func (t *httpTransport) setProtocolVersion(v string) {
	t.mu.Lock()
	t.version = v
	t.mu.Unlock()
}

// close ends the session with a DELETE, as the transport asks of a client
// that leaves; a server that does not support it answers 405, which is
// fine.
func (t *httpTransport) close() error {
	t.mu.Lock()
	session := t.session
	t.mu.Unlock()
	if session == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
	if err != nil {
		return err
	}
	for k, v := range t.headers {
		req.Header[k] = v
	}
	req.Header.Set("Mcp-Session-Id", session)
	if resp, err := t.client.Do(req); err == nil {
		resp.Body.Close()
	}
	return nil
}
