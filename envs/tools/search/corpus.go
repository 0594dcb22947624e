package search

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrl/agentrl/internal/jsonpos"
)

// Passage is one retrievable paragraph: a title (unique by convention, the
// key of Lookup) and its text. Its JSON form {"title": ..., "text": ...},
// one per line, is the canonical corpus file.
type Passage struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// LoadCorpus reads a passage corpus. The layout is detected from the file:
//
//   - JSONL, one object per line: {"title", "text"} (canonical; an "id"
//     field is ignored) or FlashRAG's {"id", "contents"} where contents is
//     "\"Title\"\ntext";
//   - a JSON object {title: [sentences]} (HotpotQA / HippoRAG corpus; the
//     sentences carry their own leading spaces and are concatenated);
//   - a JSON array [{"title", "text"}] (2WikiMultihopQA / HippoRAG corpus).
//
// A malformed line or record is an error naming the file and line.
func LoadCorpus(path string) ([]Passage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load corpus %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	head, first, jsonl, err := sniff(br)
	if err != nil {
		return nil, fmt.Errorf("load corpus %s: %w", path, err)
	}
	whole := io.MultiReader(bytes.NewReader(head), br) // the file from its start
	var ps []Passage
	switch {
	case jsonl:
		ps, err = corpusJSONL(path, bufio.NewReaderSize(whole, 1<<16)) // streamed: JSONL corpora can be large
	case first == '{' || first == '[':
		var data []byte
		if data, err = io.ReadAll(whole); err != nil {
			return nil, fmt.Errorf("load corpus %s: %w", path, err)
		}
		if first == '{' {
			ps, err = corpusTitleSentences(path, data)
		} else {
			ps, err = corpusArray(path, data)
		}
	default:
		return nil, fmt.Errorf("load corpus %s: not JSON or JSONL (expected '{' or '[' first)", path)
	}
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("load corpus %s: no passages", path)
	}
	return ps, nil
}

// sniff reads a corpus up to its first line that is not blank, whole
// however long it is, and returns what it read, that line's first byte
// that is not white space, and whether the line is a complete JSON object
// with a "text" or "contents" field, the mark of a JSONL corpus.
func sniff(br *bufio.Reader) (head []byte, first byte, jsonl bool, err error) {
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, false, err
		}
		head = append(head, line...)
		if rest := bytes.TrimSpace(line); len(rest) > 0 {
			var probe map[string]json.RawMessage
			if json.Unmarshal(rest, &probe) == nil {
				_, text := probe["text"]
				_, contents := probe["contents"]
				jsonl = text || contents
			}
			return head, rest[0], jsonl, nil
		}
		if err != nil {
			return nil, 0, false, errors.New("empty file")
		}
	}
}

// jsonlPassage is the union of the JSONL corpus layouts.
type jsonlPassage struct {
	Title    *string `json:"title"`
	Text     *string `json:"text"`
	Contents *string `json:"contents"`
}

func corpusJSONL(path string, r *bufio.Reader) ([]Passage, error) {
	var ps []Passage
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			p, perr := parseJSONLPassage(line)
			if perr != nil {
				return nil, fmt.Errorf("load corpus %s line %d: %w", path, n, perr)
			}
			ps = append(ps, p)
		}
		if errors.Is(err, io.EOF) {
			return ps, nil
		}
		if err != nil {
			return nil, fmt.Errorf("load corpus %s line %d: %w", path, n, err)
		}
	}
}

func parseJSONLPassage(line []byte) (Passage, error) {
	var j jsonlPassage
	if err := json.Unmarshal(line, &j); err != nil {
		return Passage{}, err
	}
	switch {
	case j.Contents != nil:
		return splitContents(*j.Contents)
	case j.Title != nil && j.Text != nil:
		return checked(Passage{Title: *j.Title, Text: *j.Text})
	default:
		return Passage{}, errors.New(`want {"title", "text"} or {"id", "contents"}`)
	}
}

// splitContents parses FlashRAG's contents: the title (in double quotes) on
// the first line, the passage text after it.
func splitContents(c string) (Passage, error) {
	title, text, ok := strings.Cut(c, "\n")
	if !ok {
		return Passage{}, errors.New(`contents has no newline after the title (want "\"Title\"\ntext")`)
	}
	title = strings.TrimSpace(title)
	if len(title) >= 2 && title[0] == '"' && title[len(title)-1] == '"' {
		title = title[1 : len(title)-1]
	}
	return checked(Passage{Title: title, Text: text})
}

// checked trims a passage and rejects an empty title or text.
func checked(p Passage) (Passage, error) {
	p.Title = strings.TrimSpace(p.Title)
	p.Text = strings.TrimSpace(p.Text)
	if p.Title == "" {
		return Passage{}, errors.New("passage has an empty title")
	}
	if p.Text == "" {
		return Passage{}, fmt.Errorf("passage %q has an empty text", p.Title)
	}
	return p, nil
}

// corpusTitleSentences reads {title: [sentences]}, keeping file order.
func corpusTitleSentences(path string, data []byte) ([]Passage, error) {
	return corpusMembers(path, data, func(dec *json.Decoder) (Passage, error) {
		tok, err := dec.Token()
		if err != nil {
			return Passage{}, err
		}
		title, _ := tok.(string) // object keys are always strings
		var sents []string
		if err := dec.Decode(&sents); err != nil {
			return Passage{}, fmt.Errorf("title %q: want a list of sentences: %w", title, err)
		}
		return Passage{Title: title, Text: strings.Join(sents, "")}, nil
	})
}

// corpusArray reads [{"title", "text"}].
func corpusArray(path string, data []byte) ([]Passage, error) {
	return corpusMembers(path, data, func(dec *json.Decoder) (Passage, error) {
		var j jsonlPassage
		if err := dec.Decode(&j); err != nil {
			return Passage{}, err
		}
		if j.Title == nil || j.Text == nil {
			return Passage{}, errors.New(`want {"title", "text"}`)
		}
		return Passage{Title: *j.Title, Text: *j.Text}, nil
	})
}

// corpusMembers reads a corpus held as one JSON object or array, one
// member at a time in file order: member decodes the member the decoder
// is at into a passage, which is then checked. An error names the file
// and the line of the member it is in (of the syntax error, if it is one).
func corpusMembers(path string, data []byte, member func(dec *json.Decoder) (Passage, error)) ([]Passage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, syntaxErr(path, data, dec, err)
	}
	var ps []Passage
	for dec.More() {
		at := dec.InputOffset()
		p, err := member(dec)
		if err == nil {
			p, err = checked(p)
		}
		if err != nil {
			return nil, fmt.Errorf("load corpus %s line %d: %w", path, jsonpos.ErrLine(data, at, err), err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func syntaxErr(path string, data []byte, dec *json.Decoder, err error) error {
	return fmt.Errorf("load corpus %s line %d: %w", path, jsonpos.ErrLine(data, dec.InputOffset(), err), err)
}
