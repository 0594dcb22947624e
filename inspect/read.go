package inspect

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// orNaN reads a nullable REAL: the store keeps NaN as NULL.
func orNaN(v sql.NullFloat64) float64 {
	if !v.Valid {
		return math.NaN()
	}
	return v.Float64
}

// ints runs a query of one integer column and returns its values.
func ints(tx *sql.Tx, q string, args ...any) ([]int, error) {
	rows, err := tx.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// strs runs a query of one text column and returns its values.
func strs(tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut
// with "…", and replaces invalid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// cell formats an SQL value for the results table: NULL, numbers, text,
// and blobs by their size.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("<blob %d bytes>", len(x))
	case float64:
		return fmt.Sprintf("%.6g", x)
	case string:
		return clip(x, 2000)
	}
	return fmt.Sprint(v)
}
