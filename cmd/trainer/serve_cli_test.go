package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
)

// trainer serve answers the OpenAI API on loopback with the model's tool
// call, and Ctrl-C stops it cleanly; serving beyond loopback without an
// API key is refused before anything loads.
func TestServe(t *testing.T) {
	dir := gatewaytest.Build(t).Folder(t)
	fails(t, []string{"reaches beyond this machine", "--api-key"}, "serve", "--model", dir, "--host", "0.0.0.0")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd, _, base := startServe(t, ctx, "--model", dir, "--served-model-name", "tiny", "--port", "0", "--slots", "2", "--context", "256", "--threads", "1")
	body := `{"model": "tiny", "temperature": 0, "tools": [` + gatewaytest.ToolJSON + `], "messages": [{"role": "system", "content": "` +
		gatewaytest.System + `"}, {"role": "user", "content": "` + gatewaytest.Question + `"}]}`
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
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" || c.Choices[0].Message.ToolCalls[0].Function.Arguments != gatewaytest.QueryArgs {
		t.Fatalf("answer %+v", c)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after Ctrl-C: %v", err)
	}
}

// startServe starts `trainer serve` with args and waits for its first
// line, which names the address it serves on: it returns the running
// command, that line and the API's base URL (http://host:port/v1).
func startServe(t *testing.T, ctx context.Context, args ...string) (*exec.Cmd, string, string) {
	t.Helper()
	cmd := command(ctx, append([]string{"serve"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`on (http://\S+/v1)`).FindStringSubmatch(line)
	if url == nil {
		t.Fatalf("no address in %q", line)
	}
	return cmd, line, url[1]
}

// A tokenizer with more tokens than the model's vocabulary is refused when
// serve starts, as training refuses it, instead of answering 500 for the
// first prompt that holds an id past vocab_size.
func TestServeRefusesLargerTokenizer(t *testing.T) {
	m := gatewaytest.Build(t)
	dir := t.TempDir()
	if err := m.Policy.Save(dir); err != nil {
		t.Fatal(err)
	}
	var words []string // distinct words of letters: "xa", "xb", ... "xaa", ...
	for i := range m.Policy.Config.Vocab + 1 {
		w := []byte{'x'}
		for n := i + 1; n > 0; n /= 26 {
			w = append(w, byte('a'+n%26))
		}
		words = append(words, string(w))
	}
	big, err := tokenizer.BuildWordLevel([]string{strings.Join(words, " ")}, toolcall.SpecialTokens())
	if err != nil {
		t.Fatal(err)
	}
	if big.VocabSize() <= m.Policy.Config.Vocab {
		t.Fatalf("the tokenizer has %d tokens, the model %d: not larger", big.VocabSize(), m.Policy.Config.Vocab)
	}
	if err := big.Save(dir); err != nil {
		t.Fatal(err)
	}
	fails(t, []string{fmt.Sprintf("the tokenizer has %d tokens but the model's vocab_size is %d", big.VocabSize(), m.Policy.Config.Vocab)},
		"serve", "--model", dir, "--port", "0", "--slots", "1", "--context", "64", "--threads", "1")
}
