package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentrl/agentrl/internal/jsonpos"
	"github.com/parquet-go/parquet-go"
)

// record is one raw dataset record as JSON, with where it came from.
type record struct {
	index int    // 0-based position in the file
	where string // "line 12", "record 3 (line 40)" or "row 7", for errors
	raw   []byte
}

// eachRecord calls fn with every record of a JSON-array, JSONL or Parquet
// file, in order. A record that is not valid JSON is an error naming the
// file and line.
func eachRecord(path string, fn func(record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if string(head[:n]) == "PAR1" {
		return parquetRecords(f, fn)
	}
	br := bufio.NewReaderSize(f, 1<<16)
	first, err := firstNonSpace(br)
	if err != nil {
		return err
	}
	if first == '[' {
		return arrayRecords(br, fn)
	}
	return jsonlRecords(br, fn)
}

// firstNonSpace peeks at the first byte that is not white space.
func firstNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if len(b) < i {
			if err == nil || errors.Is(err, io.EOF) {
				return 0, errors.New("empty file")
			}
			return 0, err
		}
		if c := b[i-1]; c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c, nil
		}
	}
}

// jsonlRecords reads one JSON object per line; blank lines are skipped.
func jsonlRecords(br *bufio.Reader, fn func(record) error) error {
	index := 0
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			where := fmt.Sprintf("line %d", n)
			if !json.Valid(t) {
				return fmt.Errorf("%s: %w", where, jsonError(t))
			}
			if ferr := fn(record{index: index, where: where, raw: t}); ferr != nil {
				return ferr
			}
			index++
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
}

// jsonError returns the decoding error of invalid JSON.
func jsonError(b []byte) error {
	var v any
	return json.Unmarshal(b, &v)
}

// arrayRecords reads the elements of one JSON array. The file is read
// whole so that errors can name lines.
func arrayRecords(r io.Reader, fn func(record) error) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("line %d: %w", jsonpos.ErrLine(data, dec.InputOffset(), err), err)
	}
	for index := 0; dec.More(); index++ {
		at := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("record %d (line %d): %w", index, jsonpos.ErrLine(data, at, err), err)
		}
		where := fmt.Sprintf("record %d (line %d)", index, jsonpos.LineAt(data, at))
		if err := fn(record{index: index, where: where, raw: raw}); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("line %d: %w", jsonpos.ErrLine(data, dec.InputOffset(), err), err)
	}
	return nil
}

// parquetRecords converts every row of a Parquet file to a JSON object
// (lists become arrays, structs objects).
func parquetRecords(f *os.File, fn func(record) error) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return err
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	for index := 0; int64(index) < pf.NumRows(); index++ {
		where := fmt.Sprintf("row %d", index)
		row := map[string]any{}
		if err := r.Read(&row); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		raw, err := json.Marshal(row)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := fn(record{index: index, where: where, raw: raw}); err != nil {
			return err
		}
	}
	return nil
}
