package tokenizer

import "strings"

// span is a stretch of text with its mask bit: gen is set for text the
// assistant generates.
type span struct {
	text string
	gen  bool
}

// interval is a byte range [lo, hi).
type interval struct{ lo, hi int }

func overlapsAny(gen []interval, lo, hi int) uint8 {
	for _, g := range gen {
		if g.lo < hi && lo < g.hi {
			return 1
		}
	}
	return 0
}

// encodeSpans encodes the concatenated text of spans, exactly as Encode
// would, and marks each token 1 when any of its bytes comes from a generated
// span. Text is normalized one span at a time, which is the same as
// normalizing the whole when spans meet at newlines or added tokens, as they
// do in the chat format.
func (t *Tokenizer) encodeSpans(spans []span) (ids []int32, mask []uint8) {
	var b strings.Builder
	var gen, bounds []interval
	for _, s := range spans {
		iv := interval{b.Len(), b.Len() + len(s.text)}
		b.WriteString(s.text)
		bounds = append(bounds, iv)
		if s.gen {
			gen = append(gen, iv)
		}
	}
	text := b.String()
	t.forEachRawSegment(text, func(lo, hi int, id int32) {
		if id >= 0 {
			ids = append(ids, id)
			mask = append(mask, overlapsAny(gen, lo, hi))
			return
		}
		// Normalize the parts of [lo, hi) that each span covers, noting
		// where the generated ones land in the normalized segment.
		var seg strings.Builder
		var segGen []interval
		for k, iv := range bounds {
			a, z := max(iv.lo, lo), min(iv.hi, hi)
			if a >= z {
				continue
			}
			part := t.normalize(text[a:z])
			if spans[k].gen {
				segGen = append(segGen, interval{seg.Len(), seg.Len() + len(part)})
			}
			seg.WriteString(part)
		}
		e := sink{track: true}
		t.appendSegment(&e, seg.String(), 0)
		prev := 0
		for k, id := range e.ids {
			ids = append(ids, id)
			mask = append(mask, overlapsAny(segGen, prev, e.ends[k]))
			prev = e.ends[k]
		}
	})
	return ids, mask
}
