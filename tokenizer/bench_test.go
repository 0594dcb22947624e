package tokenizer

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
)

// hotpotText is the HotpotQA corpus as plain text: each title and its
// sentences, one passage per line.
func hotpotText(b *testing.B) string {
	path := fixtures.Path(b, "data", "raw", "hotpotqa", "hotpotqa_train_corpus.json")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var corpus map[string][]string
	if err := json.Unmarshal(data, &corpus); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	var sb strings.Builder
	for title, sents := range corpus {
		sb.WriteString(title + "\n" + strings.Join(sents, "") + "\n")
	}
	return sb.String()
}

// BenchmarkLoadQwen measures Load of the 11 MB Qwen3 tokenizer.json.
func BenchmarkLoadQwen(b *testing.B) {
	dir := qwenDir(b)
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeHotpotQA measures encoding throughput (MB/s) on the
// HotpotQA corpus with the piece cache warm, as in a long rollout.
func BenchmarkEncodeHotpotQA(b *testing.B) {
	tok := qwen(b)
	text := hotpotText(b)
	tok.Encode(text)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}

// BenchmarkEncodeHotpotQACold is the same with an empty piece cache every
// time: the cost of running the merges themselves.
func BenchmarkEncodeHotpotQACold(b *testing.B) {
	tok := qwen(b)
	text := hotpotText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		b.StopTimer()
		tok.bpe.cache = newPieceCache()
		b.StartTimer()
		tok.Encode(text)
	}
}

// BenchmarkEncodeHotpotQAParallel encodes from GOMAXPROCS goroutines at
// once, sharing the tokenizer and its cache.
func BenchmarkEncodeHotpotQAParallel(b *testing.B) {
	tok := qwen(b)
	text := hotpotText(b)
	tok.Encode(text)
	b.SetBytes(int64(len(text)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok.Encode(text)
		}
	})
}
