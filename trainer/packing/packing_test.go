package packing

import (
	"reflect"
	"testing"
)

// Three segments of a Qwen3-style episode, written out: segment 1 shares
// the first 4 tokens of segment 0 (system, question, turn header) then
// shows turn 0 without its reasoning (7); segment 2 shares segment 1's
// first 9 tokens.
func TestPackSharesPrefixes(t *testing.T) {
	segs := [][]int32{
		{1, 2, 3, 4, 5, 6, 7, 8},         // prompt 1 2 3 4, turn 0: 5 6 (reasoning) 7 8
		{1, 2, 3, 4, 7, 8, 9, 4, 10, 11}, // context 1 2 3 4 7 8 9 4, turn 1: 10 11
		{1, 2, 3, 4, 7, 8, 9, 4, 10, 12, 4, 13},
	}
	l := Pack(segs)
	want := Layout{
		//         0  1  2  3  4  5  6  7 | 8  9 10 11 12 13 | 14 15 16
		IDs:       []int32{1, 2, 3, 4, 5, 6, 7, 8, 7, 8, 9, 4, 10, 11, 12, 4, 13},
		Positions: []int{0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 8, 9, 9, 10, 11},
		Parent:    []int{-1, 0, 1, 2, 3, 4, 5, 6, 3, 8, 9, 10, 11, 12, 12, 14, 15},
		Node: [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 8, 9, 10, 11, 12, 13},
			{0, 1, 2, 3, 8, 9, 10, 11, 12, 14, 15, 16}},
	}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("layout\n%+v\nwant\n%+v", l, want)
	}
	// 17 packed tokens for 30 naive ones.
	m := l.Allowed()
	rows := map[int][]int{
		0:  {0},
		7:  {0, 1, 2, 3, 4, 5, 6, 7},
		8:  {0, 1, 2, 3, 8},
		13: {0, 1, 2, 3, 8, 9, 10, 11, 12, 13},
		16: {0, 1, 2, 3, 8, 9, 10, 11, 12, 14, 15, 16},
	}
	for i, keys := range rows {
		var got []int
		for j := 0; j < l.Len(); j++ {
			if m[i*l.Len()+j] == 1 {
				got = append(got, j)
			}
		}
		if !reflect.DeepEqual(got, keys) {
			t.Errorf("query %d attends %v, want %v", i, got, keys)
		}
	}
	// Segment 2's token 9 (12) is predicted at the packed position of its
	// token 8 (10, shared with segment 1).
	if src, tok, pos := l.Target(2, 9); src != 12 || tok != 12 || pos != 14 {
		t.Errorf("target (2, 9) = %d %d %d, want 12 12 14", src, tok, pos)
	}
}
