package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
)

const (
	cacheShards      = 64
	cacheShardSize   = 4096 // entries per shard before the shard is emptied
	cacheMaxPieceLen = 256  // longer pieces are rare and not worth keeping
)

// pieceCache remembers the ids of pieces already merged. It is safe for
// concurrent use: the rollout encodes from many goroutines. It is sharded so
// that goroutines rarely wait on one another, and bounded: a full shard is
// emptied and starts again.
type pieceCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func newPieceCache() *pieceCache {
	c := &pieceCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]int32)
	}
	return c
}

func (c *pieceCache) shard(piece string) *cacheShard {
	return &c.shards[maphash.String(c.seed, piece)%cacheShards]
}

func (c *pieceCache) get(piece string) ([]int32, bool) {
	if len(piece) > cacheMaxPieceLen {
		return nil, false
	}
	s := c.shard(piece)
	s.mu.RLock()
	ids, ok := s.m[piece]
	s.mu.RUnlock()
	return ids, ok
}

// put stores a copy of ids under a copy of piece (piece is usually a slice of
// a caller's much longer text, which the cache must not keep alive).
func (c *pieceCache) put(piece string, ids []int32) {
	if len(piece) > cacheMaxPieceLen {
		return
	}
	s := c.shard(piece)
	s.mu.Lock()
	if len(s.m) >= cacheShardSize {
		clear(s.m)
	}
	s.m[strings.Clone(piece)] = append([]int32(nil), ids...)
	s.mu.Unlock()
}
