package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/internal/hubcache"
)

// Load reads dir/tokenizer.json and, when present, dir/tokenizer_config.json
// (for the eos and pad tokens and the chat template) and dir/chat_template.jinja
// (where transformers 5 saves the chat template; it takes the place of the
// config's chat_template, and Save writes it into tokenizer_config.json).
// dir may be a Hugging Face model id in the local cache (hubcache).
func Load(dir string) (*Tokenizer, error) {
	dir, err := hubcache.Resolve(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "tokenizer.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	var config map[string]json.RawMessage
	cpath := filepath.Join(dir, "tokenizer_config.json")
	switch cdata, err := os.ReadFile(cpath); {
	case err == nil:
		if err := json.Unmarshal(cdata, &config); err != nil {
			return nil, fmt.Errorf("load %s: %w", cpath, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	jpath := filepath.Join(dir, "chat_template.jinja")
	switch jdata, err := os.ReadFile(jpath); {
	case err == nil:
		if config == nil {
			config = map[string]json.RawMessage{}
		}
		if config["chat_template"], err = json.Marshal(string(jdata)); err != nil {
			return nil, fmt.Errorf("load %s: %w", jpath, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := newTokenizer(f, config)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

// newTokenizer checks a parsed tokenizer.json (and tokenizer_config.json)
// and builds the tokenizer it describes.
func newTokenizer(f fileJSON, config map[string]json.RawMessage) (*Tokenizer, error) {
	if !isNull(f.Truncation) {
		return nil, fmt.Errorf("truncation is not supported (must be null)")
	}
	if !isNull(f.Padding) {
		return nil, fmt.Errorf("padding is not supported (must be null)")
	}
	t := &Tokenizer{file: f, config: config}
	var err error
	if t.nfc, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	pre, err := parsePreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	t.split = pre.split
	if err := checkPostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if t.decoder, err = parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	maxID, err := checkVocab(f.Model.Vocab)
	if err != nil {
		return nil, err
	}
	switch f.Model.Type {
	case "BPE":
		if !pre.byteLevel {
			return nil, fmt.Errorf("model BPE without the ByteLevel pre-tokenizer is not supported")
		}
		if t.bpe, err = newBPE(f.Model); err != nil {
			return nil, err
		}
		t.model = t.bpe
	case "WordLevel":
		if pre.byteLevel {
			return nil, fmt.Errorf("model WordLevel with the ByteLevel pre-tokenizer is not supported")
		}
		if t.wordLevel, err = newWordLevel(f.Model); err != nil {
			return nil, err
		}
		t.model = t.wordLevel
	default:
		return nil, fmt.Errorf("model %q is not supported (supported: BPE, WordLevel)", f.Model.Type)
	}
	if err := t.setTokens(f.Model.Vocab, maxID, f.AddedTokens); err != nil {
		return nil, err
	}
	if err := t.setConfig(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkVocab refuses negative and shared ids and returns the largest id.
func checkVocab(vocab map[string]int32) (int32, error) {
	maxID := int32(-1)
	byID := make(map[int32]string, len(vocab))
	for tok, id := range vocab {
		if id < 0 {
			return 0, fmt.Errorf("model vocab: token %q has negative id %d", tok, id)
		}
		if other, ok := byID[id]; ok {
			return 0, fmt.Errorf("model vocab: id %d is used by both %q and %q", id, other, tok)
		}
		byID[id] = tok
		maxID = max(maxID, id)
	}
	return maxID, nil
}

func newBPE(m modelJSON) (*bpe, error) {
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, fmt.Errorf("model BPE: dropout %v is not supported", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("model BPE: continuing_subword_prefix %q is not supported", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("model BPE: end_of_word_suffix %q is not supported", *m.EndOfWordSuffix)
	}
	if m.ByteFallback {
		return nil, fmt.Errorf("model BPE: byte_fallback is not supported")
	}
	b := &bpe{
		vocab:        m.Vocab,
		merges:       make(map[uint64]merge, len(m.Merges)),
		ignoreMerges: m.IgnoreMerges,
		cache:        newPieceCache(),
	}
	for c := 0; c < 256; c++ {
		id, ok := m.Vocab[byteString[c]]
		if !ok {
			return nil, fmt.Errorf("model BPE: byte 0x%02x (%q) is not in the vocabulary", c, byteString[c])
		}
		b.byteIDs[c] = id
	}
	for rank, pair := range m.Merges {
		a, okA := m.Vocab[pair[0]]
		c, okC := m.Vocab[pair[1]]
		id, okID := m.Vocab[pair[0]+pair[1]]
		if !okA || !okC || !okID {
			return nil, fmt.Errorf("model BPE: merge %d (%q, %q) uses a token that is not in the vocabulary", rank, pair[0], pair[1])
		}
		// A rule listed twice keeps its last rank, as in the reference.
		b.merges[pairKey(a, c)] = merge{rank: int32(rank), id: id}
	}
	return b, nil
}

func newWordLevel(m modelJSON) (*wordLevel, error) {
	if m.UnkToken == nil {
		return nil, fmt.Errorf("model WordLevel: unk_token is required")
	}
	id, ok := m.Vocab[*m.UnkToken]
	if !ok {
		return nil, fmt.Errorf("model WordLevel: unk_token %q is not in the vocabulary", *m.UnkToken)
	}
	return &wordLevel{vocab: m.Vocab, unkID: id}, nil
}

// setTokens fills the id -> token table and the added-token matchers.
func (t *Tokenizer) setTokens(vocab map[string]int32, maxID int32, added []addedToken) error {
	for _, a := range added {
		if a.Content == "" || a.ID < 0 {
			return fmt.Errorf("added token %d %q: empty content or negative id", a.ID, a.Content)
		}
		if a.SingleWord || a.LStrip || a.RStrip {
			return fmt.Errorf("added token %d %q: single_word, lstrip and rstrip are not supported", a.ID, a.Content)
		}
		maxID = max(maxID, a.ID)
	}
	t.tokens = make([]string, maxID+1)
	t.special = make([]bool, maxID+1)
	for tok, id := range vocab {
		t.tokens[id] = tok
	}
	t.addedID = make(map[string]int32, len(added))
	rawPatterns := map[string]int32{}
	normPatterns := map[string]int32{}
	for _, a := range added {
		if other, ok := t.addedID[a.Content]; ok && other != a.ID {
			return fmt.Errorf("added token %q has two ids, %d and %d", a.Content, other, a.ID)
		}
		t.addedID[a.Content] = a.ID
		t.tokens[a.ID] = a.Content
		t.special[a.ID] = a.Special
		if a.Normalized {
			normPatterns[t.normalize(a.Content)] = a.ID
		} else {
			rawPatterns[a.Content] = a.ID
		}
	}
	t.raw = newMatcher(rawPatterns)
	t.normalized = newMatcher(normPatterns)
	return nil
}

// setConfig reads the eos and pad tokens of tokenizer_config.json. A token
// is given as a string or as an object with "content".
func (t *Tokenizer) setConfig() error {
	t.eos, t.pad = -1, -1
	for _, field := range []struct {
		key string
		dst *int32
	}{{"eos_token", &t.eos}, {"pad_token", &t.pad}} {
		raw, ok := t.config[field.key]
		if !ok || isNull(raw) {
			continue
		}
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			var obj struct {
				Content string `json:"content"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				return fmt.Errorf("tokenizer_config.json %s: %w", field.key, err)
			}
			name = obj.Content
		}
		id, ok := t.TokenID(name)
		if !ok {
			return fmt.Errorf("tokenizer_config.json %s %q is not a token", field.key, name)
		}
		*field.dst = id
	}
	if t.pad < 0 {
		t.pad = t.eos
	}
	return t.setChatTemplate()
}

// setChatTemplate reads tokenizer_config.json's chat_template: a string, or
// a list of {name, template} of which the one named "default" is used.
func (t *Tokenizer) setChatTemplate() error {
	raw, ok := t.config["chat_template"]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, &t.chatTemplate); err == nil {
		return nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return fmt.Errorf("tokenizer_config.json chat_template is neither a string nor a list of {name, template}: %w", err)
	}
	for _, n := range named {
		if n.Name == "default" {
			t.chatTemplate = n.Template
			return nil
		}
	}
	return fmt.Errorf("tokenizer_config.json chat_template: a list of %d named templates with none named \"default\"", len(named))
}
