package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Save writes dir/tokenizer.json, and dir/tokenizer_config.json when the
// tokenizer has one (loaded or built), in the Hugging Face layout, so that
// Load, transformers or vLLM read the same tokenizer back.
func (t *Tokenizer) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save tokenizer: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, "tokenizer.json"), t.file); err != nil {
		return err
	}
	if t.config != nil {
		return writeJSON(filepath.Join(dir, "tokenizer_config.json"), t.config)
	}
	return nil
}

// writeJSON writes v indented, without escaping <, > and & (which appear in
// every special token).
func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	// No final newline, like the files the reference writes.
	if err := os.WriteFile(path, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), 0o644); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// vocabJSON is a model vocabulary; it is written in id order, as the
// reference writes it.
type vocabJSON map[string]int32

// MarshalJSON writes the vocabulary in id order.
func (v vocabJSON) MarshalJSON() ([]byte, error) {
	toks := make([]string, 0, len(v))
	for tok := range v {
		toks = append(toks, tok)
	}
	sort.Slice(toks, func(i, j int) bool { return v[toks[i]] < v[toks[j]] })
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, tok := range toks {
		if i > 0 {
			buf.WriteByte(',')
		}
		key, err := marshalNoEscape(tok)
		if err != nil {
			return nil, err
		}
		buf.Write(key)
		fmt.Fprintf(&buf, ":%d", v[tok])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON writes the fields of the model's own type only.
func (m modelJSON) MarshalJSON() ([]byte, error) {
	switch m.Type {
	case "WordLevel":
		return marshalNoEscape(struct {
			Type     string    `json:"type"`
			Vocab    vocabJSON `json:"vocab"`
			UnkToken *string   `json:"unk_token"`
		}{m.Type, m.Vocab, m.UnkToken})
	case "BPE":
		return marshalNoEscape(struct {
			Type                    string      `json:"type"`
			Dropout                 *float64    `json:"dropout"`
			UnkToken                *string     `json:"unk_token"`
			ContinuingSubwordPrefix *string     `json:"continuing_subword_prefix"`
			EndOfWordSuffix         *string     `json:"end_of_word_suffix"`
			FuseUnk                 bool        `json:"fuse_unk"`
			ByteFallback            bool        `json:"byte_fallback"`
			IgnoreMerges            bool        `json:"ignore_merges"`
			Vocab                   vocabJSON   `json:"vocab"`
			Merges                  [][2]string `json:"merges"`
		}{m.Type, m.Dropout, m.UnkToken, m.ContinuingSubwordPrefix, m.EndOfWordSuffix,
			m.FuseUnk, m.ByteFallback, m.IgnoreMerges, m.Vocab, m.Merges})
	}
	return nil, fmt.Errorf("model %q cannot be saved", m.Type)
}
