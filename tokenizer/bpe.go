package tokenizer

import "sync"

// merge is what a pair of adjacent tokens becomes: the merged token's id and
// the rank of the rule (its position in the merges list; lower merges first).
type merge struct {
	rank int32
	id   int32
}

// bpe is a byte-level BPE model. Its input pieces are raw (normalized) text;
// each byte starts as the token of its byte-level rune, then the adjacent pair
// with the lowest-ranked merge is merged, leftmost first on ties, until no
// pair has a merge.
type bpe struct {
	vocab        map[string]int32
	merges       map[uint64]merge
	byteIDs      [256]int32 // id of each byte's byte-level rune
	ignoreMerges bool       // a piece that is itself a vocabulary entry is one token
	cache        *pieceCache
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// encode appends the ids of piece.
func (m *bpe) encode(dst []int32, piece string) []int32 {
	if len(piece) == 1 {
		return append(dst, m.byteIDs[piece[0]])
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[toByteLevel(piece)]; ok {
			return append(dst, id)
		}
	}
	if ids, ok := m.cache.get(piece); ok {
		return append(dst, ids...)
	}
	n := len(dst)
	dst = m.merge(dst, piece)
	m.cache.put(piece, dst[n:])
	return dst
}

// symbol is one token of a piece being merged; symbols form a linked list
// over the piece's bytes, and a merged-away symbol has id -1.
type symbol struct {
	id         int32
	prev, next int32
}

// candidate is a possible merge of the symbol at pos with its successor.
type candidate struct {
	rank, pos, id int32
}

// less orders candidates by rank, then position: the reference's order.
func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || (c.rank == d.rank && c.pos < d.pos)
}

type mergeState struct {
	syms []symbol
	heap []candidate
}

var mergeStates = sync.Pool{New: func() any { return new(mergeState) }}

// merge runs the BPE merges over piece and appends the resulting ids.
func (m *bpe) merge(dst []int32, piece string) []int32 {
	st := mergeStates.Get().(*mergeState)
	defer mergeStates.Put(st)
	syms := st.syms[:0]
	for i := 0; i < len(piece); i++ {
		syms = append(syms, symbol{id: m.byteIDs[piece[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[len(syms)-1].next = -1
	h := st.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = heapPush(h, candidate{rank: mg.rank, pos: int32(i), id: mg.id})
		}
	}
	for len(h) > 0 {
		var top candidate
		top, h = heapPop(h)
		left := &syms[top.pos]
		if left.id < 0 || left.next < 0 {
			continue
		}
		right := syms[left.next]
		// Skip stale candidates: the pair at pos changed since it was queued.
		if mg, ok := m.merges[pairKey(left.id, right.id)]; !ok || mg.id != top.id {
			continue
		}
		syms[left.next].id = -1
		left.id = top.id
		left.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if left.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[left.prev].id, left.id)]; ok {
				h = heapPush(h, candidate{rank: mg.rank, pos: left.prev, id: mg.id})
			}
		}
		if left.next >= 0 {
			if mg, ok := m.merges[pairKey(left.id, syms[left.next].id)]; ok {
				h = heapPush(h, candidate{rank: mg.rank, pos: top.pos, id: mg.id})
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, syms[i].id)
	}
	st.syms, st.heap = syms, h
	return dst
}

func heapPush(h []candidate, c candidate) []candidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []candidate) (candidate, []candidate) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[min]) {
			min = l
		}
		if r < len(h) && h[r].less(h[min]) {
			min = r
		}
		if min == i {
			break
		}
		h[i], h[min] = h[min], h[i]
		i = min
	}
	return top, h
}
