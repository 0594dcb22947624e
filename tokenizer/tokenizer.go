package tokenizer

import (
	"encoding/json"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// model turns one pre-token into ids.
type model interface {
	encode(dst []int32, piece string) []int32
}

// Tokenizer encodes text to token ids and decodes ids to text. It is safe for
// concurrent use.
type Tokenizer struct {
	model     model
	bpe       *bpe       // the model when it is BPE
	wordLevel *wordLevel // the model when it is WordLevel

	tokens  []string         // id -> token (model vocabulary or added token)
	addedID map[string]int32 // added token content -> id
	special []bool           // id -> is a special added token (skipped by Decode on request)

	raw        *matcher // added tokens matched in the text as given
	normalized *matcher // added tokens matched after normalization
	nfc        bool
	split      splitter
	decoder    decoderKind

	file   fileJSON                   // the tokenizer.json components, for Save
	config map[string]json.RawMessage // tokenizer_config.json, nil when absent
	eos    int32
	pad    int32

	chatTemplate string // tokenizer_config.json's chat_template, "" when none
}

// sink collects ids and, when track is set, the end offset of each id in the
// segment being encoded. With capped set it stops taking pre-tokens once it
// holds more than limit ids.
type sink struct {
	ids    []int32
	ends   []int
	track  bool
	capped bool
	limit  int
}

// Encode returns the ids of text. Added and special tokens (such as
// "<|im_start|>") found in the text become their ids; the rest goes through
// the normalizer, pre-tokenizer and model. No special tokens are added around
// the text (add_special_tokens=false in Hugging Face terms). Text that is not
// valid UTF-8 keeps its bytes: to the pre-tokenizer an invalid byte is a
// one-byte character of the "other" class (as U+FFFD is), and Decode gives
// it back. Encode is for trusted text such as a chat template's markup; the
// chat format encodes text from outside (tool results, tool specs, user
// turns) with no added tokens.
func (t *Tokenizer) Encode(text string) []int32 {
	e := sink{ids: make([]int32, 0, len(text)/4+1)}
	t.forEachRawSegment(text, nil, func(lo, hi int, id int32) {
		if id >= 0 {
			e.ids = append(e.ids, id)
			return
		}
		t.appendSegment(&e, t.normalize(text[lo:hi]), 0, nil)
	})
	return e.ids
}

// forEachRawSegment cuts text at the added tokens that match it as given,
// outside the plain intervals, and calls f for each added token (with its
// id) and each stretch of text between them (with id -1), in order.
func (t *Tokenizer) forEachRawSegment(text string, plain []interval, f func(lo, hi int, id int32)) {
	pos := 0
	eachMatch(t.raw, text, plain, func(start, end int, id int32) {
		if start > pos {
			f(pos, start, -1)
		}
		f(start, end, id)
		pos = end
	})
	if pos < len(text) {
		f(pos, len(text), -1)
	}
}

// eachMatch calls f with the added tokens m finds in s, in order, searching
// only the stretches between the plain intervals (sorted, not overlapping),
// so that no match takes a byte of a plain interval.
func eachMatch(m *matcher, s string, plain []interval, f func(start, end int, id int32)) {
	if m == nil {
		return
	}
	lo := 0
	for i := 0; i <= len(plain); i++ {
		hi, next := len(s), len(s)
		if i < len(plain) {
			hi, next = plain[i].lo, plain[i].hi
		}
		for pos := lo; pos < hi; {
			start, end, id := m.find(s[pos:hi])
			if start < 0 {
				break
			}
			f(pos+start, pos+end, id)
			pos += end
		}
		lo = max(lo, next)
	}
}

func (t *Tokenizer) normalize(s string) string {
	if t.nfc && !norm.NFC.IsNormalString(s) {
		return norm.NFC.String(s)
	}
	return s
}

// appendSegment encodes a normalized segment: added tokens that match the
// normalized text outside the plain intervals, then pre-tokens through the
// model. Offsets recorded in e are base plus offsets in seg.
func (t *Tokenizer) appendSegment(e *sink, seg string, base int, plain []interval) {
	pos := 0
	eachMatch(t.normalized, seg, plain, func(start, end int, id int32) {
		t.appendPieces(e, seg[pos:start], base+pos)
		e.ids = append(e.ids, id)
		if e.track {
			e.ends = append(e.ends, base+end)
		}
		pos = end
	})
	t.appendPieces(e, seg[pos:], base+pos)
}

func (t *Tokenizer) appendPieces(e *sink, seg string, base int) {
	for i := 0; i < len(seg) && !(e.capped && len(e.ids) > e.limit); {
		j := t.split.next(seg, i)
		n := len(e.ids)
		e.ids = t.model.encode(e.ids, seg[i:j])
		if e.track {
			if len(e.ids)-n == 1 {
				e.ends = append(e.ends, base+j)
			} else {
				// Several tokens come only from byte-level BPE, where each
				// token stands for one byte per rune.
				pos := base + i
				for _, id := range e.ids[n:] {
					pos += byteLevelLen(t.tokens[id])
					e.ends = append(e.ends, pos)
				}
			}
		}
		i = j
	}
}

// Decode returns the text of ids. With skipSpecial, special added tokens
// (such as "<|im_end|>"; not "<tool_call>" in Qwen's files, which is added
// but not special) are left out. Unknown ids are skipped. Byte-level tokens
// are turned back into their bytes, and the bytes are returned as they are:
// a sequence cut inside a multi-byte character is not valid UTF-8, where the
// reference would show U+FFFD.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	var b []byte
	var parts []string
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) || (skipSpecial && t.special[id]) {
			continue
		}
		tok := t.tokens[id]
		switch t.decoder {
		case decodeByteLevel:
			b = appendFromByteLevel(b, tok)
		case decodeFuse:
			b = append(b, tok...)
		default:
			parts = append(parts, tok)
		}
	}
	if t.decoder == decodeJoin {
		return strings.Join(parts, " ")
	}
	return string(b)
}

// VocabSize is one more than the largest id, counting added tokens
// (151669 for Qwen3). A model's embedding may be larger.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID returns the id of a token given as it appears in the vocabulary
// (byte-level form for BPE, "Ġhello" for " hello") or of an added token.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	if id, ok := t.addedID[s]; ok {
		return id, true
	}
	var vocab map[string]int32
	if t.bpe != nil {
		vocab = t.bpe.vocab
	} else {
		vocab = t.wordLevel.vocab
	}
	id, ok := vocab[s]
	return id, ok
}

// IDToken returns the token of id as it appears in the vocabulary, or "" for
// an unknown id.
func (t *Tokenizer) IDToken(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// WordLevel reports whether the model is WordLevel, as the tiny demo
// models' tokenizers that BuildWordLevel makes are.
func (t *Tokenizer) WordLevel() bool { return t.wordLevel != nil }

// ChatTemplate returns the Jinja chat template of tokenizer_config.json (or
// chat_template.jinja), "" when there is none.
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// EOS is the id of tokenizer_config.json's eos_token ("<|im_end|>" for
// Qwen), or -1 when there is none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// PAD is the id of tokenizer_config.json's pad_token ("<|endoftext|>" for
// Qwen), else EOS.
func (t *Tokenizer) PAD() int32 { return t.pad }
