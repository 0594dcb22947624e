// Command servebench measures the requests per second that `trainer serve`
// answers under concurrent clients, for one or more trainer binaries side
// by side: each round starts each binary's server in turn on the same
// model, warms it up with one request per client, then has the clients
// send a fixed number of chat completions between them and reports
// completed requests per second of wall time (and the completion tokens
// per second they returned). Each round runs the binaries in turn, every
// other round in reverse order, so a machine's load drifts over all of
// them alike.
//
//	go run ./cmd/servebench -model runs/default/final -rounds 3 /tmp/trainer-old bin/trainer
//
// Every request asks for a different question (so prompts differ in
// length, 30-50 tokens) with its own seed at temperature 1: the same
// binary and model answer the same tokens in every round.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	model := flag.String("model", "", "model folder to serve (with its tokenizer)")
	clients := flag.Int("clients", 16, "concurrent clients")
	requests := flag.Int("requests", 256, "requests per measurement, over all clients")
	maxTokens := flag.Int("max-tokens", 32, "max_tokens of each request")
	slots := flag.Int("slots", 16, "the server's --slots")
	threads := flag.Int("threads", 1, "the server's --threads")
	rounds := flag.Int("rounds", 3, "measurements of each binary, alternating")
	flag.Parse()
	bins := flag.Args()
	if *model == "" || len(bins) == 0 {
		fmt.Fprintln(os.Stderr, "usage: servebench -model DIR [flags] TRAINER...")
		os.Exit(2)
	}
	rps := make([][]float64, len(bins))
	for r := 0; r < *rounds; r++ {
		for k := range bins {
			i := k
			if r%2 == 1 {
				i = len(bins) - 1 - k
			}
			bin := bins[i]
			m, err := measure(bin, *model, *slots, *threads, *clients, *requests, *maxTokens)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", bin, err)
				os.Exit(1)
			}
			fmt.Printf("round %d  %-32s %7.1f requests/s  %8.0f completion tokens/s\n", r+1, bin, m.rps, m.tps)
			rps[i] = append(rps[i], m.rps)
		}
	}
	fmt.Printf("\n| binary | requests/s, rounds 1-%d | median |\n|---|---|---:|\n", *rounds)
	for i, bin := range bins {
		var each []string
		for _, v := range rps[i] {
			each = append(each, fmt.Sprintf("%.1f", v))
		}
		s := slices.Clone(rps[i])
		slices.Sort(s)
		fmt.Printf("| %s | %s | %.1f |\n", bin, strings.Join(each, ", "), s[len(s)/2])
	}
}

// rate is a measurement: requests and completion tokens per second.
type rate struct{ rps, tps float64 }

// measure starts bin's server on model, warms it up and returns the
// rate at which clients get answered.
func measure(bin, model string, slots, threads, clients, requests, maxTokens int) (rate, error) {
	port, err := freePort()
	if err != nil {
		return rate{}, err
	}
	cmd := exec.Command(bin, "serve", "--model", model, "--port", fmt.Sprint(port), "--slots", fmt.Sprint(slots),
		"--threads", fmt.Sprint(threads), "--served-model-name", "m")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return rate{}, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d/v1", port)
	if err := ready(base); err != nil {
		return rate{}, fmt.Errorf("%w\n%s", err, logs.String())
	}
	if _, err := load(base, clients, clients, maxTokens); err != nil {
		return rate{}, err
	}
	return load(base, clients, requests, maxTokens)
}

// freePort is a TCP port on the loopback that nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ready waits up to a minute for the server to list its model.
func ready(base string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/models"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the server at %s did not answer within a minute", base)
}

// load sends n requests from clients goroutines and returns the rate they
// were answered at.
func load(base string, clients, n, maxTokens int) (rate, error) {
	var next, tokens atomic.Int64
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				k, err := ask(ctx, base, i, maxTokens)
				if err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				tokens.Add(int64(k))
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return rate{}, first
	}
	s := time.Since(start).Seconds()
	return rate{rps: float64(n) / s, tps: float64(tokens.Load()) / s}, nil
}

// client keeps a connection per concurrent client open between requests.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// ask sends request i, its own question and seed, and returns the
// completion tokens of the answer.
func ask(ctx context.Context, base string, i, maxTokens int) (int, error) {
	q := fmt.Sprintf("Question %d: which city was the author of book %d born in?%s", i, i, strings.Repeat(" Answer briefly.", i%6))
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": q}},
		"max_tokens": maxTokens, "temperature": 1, "seed": i})
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("request %d: status %d: %s", i, resp.StatusCode, out)
	}
	var c struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		return 0, fmt.Errorf("request %d: %w", i, err)
	}
	return c.Usage.CompletionTokens, nil
}
