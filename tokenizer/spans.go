package tokenizer

import "strings"

// span is a stretch of text with its mask bit, gen, set for text the
// assistant generates, and plain set for text from outside (a tool
// result, a tool spec, a user turn): spellings of added tokens in it stay
// text, so that only the template's own markup yields control tokens.
type span struct {
	text  string
	gen   bool
	plain bool
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
// would except that no added token is matched in or across plain spans, and
// marks each token 1 when any of its bytes comes from a generated span.
// Text is normalized one span at a time, which is the same as normalizing
// the whole when spans meet at newlines or added tokens, as they do in the
// chat format. With limit >= 0 it stops once it has more than limit ids
// (the ids it returns then are a prefix, cut anywhere); -1 is no limit.
func (t *Tokenizer) encodeSpans(spans []span, limit int) (ids []int32, mask []uint8) {
	var b strings.Builder
	var gen, plain, bounds []interval
	for _, s := range spans {
		iv := interval{b.Len(), b.Len() + len(s.text)}
		b.WriteString(s.text)
		bounds = append(bounds, iv)
		if s.gen {
			gen = append(gen, iv)
		}
		if s.plain {
			plain = append(plain, iv)
		}
	}
	text := b.String()
	t.forEachRawSegment(text, plain, func(lo, hi int, id int32) {
		if limit >= 0 && len(ids) > limit {
			return
		}
		if id >= 0 {
			ids = append(ids, id)
			mask = append(mask, overlapsAny(gen, lo, hi))
			return
		}
		// Normalize the parts of [lo, hi) that each span covers, noting
		// where the generated and the plain ones land in the normalized
		// segment.
		var seg strings.Builder
		var segGen, segPlain []interval
		for k, iv := range bounds {
			a, z := max(iv.lo, lo), min(iv.hi, hi)
			if a >= z {
				continue
			}
			part := t.normalize(text[a:z])
			at := interval{seg.Len(), seg.Len() + len(part)}
			if spans[k].gen {
				segGen = append(segGen, at)
			}
			if spans[k].plain {
				segPlain = append(segPlain, at)
			}
			seg.WriteString(part)
		}
		e := sink{track: true, capped: limit >= 0, limit: limit - len(ids)}
		t.appendSegment(&e, seg.String(), 0, segPlain)
		prev := 0
		for k, id := range e.ids {
			ids = append(ids, id)
			mask = append(mask, overlapsAny(segGen, prev, e.ends[k]))
			prev = e.ends[k]
		}
	})
	return ids, mask
}
