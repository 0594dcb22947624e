package store

import "fmt"

// Cell formats one value of a query's row (QueryReadOnly, QueryLimit) for
// a table a person reads: NULL, a blob by its size, a REAL to six
// significant digits (so that counts and sums up to 999,999 stay plain
// numbers, and means keep the digits that tell runs apart), anything else
// as Go prints it. Text comes back whole: the caller clips it to its width.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("<blob %d bytes>", len(x))
	case float64:
		return fmt.Sprintf("%.6g", x)
	}
	return fmt.Sprint(v)
}
