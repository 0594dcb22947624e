package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// fileJSON is the layout of a Hugging Face tokenizer.json. The pipeline
// components are kept as raw JSON: they are checked here and written back
// unchanged by Save.
type fileJSON struct {
	Version       string          `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         modelJSON       `json:"model"`
}

// modelJSON holds the fields of the BPE and WordLevel models.
type modelJSON struct {
	Type                    string     `json:"type"`
	Vocab                   vocabJSON  `json:"vocab"`
	Merges                  mergesJSON `json:"merges"`
	UnkToken                *string    `json:"unk_token"`
	Dropout                 *float64   `json:"dropout"`
	ContinuingSubwordPrefix *string    `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string    `json:"end_of_word_suffix"`
	FuseUnk                 bool       `json:"fuse_unk"`
	ByteFallback            bool       `json:"byte_fallback"`
	IgnoreMerges            bool       `json:"ignore_merges"`
}

// mergesJSON reads merges given either as "a b" strings (older files) or as
// ["a", "b"] pairs (newer ones, needed when a token contains a space).
type mergesJSON [][2]string

// UnmarshalJSON reads either form.
func (m *mergesJSON) UnmarshalJSON(data []byte) error {
	rest := bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimSpace(data), []byte("[")), " \t\r\n")
	if len(rest) == 0 || rest[0] != '"' {
		var pairs [][2]string
		if err := json.Unmarshal(data, &pairs); err != nil {
			return fmt.Errorf("merges: %w", err)
		}
		*m = pairs
		return nil
	}
	var lines []string
	if err := json.Unmarshal(data, &lines); err != nil {
		return fmt.Errorf("merges: %w", err)
	}
	pairs := make([][2]string, len(lines))
	for i, line := range lines {
		a, b, ok := splitMergeLine(line)
		if !ok {
			return fmt.Errorf("merges: entry %d %q is not two tokens separated by a space", i, line)
		}
		pairs[i] = [2]string{a, b}
	}
	*m = pairs
	return nil
}

func splitMergeLine(line string) (a, b string, ok bool) {
	a, b, ok = strings.Cut(line, " ")
	return a, b, ok && a != "" && b != "" && !strings.Contains(b, " ")
}

// component is the "type" tag of a pipeline component, with the fields the
// supported ones use.
type component struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Processors     []json.RawMessage `json:"processors"`
	Pattern        *splitPattern     `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
}

type splitPattern struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// isNull reports whether a raw component is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func parseComponent(raw json.RawMessage, what string) (component, error) {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("%s: %w", what, err)
	}
	return c, nil
}

// parseNormalizer accepts no normalizer, NFC, or a Sequence of those.
func parseNormalizer(raw json.RawMessage) (nfc bool, err error) {
	if isNull(raw) {
		return false, nil
	}
	c, err := parseComponent(raw, "normalizer")
	if err != nil {
		return false, err
	}
	switch c.Type {
	case "NFC":
		return true, nil
	case "Sequence":
		for _, sub := range c.Normalizers {
			n, err := parseNormalizer(sub)
			if err != nil {
				return false, err
			}
			nfc = nfc || n
		}
		return nfc, nil
	}
	return false, fmt.Errorf("normalizer %q is not supported (supported: NFC)", c.Type)
}

// preTokenizer is what the supported pre-tokenizers amount to: one way of
// splitting, and whether pieces go through the byte-level alphabet.
type preTokenizer struct {
	split     splitter
	byteLevel bool
}

// parsePreTokenizer accepts Split with a known pattern, ByteLevel without a
// prefix space, and a Sequence of those with at most one splitting step.
func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	p := preTokenizer{split: wholeSplitter{}}
	if isNull(raw) {
		return p, nil
	}
	steps := []json.RawMessage{raw}
	if c, err := parseComponent(raw, "pre_tokenizer"); err != nil {
		return p, err
	} else if c.Type == "Sequence" {
		steps = c.Pretokenizers
	}
	splits := 0
	for _, step := range steps {
		c, err := parseComponent(step, "pre_tokenizer")
		if err != nil {
			return p, err
		}
		switch c.Type {
		case "Split":
			if c.Pattern == nil || c.Pattern.Regex == nil {
				return p, fmt.Errorf("pre_tokenizer Split: only Regex patterns are supported")
			}
			s, ok := splitterFor(*c.Pattern.Regex)
			if !ok {
				return p, fmt.Errorf("pre_tokenizer Split: pattern %q is not supported (known: the Qwen, Llama-3 and GPT-2 patterns)", *c.Pattern.Regex)
			}
			if c.Behavior != "Isolated" || c.Invert {
				return p, fmt.Errorf("pre_tokenizer Split: behavior %q with invert=%v is not supported (supported: Isolated, invert=false)", c.Behavior, c.Invert)
			}
			p.split = s
			splits++
		case "ByteLevel":
			if c.AddPrefixSpace {
				return p, fmt.Errorf("pre_tokenizer ByteLevel: add_prefix_space=true is not supported")
			}
			p.byteLevel = true
			if c.UseRegex == nil || *c.UseRegex {
				p.split = gpt2Splitter{}
				splits++
			}
		default:
			return p, fmt.Errorf("pre_tokenizer %q is not supported (supported: Split, ByteLevel, Sequence)", c.Type)
		}
	}
	if splits > 1 {
		return p, fmt.Errorf("pre_tokenizer: %d splitting steps in a Sequence are not supported (at most one)", splits)
	}
	return p, nil
}

// checkPostProcessor accepts the post-processors that leave ids unchanged
// when no special tokens are added, which is how Encode works: ByteLevel
// (offsets only) and TemplateProcessing (applied only with special tokens).
func checkPostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	c, err := parseComponent(raw, "post_processor")
	if err != nil {
		return err
	}
	switch c.Type {
	case "ByteLevel", "TemplateProcessing":
		return nil
	case "Sequence":
		for _, sub := range c.Processors {
			if err := checkPostProcessor(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("post_processor %q is not supported (supported: ByteLevel, TemplateProcessing, Sequence)", c.Type)
}

// decoderKind says how token strings become text.
type decoderKind int

const (
	decodeJoin      decoderKind = iota // no decoder: tokens joined by spaces
	decodeByteLevel                    // byte-level runes back to bytes
	decodeFuse                         // plain concatenation
)

func parseDecoder(raw json.RawMessage) (decoderKind, error) {
	if isNull(raw) {
		return decodeJoin, nil
	}
	c, err := parseComponent(raw, "decoder")
	if err != nil {
		return 0, err
	}
	switch c.Type {
	case "ByteLevel":
		return decodeByteLevel, nil
	case "Fuse":
		return decodeFuse, nil
	}
	return 0, fmt.Errorf("decoder %q is not supported (supported: ByteLevel, Fuse)", c.Type)
}
