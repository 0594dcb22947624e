package tokenizer

import (
	"slices"
	"sync"
	"testing"
)

// Many goroutines encoding at once (as the rollout does) get the same ids
// as one goroutine, while they fill and empty the shared piece cache.
func TestConcurrentEncode(t *testing.T) {
	tok := qwen(t)
	texts := []string{"Hello, my dog is cute", "你好，世界！今天天气很好。", "def add(a, b):\n    return a + b", "🤖👍 ½ 12345678"}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				i := (g + k) % len(texts)
				if k%50 == 0 {
					// Pieces never seen before, to make the cache churn.
					tok.Encode(string(rune('A'+g)) + string(rune(0x4e00+k)))
				}
				if got := tok.Encode(texts[i]); !slices.Equal(got, want[i]) {
					errs <- texts[i]
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs", s)
	}
}

// A full cache shard is emptied and keeps working.
func TestPieceCacheBound(t *testing.T) {
	c := newPieceCache()
	for i := 0; i < cacheShards*cacheShardSize*2; i++ {
		c.put(string(rune(0x10000+i)), []int32{int32(i)})
	}
	total := 0
	for i := range c.shards {
		if n := len(c.shards[i].m); n > cacheShardSize {
			t.Fatalf("shard %d holds %d entries, over %d", i, n, cacheShardSize)
		}
		total += len(c.shards[i].m)
	}
	if total == 0 {
		t.Fatal("cache is empty")
	}
	c.put("x", []int32{7})
	if ids, ok := c.get("x"); !ok || !slices.Equal(ids, []int32{7}) {
		t.Errorf("get(x) = %v, %v", ids, ok)
	}
	long := string(make([]byte, cacheMaxPieceLen+1))
	c.put(long, []int32{1})
	if _, ok := c.get(long); ok {
		t.Error("a piece over the length limit was cached")
	}
}
