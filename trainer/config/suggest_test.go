package config

import (
	"slices"
	"testing"
)

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"kitten", "sitting", 3}, // k->s, e->i, +g
		{"clip_hihg", "clip_high", 2},
		{"gamma", "gamma", 0},
	}
	for _, c := range cases {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestCloseMatches(t *testing.T) {
	known := []string{"algorithm", "algorithm.clip_low", "algorithm.clip_high", "optim.lr", "sft.lr"}
	cases := []struct {
		key  string
		want []string
	}{
		{"algorithm.clip_hig", []string{"algorithm.clip_high", "algorithm.clip_low"}}, // distances 1 and 3 (limit 18/4 = 4)
		{"lr", []string{"sft.lr", "optim.lr"}},                                        // same last name; distances 4 and 6
		{"algo", []string{"algorithm"}},                                               // extends it at the same depth
		{"zzz", []string{}},
	}
	for _, c := range cases {
		if got := closeMatches(c.key, known); !slices.Equal(got, c.want) {
			t.Errorf("closeMatches(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}
